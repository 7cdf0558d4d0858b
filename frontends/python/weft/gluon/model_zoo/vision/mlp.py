"""Multi-layer perceptron (not in MXNet's zoo; the 784-512-512-10 network of the benchmarks)."""
from ... import nn
from ...block import HybridBlock, _fixed_graph
from ._common import finish

__all__ = ["MLP", "mlp"]


class MLP(HybridBlock):
    """Dense layers of `hidden` units each with `activation`, then a Dense of `classes`.
    Inputs of any shape (N, ...) are flattened, so (N, 1, 28, 28) images go in as they are."""

    def __init__(self, classes=10, hidden=(512, 512), activation="relu", **kwargs):
        super(MLP, self).__init__(**kwargs)
        hidden = tuple(hidden)
        if not all(isinstance(h, int) and h > 0 for h in hidden):
            raise ValueError("MLP: hidden must be positive ints, got %r" % (hidden,))
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                for units in hidden:
                    self.features.add(nn.Dense(units, activation=activation))
            self.output = nn.Dense(classes)

    @_fixed_graph
    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def mlp(pretrained=False, ctx=None, root=None, **kwargs):
    """MLP 784-512-512-10 by default; `hidden=(...)` and `classes=` change the sizes."""
    return finish(MLP(**kwargs), "mlp", pretrained, ctx, root)
