"""LeNet-5 as MXNet's examples build it (not in MXNet's Gluon zoo): for 28x28 images."""
from ... import nn
from ...block import HybridBlock, _fixed_graph
from ._common import finish

__all__ = ["LeNet", "lenet"]


class LeNet(HybridBlock):
    """conv 5x5x20 - maxpool 2 - conv 5x5x50 - maxpool 2 - dense 500 - dense `classes`,
    with `activation` after the convolutions and the hidden dense layer."""

    def __init__(self, classes=10, activation="relu", **kwargs):
        super(LeNet, self).__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                self.features.add(nn.Conv2D(20, kernel_size=5, activation=activation),
                                  nn.MaxPool2D(pool_size=2, strides=2),
                                  nn.Conv2D(50, kernel_size=5, activation=activation),
                                  nn.MaxPool2D(pool_size=2, strides=2),
                                  nn.Flatten(),
                                  nn.Dense(500, activation=activation))
            self.output = nn.Dense(classes)

    @_fixed_graph
    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def lenet(pretrained=False, ctx=None, root=None, **kwargs):
    """LeNet for (N, 1, 28, 28) inputs (MNIST, Fashion-MNIST)."""
    return finish(LeNet(**kwargs), "lenet", pretrained, ctx, root)
