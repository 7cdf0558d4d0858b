"""GPU against CPU for the operators that had GPU code before issue 20's layers: pointwise
unary, binary, scalar and broadcast operators, reductions, dot/batch_dot, fills, copies,
the fused pointwise operator and custom operators, plus the device surface they run on
(copies between devices, waits).

Each test computes the same thing on the CPU (the reference, in float32 for float16 data
and in the data's dtype otherwise) and on gpu(0), forward and gradient, with the gradient
also accumulated (grad_req='add'). Everything skips without a GPU; GPU_OPS is importable
anyway (tests/python/test_gpu_registry.py reads it).
"""
import numpy as np
import pytest

import weft as mx
from weft import autograd, nd
from weft.test_utils import assert_almost_equal, check_consistency

pytestmark = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")

# Inputs each unary operator is defined (and well conditioned) on.
_UNARY_DOMAIN = {
    "abs": (-2, 2), "negative": (-2, 2), "relu": (-2, 2), "sigmoid": (-3, 3), "softsign": (-3, 3),
    "square": (-2, 2), "exp": (-2, 2), "expm1": (-1, 1), "sin": (-3, 3), "cos": (-3, 3), "tan": (-1, 1),
    "sinh": (-2, 2), "cosh": (-2, 2), "tanh": (-2, 2), "arctan": (-3, 3), "arcsinh": (-3, 3),
    "erf": (-2, 2), "cbrt": (0.2, 3), "rcbrt": (0.2, 3), "degrees": (-3, 3), "radians": (-90, 90),
    "sqrt": (0.2, 3), "rsqrt": (0.2, 3), "log": (0.2, 3), "log2": (0.2, 3), "log10": (0.2, 3),
    "log1p": (-0.5, 2), "reciprocal": (0.5, 2), "gamma": (0.5, 3), "gammaln": (0.5, 3),
    "arcsin": (-0.9, 0.9), "arccos": (-0.9, 0.9), "arctanh": (-0.9, 0.9), "erfinv": (-0.9, 0.9),
    "arccosh": (1.2, 3),
}
# Piecewise-constant operators: forward only (their gradient is zero everywhere it exists).
_UNARY_ROUNDING = ("ceil", "floor", "rint", "round", "fix", "trunc", "sign", "logical_not")

_BINARY_ARITH = ("elemwise_add", "elemwise_sub", "elemwise_mul", "elemwise_div", "_maximum", "_minimum",
                 "_power", "_hypot", "_mod")
_BINARY_LOGIC = ("_equal", "_not_equal", "_greater", "_greater_equal", "_lesser", "_lesser_equal",
                 "_logical_and", "_logical_or", "_logical_xor")
_BROADCAST_ARITH = ("broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div", "broadcast_maximum",
                    "broadcast_minimum", "broadcast_power", "broadcast_hypot", "broadcast_mod")
_BROADCAST_LOGIC = ("broadcast_equal", "broadcast_not_equal", "broadcast_greater", "broadcast_greater_equal",
                    "broadcast_lesser", "broadcast_lesser_equal", "broadcast_logical_and",
                    "broadcast_logical_or", "broadcast_logical_xor")
_SCALAR_OPS = ("_plus_scalar", "_minus_scalar", "_rminus_scalar", "_mul_scalar", "_div_scalar", "_rdiv_scalar",
               "_mod_scalar", "_rmod_scalar", "_power_scalar", "_rpower_scalar", "_maximum_scalar",
               "_minimum_scalar", "_hypot_scalar")
_SCALAR_LOGIC = ("_equal_scalar", "_not_equal_scalar", "_greater_scalar", "_greater_equal_scalar",
                 "_lesser_scalar", "_lesser_equal_scalar", "_logical_and_scalar", "_logical_or_scalar",
                 "_logical_xor_scalar")
