"""CPU against GPU for BlockGrad, MakeLoss, shape_array, size_array, norm, Pad, UpSampling
(nearest with several inputs, bilinear with its weight), SequenceMask, SequenceLast,
SequenceReverse, L2Normalization and LRN: forward outputs and gradients (written and
accumulated with grad_req='add'), float32 and float16, float64 where the CPU takes it, over
several parameter combinations. _sample_multinomial draws the same samples on both devices
after the same mx.random.seed. Skips without a GPU."""
import numpy as np
import pytest

import weft as mx
from weft import nd
from weft.test_utils import assert_almost_equal

pytestmark = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")

# Every operator that has GPU code checked here, forward and backward.
GPU_OPS = {
    "BlockGrad",
    "MakeLoss", "_backward_MakeLoss",
    "shape_array", "size_array",
    "norm", "_backward_norm",
    "Pad", "_backward_Pad",
    "UpSampling", "_backward_UpSampling",
    "SequenceMask", "_backward_SequenceMask",
    "SequenceLast", "_backward_SequenceLast",
    "SequenceReverse",
    "L2Normalization", "_backward_L2Normalization",
    "LRN", "_backward_LRN",
    "_sample_multinomial",
}

RNG = np.random.RandomState(21)
TOL = {np.float16: (2e-2, 2e-2), np.float32: (1e-4, 1e-5), np.float64: (1e-9, 1e-10)}
DTYPES = [np.float32, np.float16, np.float64]
REQS = ["write", "add"]


def gpu():
    return mx.gpu(0)


def run(sym, ctx, values, dtype, grad_req, no_grad, head, init_grad, int_inputs):
    """Binds `sym` on `ctx` with `values` (numpy, by argument name; float arguments in `dtype`,
    those named in int_inputs in their own dtype), runs forward in training mode and backward
    with the head gradients `head`, the gradients starting from `init_grad` under
    grad_req='add'. Returns (outputs, gradients by name)."""
    names = sym.list_arguments()
    types = {n: (values[n].dtype if n in int_inputs else dtype) for n in names}
    reqs = {n: ("null" if n in no_grad or n in int_inputs else grad_req) for n in names}
    ex = sym.simple_bind(ctx, grad_req=reqs, type_dict=types, **{n: values[n].shape for n in names})
    for n in names:
        ex.arg_dict[n][:] = values[n].astype(types[n])
    if grad_req == "add":
        for n in names:
            if reqs[n] != "null":
                ex.grad_dict[n][:] = init_grad[n].astype(dtype)
    outs = ex.forward(is_train=True)
    ex.backward([nd.array(h, ctx=ctx, dtype=o.dtype) for h, o in zip(head, outs)])
    grads = {n: ex.grad_dict[n].asnumpy() for n in names if reqs[n] != "null"}
    return [o.asnumpy() for o in outs], grads


def compare(sym, values, dtype, grad_req="write", no_grad=(), int_inputs=(), tol=None):
    """Runs `sym` on the CPU and on the GPU with the same values and random head gradients and
    checks that outputs and gradients agree. Returns the CPU's outputs and gradients."""
    _, out_shapes, _ = sym.infer_shape(**{k: v.shape for k, v in values.items()})
    head = [RNG.uniform(0.5, 1.5, size=s) for s in out_shapes]
    init = {n: RNG.normal(size=v.shape) for n, v in values.items()}
    c_out, c_grad = run(sym, mx.cpu(), values, dtype, grad_req, no_grad, head, init, int_inputs)
    g_out, g_grad = run(sym, gpu(), values, dtype, grad_req, no_grad, head, init, int_inputs)
    rtol, atol = tol or TOL[dtype]
    assert len(c_out) == len(g_out)
    for i, (c, g) in enumerate(zip(c_out, g_out)):
        assert g.dtype == c.dtype
        assert_almost_equal(g, c, rtol=rtol, atol=atol, names=("gpu output %d" % i, "cpu output %d" % i))
    assert c_grad.keys() == g_grad.keys()
    for n in c_grad:
        assert_almost_equal(g_grad[n], c_grad[n], rtol=rtol, atol=atol, names=("gpu grad " + n, "cpu grad " + n))
    return c_out, c_grad


