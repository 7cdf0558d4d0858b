"""Parameter initializers (`weft.init`, `weft.initializer`), as in MXNet 1.x.

An initializer is called as `init(desc, arr)` and fills `arr` in place. `desc` is an
`InitDesc` (a parameter name with its symbol attributes) or, the deprecated form, a plain
name. The name decides what is filled: "*weight" gets the initializer's own rule, "*bias"
and "*beta" zeros, "*gamma" ones, and so on; a `__init__` attribute on the variable
(set by `weft.sym.Variable(init=...)`) overrides the rule for that one parameter.

Random draws go through `weft.random`, so `weft.random.seed(n)` makes them reproducible.
"""
import json
import logging
import re
import warnings

import numpy as np

from . import random
from . import registry as _registry
from .ndarray import NDArray, load as _nd_load

__all__ = ["InitDesc", "Initializer", "register", "alias", "create", "Load", "Mixed", "Zero", "One",
           "Constant", "Uniform", "Normal", "Orthogonal", "Xavier", "MSRAPrelu", "Bilinear",
           "LSTMBias", "FusedRNN"]


class InitDesc(str):
    """A parameter's name, with the attributes of its symbol (e.g. "__init__") and the
    global initializer it falls back to."""

    def __new__(cls, name, attrs=None, global_init=None):
        ret = super(InitDesc, cls).__new__(cls, name)
        ret.attrs = dict(attrs or {})
        ret.global_init = global_init
        return ret


_REGISTRY = {}


def register(klass):
    """Class decorator: makes an Initializer subclass creatable by its lower-cased name."""
    if not (isinstance(klass, type) and issubclass(klass, Initializer)):
        raise TypeError("initializer.register: expected a subclass of Initializer, got %r" % (klass,))
    name = klass.__name__.lower()
    if name in _REGISTRY and _REGISTRY[name] is not klass:
        warnings.warn("initializer %s (%s) replaces %s" % (name, klass, _REGISTRY[name]), UserWarning,
                      stacklevel=2)
    _REGISTRY[name] = klass
    return klass


def alias(*aliases):
    """Class decorator: registers the class under extra names as well."""
    def reg(klass):
        for name in aliases:
            _REGISTRY[name.lower()] = klass
        return klass
    return reg


def create(initializer, *args, **kwargs):
    """An Initializer from an instance (returned as is), a registered name ("xavier"), a
    `dumps()` string ('["xavier", {"magnitude": 2}]') or a dict of keyword arguments."""
    if isinstance(initializer, Initializer):
        if args or kwargs:
            raise ValueError("initializer.create: no arguments may follow an Initializer instance")
        return initializer
    if isinstance(initializer, dict):
        kw = dict(initializer)
        if "initializer" not in kw:
            raise ValueError("initializer.create: the dict needs an 'initializer' key, got %r" % (kw,))
        return create(kw.pop("initializer"), **kw)
    if not isinstance(initializer, str):
        raise TypeError("initializer.create: expected an Initializer, a name or a JSON string, got %r"
                        % (initializer,))
    if initializer.startswith("["):
        if args or kwargs:
            raise ValueError("initializer.create: no arguments may follow a JSON description")
        name, kw = json.loads(initializer)
        return create(name, **kw)
    if initializer.startswith("{"):
        if args or kwargs:
            raise ValueError("initializer.create: no arguments may follow a JSON description")
        return create(json.loads(initializer))
    name = initializer.lower()
    if name not in _REGISTRY:
        raise ValueError("initializer.create: %r is not a registered initializer (known: %s)"
                         % (initializer, ", ".join(sorted(_REGISTRY))))
    return _REGISTRY[name](*args, **kwargs)