_REDUCTIONS = ("sum", "mean", "prod", "nansum", "nanprod", "max", "min")
# Unary operators whose gradient is a _backward_<name> operator (the others compose theirs
# from pointwise operators listed here anyway).
_UNARY_BACKWARD = ("abs", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "cbrt", "cos", "cosh",
                   "degrees", "erf", "erfinv", "expm1", "gamma", "gammaln", "log10", "log1p", "log2", "radians",
                   "rcbrt", "reciprocal", "relu", "rsqrt", "sigmoid", "sin", "sinh", "softsign", "sqrt", "square",
                   "tan", "tanh")

GPU_OPS = (set(_UNARY_DOMAIN) | set(_UNARY_ROUNDING) | set(_BINARY_ARITH) | set(_BINARY_LOGIC)
           | set(_BROADCAST_ARITH) | set(_BROADCAST_LOGIC) | set(_SCALAR_OPS) | set(_SCALAR_LOGIC)
           | set(_REDUCTIONS) | {"_backward_" + n for n in _UNARY_BACKWARD}
           | {"_backward_" + n for n in _REDUCTIONS}
           | {"dot", "_backward_dot", "batch_dot", "_reduce_sum_to", "_copy", "_zeros", "_ones", "_full",
              "zeros_like", "ones_like", "_fused_pointwise", "Custom", "_backward_Custom"})

_FLOATS = (np.float32, np.float64, np.float16)


def _gpu():
    return mx.gpu(0)


def _fn(name):
    """The nd function of operator `name` (underscored ones live in nd._internal)."""
    f = getattr(nd, name, None)
    return f if f is not None else getattr(nd._internal, name)


def _tol(dtype):
    if dtype == np.float16:
        return 2e-2, 2e-2
    if dtype == np.float32:
        return 1e-4, 1e-5
    # CUDA's double-precision math functions and the CPU's may differ by a few ulps.
    return 1e-9, 1e-11


def _ref_dtype(dtype):
    return np.float32 if dtype == np.float16 else dtype


def _run(fn, arrays, ctx, dtype, grad_req="write", head=None, repeat=1):
    """fn(*arrays) on ctx in dtype; returns (output, [gradients]) as numpy float64. The
    head gradient is `head` (ones when None); with grad_req='add' the backward runs
    `repeat` times into the same gradient buffers."""
    xs = [nd.array(a, ctx=ctx, dtype=dtype) for a in arrays]
    for x in xs:
        x.attach_grad(grad_req=grad_req)
    for _ in range(repeat):
        with autograd.record():
            y = fn(*xs)
        y.backward(None if head is None else nd.array(head, ctx=ctx, dtype=y.dtype))
    return y.asnumpy().astype(np.float64), [x.grad.asnumpy().astype(np.float64) for x in xs]


def _compare(fn, arrays, dtype, grad=True, head=None, equal_nan=False):
    rtol, atol = _tol(dtype)
    # The reference sees exactly the GPU's inputs: rounded to dtype first.
    rounded = [np.asarray(a).astype(dtype) for a in arrays]
    if not grad:
        want = fn(*[nd.array(a, ctx=mx.cpu(), dtype=_ref_dtype(dtype)) for a in rounded]).asnumpy()
        got = fn(*[nd.array(a, ctx=_gpu(), dtype=dtype) for a in rounded])
        assert got.context == _gpu()
        assert_almost_equal(got.asnumpy().astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol,
                            equal_nan=equal_nan)
        return
    want_y, want_g = _run(fn, rounded, mx.cpu(), _ref_dtype(dtype), head=head)
    got_y, got_g = _run(fn, rounded, _gpu(), dtype, head=head)
    assert_almost_equal(got_y, want_y, rtol=rtol, atol=atol, equal_nan=equal_nan)
    for g, w in zip(got_g, want_g):
        assert_almost_equal(g, w, rtol=rtol, atol=atol, equal_nan=equal_nan)
    # Accumulation: two backward passes into the same buffers give twice the gradient.
    _, add_g = _run(fn, rounded, _gpu(), dtype, grad_req="add", head=head, repeat=2)
    for g, w in zip(add_g, want_g):
        assert_almost_equal(g, 2 * w, rtol=rtol, atol=2 * atol, equal_nan=equal_nan)