# ---------------------------------------------------------------- BlockGrad, MakeLoss
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("req", REQS)
def test_block_grad(dtype, req):
    x = mx.sym.var("x")
    sym = mx.sym.BlockGrad(x) + mx.sym.stop_gradient(x * 2) + x
    values = {"x": RNG.normal(size=(3, 5, 7))}
    out, grads = compare(sym, values, dtype, req)
    # Only the last term passes a gradient.
    assert_almost_equal(out[0], 4 * values["x"].astype(dtype), rtol=TOL[dtype][0], atol=TOL[dtype][1])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("params", [
    {},
    {"grad_scale": 0.5},
    {"normalization": "batch", "grad_scale": 3.0},
    {"normalization": "valid", "valid_thresh": 0.2},
    {"normalization": "valid", "valid_thresh": 10.0},  # nothing valid: divided by 1
])
def test_make_loss(dtype, req, params):
    sym = mx.sym.MakeLoss(mx.sym.var("x") * 1.5, **params)
    values = {"x": RNG.normal(size=(6, 4, 3))}
    _, grads = compare(sym, values, dtype, req)
    if req == "write":
        y = (values["x"].astype(dtype) * dtype(1.5)).astype(np.float64)
        norm = {"null": 1, "batch": 6}.get(params.get("normalization", "null"))
        if norm is None:
            norm = max(int((y > params["valid_thresh"]).sum()), 1)
        want = np.full(values["x"].shape, 1.5 * params.get("grad_scale", 1.0) / norm)
        assert_almost_equal(grads["x"], want, rtol=TOL[dtype][0], atol=TOL[dtype][1])


def test_make_loss_alias():
    x = np.abs(RNG.normal(size=(4, 5))).astype(np.float32)
    for ctx in (mx.cpu(), gpu()):
        assert_almost_equal(nd.make_loss(nd.array(x, ctx=ctx)).asnumpy(), x)


# ---------------------------------------------------------------- shape_array, size_array
@pytest.mark.parametrize("shape", [(3,), (2, 5, 7), (1, 2, 3, 4, 5, 6, 7), tuple(range(1, 20)), (0, 4)])
@pytest.mark.parametrize("dtype", ["float32", "int32", "float16"])
def test_shape_size_array(shape, dtype):
    size = int(np.prod(shape))
    if size > 10**6:
        shape = (1,) * 17 + (2, 3)
        size = 6
    x = nd.zeros(shape, ctx=gpu(), dtype=dtype)
    s = nd.shape_array(x)
    n = nd.size_array(x)
    assert s.context == gpu() and n.context == gpu()
    assert s.dtype == np.int64 and n.dtype == np.int64
    assert s.asnumpy().tolist() == list(shape)
    assert n.asnumpy().tolist() == [size]
    assert s.asnumpy().tolist() == nd.shape_array(x.as_in_context(mx.cpu())).asnumpy().tolist()


def test_shape_array_in_graph():
    # shape_array's output feeds a GPU computation; the gradient of its input is zero.
    x = mx.sym.var("x")
    sym = mx.sym.broadcast_add(mx.sym.cast(mx.sym.shape_array(x), dtype="float32") * 2, mx.sym.sum(x))
    compare(sym, {"x": RNG.normal(size=(4, 3))}, np.float32)


# ---------------------------------------------------------------- norm
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("params,shape", [
    ({}, (4, 5)),
    ({"ord": 1}, (4, 5)),
    ({"axis": 1}, (3, 6, 5)),
    ({"axis": 0, "ord": 1, "keepdims": True}, (7, 4)),
    ({"axis": (0, 2)}, (3, 4, 5)),
    ({"axis": -1, "keepdims": True}, (2, 3, 300)),
    ({"axis": 1, "ord": 1}, (2, 2000)),
])
def test_norm(dtype, req, params, shape):
    x = RNG.normal(size=shape)
    x.flat[0] = 0  # a zero element: sign(0) = 0
    sym = mx.sym.norm(mx.sym.var("x"), **params)
    tol = (5e-2, 5e-2) if dtype == np.float16 else None
    compare(sym, {"x": x}, dtype, req, tol=tol)


