"""What every zoo constructor shares."""


def finish(net, name, pretrained, ctx, root):
    """`net`, with MXNet's pretrained parameters of model `name` loaded from `root` when
    `pretrained` (see model_store.get_model_file: nothing is downloaded)."""
    if pretrained:
        from ..model_store import get_model_file
        net.load_parameters(get_model_file(name, root=root), ctx=ctx)
    return net