class Initializer(object):
    """Base class: dispatches on the parameter's name; subclasses define `_init_weight`."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose=False, print_func=None):
        """Logs each initialised array, summarised by `print_func` (default: its norm/sqrt(size))."""
        self._verbose = verbose
        if print_func is None:
            def asum_stat(x):
                return str((x.asnumpy() ** 2).sum() ** 0.5 / max(x.size, 1) ** 0.5)
            print_func = asum_stat
        self._print_func = print_func
        return self

    def _verbose_print(self, desc, init, arr):
        if self._verbose and self._print_func:
            logging.info("Initialized %s as %s: %s", desc, init, self._print_func(arr))

    def dumps(self):
        """JSON '["name", {kwargs}]' that `create` turns back into this initializer; it is what
        `Variable(init=...)` stores in the "__init__" attribute."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __eq__(self, other):
        # Same class and arguments: the same initialisation (shared parameters compare them).
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    def __hash__(self):
        # Consistent with __eq__ (the arguments may be unhashable arrays).
        return hash(type(self))

    def __repr__(self):
        return "%s(%s)" % (self.__class__.__name__,
                           ", ".join("%s=%r" % kv for kv in sorted(self._kwargs.items())))

    def __call__(self, desc, arr):
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        _check_arr(desc, arr)
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get("__init__", "")
        if init:
            create(init)._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        for suffix, method in _DISPATCH:
            if desc.endswith(suffix):
                getattr(self, method)(desc, arr)
                self._verbose_print(desc, suffix, arr)
                return
        self._init_default(desc, arr)

    def _legacy_init(self, name, arr):
        # The pre-InitDesc form MXNet keeps for old scripts: a bare name, with a few more
        # name patterns (upsampling layers, spatial-transformer localisation).
        warnings.warn("Calling an initializer with init(str, NDArray) is deprecated; "
                      "use init(weft.init.InitDesc(...), NDArray)", DeprecationWarning, stacklevel=3)
        if not isinstance(name, str):
            raise TypeError("initializer: expected the parameter name as a str or InitDesc, got %r" % (name,))
        _check_arr(name, arr)
        if name.startswith("upsampling"):
            self._init_bilinear(name, arr)
        elif name.startswith("stn_loc") and name.endswith("weight"):
            self._init_zero(name, arr)
        elif name.startswith("stn_loc") and name.endswith("bias"):
            self._init_loc_bias(name, arr)
        else:
            for suffix, method in _LEGACY_DISPATCH:
                if name.endswith(suffix):
                    getattr(self, method)(name, arr)
                    return
            self._init_default(name, arr)

    def _init_bilinear(self, _, arr):
        arr[:] = _bilinear_kernel(arr.shape)

    def _init_loc_bias(self, name, arr):
        if arr.shape[0] != 6:
            raise ValueError("initializer: %s (a spatial-transformer localisation bias) must have 6 "
                             "elements, got shape %s" % (name, arr.shape))
        arr[:] = np.array([1.0, 0, 0, 0, 1.0, 0])

    def _init_zero(self, _, arr):
        arr[:] = 0.0

    def _init_one(self, _, arr):
        arr[:] = 1.0

    def _init_bias(self, _, arr):
        arr[:] = 0.0

    def _init_gamma(self, _, arr):
        arr[:] = 1.0

    def _init_quantized_weight(self, _, arr):
        # The int8 weights of a quantized model (`<name>_quantize`, as mx.contrib.quantization
        # names them): random integers in [-127, 127), as MXNet draws them.
        arr[:] = random.randint(-127, 127, shape=arr.shape, dtype="int32").astype(arr.dtype)

    def _init_quantized_bias(self, _, arr):
        arr[:] = 0

    def _init_beta(self, _, arr):
        arr[:] = 0.0

    def _init_weight(self, name, arr):
        raise NotImplementedError("%s must define _init_weight" % self.__class__.__name__)

    def _init_default(self, name, _):
        raise ValueError(
            "Unknown initialization pattern for %s. Default initialization is limited to "
            "\"weight\", \"bias\", \"gamma\" (1.0), \"beta\" (0.0) and the moving statistics; "
            "use weft.sym.Variable(init=weft.init.*) to set the pattern of this parameter" % name)


# mx.registry sees the same table (MXNet builds these functions on it).
_registry._REGISTRY[Initializer] = _REGISTRY


