"""Concurrent containers, Identity, SparseEmbedding, SyncBatchNorm and pixel shuffles, as
MXNet 1.9's `gluon.contrib.nn`."""
from ...block import Block, HybridBlock, _fixed_graph
from ...nn import BatchNorm, HybridSequential, Sequential

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "SparseEmbedding", "SyncBatchNorm",
           "PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D"]


class Concurrent(Sequential):
    """Feeds its input to every child and concatenates their outputs along `axis`."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        from .... import ndarray
        return ndarray.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class HybridConcurrent(HybridSequential):
    """Concurrent for HybridBlocks: hybridizes as one graph."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    @_fixed_graph
    def hybrid_forward(self, F, x):
        return F.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class Identity(HybridBlock):
    """Returns its input unchanged (a branch of a concurrent block that keeps the input)."""

    @_fixed_graph
    def hybrid_forward(self, F, x):
        return x


class SparseEmbedding(Block):
    """Embedding with a row_sparse weight and gradient: each forward pulls only the rows its
    indices use from the Trainer's kvstore (Parameter.row_sparse_data), the backward gives a
    row_sparse gradient, and the kvstore updates only those rows. Needs a Trainer."""

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype, "sparse_grad": True}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim), init=weight_initializer,
                                      dtype=dtype, grad_stype="row_sparse", stype="row_sparse")

    def forward(self, x):
        from .... import ndarray
        weight = self.weight.row_sparse_data(x)
        return ndarray.Embedding(x, weight, name="fwd", **self._kwargs)

    def __repr__(self):
        return "%s(%d -> %d, %s)" % (type(self).__name__, self._kwargs["input_dim"], self._kwargs["output_dim"],
                                     self._kwargs["dtype"])


class SyncBatchNorm(BatchNorm):
    """BatchNorm whose batch statistics MXNet gathers over `num_devices` devices. The CPU is one
    device, where the operator is BatchNorm itself; the parameters are MXNet's (channel axis 1)."""

    def __init__(self, in_channels=0, num_devices=None, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones", **kwargs):
        super().__init__(axis=1, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                         use_global_stats=use_global_stats, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer, running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer, in_channels=in_channels,
                         **kwargs)
        if num_devices is None:
            num_devices = 1
        if int(num_devices) < 1:
            raise ValueError("SyncBatchNorm: num_devices must be at least 1, got %r" % (num_devices,))
        self._kwargs = {"eps": epsilon, "momentum": momentum, "fix_gamma": not scale,
                        "use_global_stats": use_global_stats, "ndev": int(num_devices), "key": self.prefix}

    @_fixed_graph
    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return F.contrib.SyncBatchNorm(x, gamma, beta, running_mean, running_var, name="fwd", **self._kwargs)


def _factors(factor, n, what):
    if isinstance(factor, int):
        factor = (factor,) * n
    factor = tuple(int(f) for f in factor)
    if len(factor) != n or min(factor) < 1:
        raise ValueError("%s: factor must be a positive int or %d positive ints, got %r" % (what, n, factor))
    return factor


class PixelShuffle1D(HybridBlock):
    """(N, C*f, W) -> (N, C, W*f): channel groups of f become consecutive positions."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 1, "PixelShuffle1D")

    @_fixed_graph
    def hybrid_forward(self, F, x):
        f, = self._factors
        x = F.reshape(x, shape=(0, -4, -1, f, 0))        # (N, C, f, W)
        x = F.transpose(x, axes=(0, 1, 3, 2))              # (N, C, W, f)
        return F.reshape(x, shape=(0, 0, -3))

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, self._factors[0])


class PixelShuffle2D(HybridBlock):
    """(N, C*f1*f2, H, W) -> (N, C, H*f1, W*f2): each channel group of f1*f2 fills an
    f1 x f2 tile of the output, row by row."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 2, "PixelShuffle2D")

    @_fixed_graph
    def hybrid_forward(self, F, x):
        f1, f2 = self._factors
        x = F.reshape(x, shape=(0, -4, -1, f1 * f2, 0, 0))   # (N, C, f1*f2, H, W)
        x = F.reshape(x, shape=(0, 0, -4, f1, f2, 0, 0))      # (N, C, f1, f2, H, W)
        x = F.transpose(x, axes=(0, 1, 4, 2, 5, 3))           # (N, C, H, f1, W, f2)
        return F.reshape(x, shape=(0, 0, -3, -3))

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, self._factors)


class PixelShuffle3D(HybridBlock):
    """(N, C*f1*f2*f3, D, H, W) -> (N, C, D*f1, H*f2, W*f3)."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 3, "PixelShuffle3D")

    @_fixed_graph
    def hybrid_forward(self, F, x):
        f1, f2, f3 = self._factors
        # Split the channel axis in steps (reshape splits one axis in two at a time), then
        # move each factor behind its spatial axis: (N, C, D, f1, H, f2, W, f3).
        x = F.reshape(x, shape=(0, -4, -1, f1 * f2 * f3, 0, 0, 0))
        x = F.reshape(x, shape=(0, 0, -4, f1, f2 * f3, 0, 0, 0))
        x = F.reshape(x, shape=(0, 0, 0, -4, f2, f3, 0, 0, 0))
        x = F.transpose(x, axes=(0, 1, 5, 2, 6, 3, 7, 4))
        return F.reshape(x, shape=(0, 0, -3, -3, -3))

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, self._factors)
