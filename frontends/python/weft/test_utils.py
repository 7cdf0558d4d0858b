"""Helpers for tests, with the names and behaviour MXNet 1.x's test suites rely on."""
import contextlib
import functools
import os
import sys

import numpy as np

from . import ndarray as nd
from .base import _api
from .context import Context
from .ndarray.ndarray import NDArray

__all__ = ["default_context", "set_default_context", "default_dtype", "get_rtol", "get_atol",
           "almost_equal", "assert_almost_equal", "same", "rand_shape_2d", "rand_shape_3d",
           "rand_shape_nd", "rand_ndarray", "random_arrays", "np_reduce", "check_numeric_gradient",
           "numeric_grad", "check_symbolic_forward", "check_symbolic_backward", "check_consistency",
           "assert_exception", "environment", "discard_stderr", "retry"]

_default_ctx = [None]

# Tolerances by dtype when a test gives none: what each precision can honestly promise.
_RTOL = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5}
_ATOL = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20}


def default_context():
    """The context tests run on: set_default_context's, else the current one."""
    if _default_ctx[0] is not None:
        return _default_ctx[0]
    from .context import current_context
    return current_context()


def set_default_context(ctx):
    _default_ctx[0] = Context(ctx)


def default_dtype():
    return np.float32


def _as_numpy(a):
    if isinstance(a, NDArray):
        return a.asnumpy()
    return np.asarray(a)


def _tolerance(table, dtypes, given, fallback):
    if given is not None:
        return given
    vals = [table[d] for d in dtypes if d in table]
    return max(vals) if vals else fallback


def get_rtol(rtol=None, dtype=np.float32):
    return _tolerance(_RTOL, [np.dtype(dtype)], rtol, 1e-5)


def get_atol(atol=None, dtype=np.float32):
    return _tolerance(_ATOL, [np.dtype(dtype)], atol, 1e-20)


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """Whether |a - b| <= atol + rtol * |b| everywhere (same shape unless broadcasting)."""
    a, b = _as_numpy(a), _as_numpy(b)
    if not use_broadcast and a.shape != b.shape:
        return False
    rtol = _tolerance(_RTOL, [a.dtype, b.dtype], rtol, 1e-5)
    atol = _tolerance(_ATOL, [a.dtype, b.dtype], atol, 1e-20)
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Raises AssertionError naming the worst element when a and b differ beyond
    atol + rtol * |b|."""
    a_np, b_np = _as_numpy(a), _as_numpy(b)
    rtol = _tolerance(_RTOL, [a_np.dtype, b_np.dtype], rtol, 1e-5)
    atol = _tolerance(_ATOL, [a_np.dtype, b_np.dtype], atol, 1e-20)
    if not use_broadcast and a_np.shape != b_np.shape:
        raise AssertionError("shapes differ: %s %s vs %s %s" % (names[0], a_np.shape, names[1], b_np.shape))
    if np.allclose(a_np, b_np, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    a64 = np.broadcast_to(a_np, np.broadcast_shapes(a_np.shape, b_np.shape)).astype(np.float64)
    b64 = np.broadcast_to(b_np, a64.shape).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        excess = np.abs(a64 - b64) - (atol + rtol * np.abs(b64))
    excess = np.where(np.isnan(excess), np.inf, excess)
    worst = np.unravel_index(int(np.argmax(excess)), a64.shape) if a64.size else ()
    bad = int(np.sum(excess > 0))
    raise AssertionError(
        "Items are not equal (rtol=%g, atol=%g): %d of %d elements differ; worst at %s: %s=%r, %s=%r\n"
        "%s: %s\n%s: %s" % (rtol, atol, bad, a64.size, worst, names[0], a64[worst], names[1], b64[worst],
                             names[0], np.array2string(a_np, threshold=mismatches[0] * 10),
                             names[1], np.array2string(b_np, threshold=mismatches[1] * 10)))


def same(a, b):
    """Whether a and b hold exactly the same values (and shape)."""
    return bool(np.array_equal(_as_numpy(a), _as_numpy(b)))


def rand_shape_2d(dim0=10, dim1=10):
    return np.random.randint(1, dim0 + 1), np.random.randint(1, dim1 + 1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10):
    return np.random.randint(1, dim0 + 1), np.random.randint(1, dim1 + 1), np.random.randint(1, dim2 + 1)


def rand_shape_nd(num_dim, dim=10):
    return tuple(np.random.randint(1, dim + 1, size=num_dim).tolist())


def rand_ndarray(shape, stype="default", density=None, dtype=None, ctx=None, **kwargs):
    """An NDArray of uniform random values in [0, 1) (dense storage only)."""
    if stype != "default":
        raise ValueError("rand_ndarray: only stype='default' is supported, got '%s'" % stype)
    dtype = np.float32 if dtype is None else dtype
    values = np.random.uniform(0, 1, size=shape)
    if density is not None:
        values *= np.random.uniform(0, 1, size=shape) < density
    return nd.array(values.astype(dtype), ctx=ctx or default_context(), dtype=dtype)


def random_arrays(*shapes):
    """numpy float32 arrays of standard normal values, one per shape (a lone shape gives
    one array, not a list)."""
    arrays = [np.array(np.random.randn(), dtype=np.float32) if len(s) == 0
              else np.random.randn(*s).astype(np.float32) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """numpy_reduce_func applied over `axis` (an int, a tuple or None) one axis at a time,
    as MXNet's reference for reductions does."""
    if isinstance(axis, int):
        axis = [axis]
    else:
        axis = list(axis) if axis is not None else list(range(len(dat.shape)))
    ret = dat
    for i in reversed(sorted(a % dat.ndim for a in axis)):
        ret = numpy_reduce_func(ret, axis=i)
    if keepdims:
        keep_shape = list(dat.shape)
        for i in axis:
            keep_shape[i % dat.ndim] = 1
        ret = ret.reshape(tuple(keep_shape))
    return ret


