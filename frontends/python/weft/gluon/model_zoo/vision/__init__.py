"""Vision models (MXNet 1.x's `mx.gluon.model_zoo.vision`), by constructor or by name:

    net = weft.gluon.model_zoo.vision.get_model("resnet18_v1", classes=10)

Plus `mlp` and `lenet` (small networks for 28x28 images) and `inception_bn`, which MXNet's
zoo lacks. No pretrained weights are shipped and none are downloaded: pretrained=True loads
MXNet's file for the model from `root` (see model_store) and raises when it is absent.
"""
# The modules first: the star imports then rebind names like `alexnet` to the functions.
from . import alexnet as _alexnet, inception_bn as _inception_bn, lenet as _lenet, mlp as _mlp
from . import densenet as _densenet, inception as _inception
from . import mobilenet as _mobilenet, resnet as _resnet, squeezenet as _squeezenet, vgg as _vgg
from .alexnet import *  # noqa: F401,F403
from .densenet import *  # noqa: F401,F403
from .inception import *  # noqa: F401,F403
from .inception_bn import *  # noqa: F401,F403
from .lenet import *  # noqa: F401,F403
from .mlp import *  # noqa: F401,F403
from .mobilenet import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .squeezenet import *  # noqa: F401,F403
from .vgg import *  # noqa: F401,F403

_models = {
    "mlp": mlp, "lenet": lenet,
    "resnet18_v1": resnet18_v1, "resnet34_v1": resnet34_v1, "resnet50_v1": resnet50_v1,
    "resnet101_v1": resnet101_v1, "resnet152_v1": resnet152_v1,
    "resnet18_v2": resnet18_v2, "resnet34_v2": resnet34_v2, "resnet50_v2": resnet50_v2,
    "resnet101_v2": resnet101_v2, "resnet152_v2": resnet152_v2,
    "vgg11": vgg11, "vgg13": vgg13, "vgg16": vgg16, "vgg19": vgg19,
    "vgg11_bn": vgg11_bn, "vgg13_bn": vgg13_bn, "vgg16_bn": vgg16_bn, "vgg19_bn": vgg19_bn,
    "alexnet": alexnet,
    "densenet121": densenet121, "densenet161": densenet161, "densenet169": densenet169,
    "densenet201": densenet201, "inceptionv3": inception_v3,
    "squeezenet1.0": squeezenet1_0, "squeezenet1.1": squeezenet1_1,
    "mobilenet1.0": mobilenet1_0, "mobilenet0.75": mobilenet0_75,
    "mobilenet0.5": mobilenet0_5, "mobilenet0.25": mobilenet0_25,
    "mobilenetv2_1.0": mobilenet_v2_1_0, "mobilenetv2_0.75": mobilenet_v2_0_75,
    "mobilenetv2_0.5": mobilenet_v2_0_5, "mobilenetv2_0.25": mobilenet_v2_0_25,
    "inception_bn": inception_bn, "inceptionbn": inception_bn,
}


def get_model(name, **kwargs):
    """The model called `name` (see `models()`), built with `kwargs` (classes=, ...)."""
    key = name.lower() if isinstance(name, str) else name
    if key not in _models:
        raise ValueError("model_zoo.vision: unknown model %r; the models are: %s"
                         % (name, ", ".join(sorted(_models))))
    return _models[key](**kwargs)


def models():
    """The names get_model knows."""
    return sorted(_models)


__all__ = (["get_model", "models"] + _alexnet.__all__ + _densenet.__all__ + _inception.__all__
           + _inception_bn.__all__ + _lenet.__all__ + _mlp.__all__
           + _mobilenet.__all__ + _resnet.__all__ + _squeezenet.__all__ + _vgg.__all__)