# Name suffix -> method, checked in order (first match wins).
_DISPATCH = [("weight", "_init_weight"), ("bias", "_init_bias"), ("gamma", "_init_gamma"),
             ("beta", "_init_beta"), ("moving_mean", "_init_zero"), ("moving_var", "_init_one"),
             ("moving_inv_var", "_init_zero"), ("moving_avg", "_init_zero"), ("min", "_init_zero"),
             ("max", "_init_one"), ("weight_quantize", "_init_quantized_weight"),
             ("bias_quantize", "_init_quantized_bias")]
_LEGACY_DISPATCH = [("bias", "_init_bias"), ("gamma", "_init_gamma"), ("beta", "_init_beta"),
                    ("weight", "_init_weight"), ("moving_mean", "_init_zero"),
                    ("moving_var", "_init_one"), ("moving_inv_var", "_init_zero"),
                    ("moving_avg", "_init_zero"), ("min", "_init_zero"), ("max", "_init_one"),
                    ("weight_quantize", "_init_quantized_weight"), ("bias_quantize", "_init_quantized_bias")]


def _check_arr(name, arr):
    if not isinstance(arr, NDArray):
        raise TypeError("initializer: %s must be filled into an NDArray, got %s" % (name, type(arr).__name__))


def _bilinear_kernel(shape):
    """The upsampling kernel of a deconvolution: weight (C, 1|C, K, K) whose each K x K plane
    is the outer product of a triangle filter centred on the kernel."""
    if len(shape) != 4:
        raise ValueError("Bilinear: expected a 4-d weight (out, in, kh, kw), got shape %s" % (shape,))
    f = np.ceil(shape[3] / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    x = np.arange(shape[3])
    y = np.arange(shape[2])
    plane = np.outer(1 - np.abs(y / f - c), 1 - np.abs(x / f - c))
    return np.broadcast_to(plane, shape).astype(np.float32)


class Load(object):
    """Initialises from saved arrays: a dict name -> NDArray or a .params file (the "arg:" /
    "aux:" prefixes of checkpoints are dropped); names it lacks go to `default_init`."""

    def __init__(self, param, default_init=None, verbose=False):
        if isinstance(param, str):
            param = _nd_load(param)
        if not isinstance(param, dict):
            raise TypeError("Load: expected a dict name -> NDArray or a file of named arrays, got %s"
                            % type(param).__name__)
        self.param = {}
        for name, arr in param.items():
            if name.startswith("arg:") or name.startswith("aux:"):
                name = name[4:]
            self.param[name] = arr
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name, arr):
        if name in self.param:
            src = self.param[name]
            if tuple(arr.shape) != tuple(src.shape):
                raise ValueError("Load: parameter %s cannot be initialized from loading: shape mismatch, "
                                 "target %s vs loaded %s" % (name, tuple(arr.shape), tuple(src.shape)))
            arr[:] = src
            if self.verbose:
                logging.info("Initialized %s by loading", name)
        else:
            if self.default_init is None:
                raise ValueError("Load: cannot initialize %s: not found in the loaded parameters and "
                                 "no default_init was given" % name)
            self.default_init(name, arr)
            if self.verbose:
                logging.info("Initialized %s by default", name)


class Mixed(object):
    """Routes each parameter to the initializer of the first regex pattern matching its name
    (re.match, so patterns anchor at the start; add ".*" last for a default)."""

    def __init__(self, patterns, initializers):
        patterns, initializers = list(patterns), list(initializers)
        if len(patterns) != len(initializers):
            raise ValueError("Mixed: %d patterns but %d initializers" % (len(patterns), len(initializers)))
        self.map = list(zip([re.compile(p) for p in patterns], initializers))

    def __call__(self, name, arr):
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        raise ValueError("Mixed: parameter name %s did not match any pattern (%s); consider adding "
                         "a \".*\" pattern at the end with a default initializer"
                         % (name, ", ".join(p.pattern for p, _ in self.map)))


@register
@alias("zeros")
class Zero(Initializer):
    """Fills with 0."""

    def __init__(self):
        super(Zero, self).__init__()

    def _init_weight(self, _, arr):
        arr[:] = 0


@register
@alias("ones")
class One(Initializer):
    """Fills with 1."""

    def __init__(self):
        super(One, self).__init__()

    def _init_weight(self, _, arr):
        arr[:] = 1