def _op_name(sym):
    if isinstance(sym, str):
        return sym
    name = getattr(sym, "__name__", None)
    if name is None:
        raise TypeError("check_numeric_gradient: expected an operator name or a weft.nd operator function, got %r"
                        % (sym,))
    return name


def _forward(op, arrays, params, ctx, dtype):
    inputs = [nd.array(a, ctx=ctx, dtype=dtype) for a in arrays]
    out = nd.invoke(op, inputs, params)
    return inputs, out if isinstance(out, list) else [out]


def numeric_grad(f, inputs, eps=1e-4):
    """Central-difference gradients of the scalar function f(list of float64 arrays) with
    respect to each input."""
    grads = []
    for x in inputs:
        g = np.zeros_like(x, dtype=np.float64)
        flat, gflat = x.reshape(-1), g.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps
            fp = f(inputs)
            flat[i] = old - eps
            fm = f(inputs)
            flat[i] = old
            gflat[i] = (fp - fm) / (2 * eps)
        grads.append(g)
    return grads


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=1e-3, rtol=1e-2, atol=None,
                           grad_nodes=None, use_forward_train=True, ctx=None, grad_stype_dict=None,
                           dtype=np.float64, params=None):
    """Checks an operator's registered gradient against central differences.

    `sym` names the operator (a string or a weft.nd operator function); `location` is the
    list of input values (numpy arrays); `params` its parameters. The check projects the
    outputs on fixed random directions, so one scalar's derivatives test the whole Jacobian
    product the backward computes. `grad_nodes` (indices) restricts which inputs are checked.
    """
    op = _op_name(sym)
    ctx = ctx or default_context()
    params = dict(params or {})
    location = [np.asarray(v, dtype=dtype).copy() for v in (location.values() if isinstance(location, dict)
                                                             else location)]
    inputs, outputs = _forward(op, location, params, ctx, dtype)
    rng = np.random.RandomState(1234)
    proj = [rng.uniform(-1, 1, size=o.shape).astype(dtype) for o in outputs]

    def objective(values):
        _, outs = _forward(op, values, params, ctx, dtype)
        return float(sum(np.sum(o.asnumpy().astype(np.float64) * p) for o, p in zip(outs, proj)))

    op_handle = _api.weft_op_get(op)
    keys = [k for k, v in params.items() if v is not None]
    vals = [nd.ndarray._param_str(params[k]) for k in keys]
    head = [nd.array(p, ctx=ctx, dtype=dtype) for p in proj]
    grads = _api.weft_imperative_gradient(op_handle, len(inputs), inputs, len(outputs), outputs, head,
                                          len(keys), keys, vals)
    analytic = [None if g is None else NDArray(g).asnumpy() for g in grads]
    numeric = numeric_grad(objective, location, eps=numeric_eps)
    atol = 1e-4 if atol is None else atol
    for i, (a, n) in enumerate(zip(analytic, numeric)):
        if grad_nodes is not None and i not in grad_nodes:
            continue
        if a is None:
            raise AssertionError("check_numeric_gradient: operator '%s' gives no gradient for input %d" % (op, i))
        assert_almost_equal(a, n, rtol=rtol, atol=atol, names=("analytic %s[%d]" % (op, i),
                                                              "numeric %s[%d]" % (op, i)))


