"""Basic layers, as MXNet 1.x's `gluon.nn.basic_layers`."""
import warnings

import numpy as np

from ..block import Block, HybridBlock, _fixed_graph, _repr_children
from .activations import Activation

__all__ = ["Sequential", "HybridSequential", "Dense", "Dropout", "Embedding", "BatchNorm", "BatchNormReLU", "InstanceNorm",
           "LayerNorm", "GroupNorm", "Flatten", "Lambda", "HybridLambda"]


class _Stack:
    """What Sequential and HybridSequential share: children added in order, indexable."""

    def add(self, *blocks):
        for b in blocks:
            self.register_child(b)

    def __getitem__(self, key):
        layers = list(self._children.values())[key]
        if isinstance(layers, list):
            net = type(self)(prefix=self._prefix)
            with net.name_scope():
                net.add(*layers)
            return net
        return layers

    def __len__(self):
        return len(self._children)

    def __repr__(self):
        return _repr_children(type(self).__name__, self._children.items())


class Sequential(_Stack, Block):
    """Runs its children one after the other."""

    def forward(self, x):
        for block in self._children.values():
            x = block(x)
        return x

    def hybridize(self, active=True, **kwargs):
        # Each child then runs as a graph of its own, with Python between them.
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn("All children of this Sequential layer '%s' are HybridBlocks. Consider using "
                          "HybridSequential for the best performance." % self.prefix, stacklevel=2)
        super().hybridize(active, **kwargs)


class HybridSequential(_Stack, HybridBlock):
    """Sequential for HybridBlocks: hybridizes as one graph."""

    @_fixed_graph
    def hybrid_forward(self, F, x):
        for block in self._children.values():
            x = block(x)
        return x


class Dense(HybridBlock):
    """A fully connected layer: activation(dot(x, weight.T) + bias)."""

    def __init__(self, units, activation=None, use_bias=True, flatten=True, dtype="float32", weight_initializer=None,
                 bias_initializer="zeros", in_units=0, **kwargs):
        super().__init__(**kwargs)
        self._flatten = flatten
        with self.name_scope():
            self._units = units
            self._in_units = in_units
            self.weight = self.params.get("weight", shape=(units, in_units), init=weight_initializer, dtype=dtype,
                                          allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=(units,), init=bias_initializer, dtype=dtype,
                                        allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") if activation is not None else None

    @_fixed_graph
    def hybrid_forward(self, F, x, weight, bias=None):
        if bias is None:
            act = F.FullyConnected(x, weight, no_bias=True, num_hidden=self._units, flatten=self._flatten, name="fwd")
        else:
            act = F.FullyConnected(x, weight, bias, num_hidden=self._units, flatten=self._flatten, name="fwd")
        return self.act(act) if self.act is not None else act

    def __repr__(self):
        shape = self.weight.shape
        return "%s(%s -> %s, %s)" % (type(self).__name__, shape[1] if shape[1] else None, shape[0],
                                     "linear" if self.act is None else self.act)


class Dropout(HybridBlock):
    """Zeroes inputs with probability `rate` in training (scaling the rest by 1/(1-rate))."""

    def __init__(self, rate, axes=(), **kwargs):
        super().__init__(**kwargs)
        self._rate = rate
        self._axes = axes

    @_fixed_graph
    def hybrid_forward(self, F, x):
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd")
        return F.identity(x)

    def __repr__(self):
        return "%s(p = %s, axes=%s)" % (type(self).__name__, self._rate, self._axes)


def _repr_settings(block, settings, in_channels):
    """MXNet's repr of the normalisation layers: `Name(k=repr(v), ..., in_channels=n)`."""
    return "%s(%s, in_channels=%s)" % (type(block).__name__, ", ".join("%s=%r" % kv for kv in settings.items()),
                                       in_channels)


class BatchNorm(HybridBlock):
    """Batch normalisation over `axis` with running statistics for inference."""

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True, use_global_stats=False,
                 beta_initializer="zeros", gamma_initializer="ones", running_mean_initializer="zeros",
                 running_variance_initializer="ones", in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"axis": axis, "eps": epsilon, "momentum": momentum, "fix_gamma": not scale,
                        "use_global_stats": use_global_stats}
        self.in_channels = in_channels
        self.gamma = self.params.get("gamma", grad_req="write" if scale else "null", shape=(in_channels,),
                                     init=gamma_initializer, allow_deferred_init=True, differentiable=scale)
        self.beta = self.params.get("beta", grad_req="write" if center else "null", shape=(in_channels,),
                                    init=beta_initializer, allow_deferred_init=True, differentiable=center)
        self.running_mean = self.params.get("running_mean", grad_req="null", shape=(in_channels,),
                                            init=running_mean_initializer, allow_deferred_init=True,
                                            differentiable=False)
        self.running_var = self.params.get("running_var", grad_req="null", shape=(in_channels,),
                                           init=running_variance_initializer, allow_deferred_init=True,
                                           differentiable=False)

    def cast(self, dtype):
        if np.dtype(dtype).name == "float16":
            dtype = "float32"  # the statistics stay in float32, as MXNet
        super().cast(dtype)

    @_fixed_graph
    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return F.BatchNorm(x, gamma, beta, running_mean, running_var, name="fwd", **self._kwargs)

    def __repr__(self):
        return _repr_settings(self, self._kwargs, self.gamma.shape[0] or None)