@pytest.mark.parametrize("dtype", _FLOATS)
@pytest.mark.parametrize("name", sorted(_UNARY_DOMAIN))
def test_unary(name, dtype):
    if dtype == np.float16 and name in ("gamma", "cosh", "sinh", "radians"):
        pytest.skip("float16 range or rounding makes the comparison meaningless")
    rng = np.random.RandomState(0)
    lo, hi = _UNARY_DOMAIN[name]
    x = rng.uniform(lo, hi, size=(7, 33))
    head = rng.uniform(0.5, 1.5, size=(7, 33))
    _compare(_fn(name), [x], dtype, head=head)


@pytest.mark.parametrize("dtype", _FLOATS)
@pytest.mark.parametrize("name", _UNARY_ROUNDING)
def test_unary_rounding(name, dtype):
    rng = np.random.RandomState(1)
    # Away from the half-integers where rounding modes and dtypes could disagree.
    x = rng.randint(-5, 5, size=(5, 40)) + rng.choice([-0.3, 0.2, 0.0, 0.7], size=(5, 40))
    _compare(_fn(name), [x], dtype, grad=False)


@pytest.mark.parametrize("dtype", _FLOATS)
@pytest.mark.parametrize("name", _BINARY_ARITH)
def test_binary(name, dtype):
    rng = np.random.RandomState(2)
    a = rng.uniform(0.5, 2.0, size=(6, 17))
    b = rng.uniform(0.5, 2.0, size=(6, 17))
    if name == "_mod":
        # mod's gradient jumps where a / b is an integer: keep the quotient off integers.
        b = np.full_like(a, 0.7)
        a = 0.7 * (rng.randint(0, 3, size=a.shape) + rng.uniform(0.2, 0.8, size=a.shape))
    _compare(_fn(name), [a, b], dtype, head=rng.uniform(0.5, 1.5, size=a.shape))


@pytest.mark.parametrize("dtype", _FLOATS)
@pytest.mark.parametrize("name", _BINARY_LOGIC + _BROADCAST_LOGIC)
def test_comparison(name, dtype):
    rng = np.random.RandomState(3)
    # Small integers so that equal values occur; zeros for the logical operators.
    a = rng.randint(-2, 3, size=(4, 9)).astype(np.float64)
    b = rng.randint(-2, 3, size=(4, 9) if not name.startswith("broadcast") else (1, 9)).astype(np.float64)
    _compare(_fn(name), [a, b], dtype, grad=False)


@pytest.mark.parametrize("dtype", _FLOATS)
@pytest.mark.parametrize("shapes", [((3, 4, 5), (3, 1, 5)), ((3, 4, 5), (1, 4, 1)), ((2, 1, 6), (1, 5, 6)),
                                    ((4, 5), (4, 5))])
@pytest.mark.parametrize("name", _BROADCAST_ARITH)
def test_broadcast(name, shapes, dtype):
    rng = np.random.RandomState(4)
    a = rng.uniform(0.5, 2.0, size=shapes[0])
    b = rng.uniform(0.5, 2.0, size=shapes[1])
    if name == "broadcast_mod":
        b = np.full(shapes[1], 0.7)
        a = 0.7 * (rng.randint(0, 3, size=shapes[0]) + rng.uniform(0.2, 0.8, size=shapes[0]))
    out_shape = np.broadcast(a, b).shape
    # The gradient of the smaller side sums over the broadcast axes (_reduce_sum_to).
    _compare(_fn(name), [a, b], dtype, head=rng.uniform(0.5, 1.5, size=out_shape))