def _bind_location(sym, location, aux_states, ctx, dtype, grad_req="null"):
    """Binds `sym` to numpy/NDArray values given as a list (list_arguments order) or dict."""
    names = sym.list_arguments()
    if isinstance(location, dict):
        missing = [n for n in names if n not in location]
        if missing:
            raise ValueError("location lacks %s (the symbol's arguments are %s)" % (missing, names))
        location = [location[n] for n in names]
    if len(location) != len(names):
        raise ValueError("expected %d values (%s), got %d" % (len(names), names, len(location)))
    args = [nd.array(_as_numpy(v), ctx=ctx, dtype=dtype) for v in location]
    aux_names = sym.list_auxiliary_states()
    if isinstance(aux_states, dict):
        aux_states = [aux_states[n] for n in aux_names]
    aux = [nd.array(_as_numpy(v), ctx=ctx, dtype=dtype) for v in (aux_states or [])]
    grads = None
    if grad_req != "null":
        grads = {n: nd.zeros(a.shape, ctx=ctx, dtype=dtype) for n, a in zip(names, args)}
    return sym.bind(ctx, args, args_grad=grads, grad_req=grad_req, aux_states=aux), args, grads


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None, ctx=None,
                           equal_nan=False, dtype=np.float32):
    """Runs `sym` forward (inference mode) on `location` and compares each output with
    `expected` (a list, or a dict by output name). Returns the outputs as numpy arrays."""
    ctx = ctx or default_context()
    ex, _, _ = _bind_location(sym, location, aux_states, ctx, dtype)
    outputs = [o.asnumpy() for o in ex.forward(is_train=False)]
    if isinstance(expected, dict):
        expected = [expected[n] for n in sym.list_outputs()]
    if len(expected) != len(outputs):
        raise ValueError("expected %d outputs, the symbol has %d" % (len(expected), len(outputs)))
    for name, got, want in zip(sym.list_outputs(), outputs, expected):
        assert_almost_equal(got, _as_numpy(want), rtol, atol, names=("forward " + name, "expected"),
                            equal_nan=equal_nan)
    return outputs


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None, aux_states=None,
                            grad_req="write", ctx=None, grad_stypes=None, equal_nan=False, dtype=np.float32):
    """Runs `sym` forward (training mode) and backward with head gradients `out_grads`, and
    compares the argument gradients with `expected` (a list in list_arguments order or a
    dict by name; arguments left out of a dict are not checked). With grad_req="add" the
    gradient arrays start from random values, which the result must add to. Returns the
    gradients as numpy arrays by name."""
    if grad_stypes and any(t != "default" for t in grad_stypes.values()):
        raise NotImplementedError("check_symbolic_backward: sparse gradient storage is not supported")
    ctx = ctx or default_context()
    names = sym.list_arguments()
    if not isinstance(expected, dict):
        expected = dict(zip(names, expected))
    ex, _, grads = _bind_location(sym, location, aux_states, ctx, dtype, grad_req=grad_req)
    initial = {}
    if grad_req == "add":
        rng = np.random.RandomState(7)
        for n, g in grads.items():
            initial[n] = rng.normal(size=g.shape).astype(g.dtype)
            g[:] = initial[n]
    ex.forward(is_train=True)
    if out_grads is not None:
        out_grads = [nd.array(_as_numpy(g), ctx=ctx, dtype=dtype) for g in
                     (out_grads.values() if isinstance(out_grads, dict) else out_grads)]
    ex.backward(out_grads)
    result = {n: g.asnumpy() for n, g in grads.items()}
    for n, want in expected.items():
        want = _as_numpy(want) + initial.get(n, 0)
        assert_almost_equal(result[n], want, rtol, atol, names=("gradient of " + n, "expected"), equal_nan=equal_nan)
    return result