class BatchNormReLU(BatchNorm):
    """BatchNorm followed by ReLU, computed by one operator (MXNet's contrib.BatchNormWithReLU);
    the parameters are BatchNorm's."""

    @_fixed_graph
    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return F.contrib.BatchNormWithReLU(x, gamma, beta, running_mean, running_var, name="fwd", **self._kwargs)


class InstanceNorm(HybridBlock):
    def __init__(self, axis=1, epsilon=1e-5, center=True, scale=False, beta_initializer="zeros",
                 gamma_initializer="ones", in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._axis = axis
        self._kwargs = {"eps": epsilon}
        self._settings = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self.gamma = self.params.get("gamma", grad_req="write" if scale else "null", shape=(in_channels,),
                                     init=gamma_initializer, allow_deferred_init=True)
        self.beta = self.params.get("beta", grad_req="write" if center else "null", shape=(in_channels,),
                                    init=beta_initializer, allow_deferred_init=True)

    @_fixed_graph
    def hybrid_forward(self, F, x, gamma, beta):
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, name="fwd", **self._kwargs)
        # The operator normalises with channels on axis 1: move the channel axis there and back.
        x = F.swapaxes(x, dim1=1, dim2=self._axis)
        return F.swapaxes(F.InstanceNorm(x, gamma, beta, name="fwd", **self._kwargs), dim1=1, dim2=self._axis)

    def __repr__(self):
        return _repr_settings(self, self._settings, self.gamma.shape[0])


class LayerNorm(HybridBlock):
    def __init__(self, axis=-1, epsilon=1e-5, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"eps": epsilon, "axis": axis}
        self._settings = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self.gamma = self.params.get("gamma", grad_req="write" if scale else "null", shape=(in_channels,),
                                     init=gamma_initializer, allow_deferred_init=True)
        self.beta = self.params.get("beta", grad_req="write" if center else "null", shape=(in_channels,),
                                    init=beta_initializer, allow_deferred_init=True)

    @_fixed_graph
    def hybrid_forward(self, F, data, gamma, beta):
        return F.LayerNorm(data, gamma=gamma, beta=beta, **self._kwargs)

    def __repr__(self):
        return _repr_settings(self, self._settings, self.gamma.shape[0])


class GroupNorm(HybridBlock):
    # MXNet 1.9 scales and shifts per group, so gamma and beta have shape (num_groups,) and
    # need no input to size them.
    def __init__(self, num_groups=1, epsilon=1e-5, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"eps": epsilon, "num_groups": num_groups}
        self._settings = {"eps": epsilon, "num_groups": num_groups, "center": center, "scale": scale}
        self.gamma = self.params.get("gamma", grad_req="write" if scale else "null", shape=(num_groups,),
                                     init=gamma_initializer, allow_deferred_init=True)
        self.beta = self.params.get("beta", grad_req="write" if center else "null", shape=(num_groups,),
                                    init=beta_initializer, allow_deferred_init=True)

    @_fixed_graph
    def hybrid_forward(self, F, data, gamma, beta):
        return F.GroupNorm(data, gamma=gamma, beta=beta, **self._kwargs)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join("%s=%r" % kv for kv in self._settings.items()))


class Embedding(HybridBlock):
    """Maps integer indices to rows of a (input_dim, output_dim) weight."""

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None, sparse_grad=False, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype, "sparse_grad": sparse_grad}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim), init=weight_initializer, dtype=dtype,
                                      allow_deferred_init=True,
                                      grad_stype="row_sparse" if sparse_grad else "default")

    @_fixed_graph
    def hybrid_forward(self, F, x, weight):
        return F.Embedding(x, weight, name="fwd", **self._kwargs)

    def __repr__(self):
        return "%s(%s -> %s, %s)" % (type(self).__name__, self._kwargs["input_dim"], self._kwargs["output_dim"],
                                     self._kwargs["dtype"])


class Flatten(HybridBlock):
    """(N, d1, d2, ...) -> (N, d1*d2*...)."""

    @_fixed_graph
    def hybrid_forward(self, F, x):
        return F.Flatten(x)

    def __repr__(self):
        return type(self).__name__


class Lambda(Block):
    """Wraps a function (or the name of a weft.nd operator) as a Block."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        from ... import ndarray
        if isinstance(function, str):
            if not hasattr(ndarray, function):
                raise ValueError("Lambda: weft.nd has no function named '%s'" % function)
            function = getattr(ndarray, function)
        elif not callable(function):
            raise ValueError("Lambda: expected a function or an operator name, got %r" % (function,))
        self._func = function

    def forward(self, *args):
        return self._func(*args)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, self._func.__name__)


class HybridLambda(HybridBlock):
    """Wraps a function f(F, x, ...) (or an operator name) as a HybridBlock."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            name = function
            from ... import ndarray
            if not hasattr(ndarray, name):
                raise ValueError("HybridLambda: weft has no operator named '%s'" % name)
            self._func = lambda F, *args: getattr(F, name)(*args)
            self._func_name = name
        elif callable(function):
            self._func = function
            self._func_name = function.__name__
        else:
            raise ValueError("HybridLambda: expected a function or an operator name, got %r" % (function,))

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, self._func_name)
