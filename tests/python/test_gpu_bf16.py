"""GPU against CPU in bfloat16 (and int8/uint8, which the CPU also accepts) for the operators
whose GPU kernels dispatch dtypes through WEFT_GPU_TYPE_SWITCH and the per-area switches:
pointwise unary, binary, scalar and broadcast operators, reductions, fills, dot/batch_dot/
FullyConnected (cuBLAS in bfloat16 with float accumulation), softmax/log_softmax, Activation,
Pooling, LayerNorm, Dropout, take/Embedding, clip/where/sort and the optimizer updates.

Both devices get the same bfloat16 inputs and compute in float, so results differ at most
by bfloat16 rounding (2^-8 relative): they are compared at 2e-2. Integer results must be
equal. NumPy has no bfloat16: arrays are made in float32, cast with astype('bfloat16') in
Weft and read back through astype('float32'). Everything skips without a GPU.

These operators' GPU code is covered (in float32/float64/float16) by the other
test_gpu_*.py modules' GPU_OPS; this module adds none.
"""
import numpy as np
import pytest

import weft as mx
from weft import autograd, nd
from weft.test_utils import assert_almost_equal

pytestmark = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")

GPU_OPS = set()

RTOL, ATOL = 2e-2, 2e-2
RNG = np.random.RandomState(20)


def _gpu():
    return mx.gpu(0)


def _fn(name):
    f = getattr(nd, name, None)
    return f if f is not None else getattr(nd._internal, name)


def _arr(x, ctx, dtype="bfloat16"):
    """x (a float32/int numpy array) on ctx in `dtype`."""
    return nd.array(x, ctx=ctx, dtype=np.float32 if dtype == "bfloat16" else dtype).astype(dtype)


def _np(a):
    return a.astype("float32").asnumpy() if a.dtype == mx.nd.bfloat16 else a.asnumpy()


def _close(got, want, rtol=RTOL, atol=ATOL):
    assert_almost_equal(_np(got), _np(want), rtol=rtol, atol=atol)


def _run(ctx, f, inputs, dtype="bfloat16", grad=True, req="write"):
    """f(*arrays) on ctx, and the inputs' gradients for a fixed head gradient (req 'add'
    starts the gradients from ones)."""
    arrs = [_arr(x, ctx, dtype) for x in inputs]
    if not grad:
        return f(*arrs), []
    for a in arrs:
        a.attach_grad(grad_req=req)
        if req == "add":
            a.grad[:] = 1
    with autograd.record():
        y = f(*arrs)
    head = _arr(np.linspace(-1, 1, y.size).reshape(y.shape).astype(np.float32), ctx, dtype)
    y.backward(head)
    return y, [a.grad for a in arrs]


def _compare(f, inputs, dtype="bfloat16", grad=True, rtol=RTOL, atol=ATOL):
    for req in (("write", "add") if grad else ("write",)):
        yc, gc = _run(mx.cpu(), f, inputs, dtype, grad, req)
        yg, gg = _run(_gpu(), f, inputs, dtype, grad, req)
        assert yg.dtype == yc.dtype and yg.context == _gpu()
        _close(yg, yc, rtol, atol)
        for a, b in zip(gg, gc):
            assert a.dtype == b.dtype
            _close(a, b, rtol, atol)


def _uniform(lo, hi, shape):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


# ---------------------------------------------------------------- pointwise, bfloat16
_UNARY = {
    "abs": (-2, 2), "negative": (-2, 2), "relu": (-2, 2), "sigmoid": (-3, 3), "softsign": (-3, 3),
    "square": (-2, 2), "exp": (-2, 2), "expm1": (-1, 1), "sin": (-3, 3), "cos": (-3, 3), "tanh": (-2, 2),
    "arctan": (-3, 3), "erf": (-2, 2), "cbrt": (0.2, 3), "sqrt": (0.2, 3), "rsqrt": (0.2, 3), "log": (0.2, 3),
    "log1p": (-0.5, 2), "reciprocal": (0.5, 2), "gammaln": (0.5, 3), "arcsin": (-0.9, 0.9),
}
_ROUNDING = ("ceil", "floor", "rint", "round", "fix", "trunc", "sign", "logical_not")