@pytest.mark.parametrize("dtype", _FLOATS)
@pytest.mark.parametrize("name", _SCALAR_OPS + _SCALAR_LOGIC)
def test_scalar(name, dtype):
    rng = np.random.RandomState(5)
    logic = name in _SCALAR_LOGIC
    x = rng.randint(-2, 3, size=(5, 11)).astype(np.float64) if logic else rng.uniform(0.5, 2.0, size=(5, 11))
    scalar = 1.0 if logic else 1.3
    if name == "_mod_scalar":
        x = 1.3 * (rng.randint(0, 3, size=x.shape) + rng.uniform(0.2, 0.8, size=x.shape))
    if name == "_rmod_scalar":
        # 1.3 % x jumps where 1.3 / x is an integer: keep the quotient off integers.
        x = 1.3 / (rng.randint(1, 3, size=x.shape) + rng.uniform(0.2, 0.8, size=x.shape))
    fn = _fn(name)
    _compare(lambda a: fn(a, scalar=scalar), [x], dtype, grad=not logic, head=None if logic else
             rng.uniform(0.5, 1.5, size=x.shape))


@pytest.mark.parametrize("dtype", _FLOATS)
@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True), ((0, 2), False), (-1, False)])
@pytest.mark.parametrize("name", _REDUCTIONS)
def test_reduce(name, axis, keepdims, dtype):
    rng = np.random.RandomState(6)
    # Distinct values keep max/min's gradient (which goes to the extreme element) unique;
    # values near 1 keep prod in range.
    x = 1.0 + (rng.permutation(3 * 8 * 5).reshape(3, 8, 5) - 60) / 400.0
    if name.startswith("nan"):
        x[0, 1, 2] = np.nan
    fn = _fn(name)
    kwargs = {"keepdims": keepdims}
    if axis is not None:
        kwargs["axis"] = axis
    # With a NaN in the data, both devices must put NaN (or skip it) in the same places.
    _compare(lambda a: fn(a, **kwargs), [x], dtype, equal_nan=name.startswith("nan"))


@pytest.mark.parametrize("dtype", _FLOATS)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_dot(ta, tb, dtype):
    rng = np.random.RandomState(7)
    a = rng.uniform(-1, 1, size=(13, 24) if not ta else (24, 13))
    b = rng.uniform(-1, 1, size=(24, 9) if not tb else (9, 24))
    _compare(lambda x, y: nd.dot(x, y, transpose_a=ta, transpose_b=tb), [a, b], dtype,
             head=rng.uniform(-1, 1, size=(13, 9)))


@pytest.mark.parametrize("dtype", _FLOATS)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, True)])
def test_batch_dot(ta, tb, dtype):
    rng = np.random.RandomState(8)
    a = rng.uniform(-1, 1, size=(3, 5, 7) if not ta else (3, 7, 5))
    b = rng.uniform(-1, 1, size=(3, 7, 4) if not tb else (3, 4, 7))
    _compare(lambda x, y: nd.batch_dot(x, y, transpose_a=ta, transpose_b=tb), [a, b], dtype,
             head=rng.uniform(-1, 1, size=(3, 5, 4)))


@pytest.mark.parametrize("dtype", ("float32", "float64", "float16"))
def test_fills(dtype):
    shape = (3, 70)
    for name, fn, value in (("zeros", lambda: nd.zeros(shape, ctx=_gpu(), dtype=dtype), 0),
                            ("ones", lambda: nd.ones(shape, ctx=_gpu(), dtype=dtype), 1),
                            ("full", lambda: nd.full(shape, 7, ctx=_gpu(), dtype=dtype), 7)):
        a = fn()
        assert a.context == _gpu() and a.dtype == np.dtype(dtype), name
        np.testing.assert_array_equal(a.asnumpy(), np.full(shape, value, dtype=dtype), err_msg=name)
    src = nd.array(np.arange(210).reshape(shape) % 5, ctx=_gpu(), dtype=dtype)
    np.testing.assert_array_equal(nd.zeros_like(src).asnumpy(), np.zeros(shape, dtype=dtype))
    np.testing.assert_array_equal(nd.ones_like(src).asnumpy(), np.ones(shape, dtype=dtype))


@pytest.mark.parametrize("dtype", _FLOATS)
def test_copy_op(dtype):
    rng = np.random.RandomState(9)
    x = rng.uniform(-1, 1, size=(4, 25))
    _compare(lambda a: nd._internal._copy(a), [x], dtype, head=rng.uniform(-1, 1, size=x.shape))


