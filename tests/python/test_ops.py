"""Every operator family of the core against numpy on random shapes and dtypes, and every
differentiable operator's gradient against central differences."""
import math

import numpy as np
import pytest

import weft as mx
from weft import nd
from weft.test_utils import (assert_almost_equal, check_numeric_gradient, np_reduce, rand_shape_nd,
                             same)


def np_array(x, **kwargs):
    """nd.array keeping a numpy source's dtype: these tests run each kernel in the dtype of
    their data, where MXNet's nd.array would make float32 of it."""
    kwargs.setdefault("dtype", getattr(x, "dtype", None))
    return mx.nd.array(x, **kwargs)


RNG = np.random.RandomState(2024)


def _erf(x):
    return np.vectorize(math.erf)(x)


def _gamma(x):
    return np.vectorize(math.gamma)(x)


def _gammaln(x):
    return np.vectorize(math.lgamma)(x)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name -> (numpy reference, input range, differentiable)
UNARY = {
    "abs": (np.abs, (-3, 3), True), "sign": (np.sign, (-3, 3), False), "negative": (np.negative, (-3, 3), True),
    "reciprocal": (np.reciprocal, (0.5, 3), True), "square": (np.square, (-3, 3), True),
    "sqrt": (np.sqrt, (0.1, 4), True), "rsqrt": (lambda x: 1 / np.sqrt(x), (0.2, 4), True),
    "cbrt": (np.cbrt, (0.1, 4), True), "exp": (np.exp, (-2, 2), True), "expm1": (np.expm1, (-2, 2), True),
    "log": (np.log, (0.1, 4), True), "log1p": (np.log1p, (-0.5, 4), True), "log2": (np.log2, (0.1, 4), True),
    "log10": (np.log10, (0.1, 4), True), "sin": (np.sin, (-3, 3), True), "cos": (np.cos, (-3, 3), True),
    "tan": (np.tan, (-1, 1), True), "arcsin": (np.arcsin, (-0.9, 0.9), True),
    "arccos": (np.arccos, (-0.9, 0.9), True), "arctan": (np.arctan, (-3, 3), True),
    "sinh": (np.sinh, (-2, 2), True), "cosh": (np.cosh, (-2, 2), True), "tanh": (np.tanh, (-2, 2), True),
    "sigmoid": (_sigmoid, (-4, 4), True), "relu": (lambda x: np.maximum(x, 0), (-3, 3), True),
    "softsign": (lambda x: x / (1 + np.abs(x)), (-3, 3), True), "erf": (_erf, (-2, 2), True),
    "floor": (np.floor, (-3, 3), False), "ceil": (np.ceil, (-3, 3), False), "rint": (np.rint, (-3, 3), False),
    "trunc": (np.trunc, (-3, 3), False), "fix": (np.fix, (-3, 3), False),
    "round": (lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), (-3, 3), False),
    "gamma": (_gamma, (0.5, 4), True), "gammaln": (_gammaln, (0.5, 4), True),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_matches_numpy(name, dtype):
    ref, (lo, hi), _ = UNARY[name]
    x = RNG.uniform(lo, hi, size=rand_shape_nd(3, 6)).astype(dtype)
    got = getattr(nd, name)(np_array(x))
    assert got.dtype == np.dtype(dtype)
    assert_almost_equal(got, ref(x.astype(np.float64)).astype(dtype), rtol=1e-5 if dtype == np.float32 else 1e-12,
                        atol=1e-6 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("name", sorted(n for n, v in UNARY.items() if v[2]))
def test_unary_gradient(name):
    _, (lo, hi), _ = UNARY[name]
    x = RNG.uniform(lo, hi, size=(2, 3))
    if name in ("abs", "relu", "softsign"):
        x = np.where(np.abs(x) < 0.1, 0.5, x)  # away from the kink
    check_numeric_gradient(name, [x], numeric_eps=1e-5, rtol=1e-4, atol=1e-6)


def test_unary_on_views_and_zero_size():
    x = RNG.uniform(0, 1, size=(4, 5)).astype(np.float32)
    a = np_array(x)
    assert_almost_equal(nd.exp(a[1:3]), np.exp(x[1:3]), rtol=1e-6)
    assert nd.exp(nd.array(np.zeros((0, 3), np.float32))).shape == (0, 3)


BINARY = {
    "add": (np.add, (-3, 3)), "sub": (np.subtract, (-3, 3)), "mul": (np.multiply, (-3, 3)),
    "div": (np.divide, (0.5, 3)), "mod": (np.mod, (0.5, 3)), "power": (np.power, (0.5, 2)),
    "maximum": (np.maximum, (-3, 3)), "minimum": (np.minimum, (-3, 3)), "hypot": (np.hypot, (-3, 3)),
    "equal": (np.equal, (-2, 2)), "not_equal": (np.not_equal, (-2, 2)), "greater": (np.greater, (-2, 2)),
    "greater_equal": (np.greater_equal, (-2, 2)), "lesser": (np.less, (-2, 2)),
    "lesser_equal": (np.less_equal, (-2, 2)), "logical_and": (np.logical_and, (-1, 1)),
    "logical_or": (np.logical_or, (-1, 1)), "logical_xor": (np.logical_xor, (-1, 1)),
}
ELEMWISE_NAME = {"add": "elemwise_add", "sub": "elemwise_sub", "mul": "elemwise_mul", "div": "elemwise_div"}
DIFFERENTIABLE = {"add", "sub", "mul", "div", "power", "maximum", "minimum", "hypot"}

BROADCAST_SHAPES = [((3, 4), (3, 4)), ((3, 4), (1, 4)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((5,), (2, 3, 1)),
                    ((1, 1), (2, 2)), ((2, 0, 3), (2, 1, 3)), ((1,), (1,))]


def _int_inputs(ref, lshape, rshape, lo, hi):
    x = np.round(RNG.uniform(lo, hi, size=lshape), 0)
    y = np.round(RNG.uniform(lo, hi, size=rshape), 0)
    return x, y


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("lshape,rshape", BROADCAST_SHAPES)
def test_broadcast_binary_matches_numpy(name, lshape, rshape):
    ref, (lo, hi) = BINARY[name]
    x = RNG.uniform(lo, hi, size=lshape).astype(np.float32)
    y = RNG.uniform(lo, hi, size=rshape).astype(np.float32)
    if name in ("equal", "not_equal", "greater_equal", "lesser_equal"):
        x, y = _int_inputs(ref, lshape, rshape, lo, hi)
        x, y = x.astype(np.float32), y.astype(np.float32)
    got = getattr(nd, "broadcast_" + name)(np_array(x), np_array(y))
    assert_almost_equal(got, ref(x, y).astype(np.float32), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_elemwise_and_scalar_forms(name, dtype):
    ref, (lo, hi) = BINARY[name]
    if np.dtype(dtype).kind == "i" and name in ("div", "mod", "power"):
        lo, hi = 1, 4
    shape = rand_shape_nd(2, 5)
    x = RNG.uniform(lo, hi, size=shape)
    y = RNG.uniform(lo, hi, size=shape)
    if np.dtype(dtype).kind == "i" or name in ("equal", "not_equal", "greater_equal", "lesser_equal"):
        x, y = np.round(x), np.round(y)
    x, y = x.astype(dtype), y.astype(dtype)
    op = ELEMWISE_NAME.get(name, "_" + name)
    got = getattr(nd._internal, op)(np_array(x, dtype=dtype), np_array(y, dtype=dtype))
    want = ref(x, y)
    if name == "div" and np.dtype(dtype).kind == "i":
        want = np.trunc(x / y)
    assert_almost_equal(got, want.astype(dtype), rtol=1e-5, atol=1e-5)
    scalar = float(y.reshape(-1)[0]) if y.size else 2.0
    s_op = {"add": "_plus_scalar", "sub": "_minus_scalar", "mul": "_mul_scalar", "div": "_div_scalar"}.get(
        name, "_%s_scalar" % name)
    got = getattr(nd._internal, s_op)(np_array(x, dtype=dtype), scalar=scalar)
    want = ref(x, np.array(scalar, dtype=dtype))
    if name == "div" and np.dtype(dtype).kind == "i":
        want = np.trunc(x / scalar)
    assert_almost_equal(got, want.astype(dtype), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
@pytest.mark.parametrize("lshape,rshape", [((2, 3), (2, 3)), ((2, 3), (1, 3)), ((3, 1), (1, 2))])
def test_binary_gradients(name, lshape, rshape):
    _, (lo, hi) = BINARY[name]
    x = RNG.uniform(lo, hi, size=lshape)
    y = RNG.uniform(lo, hi, size=rshape)
    if name in ("maximum", "minimum"):
        y = y + 0.3 * np.sign(y - x.mean())  # no ties
    check_numeric_gradient("broadcast_" + name, [x, y], numeric_eps=1e-5, rtol=1e-4, atol=1e-6)
    if lshape == rshape:
        op = ELEMWISE_NAME.get(name, "_" + name)
        check_numeric_gradient(op, [x, y], numeric_eps=1e-5, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "float32", "float64"])
@pytest.mark.parametrize("op", ["broadcast_mod", "_mod"])
def test_mod_gradient_is_zero_for_integers_as_mxnet(op, dtype):
    # MXNet's mod gradient: (g, -g * floor(l / r)) for floating-point dtypes, zeros for
    # integer ones, even under a non-zero head gradient.
    rng = np.random.RandomState(11)
    lshape, rshape = ((3, 4), (1, 4)) if op == "broadcast_mod" else ((3, 4), (3, 4))
    l = rng.randint(1, 50, size=lshape).astype(dtype)
    r = rng.randint(1, 9, size=rshape).astype(dtype)
    if np.dtype(dtype).kind == "f":
        l += 0.25
    g = rng.randint(1, 5, size=(3, 4)).astype(dtype)
    a, b = nd.array(l, dtype=dtype), nd.array(r, dtype=dtype)
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        out = getattr(nd._internal, op)(a, b)
    out.backward(nd.array(g, dtype=dtype))
    np.testing.assert_array_equal(out.asnumpy(), np.mod(l, r))
    if np.dtype(dtype).kind == "f":
        want_l, want_r = g, -g * np.floor(l / r)
    else:
        want_l, want_r = np.zeros_like(g), np.zeros_like(g)
    assert a.grad.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(a.grad.asnumpy(), want_l)
    np.testing.assert_array_equal(b.grad.asnumpy(), want_r.sum(axis=0, keepdims=True) if rshape[0] == 1 else want_r)


@pytest.mark.parametrize("name", ["_plus_scalar", "_minus_scalar", "_rminus_scalar", "_mul_scalar", "_div_scalar",
                                  "_rdiv_scalar", "_power_scalar", "_rpower_scalar", "_maximum_scalar",
                                  "_minimum_scalar", "_hypot_scalar"])
def test_scalar_gradients(name):
    x = RNG.uniform(0.5, 2, size=(2, 3))
    check_numeric_gradient(name, [x], params={"scalar": 1.3}, numeric_eps=1e-5, rtol=1e-4, atol=1e-6)


def test_broadcast_errors_name_both_shapes():
    with pytest.raises(mx.MXNetError) as e:
        nd.broadcast_mul(nd.ones((2, 3)), nd.ones((3, 2)))
    text = str(e.value).replace(" ", "")
    assert "(2,3)" in text and "(3,2)" in text


REDUCE = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "max": np.max, "min": np.min}


@pytest.mark.parametrize("name", sorted(REDUCE))
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_match_numpy(name, axis, keepdims):
    x = RNG.uniform(0.5, 1.5, size=(3, 4, 5))
    got = getattr(nd, name)(np_array(x, dtype=np.float64), axis=axis, keepdims=keepdims)
    want = np_reduce(x, axis, keepdims, REDUCE[name])
    assert_almost_equal(got, np.asarray(want).reshape(got.shape), rtol=1e-12)


def test_reduction_exclude_and_norm_and_arg():
    x = RNG.uniform(-1, 1, size=(3, 4, 5)).astype(np.float32)
    a = np_array(x)
    assert_almost_equal(nd.sum(a, axis=1, exclude=True), x.sum(axis=(0, 2)), rtol=1e-5)
    assert_almost_equal(nd.norm(a), np.array([np.sqrt((x ** 2).sum())]), rtol=1e-5)
    assert_almost_equal(nd.norm(a, ord=1, axis=2), np.abs(x).sum(axis=2), rtol=1e-5)
    assert same(nd.argmax(a, axis=1).asnumpy(), x.argmax(axis=1).astype(np.float32))
    assert same(nd.argmin(a, axis=0).asnumpy(), x.argmin(axis=0).astype(np.float32))


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "norm"])
def test_reduction_gradients(name):
    x = RNG.uniform(0.5, 1.5, size=(2, 3, 2))
    check_numeric_gradient(name, [x], params={"axis": 1}, numeric_eps=1e-5, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_dot_and_batch_dot(ta, tb):
    a = RNG.randn(4, 5).astype(np.float32)
    b = RNG.randn(5, 3).astype(np.float32)
    a_in = a.T.copy() if ta else a
    b_in = b.T.copy() if tb else b
    got = nd.dot(np_array(a_in), np_array(b_in), transpose_a=ta, transpose_b=tb)
    assert_almost_equal(got, a @ b, rtol=1e-4, atol=1e-5)
    A = RNG.randn(3, 4, 5)
    B = RNG.randn(3, 5, 2)
    A_in = A.transpose(0, 2, 1).copy() if ta else A
    B_in = B.transpose(0, 2, 1).copy() if tb else B
    got = nd.batch_dot(np_array(A_in, dtype=np.float64), np_array(B_in, dtype=np.float64), transpose_a=ta,
                       transpose_b=tb)
    assert_almost_equal(got, A @ B, rtol=1e-10)
    check_numeric_gradient("dot", [a_in.astype(np.float64), b_in.astype(np.float64)],
                           params={"transpose_a": ta, "transpose_b": tb}, numeric_eps=1e-5, rtol=1e-4, atol=1e-6)
    check_numeric_gradient("batch_dot", [A_in, B_in], params={"transpose_a": ta, "transpose_b": tb},
                           numeric_eps=1e-5, rtol=1e-4, atol=1e-6)


def test_dot_shape_error():
    with pytest.raises(mx.MXNetError, match="dot"):
        nd.dot(nd.ones((2, 3)), nd.ones((4, 5)))


def test_matrix_ops_match_numpy():
    x = RNG.randn(2, 3, 4).astype(np.float32)
    a = np_array(x)
    assert same(nd.reshape(a, shape=(0, -1)).asnumpy(), x.reshape(2, 12))
    assert same(nd.reshape(a, shape=(-3, -2)).asnumpy(), x.reshape(6, 4))
    assert same(nd.transpose(a, axes=(2, 0, 1)).asnumpy(), x.transpose(2, 0, 1))
    assert same(nd.expand_dims(a, axis=1).asnumpy(), x[:, None])
    assert same(nd.squeeze(np_array(x[:, :1])).asnumpy(), x[:, 0])
    assert same(nd.flatten(a).asnumpy(), x.reshape(2, 12))
    assert same(nd.concat(a, a, dim=2).asnumpy(), np.concatenate([x, x], axis=2))
    assert same(nd.stack(a, a, axis=1).asnumpy(), np.stack([x, x], axis=1))
    parts = nd.split(a, num_outputs=3, axis=1)
    for p, q in zip(parts, np.split(x, 3, axis=1)):
        assert same(p.asnumpy(), q)
    assert same(nd.slice(a, begin=(0, 1, None), end=(2, 3, None), step=(1, 1, 2)).asnumpy(), x[0:2, 1:3, ::2])
    assert same(nd.slice_axis(a, axis=2, begin=1, end=-1).asnumpy(), x[:, :, 1:-1])
    assert same(nd.tile(a, reps=(1, 2, 1)).asnumpy(), np.tile(x, (1, 2, 1)))
    assert same(nd.repeat(a, repeats=2, axis=0).asnumpy(), np.repeat(x, 2, axis=0))
    assert same(nd.flip(a, axis=1).asnumpy(), x[:, ::-1])
    assert same(nd.broadcast_to(np_array(x[:1]), shape=(3, 3, 4)).asnumpy(), np.broadcast_to(x[:1], (3, 3, 4)))
    assert same(nd.reshape_like(a, nd.zeros((4, 6))).asnumpy(), x.reshape(4, 6))
    assert same(nd.shape_array(a).asnumpy(), np.array([2, 3, 4], np.int64))


@pytest.mark.parametrize("name,params,shape", [
    ("transpose", {"axes": (1, 0, 2)}, (2, 3, 2)), ("expand_dims", {"axis": 0}, (2, 3)),
    ("flatten", {}, (2, 3, 2)), ("slice", {"begin": (0, 1), "end": (2, 3)}, (2, 4)),
    ("slice_axis", {"axis": 1, "begin": 1, "end": 3}, (2, 4)), ("tile", {"reps": (2, 1)}, (2, 3)),
    ("repeat", {"repeats": 2, "axis": 1}, (2, 3)), ("flip", {"axis": 0}, (3, 2)),
    ("broadcast_to", {"shape": (3, 2, 3)}, (1, 2, 3)), ("reshape", {"shape": (3, -1)}, (2, 3)),
    ("squeeze", {}, (2, 1, 3)), ("clip", {"a_min": -0.5, "a_max": 0.5}, (3, 4)),
])
def test_matrix_op_gradients(name, params, shape):
    x = RNG.uniform(-1, 1, size=shape)
    if name == "clip":
        x = np.where(np.abs(np.abs(x) - 0.5) < 0.05, 0.2, x)
    check_numeric_gradient(name, [x], params=params, numeric_eps=1e-5, rtol=1e-4, atol=1e-6)


def test_variadic_gradients():
    x, y = RNG.randn(2, 3), RNG.randn(2, 2)
    check_numeric_gradient("concat", [x, y], params={"dim": 1, "num_args": 2}, numeric_eps=1e-5, rtol=1e-4)
    check_numeric_gradient("stack", [x, x * 2], params={"axis": 1, "num_args": 2}, numeric_eps=1e-5, rtol=1e-4)


def test_indexing_ops_match_numpy():
    x = RNG.randn(5, 4).astype(np.float32)
    idx = np.array([4, 0, 2, 2])
    assert same(nd.take(np_array(x), np_array(idx)).asnumpy(), x[idx])
    assert same(nd.take(np_array(x), np_array([1, 3]), axis=1).asnumpy(), x[:, [1, 3]])
    assert same(nd.take(np_array(x), np_array([7, -1]), mode="clip").asnumpy(), x[[4, 0]])
    assert same(nd.take(np_array(x), np_array([6]), mode="wrap").asnumpy(), x[[1]])
    assert same(nd.take(np_array(x), np_array([4, 0]), mode="raise").asnumpy(), x[[4, 0]])
    # As MXNet's take, 'raise' takes [0, n) only: a negative index is out of bounds too.
    for bad in (-1, 5):
        with pytest.raises(mx.base.MXNetError, match=r"take.*index %d is out of bounds.*\[0, 5\)" % bad):
            nd.take(np_array(x), np_array([0, bad]), mode="raise").asnumpy()
    p = np.array([0, 3, 1, 2, 0])
    assert same(nd.pick(np_array(x), np_array(p), axis=1).asnumpy(), x[np.arange(5), p])
    oh = nd.one_hot(np_array([1, 0, 3]), depth=4).asnumpy()
    assert same(oh, np.eye(4, dtype=np.float32)[[1, 0, 3]])
    check_numeric_gradient("take", [x.astype(np.float64), idx.astype(np.float64)], grad_nodes=[0],
                           numeric_eps=1e-5, rtol=1e-4)
    check_numeric_gradient("pick", [x.astype(np.float64), p.astype(np.float64)], params={"axis": 1},
                           grad_nodes=[0], numeric_eps=1e-5, rtol=1e-4)


def test_tensor_ops():
    x = RNG.uniform(-2, 2, size=(3, 4)).astype(np.float32)
    a = np_array(x)
    assert same(nd.cast(a, dtype="int32").asnumpy(), x.astype(np.int32))
    assert same(nd.clip(a, a_min=-1, a_max=1).asnumpy(), np.clip(x, -1, 1))
    c = x > 0
    assert same(nd.where(np_array(c), a, nd.zeros((3, 4))).asnumpy(), np.where(c, x, 0))
    assert same(nd.zeros_like(a).asnumpy(), np.zeros_like(x))
    assert same(nd.ones_like(a).asnumpy(), np.ones_like(x))
    assert same(nd.identity(a).asnumpy(), x)
    check_numeric_gradient("where", [c.astype(np.float64), x.astype(np.float64), -x.astype(np.float64)],
                           grad_nodes=[1, 2], numeric_eps=1e-5, rtol=1e-4)
    check_numeric_gradient("cast", [x.astype(np.float64)], params={"dtype": "float64"}, numeric_eps=1e-5)


def test_random_samplers_moments_and_errors():
    mx.random.seed(7)
    n = 40000
    e = nd.random.exponential(scale=2.0, shape=(n,)).asnumpy()
    assert e.min() >= 0 and abs(e.mean() - 2.0) < 0.06
    g = nd.random.gamma(alpha=3.0, beta=0.5, shape=(n,)).asnumpy()
    assert abs(g.mean() - 1.5) < 0.03 and abs(g.var() - 0.75) < 0.05
    p = nd.random.poisson(lam=4.0, shape=(n,)).asnumpy()
    assert abs(p.mean() - 4.0) < 0.06 and abs(p.var() - 4.0) < 0.15
    probs = np_array([[0.1, 0.6, 0.3]])
    m = nd.random.multinomial(probs, shape=n).asnumpy().reshape(-1)
    freq = np.bincount(m.astype(np.int64), minlength=3) / n
    assert np.allclose(freq, [0.1, 0.6, 0.3], atol=0.015)
    x = np_array(np.arange(20, dtype=np.float32).reshape(10, 2))
    s = nd.random.shuffle(x).asnumpy()
    assert sorted(s[:, 0].tolist()) == list(range(0, 20, 2)) and np.all(s[:, 1] == s[:, 0] + 1)
    # A bad distribution value is the error of the array made, raised where it is read (as
    # in MXNet, whose kernels check it), not by the call.
    bad_uniform = nd.random.uniform(2, 1, shape=(2,))
    with pytest.raises(mx.MXNetError, match="low"):
        bad_uniform.asnumpy()
    bad_normal = nd.random.normal(0, -1, shape=(2,))
    downstream = nd.dot(bad_normal.reshape((1, 2)), bad_normal.reshape((2, 1)))
    with pytest.raises(mx.MXNetError, match="scale"):
        downstream.asnumpy()
    with pytest.raises(mx.MXNetError, match="scale"):
        nd.random.normal(0, -1, shape=(2,)).wait_to_read()
    assert (nd.random.uniform(1.5, 1.5, shape=(3,)).asnumpy() == 1.5).all()


def test_init_ops():
    assert same(nd._internal._eye(N=3, M=4, k=1).asnumpy(), np.eye(3, 4, k=1, dtype=np.float32))
    assert_almost_equal(nd._internal._linspace(start=0, stop=1, num=5), np.linspace(0, 1, 5), rtol=1e-6)


def test_integer_reductions_match_numpy_at_every_length():
    # GCC 12's AVX-512 vectorizer once turned sum(ones(16, int32)) into 8: every length
    # around the eight-lane blocks, each integer dtype, every axis.
    for n in range(1, 70):
        for dt in ("int32", "int64", "int8", "uint8"):
            assert int(mx.nd.ones((n,), dtype=dt).sum().asscalar()) == n, (dt, n)  # n < 128 fits int8
    rng = np.random.default_rng(5)
    for dt in ("int32", "int64"):
        for shape in [(3, 1000), (1000, 3), (5, 7, 9)]:
            v = rng.integers(-50, 50, shape).astype(dt)
            a = mx.nd.array(v, dtype=dt)
            for ax in [None, 0, len(shape) - 1]:
                for op in ("sum", "max", "min"):
                    got = getattr(mx.nd, op)(a) if ax is None else getattr(mx.nd, op)(a, axis=ax)
                    np.testing.assert_array_equal(got.asnumpy().reshape(np.shape(getattr(np, op)(v, axis=ax))),
                                                  getattr(np, op)(v, axis=ax).astype(dt))
            assert float(mx.nd.mean(mx.nd.ones(shape, dtype=dt)).asscalar()) == 1
