"""VGG 11/13/16/19 (Simonyan & Zisserman 2014), with and without BatchNorm, as MXNet 1.x's
zoo builds them; 224x224 inputs."""
from .... import initializer
from ... import nn
from ...block import HybridBlock, _fixed_graph
from ._common import finish

__all__ = ["VGG", "get_vgg", "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn",
           "vgg19_bn"]


class VGG(HybridBlock):
    """Stages of 3x3 convolutions (`layers[i]` of `filters[i]` channels, each followed by
    BatchNorm when `batch_norm`, and ReLU), a 2x2 max pool after each stage, then two
    Dense(4096) with dropout and Dense(classes)."""

    def __init__(self, layers, filters, classes=1000, batch_norm=False, **kwargs):
        super(VGG, self).__init__(**kwargs)
        if len(layers) != len(filters):
            raise ValueError("VGG: layers and filters must have one entry per stage, got %d and %d"
                             % (len(layers), len(filters)))
        with self.name_scope():
            self.features = self._make_features(layers, filters, batch_norm)
            self.features.add(nn.Dense(4096, activation="relu", weight_initializer="normal",
                                       bias_initializer="zeros"))
            self.features.add(nn.Dropout(rate=0.5))
            self.features.add(nn.Dense(4096, activation="relu", weight_initializer="normal",
                                       bias_initializer="zeros"))
            self.features.add(nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer="normal", bias_initializer="zeros")

    @staticmethod
    def _make_features(layers, filters, batch_norm):
        featurizer = nn.HybridSequential(prefix="")
        for i, num in enumerate(layers):
            for _ in range(num):
                featurizer.add(nn.Conv2D(filters[i], kernel_size=3, padding=1,
                                         weight_initializer=initializer.Xavier(rnd_type="gaussian",
                                                                               factor_type="out", magnitude=2),
                                         bias_initializer="zeros"))
                if batch_norm:
                    featurizer.add(nn.BatchNorm())
                featurizer.add(nn.Activation("relu"))
            featurizer.add(nn.MaxPool2D(strides=2))
        return featurizer

    @_fixed_graph
    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (convolutions per stage, channels per stage)
vgg_spec = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
            13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
            16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
            19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers, pretrained=False, ctx=None, root=None, **kwargs):
    """VGG of depth 11, 13, 16 or 19; `batch_norm=True` for the BN variant."""
    if num_layers not in vgg_spec:
        raise ValueError("VGG: num_layers must be one of %s, got %r" % (sorted(vgg_spec), num_layers))
    layers, filters = vgg_spec[num_layers]
    name = "vgg%d%s" % (num_layers, "_bn" if kwargs.get("batch_norm") else "")
    return finish(VGG(layers, filters, **kwargs), name, pretrained, ctx, root)


def vgg11(**kwargs):
    """VGG-11."""
    return get_vgg(11, **kwargs)


def vgg13(**kwargs):
    """VGG-13."""
    return get_vgg(13, **kwargs)


def vgg16(**kwargs):
    """VGG-16."""
    return get_vgg(16, **kwargs)


def vgg19(**kwargs):
    """VGG-19."""
    return get_vgg(19, **kwargs)


def vgg11_bn(**kwargs):
    """VGG-11 with BatchNorm."""
    kwargs["batch_norm"] = True
    return get_vgg(11, **kwargs)


def vgg13_bn(**kwargs):
    """VGG-13 with BatchNorm."""
    kwargs["batch_norm"] = True
    return get_vgg(13, **kwargs)


def vgg16_bn(**kwargs):
    """VGG-16 with BatchNorm."""
    kwargs["batch_norm"] = True
    return get_vgg(16, **kwargs)


def vgg19_bn(**kwargs):
    """VGG-19 with BatchNorm."""
    kwargs["batch_norm"] = True
    return get_vgg(19, **kwargs)