@pytest.mark.parametrize("out_dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_norm_out_dtype(out_dtype, dtype):
    x = RNG.normal(size=(5, 6, 4))
    outs = []
    for ctx in (mx.cpu(), gpu()):
        xs = nd.array(x, ctx=ctx, dtype=dtype)
        xs.attach_grad()
        with mx.autograd.record():
            y = nd.norm(xs, ord=2, axis=(1, 2), out_dtype=out_dtype)
        y.backward(nd.array(np.arange(1, 6), ctx=ctx, dtype=out_dtype))
        assert y.dtype == np.dtype(out_dtype)
        outs.append((y.asnumpy(), xs.grad.asnumpy()))
    t = 2e-2 if np.float16 in (dtype, np.dtype(out_dtype).type) else 1e-5
    assert_almost_equal(outs[1][0], outs[0][0], rtol=t, atol=t)
    assert_almost_equal(outs[1][1], outs[0][1], rtol=t, atol=t)


def test_norm_all_zero_row():
    # |x|_2 = 0: the gradient is 0, not NaN, on both devices.
    x = np.zeros((3, 4), dtype=np.float32)
    x[1] = RNG.normal(size=4)
    compare(mx.sym.norm(mx.sym.var("x"), axis=1), {"x": x}, np.float32)


# ---------------------------------------------------------------- Pad
PAD_CASES = [
    ((2, 3, 4, 5), (0, 0, 0, 0, 1, 2, 3, 1)),
    ((1, 2, 5, 4), (0, 0, 0, 0, 0, 0, 3, 3)),
    ((2, 2, 3, 4, 5), (0, 0, 0, 0, 1, 2, 2, 0, 1, 4)),
    ((1, 1, 6, 1), (0, 0, 0, 0, 4, 5, 0, 0)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
@pytest.mark.parametrize("shape,pad_width", PAD_CASES)
def test_pad(dtype, req, mode, shape, pad_width):
    if mode == "reflect" and any(pad_width[2 * d] >= shape[d] or pad_width[2 * d + 1] >= shape[d]
                                 for d in range(2, len(shape))):
        pad_width = tuple(min(p, shape[i // 2] - 1) for i, p in enumerate(pad_width))
    params = {"mode": mode, "pad_width": pad_width}
    if mode == "constant":
        params["constant_value"] = 1.25
    sym = mx.sym.Pad(mx.sym.var("x"), **params)
    x = RNG.normal(size=shape)
    out, _ = compare(sym, {"x": x}, dtype, req)
    pairs = [(pad_width[2 * d], pad_width[2 * d + 1]) for d in range(len(shape))]
    want = np.pad(x.astype(dtype), pairs, mode=mode, **({"constant_values": 1.25} if mode == "constant" else {}))
    assert_almost_equal(out[0], want, rtol=TOL[dtype][0], atol=TOL[dtype][1])


def test_pad_matches_numpy_on_gpu():
    x = RNG.normal(size=(2, 3, 4, 5)).astype(np.float32)
    pw = (0, 0, 0, 0, 2, 3, 3, 1)
    pairs = [(pw[2 * d], pw[2 * d + 1]) for d in range(4)]
    for mode in ("constant", "edge", "reflect"):
        kw = {"constant_value": -2.0} if mode == "constant" else {}
        got = nd.Pad(nd.array(x, ctx=gpu()), mode=mode, pad_width=pw, **kw).asnumpy()
        want = np.pad(x, pairs, mode=mode, **({"constant_values": -2.0} if mode == "constant" else {}))
        assert_almost_equal(got, want)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_pad_int_forward(dtype):
    x = RNG.randint(-50, 50, size=(2, 2, 3, 4))
    pw = (0, 0, 0, 0, 1, 2, 2, 1)
    for mode in ("constant", "edge", "reflect"):
        c = nd.Pad(nd.array(x, dtype=dtype), mode=mode, pad_width=pw, constant_value=7).asnumpy()
        g = nd.Pad(nd.array(x, ctx=gpu(), dtype=dtype), mode=mode, pad_width=pw, constant_value=7).asnumpy()
        assert g.dtype == c.dtype
        assert (g == c).all()


# ---------------------------------------------------------------- UpSampling
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("scale", [1, 2, 3])
def test_upsampling_nearest_one(dtype, req, scale):
    sym = mx.sym.UpSampling(mx.sym.var("x"), scale=scale, sample_type="nearest", num_args=1)
    compare(sym, {"x": RNG.normal(size=(2, 3, 4, 5))}, dtype, req)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("mode", ["concat", "sum"])
def test_upsampling_nearest_multi(dtype, req, mode):
    c2 = 3 if mode == "sum" else 2
    a, b, c = mx.sym.var("a"), mx.sym.var("b"), mx.sym.var("c")
    sym = mx.sym.UpSampling(a, b, c, scale=2, sample_type="nearest", num_args=3, multi_input_mode=mode)
    values = {"a": RNG.normal(size=(2, 3, 4, 6)), "b": RNG.normal(size=(2, c2, 2, 3)),
              "c": RNG.normal(size=(2, 3, 8, 12))}
    out, _ = compare(sym, values, dtype, req)
    assert out[0].shape == ((2, 3, 8, 12) if mode == "sum" else (2, 3 + c2 + 3, 8, 12))


def bilinear_weight(channels, scale):
    k = 2 * scale - scale % 2
    f = np.ceil(k / 2.0)
    c = (2 * f - 1 - f % 2) / (2.0 * f)
    og = np.ogrid[:k, :k]
    w = (1 - np.abs(og[0] / f - c)) * (1 - np.abs(og[1] / f - c))
    return np.tile(w, (channels, 1, 1, 1)) + RNG.uniform(-0.1, 0.1, size=(channels, 1, k, k))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("scale,shape", [(2, (2, 3, 4, 5)), (3, (1, 2, 3, 3)), (4, (2, 1, 5, 2)), (1, (2, 2, 3, 3))])
def test_upsampling_bilinear(dtype, req, scale, shape):
    data, weight = mx.sym.var("data"), mx.sym.var("weight")
    sym = mx.sym.UpSampling(data, weight, scale=scale, sample_type="bilinear", num_args=2, num_filter=shape[1])
    values = {"data": RNG.normal(size=shape), "weight": bilinear_weight(shape[1], scale)}
    tol = (5e-2, 5e-2) if dtype == np.float16 else None
    out, _ = compare(sym, values, dtype, req, tol=tol)
    assert out[0].shape == (shape[0], shape[1], shape[2] * scale, shape[3] * scale)


# ---------------------------------------------------------------- SequenceMask/Last/Reverse
def seq_values(shape, axis, ldtype, lengths):
    b = shape[1 - axis]
    return {"data": RNG.normal(size=shape), "len": np.array(lengths[:b], dtype=ldtype)}


# Lengths out of range are clipped: 0 and negative, fractional (truncated), above T.
LENGTHS = [3, 0, 5, 2.7, -1, 9, 1]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("axis,shape", [(0, (5, 4, 3)), (1, (4, 5, 3)), (0, (5, 7)), (1, (7, 5, 2, 2))])
@pytest.mark.parametrize("ldtype", [np.float32, np.int32, None])
@pytest.mark.parametrize("value", [0.0, -3.5])
def test_sequence_mask(dtype, req, axis, shape, ldtype, value):
    data = mx.sym.var("data")
    if ldtype is None:
        sym = mx.sym.SequenceMask(data, axis=axis, value=value)
        values = {"data": RNG.normal(size=shape)}
        compare(sym, values, dtype, req)
        return
    sym = mx.sym.SequenceMask(data, mx.sym.var("len"), use_sequence_length=True, axis=axis, value=value)
    compare(sym, seq_values(shape, axis, ldtype, LENGTHS), dtype, req, int_inputs=("len",))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("axis,shape", [(0, (5, 4, 3)), (1, (4, 5, 3)), (0, (5, 7)), (1, (7, 5, 2, 2))])
@pytest.mark.parametrize("ldtype", [np.float32, np.int32, None])
def test_sequence_last(dtype, req, axis, shape, ldtype):
    data = mx.sym.var("data")
    if ldtype is None:
        compare(mx.sym.SequenceLast(data, axis=axis), {"data": RNG.normal(size=shape)}, dtype, req)
        return
    sym = mx.sym.SequenceLast(data, mx.sym.var("len"), use_sequence_length=True, axis=axis)
    compare(sym, seq_values(shape, axis, ldtype, LENGTHS), dtype, req, int_inputs=("len",))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("shape", [(5, 4, 3), (5, 7), (6, 3, 2, 2)])
@pytest.mark.parametrize("ldtype", [np.float32, np.int32, np.int64, None])
def test_sequence_reverse(dtype, req, shape, ldtype):
    data = mx.sym.var("data")
    if ldtype is None:
        x = RNG.normal(size=shape)
        out, _ = compare(mx.sym.SequenceReverse(data), {"data": x}, dtype, req)
        assert_almost_equal(out[0], x[::-1].astype(dtype), rtol=TOL[dtype][0], atol=TOL[dtype][1])
        return
    sym = mx.sym.SequenceReverse(data, mx.sym.var("len"), use_sequence_length=True)
    compare(sym, seq_values(shape, 0, ldtype, LENGTHS), dtype, req, int_inputs=("len",))


def test_sequence_reverse_values_on_gpu():
    x = np.arange(4 * 3, dtype=np.float32).reshape(4, 3)
    got = nd.SequenceReverse(nd.array(x, ctx=gpu()), nd.array([2, 4, 0], ctx=gpu()),
                             use_sequence_length=True).asnumpy()
    want = x.copy()
    want[:2, 0] = x[1::-1, 0]
    want[:, 1] = x[::-1, 1]
    assert_almost_equal(got, want)


# ---------------------------------------------------------------- L2Normalization, LRN
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("mode,shape", [
    ("instance", (3, 4, 5)), ("instance", (2, 600)), ("instance", (4, 3)),
    ("channel", (2, 5, 3, 4)), ("channel", (3, 7)),
    ("spatial", (2, 3, 4, 5)), ("spatial", (2, 2, 300)),
])
@pytest.mark.parametrize("eps", [1e-10, 0.5])
def test_l2_normalization(dtype, req, mode, shape, eps):
    sym = mx.sym.L2Normalization(mx.sym.var("x"), mode=mode, eps=eps)
    compare(sym, {"x": RNG.normal(size=shape)}, dtype, req)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("req", REQS)
@pytest.mark.parametrize("params,shape", [
    ({"nsize": 3}, (2, 5, 3, 4)),
    ({"nsize": 5, "alpha": 0.01, "beta": 0.5, "knorm": 1.0}, (2, 7, 4)),
    ({"nsize": 4, "alpha": 0.1, "beta": 1.25, "knorm": 3.0}, (1, 6, 2, 3)),
    ({"nsize": 1}, (3, 2)),
    ({"nsize": 9, "alpha": 0.2}, (2, 4, 5, 5)),
])
def test_lrn(dtype, req, params, shape):
    sym = mx.sym.LRN(mx.sym.var("x"), **params)
    tol = (3e-2, 3e-2) if dtype == np.float16 else None
    compare(sym, {"x": RNG.normal(size=shape)}, dtype, req, tol=tol)


# ---------------------------------------------------------------- _sample_multinomial
def distributions(rows, k, zeros=True):
    p = RNG.uniform(0, 1, size=(rows, k))
    if zeros and k > 2:
        p[:, 1] = 0  # a category that is never drawn
        p[0, -1] = 0  # the last category without mass
    return p / p.sum(axis=1, keepdims=True)


def draw(ctx, p, pdtype, **kwargs):
    return nd.random.multinomial(nd.array(p, ctx=ctx, dtype=pdtype), **kwargs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("out_dtype", ["int32", "uint8", "float16", "float32", "float64"])
@pytest.mark.parametrize("pshape,shape", [((5,), ()), ((4, 6), (3,)), ((2, 3, 7), (2, 5)), ((3, 250), (40,))])
@pytest.mark.parametrize("get_prob", [False, True])
def test_multinomial_same_draws(dtype, out_dtype, pshape, shape, get_prob):
    p = distributions(int(np.prod(pshape[:-1])), pshape[-1]).reshape(pshape)
    res = []
    for ctx in (mx.cpu(), gpu()):
        mx.random.seed(99)
        first = draw(ctx, p, dtype, shape=shape, get_prob=get_prob, dtype=out_dtype)
        second = draw(ctx, p, dtype, shape=shape, get_prob=get_prob, dtype=out_dtype)
        res.append([a.asnumpy() for a in (first if get_prob else [first]) + (second if get_prob else [second])])
    c, g = res
    for a, b in zip(c, g):
        assert a.dtype == b.dtype and a.shape == b.shape
    for i in range(0, len(c), 2 if get_prob else 1):
        # The same categories, in the first draw and in the next one.
        np.testing.assert_array_equal(g[i], c[i])
        if get_prob:
            assert_almost_equal(g[i + 1], c[i + 1], rtol=TOL[dtype][0], atol=TOL[dtype][1])
    assert c[0].shape == pshape[:-1] + shape
    # Never a category without mass.
    flat = c[0].reshape(-1, max(int(np.prod(shape)), 1)).astype(np.int64)
    rows = p.reshape(-1, pshape[-1])
    for r in range(rows.shape[0]):
        assert (rows[r][flat[r]] > 0).all()


def test_multinomial_frequencies_on_gpu():
    p = np.array([[0.1, 0.2, 0.3, 0.4], [0.7, 0.0, 0.0, 0.3]])
    got = draw(gpu(), p, np.float32, shape=(20000,)).asnumpy()
    for r in range(2):
        freq = np.bincount(got[r], minlength=4) / 20000.0
        assert_almost_equal(freq, p[r], atol=0.02, rtol=0)


def test_multinomial_into_given_output():
    # Written into an existing float32 array on each device: the same categories.
    p = distributions(3, 5)
    res = []
    for ctx in (mx.cpu(), gpu()):
        mx.random.seed(5)
        out = nd.ones((3, 4), ctx=ctx, dtype="float32")
        nd._internal._sample_multinomial(nd.array(p, ctx=ctx), shape=(4,), dtype="float32", out=out)
        res.append(out.asnumpy())
    np.testing.assert_array_equal(res[1], res[0])