@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_fused_pointwise_matches_cpu(dtype):
    # A chain the executor's fusion pass turns into one _fused_pointwise node (float32 and
    # float64 only); check_consistency compares forward and every gradient.
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    chain = mx.sym.tanh(mx.sym.sin(x) * y + 0.5) * mx.sym.exp(-mx.sym.square(y)) - x / (1.5 + mx.sym.abs(y))
    shape = (16, 37)
    check_consistency(chain, [{"ctx": mx.cpu(), "x": shape, "y": shape, "type_dict": {"x": dtype, "y": dtype}},
                              {"ctx": _gpu(), "x": shape, "y": shape, "type_dict": {"x": dtype, "y": dtype}}])
    for req in ("write", "add"):
        check_consistency(chain, [{"ctx": mx.cpu(), "x": shape, "y": shape},
                                  {"ctx": _gpu(), "x": shape, "y": shape}], grad_req=req)


def test_symbolic_mixed_graph_float16():
    # Broadcast, reduction and dot nodes in one bound graph, float16 on the GPU against
    # float32 on the CPU (check_consistency takes the float32 entry as the reference).
    a, b, w = mx.sym.Variable("a"), mx.sym.Variable("b"), mx.sym.Variable("w")
    out = mx.sym.sum(mx.sym.dot(mx.sym.broadcast_mul(a, b), w), axis=1)
    shapes = {"a": (8, 12), "b": (1, 12), "w": (12, 5)}
    check_consistency(out, [dict(ctx=mx.cpu(), type_dict={k: "float32" for k in shapes}, **shapes),
                            dict(ctx=_gpu(), type_dict={k: "float16" for k in shapes}, **shapes)],
                      scale=0.5)


# ------------------------------------------------------------------ custom operators
class _Scale(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * 3 + 1)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * 3)


@mx.operator.register("weft_gpu_test_scale")
class _ScaleProp(mx.operator.CustomOpProp):
    def __init__(self):
        super(_ScaleProp, self).__init__(need_top_grad=True)

    def create_operator(self, ctx, shapes, dtypes):
        return _Scale()


def test_custom_op_on_gpu():
    rng = np.random.RandomState(10)
    x = rng.uniform(-1, 1, size=(6, 9))
    head = rng.uniform(-1, 1, size=(6, 9))
    # The input comes from GPU work queued just before (exp on the worker stream): the
    # callback's own pushes must see it finished.
    fn = lambda a: nd.Custom(nd.exp(a), op_type="weft_gpu_test_scale")
    _compare(fn, [x], np.float32, head=head)


# ------------------------------------------------------------------ the device surface
def test_device_surface():
    assert mx.context.num_gpus() == len(mx.test_utils.list_gpus()) > 0
    free, total = mx.context.gpu_memory_info(0)
    assert 0 < free <= total
    with pytest.raises(mx.base.MXNetError, match="GPU id"):
        mx.context.gpu_memory_info(mx.context.num_gpus())
    features = mx.runtime.Features()
    assert features.is_enabled("CUDA") and features.is_enabled("CUDA_RTC")
    assert not features.is_enabled("TENSORRT")
    assert mx.gpu(0).device_type == "gpu" and mx.gpu(0) != mx.cpu(0)


def test_empty_cache_returns_pooled_gpu_memory():
    ctx = _gpu()
    a = nd.ones((1024, 1024), ctx=ctx)
    a.wait_to_read()
    assert ctx.memory_stat("bytes_in_use") >= 4 * 1024 * 1024
    del a
    nd.waitall()
    # The freed block waits (parked or pooled) until its GPU work is done; empty_cache
    # waits for that work and hands everything pooled back to the driver.
    ctx.empty_cache()
    assert ctx.memory_stat("bytes_pooled") == 0