def check_consistency(sym, ctx_list, scale=1.0, grad_req="write", arg_params=None, aux_params=None, rtol=None,
                      atol=None, raise_on_err=True, equal_nan=False, use_uniform=False,
                      rand_type=np.float64):
    """Runs `sym` forward and backward under each entry of `ctx_list` (dicts with 'ctx',
    input shapes by name and an optional 'type_dict') on the same random values, and checks
    that outputs and gradients agree with those of the most precise entry."""
    rng = np.random.RandomState(1234)
    first = ctx_list[0]
    shapes = {k: v for k, v in first.items() if k not in ("ctx", "type_dict")}
    arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
    names, aux_names = sym.list_arguments(), sym.list_auxiliary_states()
    draw = (lambda shp: rng.uniform(-1, 1, size=shp)) if use_uniform else (lambda shp: rng.normal(size=shp))
    arg_params = dict(arg_params or {})
    for n, shp in zip(names, arg_shapes):
        arg_params.setdefault(n, (draw(shp) * scale).astype(rand_type))
    aux_params = dict(aux_params or {})
    for n, shp in zip(aux_names, aux_shapes):
        aux_params.setdefault(n, draw(shp).astype(rand_type))
    results = []
    for entry in ctx_list:
        types = entry.get("type_dict", {})
        dtype = np.dtype(types.get(names[0], np.float32)) if names else np.dtype(np.float32)
        ex = sym.simple_bind(entry["ctx"], grad_req=grad_req, type_dict=types,
                             **{k: v for k, v in entry.items() if k not in ("ctx", "type_dict")})
        for n in names:
            ex.arg_dict[n][:] = arg_params[n].astype(ex.arg_dict[n].dtype)
        for n in aux_names:
            ex.aux_dict[n][:] = aux_params[n].astype(ex.aux_dict[n].dtype)
        outs = [o.asnumpy() for o in ex.forward(is_train=True)]
        ex.backward([nd.ones(o.shape, ctx=entry["ctx"], dtype=o.dtype) for o in outs])
        grads = {n: g.asnumpy() for n, g in ex.grad_dict.items()}
        results.append((dtype, outs, grads))
    reference = max(range(len(results)), key=lambda i: results[i][0].itemsize)
    _, ref_outs, ref_grads = results[reference]
    for i, (dtype, outs, grads) in enumerate(results):
        if i == reference:
            continue
        try:
            for a, b in zip(outs, ref_outs):
                assert_almost_equal(a, b.astype(a.dtype), rtol or get_rtol(dtype=dtype), atol or get_atol(dtype=dtype),
                                    names=("output %d" % i, "reference"), equal_nan=equal_nan)
            for n, g in grads.items():
                assert_almost_equal(g, ref_grads[n].astype(g.dtype), rtol or get_rtol(dtype=dtype),
                                    atol or get_atol(dtype=dtype), names=("gradient of %s, entry %d" % (n, i),
                                                                          "reference"), equal_nan=equal_nan)
        except AssertionError:
            if raise_on_err:
                raise
    return results


def assert_exception(f, exception_type, *args, **kwargs):
    """Asserts that f(*args, **kwargs) raises exception_type."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError("%s did not raise %s" % (getattr(f, "__name__", f), exception_type.__name__))


@contextlib.contextmanager
def environment(*args):
    """Sets environment variables for the duration of a with-block: environment(name, value)
    or environment({name: value, ...}); a value of None unsets the variable."""
    if len(args) == 2:
        changes = {args[0]: args[1]}
    elif len(args) == 1 and isinstance(args[0], dict):
        changes = args[0]
    else:
        raise ValueError("environment: expected (name, value) or a dict, got %r" % (args,))
    saved = {k: os.environ.get(k) for k in changes}
    try:
        for k, v in changes.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = str(v)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def discard_stderr():
    """Discards what is written to the process's stderr (C code included) in the block."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def retry(n):
    """Decorator: runs a (randomised) test up to n times until it passes once."""
    if n < 1:
        raise ValueError("retry: expected n >= 1, got %r" % (n,))

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for attempt in range(n):
                try:
                    return f(*args, **kwargs)
                except AssertionError:
                    if attempt == n - 1:
                        raise
        return wrapper
    return decorate