@register
class Constant(Initializer):
    """Fills with `value`, a number or an array broadcast to the parameter's shape."""

    def __init__(self, value):
        super(Constant, self).__init__(value=value)
        self.value = value

    def _init_weight(self, _, arr):
        arr[:] = self.value

    def dumps(self):
        val = self._kwargs["value"]
        if not np.isscalar(val):
            # Kept as a list from now on, as MXNet does: _kwargs stays JSON-serialisable.
            val = val.asnumpy().tolist() if isinstance(val, NDArray) else np.asarray(val).tolist()
            self._kwargs["value"] = val
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])


@register
class Uniform(Initializer):
    """Samples from U[-scale, scale)."""

    def __init__(self, scale=0.07):
        super(Uniform, self).__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _, arr):
        random.uniform(-self.scale, self.scale, out=arr)


@register
class Normal(Initializer):
    """Samples from N(0, sigma^2)."""

    def __init__(self, sigma=0.01):
        super(Normal, self).__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _, arr):
        random.normal(0, self.sigma, out=arr)


@register
class Orthogonal(Initializer):
    """A scaled orthogonal matrix (Saxe et al., 2013): the weight viewed as (out, prod(rest))
    gets orthonormal rows (or columns when out > prod(rest)), times `scale`."""

    def __init__(self, scale=1.414, rand_type="uniform"):
        super(Orthogonal, self).__init__(scale=scale, rand_type=rand_type)
        if rand_type not in ("uniform", "normal"):
            raise ValueError("Orthogonal: rand_type must be 'uniform' or 'normal', got %r" % (rand_type,))
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, name, arr):
        if len(arr.shape) < 2:
            raise ValueError("Orthogonal initializer cannot be applied to %s of shape %s: it needs at "
                             "least 2 dimensions" % (name, arr.shape))
        nout = arr.shape[0]
        nin = int(np.prod(arr.shape[1:]))
        if self.rand_type == "uniform":
            tmp = random.uniform(-1.0, 1.0, shape=(nout, nin)).asnumpy()
        else:
            tmp = random.normal(0.0, 1.0, shape=(nout, nin)).asnumpy()
        u, _, v = np.linalg.svd(tmp.astype(np.float64), full_matrices=False)
        res = u if u.shape == tmp.shape else v
        arr[:] = (self.scale * res).reshape(arr.shape)


@register
class Xavier(Initializer):
    """Glorot initialisation: U[-s, s] ("uniform") or N(0, s^2) ("gaussian") with
    s = sqrt(magnitude / factor), factor being (fan_in + fan_out) / 2 ("avg"), fan_in ("in")
    or fan_out ("out"); fans count the receptive field (dims after the second)."""

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super(Xavier, self).__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        if rnd_type not in ("uniform", "gaussian"):
            raise ValueError("Xavier: rnd_type must be 'uniform' or 'gaussian', got %r" % (rnd_type,))
        if factor_type not in ("avg", "in", "out"):
            raise ValueError("Xavier: factor_type must be 'avg', 'in' or 'out', got %r" % (factor_type,))
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name, arr):
        shape = arr.shape
        if len(shape) < 2:
            raise ValueError("Xavier initializer cannot be applied to vector %s (shape %s). It requires "
                             "at least 2D." % (name, shape))
        hw_scale = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        scale = float(np.sqrt(self.magnitude / factor))
        if self.rnd_type == "uniform":
            random.uniform(-scale, scale, out=arr)
        else:
            random.normal(0, scale, out=arr)


@register
class MSRAPrelu(Xavier):
    """He initialisation for PReLU nets: Gaussian Xavier with magnitude 2 / (1 + slope^2)."""

    def __init__(self, factor_type="avg", slope=0.25):
        magnitude = 2.0 / (1 + slope ** 2)
        super(MSRAPrelu, self).__init__("gaussian", factor_type, magnitude)
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Bilinear(Initializer):
    """The bilinear-upsampling kernel for Deconvolution weights."""

    def __init__(self):
        super(Bilinear, self).__init__()

    def _init_weight(self, _, arr):
        arr[:] = _bilinear_kernel(arr.shape)


