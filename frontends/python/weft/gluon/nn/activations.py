"""Activation layers, as MXNet 1.x's `gluon.nn.activations`."""
from ..block import HybridBlock, _fixed_graph

__all__ = ["Activation", "LeakyReLU", "PReLU", "ELU", "SELU", "Swish", "GELU"]


class Activation(HybridBlock):
    """act_type: relu, sigmoid, tanh, softrelu or softsign."""

    def __init__(self, activation, **kwargs):
        self._act_type = activation
        super().__init__(**kwargs)

    def _alias(self):
        return self._act_type

    @_fixed_graph
    def hybrid_forward(self, F, x):
        return F.Activation(x, act_type=self._act_type, name="fwd")

    def __repr__(self):
        return "Activation(%s)" % self._act_type


class LeakyReLU(HybridBlock):
    """max(x, alpha * x)."""

    def __init__(self, alpha, **kwargs):
        if alpha < 0:
            raise ValueError("LeakyReLU: alpha must be >= 0, got %s" % alpha)
        super().__init__(**kwargs)
        self._alpha = alpha

    @_fixed_graph
    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="leaky", slope=self._alpha, name="fwd")

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, self._alpha)


class PReLU(HybridBlock):
    """Leaky ReLU with a learned slope per channel (in_channels of them; 1 = shared)."""

    def __init__(self, alpha_initializer=None, in_channels=1, **kwargs):
        from ... import initializer
        super().__init__(**kwargs)
        with self.name_scope():
            self.alpha = self.params.get("alpha", shape=(in_channels,),
                                         init=alpha_initializer or initializer.Constant(0.25))

    @_fixed_graph
    def hybrid_forward(self, F, x, alpha):
        return F.LeakyReLU(x, gamma=alpha, act_type="prelu", name="fwd")


class ELU(HybridBlock):
    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self._alpha = alpha

    @_fixed_graph
    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="elu", slope=self._alpha)


class SELU(HybridBlock):
    @_fixed_graph
    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="selu", name="fwd")


class GELU(HybridBlock):
    @_fixed_graph
    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="gelu", name="fwd")


class Swish(HybridBlock):
    """x * sigmoid(beta * x)."""

    def __init__(self, beta=1.0, **kwargs):
        super().__init__(**kwargs)
        self._beta = beta

    @_fixed_graph
    def hybrid_forward(self, F, x):
        return x * F.sigmoid(self._beta * x, name="fwd")
