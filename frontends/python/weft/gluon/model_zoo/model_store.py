"""Where pretrained parameters are looked for, as MXNet 1.9's `gluon.model_zoo.model_store`.

MXNet names the file of model `name` `<name>-<first 8 hex digits of its SHA-1>.params` under
`root` ($MXNET_HOME/models by default) and downloads it when it is absent. Weft does not
download: a file put there (MXNet's own, e.g. copied from a machine with network access) is
checked against MXNet's SHA-1 and used; an absent or different file is a clear error that
names the file and the address it comes from.
"""
import os

from ... import base
from ..utils import check_sha1

__all__ = ["get_model_file", "purge"]

# SHA-1 of each MXNet 1.9 pretrained file: the file names and the integrity check need them.
_model_sha1 = {name: checksum for checksum, name in [
    ("44335d1f0046b328243b32a26a4fbd62d9057b45", "alexnet"),
    ("f27dbf2dbd5ce9a80b102d89c7483342cd33cb31", "densenet121"),
    ("b6c8a95717e3e761bd88d145f4d0a214aaa515dc", "densenet161"),
    ("2603f878403c6aa5a71a124c4a3307143d6820e9", "densenet169"),
    ("1cdbc116bc3a1b65832b18cf53e1cb8e7da017eb", "densenet201"),
    ("ed47ec45a937b656fcc94dabde85495bbef5ba1f", "inceptionv3"),
    ("9f83e440996887baf91a6aff1cccc1c903a64274", "mobilenet0.25"),
    ("8e9d539cc66aa5efa71c4b6af983b936ab8701c3", "mobilenet0.5"),
    ("529b2c7f4934e6cb851155b22c96c9ab0a7c4dc2", "mobilenet0.75"),
    ("6b8c5106c730e8750bcd82ceb75220a3351157cd", "mobilenet1.0"),
    ("36da4ff1867abccd32b29592d79fc753bca5a215", "mobilenetv2_1.0"),
    ("e2be7b72a79fe4a750d1dd415afedf01c3ea818d", "mobilenetv2_0.75"),
    ("aabd26cd335379fcb72ae6c8fac45a70eab11785", "mobilenetv2_0.5"),
    ("ae8f9392789b04822cbb1d98c27283fc5f8aa0a7", "mobilenetv2_0.25"),
    ("a0666292f0a30ff61f857b0b66efc0228eb6a54b", "resnet18_v1"),
    ("48216ba99a8b1005d75c0f3a0c422301a0473233", "resnet34_v1"),
    ("0aee57f96768c0a2d5b23a6ec91eb08dfb0a45ce", "resnet50_v1"),
    ("d988c13d6159779e907140a638c56f229634cb02", "resnet101_v1"),
    ("671c637a14387ab9e2654eafd0d493d86b1c8579", "resnet152_v1"),
    ("a81db45fd7b7a2d12ab97cd88ef0a5ac48b8f657", "resnet18_v2"),
    ("9d6b80bbc35169de6b6edecffdd6047c56fdd322", "resnet34_v2"),
    ("ecdde35339c1aadbec4f547857078e734a76fb49", "resnet50_v2"),
    ("18e93e4f48947e002547f50eabbcc9c83e516aa6", "resnet101_v2"),
    ("f2695542de38cf7e71ed58f02893d82bb409415e", "resnet152_v2"),
    ("264ba4970a0cc87a4f15c96e25246a1307caf523", "squeezenet1.0"),
    ("33ba0f93753c83d86e1eb397f38a667eaf2e9376", "squeezenet1.1"),
    ("dd221b160977f36a53f464cb54648d227c707a05", "vgg11"),
    ("ee79a8098a91fbe05b7a973fed2017a6117723a8", "vgg11_bn"),
    ("6bc5de58a05a5e2e7f493e2d75a580d83efde38c", "vgg13"),
    ("7d97a06c3c7a1aecc88b6e7385c2b373a249e95e", "vgg13_bn"),
    ("e660d4569ccb679ec68f1fd3cce07a387252a90a", "vgg16"),
    ("7f01cf050d357127a73826045c245041b0df7363", "vgg16_bn"),
    ("ad2f660d101905472b83590b59708b71ea22b2e5", "vgg19"),
    ("f360b758e856f1074a85abd5fd873ed1d98297c3", "vgg19_bn")]}

apache_repo_url = "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/"
_url_format = "{repo_url}gluon/models/{file_name}.zip"


def _default_root():
    return os.path.join(base.data_dir(), "models")


def short_hash(name):
    """The 8 hex digits of MXNet's file name for model `name`."""
    if name not in _model_sha1:
        raise ValueError("model_zoo: there are no pretrained parameters for %r (Weft ships no pretrained "
                         "weights; MXNet 1.9 has them for: %s)" % (name, ", ".join(sorted(_model_sha1))))
    return _model_sha1[name][:8]


def get_model_file(name, root=None):
    """The path of model `name`'s pretrained parameters under `root`; raises (naming the file
    and where MXNet downloads it) when the file is absent or is not MXNet's."""
    root = os.path.expanduser(root if root is not None else _default_root())
    file_name = "%s-%s" % (name, short_hash(name))
    file_path = os.path.join(root, file_name + ".params")
    repo_url = os.environ.get("MXNET_GLUON_REPO", apache_repo_url)
    if not repo_url.endswith("/"):
        repo_url += "/"
    url = _url_format.format(repo_url=repo_url, file_name=file_name)
    if not os.path.exists(file_path):
        raise ValueError("model_zoo: pretrained parameters of %r not found: %s is absent. Weft ships no "
                         "pretrained weights and does not download them; fetch %s, unzip it and put %s.params "
                         "in %s" % (name, file_path, url, file_name, root))
    if not check_sha1(file_path, _model_sha1[name]):
        raise ValueError("model_zoo: %s is not MXNet's %r parameter file (its SHA-1 is not %s); replace it with "
                         "the one in %s" % (file_path, name, _model_sha1[name], url))
    return file_path


def purge(root=None):
    """Removes every .params file under `root`."""
    root = os.path.expanduser(root if root is not None else _default_root())
    for f in os.listdir(root):
        if f.endswith(".params"):
            os.remove(os.path.join(root, f))
