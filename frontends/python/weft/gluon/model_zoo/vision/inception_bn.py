"""Inception-BN (Ioffe & Szegedy 2015, "BN-Inception"), as MXNet's symbolic example
`image-classification/symbols/inception-bn.py` defines it for 224x224 images, written as
Gluon blocks. It is not in MXNet's Gluon zoo.

Every convolution is conv (with bias) - BatchNorm (gamma fixed at 1, eps 1e-5 + 1e-10,
momentum 0.9, as the example) - ReLU.
"""
from ... import nn
from ...block import HybridBlock, _fixed_graph
from ._common import finish

__all__ = ["InceptionBN", "inception_bn"]


def _conv(channels, kernel, stride=1, pad=0):
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(channels, kernel_size=kernel, strides=stride, padding=pad))
    out.add(nn.BatchNorm(epsilon=1e-5 + 1e-10, momentum=0.9, scale=False))
    out.add(nn.Activation("relu"))
    return out


def _branch(*blocks):
    out = nn.HybridSequential(prefix="")
    out.add(*blocks)
    return out


class _InceptionA(HybridBlock):
    """1x1 | 1x1-3x3 | 1x1-3x3-3x3 | pool(3x3/1, `pool` type)-1x1 proj, concatenated."""

    def __init__(self, num_1x1, num_3x3red, num_3x3, num_d3x3red, num_d3x3, pool, proj, **kwargs):
        super(_InceptionA, self).__init__(**kwargs)
        with self.name_scope():
            self.b1x1 = _conv(num_1x1, 1)
            self.b3x3 = _branch(_conv(num_3x3red, 1), _conv(num_3x3, 3, pad=1))
            self.bd3x3 = _branch(_conv(num_d3x3red, 1), _conv(num_d3x3, 3, pad=1), _conv(num_d3x3, 3, pad=1))
            pooling = (nn.AvgPool2D if pool == "avg" else nn.MaxPool2D)(pool_size=3, strides=1, padding=1)
            self.bpool = _branch(pooling, _conv(proj, 1))

    @_fixed_graph
    def hybrid_forward(self, F, x):
        return F.concat(self.b1x1(x), self.b3x3(x), self.bd3x3(x), self.bpool(x), dim=1)


class _InceptionB(HybridBlock):
    """Grid reduction: 1x1-3x3/2 | 1x1-3x3-3x3/2 | maxpool 3x3/2, concatenated."""

    def __init__(self, num_3x3red, num_3x3, num_d3x3red, num_d3x3, **kwargs):
        super(_InceptionB, self).__init__(**kwargs)
        with self.name_scope():
            self.b3x3 = _branch(_conv(num_3x3red, 1), _conv(num_3x3, 3, stride=2, pad=1))
            self.bd3x3 = _branch(_conv(num_d3x3red, 1), _conv(num_d3x3, 3, pad=1),
                                 _conv(num_d3x3, 3, stride=2, pad=1))
            self.bpool = nn.MaxPool2D(pool_size=3, strides=2, padding=1)

    @_fixed_graph
    def hybrid_forward(self, F, x):
        return F.concat(self.b3x3(x), self.bd3x3(x), self.bpool(x), dim=1)


class InceptionBN(HybridBlock):
    """Stem (7x7/2 conv, pool, 1x1 and 3x3 convs, pool), ten inception modules (3a-5b),
    global average pool, Dense(classes)."""

    def __init__(self, classes=1000, **kwargs):
        super(InceptionBN, self).__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                f = self.features
                f.add(_conv(64, 7, stride=2, pad=3))
                f.add(nn.MaxPool2D(pool_size=3, strides=2))
                f.add(_conv(64, 1))
                f.add(_conv(192, 3, pad=1))
                f.add(nn.MaxPool2D(pool_size=3, strides=2))
                f.add(_InceptionA(64, 64, 64, 64, 96, "avg", 32))       # 3a
                f.add(_InceptionA(64, 64, 96, 64, 96, "avg", 64))       # 3b
                f.add(_InceptionB(128, 160, 64, 96))                    # 3c
                f.add(_InceptionA(224, 64, 96, 96, 128, "avg", 128))    # 4a
                f.add(_InceptionA(192, 96, 128, 96, 128, "avg", 128))   # 4b
                f.add(_InceptionA(160, 128, 160, 128, 160, "avg", 128))  # 4c
                f.add(_InceptionA(96, 128, 192, 160, 192, "avg", 128))  # 4d
                f.add(_InceptionB(128, 192, 192, 256))                  # 4e
                f.add(_InceptionA(352, 192, 320, 160, 224, "avg", 128))  # 5a
                f.add(_InceptionA(352, 192, 320, 192, 224, "max", 128))  # 5b
                # The example pools 7x7 at 224x224, which is the whole map: a global pool
                # keeps other input sizes working too.
                f.add(nn.GlobalAvgPool2D())
                f.add(nn.Flatten())
            self.output = nn.Dense(classes)

    @_fixed_graph
    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def inception_bn(pretrained=False, ctx=None, root=None, **kwargs):
    """Inception-BN for 224x224 images."""
    return finish(InceptionBN(**kwargs), "inception_bn", pretrained, ctx, root)
