"""DenseNet-BC (Huang et al. 2016) as MXNet 1.9's zoo builds it: the block tree, and so the
parameter names, are MXNet's, so that its pretrained files load. 224x224 inputs (the final
7x7 average pool needs a 7x7 map)."""
from ... import nn
from ...block import HybridBlock, _fixed_graph
from ...contrib.nn import HybridConcurrent, Identity
from ._common import finish

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201"]


def _dense_layer(growth_rate, bn_size, dropout):
    """BN-ReLU-conv1x1 (bn_size*growth_rate) - BN-ReLU-conv3x3 (growth_rate), its output
    concatenated to its input along the channels."""
    branch = nn.HybridSequential(prefix="")
    for channels, kernel, pad in ((bn_size * growth_rate, 1, 0), (growth_rate, 3, 1)):
        branch.add(nn.BatchNorm())
        branch.add(nn.Activation("relu"))
        branch.add(nn.Conv2D(channels, kernel_size=kernel, padding=pad, use_bias=False))
    if dropout:
        branch.add(nn.Dropout(dropout))
    layer = HybridConcurrent(axis=1, prefix="")
    layer.add(Identity())
    layer.add(branch)
    return layer


def _dense_stage(num_layers, bn_size, growth_rate, dropout, index):
    stage = nn.HybridSequential(prefix="stage%d_" % index)
    with stage.name_scope():
        for _ in range(num_layers):
            stage.add(_dense_layer(growth_rate, bn_size, dropout))
    return stage


def _transition(channels):
    """BN-ReLU-conv1x1 to `channels`, then a 2x2 average pool halving the map."""
    out = nn.HybridSequential(prefix="")
    out.add(nn.BatchNorm())
    out.add(nn.Activation("relu"))
    out.add(nn.Conv2D(channels, kernel_size=1, use_bias=False))
    out.add(nn.AvgPool2D(pool_size=2, strides=2))
    return out


class DenseNet(HybridBlock):
    """DenseNet-BC: a 7x7/2 stem with 3x3/2 max pool, dense stages of `block_config[i]`
    layers each adding `growth_rate` channels, transitions halving the channels between the
    stages, then BN-ReLU, 7x7 average pool and Dense(classes)."""

    def __init__(self, num_init_features, growth_rate, block_config, bn_size=4, dropout=0, classes=1000,
                 **kwargs):
        super(DenseNet, self).__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(num_init_features, kernel_size=7, strides=2, padding=3, use_bias=False))
            self.features.add(nn.BatchNorm())
            self.features.add(nn.Activation("relu"))
            self.features.add(nn.MaxPool2D(pool_size=3, strides=2, padding=1))
            channels = num_init_features
            for i, num_layers in enumerate(block_config):
                self.features.add(_dense_stage(num_layers, bn_size, growth_rate, dropout, i + 1))
                channels += num_layers * growth_rate
                if i + 1 < len(block_config):
                    channels //= 2
                    self.features.add(_transition(channels))
            self.features.add(nn.BatchNorm())
            self.features.add(nn.Activation("relu"))
            self.features.add(nn.AvgPool2D(pool_size=7))
            self.features.add(nn.Flatten())
            self.output = nn.Dense(classes)

    @_fixed_graph
    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (stem channels, growth rate, layers per dense stage)
densenet_spec = {121: (64, 32, [6, 12, 24, 16]),
                 161: (96, 48, [6, 12, 36, 24]),
                 169: (64, 32, [6, 12, 32, 32]),
                 201: (64, 32, [6, 12, 48, 32])}


def get_densenet(num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """DenseNet-BC of depth 121, 161, 169 or 201; pretrained=True loads MXNet's parameters
    from `root` (see model_store)."""
    if num_layers not in densenet_spec:
        raise ValueError("DenseNet: num_layers must be one of %s, got %r" % (sorted(densenet_spec), num_layers))
    init_features, growth_rate, block_config = densenet_spec[num_layers]
    net = DenseNet(init_features, growth_rate, block_config, **kwargs)
    return finish(net, "densenet%d" % num_layers, pretrained, ctx, root)


def densenet121(**kwargs):
    """DenseNet-BC-121."""
    return get_densenet(121, **kwargs)


def densenet161(**kwargs):
    """DenseNet-BC-161 (growth rate 48)."""
    return get_densenet(161, **kwargs)


def densenet169(**kwargs):
    """DenseNet-BC-169."""
    return get_densenet(169, **kwargs)


def densenet201(**kwargs):
    """DenseNet-BC-201."""
    return get_densenet(201, **kwargs)