@pytest.mark.parametrize("name", sorted(_UNARY))
def test_unary_bf16(name):
    lo, hi = _UNARY[name]
    _compare(_fn(name), [_uniform(lo, hi, (5, 37))])


@pytest.mark.parametrize("name", _ROUNDING)
def test_rounding_bf16(name):
    _compare(_fn(name), [_uniform(-3, 3, (4, 29))], grad=False, rtol=0, atol=0)


@pytest.mark.parametrize("name", ["elemwise_add", "elemwise_sub", "elemwise_mul", "elemwise_div", "_maximum",
                                  "_minimum", "_hypot", "_power"])
def test_binary_bf16(name):
    lo = 0.5 if name in ("elemwise_div", "_power") else -2
    _compare(_fn(name), [_uniform(lo, 2, (6, 33)), _uniform(0.5, 2, (6, 33))])


@pytest.mark.parametrize("name", ["_equal", "_not_equal", "_greater", "_lesser_equal", "_logical_and",
                                  "_logical_xor"])
def test_binary_logic_bf16(name):
    a = np.round(_uniform(-2, 2, (5, 21)))
    b = np.round(_uniform(-2, 2, (5, 21)))
    _compare(_fn(name), [a, b], grad=False, rtol=0, atol=0)


@pytest.mark.parametrize("name", ["broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_div",
                                  "broadcast_maximum", "broadcast_power", "broadcast_greater"])
@pytest.mark.parametrize("shapes", [((4, 1, 6), (1, 5, 6)), ((3, 7), (3, 1)), ((2, 3, 4), (2, 3, 4))])
def test_broadcast_bf16(name, shapes):
    grad = name != "broadcast_greater"
    _compare(_fn(name), [_uniform(0.5, 2, shapes[0]), _uniform(0.5, 2, shapes[1])], grad=grad)


@pytest.mark.parametrize("name,scalar", [("_plus_scalar", 1.5), ("_minus_scalar", 0.25), ("_rminus_scalar", 3),
                                         ("_mul_scalar", -2.5), ("_div_scalar", 3), ("_rdiv_scalar", 2),
                                         ("_power_scalar", 2), ("_rpower_scalar", 1.5),
                                         ("_maximum_scalar", 1), ("_greater_scalar", 1)])
def test_scalar_bf16(name, scalar):
    f = _fn(name)
    _compare(lambda x: f(x, scalar=scalar), [_uniform(0.5, 2, (7, 19))], grad=name != "_greater_scalar")


# ---------------------------------------------------------------- reductions and fills
@pytest.mark.parametrize("name", ["sum", "mean", "prod", "nansum", "max", "min"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, True), ((0, 2), False), (2, False)])
def test_reduce_bf16(name, axis, keepdims):
    f = _fn(name)
    lo, hi = (0.8, 1.2) if name == "prod" else (-2, 2)
    # A sum of many bfloat16 values is rounded once, from the same float/double sum.
    _compare(lambda x: f(x, axis=axis, keepdims=keepdims), [_uniform(lo, hi, (6, 5, 40))])


def test_argmax_bf16():
    x = _uniform(-2, 2, (7, 33))
    for f in (nd.argmax, nd.argmin):
        _compare(lambda a: f(a, axis=1), [x], grad=False, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["bfloat16", "int8", "uint8"])
def test_fills(dtype):
    for f in (lambda c: nd.zeros((3, 5), ctx=c, dtype=dtype), lambda c: nd.ones((3, 5), ctx=c, dtype=dtype),
              lambda c: nd.full((3, 5), 7, ctx=c, dtype=dtype),
              lambda c: nd.zeros_like(nd.ones((2, 3), ctx=c, dtype=dtype)),
              lambda c: nd.ones_like(nd.zeros((2, 3), ctx=c, dtype=dtype))):
        want, got = f(mx.cpu()), f(_gpu())
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(_np(got), _np(want))
    np.testing.assert_array_equal(_np(nd.full((4,), 7, ctx=_gpu(), dtype=dtype)), np.full((4,), 7, np.float32))