@pytest.mark.parametrize("dtype", ("float32", "float16", "int32"))
def test_copies_across_devices(dtype):
    host = (np.arange(4 * 257) % 23).reshape(4, 257).astype(dtype)
    g = nd.array(host, ctx=_gpu(), dtype=dtype)
    assert g.context == _gpu()
    # copyto / as_in_context in both directions, pinned memory included.
    back = g.as_in_context(mx.cpu())
    assert back.context == mx.cpu()
    np.testing.assert_array_equal(back.asnumpy(), host)
    pinned = nd.empty(host.shape, ctx=mx.cpu_pinned(0), dtype=dtype)
    g.copyto(pinned)
    np.testing.assert_array_equal(pinned.asnumpy(), host)
    g2 = nd.empty(host.shape, ctx=_gpu(), dtype=dtype)
    pinned.copyto(g2)
    np.testing.assert_array_equal(g2.asnumpy(), host)
    assert g.as_in_context(_gpu()) is g
    # A dtype change on the way, both directions (the conversion runs on the GPU).
    wide = g.copyto(nd.empty(host.shape, ctx=mx.cpu(), dtype="float64"))
    np.testing.assert_array_equal(wide.asnumpy(), host.astype("float64"))
    narrow = wide.copyto(nd.empty(host.shape, ctx=_gpu(), dtype=dtype))
    np.testing.assert_array_equal(narrow.asnumpy(), host)


def test_results_ordered_across_streams_without_host_waits():
    # A chain of GPU operations, copies to the host and back and in-place updates pushed
    # without any wait between them: each must see the one before it finished, whichever
    # worker stream (compute or copy) runs it. Only the final asnumpy waits.
    rng = np.random.RandomState(11)
    x = rng.uniform(-1, 1, size=(64, 129)).astype(np.float32)
    a = nd.array(x, ctx=_gpu())
    want = x.copy()
    for i in range(40):
        a = a * 1.01 + 0.5
        want = want * np.float32(1.01) + np.float32(0.5)
        if i % 7 == 3:
            h = a.as_in_context(mx.cpu())
            h += 1
            a = h.as_in_context(_gpu())
            want = want + 1
        if i % 5 == 1:
            a[:] = nd.tanh(a) * 3
            want = np.tanh(want) * 3
    assert_almost_equal(a.asnumpy(), want, rtol=1e-4, atol=1e-4)


def test_memory_reuse_after_delete_keeps_values():
    # Arrays dropped while their GPU work may still be queued give their memory back to the
    # pool only once that work is done: results computed meanwhile stay right.
    rng = np.random.RandomState(12)
    base = rng.uniform(-1, 1, size=(256, 256)).astype(np.float32)
    keep = []
    for i in range(30):
        t = nd.array(base, ctx=_gpu())
        for _ in range(3):
            t = nd.dot(t, t) * 0.01 + t
        keep.append(nd.sum(t))
        del t
    vals = [k.asscalar() for k in keep]
    assert np.allclose(vals, vals[0], rtol=1e-5)
    want = base.astype(np.float64)
    for _ in range(3):
        want = want.dot(want) * 0.01 + want
    assert_almost_equal(np.array(vals[0]), np.array(want.sum()), rtol=1e-3, atol=1e-2)


def test_waitall_waits_for_gpu_work():
    a = nd.ones((512, 512), ctx=_gpu())
    for _ in range(20):
        a = nd.dot(a, a) * (1.0 / 512)
    nd.waitall()
    # After waitall the value is final without another wait on the array's producers.
    np.testing.assert_allclose(a.asnumpy(), np.ones((512, 512)), rtol=1e-5)


def test_sync_each_op_mode(tmp_path):
    # WEFT_GPU_SYNC_EACH_OP=1 (read when the engine starts) gives the same results.
    import subprocess
    import sys
    code = ("import numpy as np, weft as mx\n"
            "a = mx.nd.array(np.arange(12.).reshape(3, 4), ctx=mx.gpu(0))\n"
            "b = mx.nd.dot(a, a.T) + 1\n"
            "print(float(b.sum().asscalar()))\n")
    want = float((np.arange(12.).reshape(3, 4).dot(np.arange(12.).reshape(3, 4).T) + 1).sum())
    for flag in ("0", "1"):
        env = dict(__import__("os").environ, WEFT_GPU_SYNC_EACH_OP=flag)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert float(out.stdout.strip().splitlines()[-1]) == want