@register
class LSTMBias(Initializer):
    """Zeros except the forget gate (the second of the four gate blocks i, f, c, o),
    which gets `forget_bias`."""

    def __init__(self, forget_bias=1.0):
        super(LSTMBias, self).__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, name, arr):
        if arr.shape[0] % 4:
            raise ValueError("LSTMBias: %s must hold 4 gates, its first dimension %d is not a multiple "
                             "of 4" % (name, arr.shape[0]))
        num_hidden = arr.shape[0] // 4
        arr[:] = 0.0
        arr[num_hidden:2 * num_hidden] = self.forget_bias


@register
class FusedRNN(Initializer):
    """Initialises the packed parameter vector of the fused RNN operator gate by gate, as
    MXNet does: each gate's i2h/h2h weight (named like "l0_i2h_f_weight") by `init` (or the
    global initializer), biases zero except LSTM forget-gate biases, set to `forget_bias`.

    The vector holds all weights first (per layer, per direction: i2h then h2h, gates
    stacked), then all biases in the same order, as the RNN operator expects."""

    _GATES = {"rnn_relu": [""], "rnn_tanh": [""], "lstm": ["_i", "_f", "_c", "_o"],
              "gru": ["_r", "_z", "_o"]}

    def __init__(self, init, num_hidden, num_layers, mode, bidirectional=False, forget_bias=1.0):
        if mode not in self._GATES:
            raise ValueError("FusedRNN: mode must be one of %s, got %r" % (sorted(self._GATES), mode))
        if isinstance(init, str):
            init = create(init)
        super(FusedRNN, self).__init__(init=init.dumps() if init is not None else None,
                                       num_hidden=num_hidden, num_layers=num_layers, mode=mode,
                                       bidirectional=bidirectional, forget_bias=forget_bias)
        self._init = init
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._forget_bias = forget_bias

    def _pieces(self, total):
        """(name, shape) of every gate block, in packed order; the input size is solved
        from `total` since only the first layer's i2h weights depend on it."""
        gates, h = self._GATES[self._mode], self._num_hidden
        g, dirs = len(gates), (2 if self._bidirectional else 1)
        rest = sum(dirs * ((g * h * h * dirs if layer else 0) + g * h * h + 2 * g * h)
                   for layer in range(self._num_layers))
        first = total - rest
        if first <= 0 or first % (dirs * g * h):
            raise ValueError("FusedRNN: a parameter vector of %d elements does not fit mode=%s, "
                             "num_hidden=%d, num_layers=%d, bidirectional=%s"
                             % (total, self._mode, h, self._num_layers, self._bidirectional))
        input_size = first // (dirs * g * h)
        weights, biases = [], []
        for layer in range(self._num_layers):
            in_size = input_size if layer == 0 else h * dirs
            for d in "lr"[:dirs]:
                for conn, width in (("i2h", in_size), ("h2h", h)):
                    for gate in gates:
                        weights.append(("%s%d_%s%s_weight" % (d, layer, conn, gate), (h, width)))
                        biases.append(("%s%d_%s%s_bias" % (d, layer, conn, gate), (h,)))
        return weights + biases

    def _init_weight(self, desc, arr):
        from .ndarray import zeros
        global_init = getattr(desc, "global_init", None)
        init = self._init if self._init is not None else global_init
        flat = np.zeros(arr.size, dtype=np.float32)
        pos = 0
        for name, shape in self._pieces(arr.size):
            n = int(np.prod(shape))
            if name.endswith("_bias"):
                if self._mode == "lstm" and name.endswith("_f_bias"):
                    flat[pos:pos + n] = self._forget_bias
            else:
                if init is None:
                    raise ValueError("FusedRNN: no initializer for %s of %s (give init or a global "
                                     "initializer)" % (name, desc))
                piece = zeros(shape)
                init(InitDesc(name, global_init=global_init), piece)
                flat[pos:pos + n] = piece.asnumpy().ravel()
            pos += n
        arr[:] = flat.reshape(arr.shape)