# ---------------------------------------------------------------- int8 / uint8
_INT_UNARY = ("abs", "negative", "square", "sign", "sqrt", "relu", "logical_not")
_INT_BINARY = ("elemwise_add", "elemwise_sub", "elemwise_mul", "_maximum", "_minimum", "_mod", "_equal",
               "_greater")


def _ints(dtype, shape, lo=None, hi=None):
    lo = (-9 if dtype == "int8" else 0) if lo is None else lo
    hi = 9 if hi is None else hi
    return RNG.randint(lo, hi + 1, size=shape).astype(np.int32)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("name", _INT_UNARY)
def test_unary_int(dtype, name):
    x = _ints(dtype, (4, 31), lo=0 if name == "sqrt" else None)
    _compare(_fn(name), [x], dtype=dtype, grad=False, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("name", _INT_BINARY)
def test_binary_int(dtype, name):
    a = _ints(dtype, (5, 23))
    b = _ints(dtype, (5, 23), lo=1)  # no zero divisors for _mod
    _compare(_fn(name), [a, b], dtype=dtype, grad=False, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_broadcast_scalar_int(dtype):
    a, b = _ints(dtype, (3, 1, 7)), _ints(dtype, (1, 4, 7))
    for name in ("broadcast_add", "broadcast_mul", "broadcast_maximum", "broadcast_equal"):
        _compare(_fn(name), [a, b], dtype=dtype, grad=False, rtol=0, atol=0)
    for name, s in (("_plus_scalar", 3), ("_mul_scalar", 2), ("_minus_scalar", 1), ("_greater_scalar", 4)):
        f = _fn(name)
        _compare(lambda x: f(x, scalar=s), [a], dtype=dtype, grad=False, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("name", ["sum", "prod", "max", "min"])
def test_reduce_int(dtype, name):
    # Sums that leave the 8-bit range wrap the same way on both devices (int64 accumulation,
    # one conversion at the end).
    x = _ints(dtype, (4, 3, 50), lo=0 if name == "prod" else None, hi=2 if name == "prod" else None)
    f = _fn(name)
    for axis in (None, 2, (0, 1)):
        _compare(lambda a: f(a, axis=axis), [x], dtype=dtype, grad=False, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_take_where_clip_int(dtype):
    x = _ints(dtype, (6, 9))
    idx = np.array([[0, 5], [3, 2]], np.int32)
    cpu_i, gpu_i = nd.array(idx, ctx=mx.cpu()), nd.array(idx, ctx=_gpu())
    np.testing.assert_array_equal(nd.take(_arr(x, _gpu(), dtype), gpu_i).asnumpy(),
                                  nd.take(_arr(x, mx.cpu(), dtype), cpu_i).asnumpy())
    np.testing.assert_array_equal(nd.clip(_arr(x, _gpu(), dtype), 1, 5).asnumpy(),
                                  nd.clip(_arr(x, mx.cpu(), dtype), 1, 5).asnumpy())
    cond = (RNG.rand(6, 9) > 0.5).astype(np.float32)
    got = nd.where(nd.array(cond, ctx=_gpu()), _arr(x, _gpu(), dtype), _arr(x * 0 + 1, _gpu(), dtype))
    want = nd.where(nd.array(cond, ctx=mx.cpu()), _arr(x, mx.cpu(), dtype), _arr(x * 0 + 1, mx.cpu(), dtype))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())


# ---------------------------------------------------------------- matrix products
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_dot_bf16(ta, tb):
    a = _uniform(-1, 1, (17, 24) if not ta else (24, 17))
    b = _uniform(-1, 1, (24, 9) if not tb else (9, 24))
    _compare(lambda x, y: nd.dot(x, y, transpose_a=ta, transpose_b=tb), [a, b], rtol=3e-2, atol=3e-2)


def test_batch_dot_bf16():
    a, b = _uniform(-1, 1, (3, 8, 16)), _uniform(-1, 1, (3, 16, 5))
    _compare(nd.batch_dot, [a, b], rtol=3e-2, atol=3e-2)
    # Against float32 numpy too: float accumulation keeps the error at bfloat16 rounding.
    got = _np(nd.batch_dot(_arr(a, _gpu()), _arr(b, _gpu())))
    want = np.matmul(_np(_arr(a, mx.cpu())), _np(_arr(b, mx.cpu())))
    assert_almost_equal(got, want, rtol=3e-2, atol=3e-2)


@pytest.mark.parametrize("no_bias,flatten", [(False, True), (True, True), (False, False)])
def test_fully_connected_bf16(no_bias, flatten):
    x, w, bias = _uniform(-1, 1, (6, 2, 10)), _uniform(-1, 1, (7, 20 if flatten else 10)), _uniform(-1, 1, (7,))
    if no_bias:
        _compare(lambda a, b: nd.FullyConnected(a, b, num_hidden=7, no_bias=True, flatten=flatten), [x, w],
                 rtol=3e-2, atol=3e-2)
    else:
        _compare(lambda a, b, c: nd.FullyConnected(a, b, c, num_hidden=7, flatten=flatten), [x, w, bias],
                 rtol=3e-2, atol=3e-2)


# ---------------------------------------------------------------- nn layers
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,axis", [((5, 40), -1), ((4, 6, 3), 1), ((3, 1500), -1)])
def test_softmax_bf16(name, shape, axis):
    f = _fn(name)
    _compare(lambda x: f(x, axis=axis), [_uniform(-3, 3, shape)])


@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh", "softrelu", "softsign"])
def test_activation_bf16(act):
    _compare(lambda x: nd.Activation(x, act_type=act), [_uniform(-3, 3, (4, 5, 13))])


@pytest.mark.parametrize("pool_type", ["max", "avg", "sum"])
def test_pooling_bf16(pool_type):
    # Distinct values in each plane (multiples of 1/32, exact in bfloat16), so that no window
    # has a tie for its maximum whichever way a backend breaks ties.
    x = np.stack([RNG.permutation(81) for _ in range(6)]).reshape(2, 3, 9, 9).astype(np.float32) / 32 - 1.25
    for kernel, stride, pad in (((2, 2), (2, 2), (0, 0)), ((3, 3), (1, 1), (1, 1))):
        _compare(lambda a: nd.Pooling(a, kernel=kernel, stride=stride, pad=pad, pool_type=pool_type), [x])
    _compare(lambda a: nd.Pooling(a, pool_type=pool_type, global_pool=True, kernel=(1, 1)), [x])


@pytest.mark.parametrize("shape,axis", [((6, 32), -1), ((3, 5, 8), 1), ((4, 700), -1)])
def test_layer_norm_bf16(shape, axis):
    n = shape[axis]
    x, g, b = _uniform(-2, 2, shape), _uniform(0.5, 1.5, (n,)), _uniform(-0.5, 0.5, (n,))
    _compare(lambda a, gamma, beta: nd.LayerNorm(a, gamma, beta, axis=axis), [x, g, b], rtol=3e-2, atol=3e-2)


def _dropout(ctx, x, head, **kw):
    xa = _arr(x, ctx)
    xa.attach_grad()
    with autograd.record(train_mode=True):
        y = nd.Dropout(xa, **kw)
    y.backward(_arr(head, ctx))
    return _np(y), _np(xa.grad)


@pytest.mark.parametrize("p,axes", [(0.3, ()), (0.5, (1,))])
def test_dropout_bf16_same_mask(p, axes):
    x, head = _uniform(1, 2, (6, 8, 5)), _uniform(1, 2, (6, 8, 5))
    mx.random.seed(77)
    yc, gc = _dropout(mx.cpu(), x, head, p=p, axes=axes)
    mx.random.seed(77)
    yg, gg = _dropout(_gpu(), x, head, p=p, axes=axes)
    np.testing.assert_array_equal(yg == 0, yc == 0)
    assert 0 < np.count_nonzero(yg) < yg.size
    assert_almost_equal(yg, yc, rtol=RTOL, atol=ATOL)
    assert_almost_equal(gg, gc, rtol=RTOL, atol=ATOL)


def test_softmax_output_bf16():
    x = _uniform(-2, 2, (8, 11))
    label = RNG.randint(0, 11, size=(8,)).astype(np.float32)

    def run(ctx):
        xa = _arr(x, ctx)
        xa.attach_grad()
        with autograd.record():
            y = nd.SoftmaxOutput(xa, _arr(label, ctx))
        y.backward()
        return y, xa.grad

    (yc, gc), (yg, gg) = run(mx.cpu()), run(_gpu())
    _close(yg, yc)
    _close(gg, gc)


def test_embedding_take_bf16():
    w = _uniform(-1, 1, (10, 6))
    idx = np.array([[1, 4, 4], [9, 0, 1]], np.float32)
    for f in (lambda d, wt: nd.Embedding(d, wt, input_dim=10, output_dim=6), lambda d, wt: nd.take(wt, d)):
        outs = []
        for ctx in (mx.cpu(), _gpu()):
            wa = _arr(w, ctx)
            wa.attach_grad()
            with autograd.record():
                y = f(nd.array(idx, ctx=ctx), wa)
            y.backward(_arr(np.ones(y.shape, np.float32), ctx))
            outs.append((y, wa.grad))
        _close(outs[1][0], outs[0][0], 0, 0)
        # Repeated indices add up through the 16-bit compare-and-swap atomic.
        _close(outs[1][1], outs[0][1], 0, 0)
        assert _np(outs[1][1])[4].tolist() == [2.0] * 6


def test_sort_topk_clip_bf16():
    x = _uniform(-3, 3, (4, 50))
    for f in (lambda a: nd.sort(a, axis=1), lambda a: nd.topk(a, k=5, ret_typ="value"),
              lambda a: nd.clip(a, -1, 1), lambda a: nd.argsort(a, axis=1)):
        _compare(f, [x], grad=False, rtol=0, atol=0)


# ---------------------------------------------------------------- optimizer updates
def _update(ctx, name, states, **kw):
    w = _arr(_uniform(-1, 1, (9, 13)), ctx)
    g = _arr(np.linspace(-1, 1, 117).reshape(9, 13).astype(np.float32), ctx)
    st = [_arr(np.full((9, 13), 0.1, np.float32), ctx) for _ in range(states)]
    _fn(name)(w, g, *st, out=w, **kw)
    return [w] + st


@pytest.mark.parametrize("name,states,kw", [
    ("sgd_update", 0, dict(lr=0.1, wd=0.01)),
    ("sgd_mom_update", 1, dict(lr=0.1, momentum=0.9, wd=0.01)),
    ("adam_update", 2, dict(lr=0.01, beta1=0.9, beta2=0.99, epsilon=1e-6, wd=0.01)),
    ("rmsprop_update", 1, dict(lr=0.01, gamma1=0.9, epsilon=1e-6)),
    ("signsgd_update", 0, dict(lr=0.1)),
])
def test_update_bf16(name, states, kw):
    RNG.seed(5)
    want = _update(mx.cpu(), name, states, **kw)
    RNG.seed(5)
    got = _update(_gpu(), name, states, **kw)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype == mx.nd.bfloat16
        _close(a, b)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_pooling_int(dtype):
    x = _ints(dtype, (2, 3, 8, 8))
    for pool_type in ("max", "sum"):
        _compare(lambda a: nd.Pooling(a, kernel=(2, 2), stride=(2, 2), pool_type=pool_type), [x], dtype=dtype,
                 grad=False, rtol=0, atol=0)


def test_refusals_match_cpu():
    # Where the CPU refuses a dtype, the GPU refuses it with the same kind of error.
    for ctx in (mx.cpu(), _gpu()):
        with pytest.raises(mx.base.MXNetError, match="bool arrays are not supported"):
            nd.Pooling(nd.ones((1, 1, 4, 4), ctx=ctx, dtype="bool"), kernel=(2, 2), pool_type="max").wait_to_read()
        with pytest.raises(mx.base.MXNetError, match="floating-point dtype"):
            nd.Dropout(nd.ones((4, 4), ctx=ctx, dtype="int8"), p=0.5, mode="always").wait_to_read()


def test_multi_sgd_bf16():
    def run(ctx):
        RNG.seed(9)
        ws = [_arr(_uniform(-1, 1, s), ctx) for s in ((5, 7), (13,))]
        gs = [_arr(_uniform(-1, 1, w.shape), ctx) for w in ws]
        ms = [_arr(np.zeros(w.shape, np.float32), ctx) for w in ws]
        nd.multi_sgd_mom_update(ws[0], gs[0], ms[0], ws[1], gs[1], ms[1], out=ws, lrs=(0.1, 0.2), wds=(0.0, 0.01),
                                momentum=0.9, num_weights=2)
        return ws + ms

    for a, b in zip(run(_gpu()), run(mx.cpu())):
        assert a.dtype == b.dtype == mx.nd.bfloat16
        _close(a, b)


@pytest.mark.parametrize("len_dtype", ["bfloat16", "int8", "uint8", "int32"])
def test_softmax_length_dtypes(len_dtype):
    x = _uniform(-2, 2, (5, 9))
    lengths = np.array([1, 9, 4, 0, 7], np.int32)
    outs = []
    for ctx in (mx.cpu(), _gpu()):
        y = nd.softmax(_arr(x, ctx), _arr(lengths, ctx, len_dtype), axis=-1, use_length=True)
        outs.append(_np(y))
    assert_almost_equal(outs[1], outs[0], rtol=RTOL, atol=ATOL)
    # Entries past each row's length are zero, the others sum to one.
    for r, n in enumerate(lengths):
        assert np.all(outs[1][r, n:] == 0)
        if n:
            assert abs(outs[1][r, :n].sum() - 1) < 3e-2


@pytest.mark.parametrize("param_dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("train", [True, False])
def test_batch_norm_bf16(param_dtype, train):
    # bfloat16 data with gamma, beta and the statistics in bfloat16, or in float32 (the CPU's
    # mixed-precision case); batch statistics in training, the moving ones otherwise.
    x = _uniform(-2, 2, (4, 3, 5, 6))
    g, b = _uniform(0.5, 1.5, (3,)), _uniform(-0.5, 0.5, (3,))

    def run(ctx, req):
        arrs = [_arr(x, ctx)] + [_arr(v, ctx, param_dtype) for v in (g, b)]
        mean = _arr(np.full(3, 0.1, np.float32), ctx, param_dtype)
        var = _arr(np.full(3, 1.5, np.float32), ctx, param_dtype)
        for a in arrs:
            a.attach_grad(grad_req=req)
        with autograd.record(train_mode=train):
            y = nd.BatchNorm(arrs[0], arrs[1], arrs[2], mean, var, fix_gamma=False)
        y.backward(_arr(np.linspace(-1, 1, y.size).reshape(y.shape).astype(np.float32), ctx))
        return [y, mean, var] + [a.grad for a in arrs]

    for req in ("write", "add"):
        got, want = run(_gpu(), req), run(mx.cpu(), req)
        assert got[0].dtype == mx.nd.bfloat16
        for a, c in zip(got, want):
            assert a.dtype == c.dtype
            _close(a, c, 3e-2, 3e-2)


@pytest.mark.parametrize("f", [
    lambda x: nd.LeakyReLU(x, act_type="leaky", slope=0.2),
    lambda x: nd.LeakyReLU(x, act_type="elu", slope=0.5),
    lambda x: nd.LinearRegressionOutput(x, x * 0 + 0.5),
])
def test_more_nn_bf16(f):
    _compare(f, [_uniform(-2, 2, (6, 17))])
