"""Inception v3 (Szegedy et al. 2015) as MXNet 1.9's zoo builds it: the block tree, and so the
parameter names (A1_..., B_, C1_..., D_, E1_...), are MXNet's, so that its pretrained file
loads. 299x299 inputs."""
from ... import nn
from ...block import HybridBlock, _fixed_graph
from ...contrib.nn import HybridConcurrent
from ._common import finish

__all__ = ["Inception3", "inception_v3"]


def _conv_bn(channels, kernel_size, strides=1, padding=0):
    """Conv (no bias) - BatchNorm (eps 1e-3) - ReLU."""
    out = nn.HybridSequential(prefix="")
    out.add(nn.Conv2D(channels, kernel_size, strides=strides, padding=padding, use_bias=False))
    out.add(nn.BatchNorm(epsilon=0.001))
    out.add(nn.Activation("relu"))
    return out


def _branch(pool, *convs):
    """An optional pool ("avg": 3x3/1 padded, "max": 3x3/2) followed by the convolutions,
    each given as (channels, kernel, strides, padding)."""
    out = nn.HybridSequential(prefix="")
    if pool == "avg":
        out.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif pool == "max":
        out.add(nn.MaxPool2D(pool_size=3, strides=2))
    for channels, kernel, strides, padding in convs:
        out.add(_conv_bn(channels, kernel, strides, padding))
    return out


def _concurrent(prefix, *branches):
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        for make in branches:
            out.add(make())
    return out


# Factorised 7x7 and 3x3 convolutions: (channels, kernel, strides, padding) of a 1xk and a kx1.
def _row(channels, k):
    return (channels, (1, k), 1, (0, k // 2))


def _col(channels, k):
    return (channels, (k, 1), 1, (k // 2, 0))


def _block_a(pool_features, prefix):
    """35x35: 1x1; 1x1-5x5; 1x1-3x3-3x3; avg pool-1x1."""
    return _concurrent(prefix,
                       lambda: _branch(None, (64, 1, 1, 0)),
                       lambda: _branch(None, (48, 1, 1, 0), (64, 5, 1, 2)),
                       lambda: _branch(None, (64, 1, 1, 0), (96, 3, 1, 1), (96, 3, 1, 1)),
                       lambda: _branch("avg", (pool_features, 1, 1, 0)))


def _block_b(prefix):
    """35x35 -> 17x17: 3x3/2; 1x1-3x3-3x3/2; max pool."""
    return _concurrent(prefix,
                       lambda: _branch(None, (384, 3, 2, 0)),
                       lambda: _branch(None, (64, 1, 1, 0), (96, 3, 1, 1), (96, 3, 2, 0)),
                       lambda: _branch("max"))


def _block_c(c7, prefix):
    """17x17 with factorised 7x7 convolutions of width c7."""
    return _concurrent(prefix,
                       lambda: _branch(None, (192, 1, 1, 0)),
                       lambda: _branch(None, (c7, 1, 1, 0), _row(c7, 7), _col(192, 7)),
                       lambda: _branch(None, (c7, 1, 1, 0), _col(c7, 7), _row(c7, 7), _col(c7, 7), _row(192, 7)),
                       lambda: _branch("avg", (192, 1, 1, 0)))


def _block_d(prefix):
    """17x17 -> 8x8: 1x1-3x3/2; 1x1-1x7-7x1-3x3/2; max pool."""
    return _concurrent(prefix,
                       lambda: _branch(None, (192, 1, 1, 0), (320, 3, 2, 0)),
                       lambda: _branch(None, (192, 1, 1, 0), _row(192, 7), _col(192, 7), (192, 3, 2, 0)),
                       lambda: _branch("max"))


def _split_3x3():
    """1x3 and 3x1 side by side (384 channels each)."""
    out = HybridConcurrent(axis=1, prefix="")
    out.add(_branch(None, _row(384, 3)))
    out.add(_branch(None, _col(384, 3)))
    return out


def _block_e(prefix):
    """8x8: 1x1; 1x1 then split 1x3|3x1; 1x1-3x3 then split 1x3|3x1; avg pool-1x1."""
    def narrow():
        out = nn.HybridSequential(prefix="")
        out.add(_branch(None, (384, 1, 1, 0)))
        out.add(_split_3x3())
        return out

    def wide():
        out = nn.HybridSequential(prefix="")
        out.add(_branch(None, (448, 1, 1, 0), (384, 3, 1, 1)))
        out.add(_split_3x3())
        return out

    return _concurrent(prefix,
                       lambda: _branch(None, (320, 1, 1, 0)),
                       narrow, wide,
                       lambda: _branch("avg", (192, 1, 1, 0)))


class Inception3(HybridBlock):
    """Inception v3 without the auxiliary classifier (as MXNet's): stem, 3 A blocks, B, 4 C
    blocks, D, 2 E blocks, 8x8 average pool, dropout 0.5, Dense(classes)."""

    def __init__(self, classes=1000, **kwargs):
        super(Inception3, self).__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(_conv_bn(32, 3, strides=2))
            self.features.add(_conv_bn(32, 3))
            self.features.add(_conv_bn(64, 3, padding=1))
            self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
            self.features.add(_conv_bn(80, 1))
            self.features.add(_conv_bn(192, 3))
            self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
            for i, pool_features in enumerate((32, 64, 64)):
                self.features.add(_block_a(pool_features, "A%d_" % (i + 1)))
            self.features.add(_block_b("B_"))
            for i, c7 in enumerate((128, 160, 160, 192)):
                self.features.add(_block_c(c7, "C%d_" % (i + 1)))
            self.features.add(_block_d("D_"))
            self.features.add(_block_e("E1_"))
            self.features.add(_block_e("E2_"))
            self.features.add(nn.AvgPool2D(pool_size=8))
            self.features.add(nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    @_fixed_graph
    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def inception_v3(pretrained=False, ctx=None, root=None, **kwargs):
    """Inception v3; pretrained=True loads MXNet's parameters from `root` (see model_store)."""
    return finish(Inception3(**kwargs), "inceptionv3", pretrained, ctx, root)
