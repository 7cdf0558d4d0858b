"""Registry operators on sparse arrays: MXNet 1.9's output storage types, values against
numpy, gradients, error paths, and the check that the sparse kernels never build a dense
image of a sparse operand."""
import resource

import numpy as np
import pytest

import weft as mx
from weft import nd
from weft.test_utils import check_numeric_gradient


def _rand_dense(shape, density, rng, dtype=np.float32):
    a = rng.standard_normal(shape).astype(dtype)
    a[rng.random(shape) >= density] = 0
    return a


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def _sp(a, stype):
    return nd.array(a).tostype(stype)


# ---------------------------------------------------------------- cast_storage


def test_cast_storage_op_all_pairs(rng):
    a = _rand_dense((6, 5), 0.3, rng)
    a[2] = 0
    for src in ("default", "csr", "row_sparse"):
        x = nd.array(a) if src == "default" else _sp(a, src)
        for dst in ("default", "csr", "row_sparse"):
            y = nd.cast_storage(x, stype=dst)
            assert y.stype == dst
            np.testing.assert_array_equal(y.asnumpy(), a)
    r = _sp(a, "csr").tostype("row_sparse")
    np.testing.assert_array_equal(r.indices.asnumpy(), np.flatnonzero(np.abs(a).sum(axis=1)))
    c = _sp(a, "row_sparse").tostype("csr")
    np.testing.assert_array_equal(c.indptr.asnumpy(), np.concatenate([[0], np.cumsum((a != 0).sum(axis=1))]))


def test_cast_storage_op_errors_and_symbol():
    with pytest.raises(mx.base.MXNetError, match="stype"):
        nd.cast_storage(nd.ones((2, 2)), stype="coo")
    with pytest.raises(mx.base.MXNetError, match="2-D input for stype 'csr'"):
        nd.cast_storage(nd.ones((2, 2, 2)), stype="csr")
    # In a graph (dense arrays) it is a copy.
    x = mx.sym.var("x")
    ex = mx.sym.sparse.cast_storage(x, stype="csr").bind(mx.cpu(), {"x": nd.array([[1, 0], [0, 2]])})
    np.testing.assert_array_equal(ex.forward()[0].asnumpy(), [[1, 0], [0, 2]])


def test_cast_storage_gradient():
    x = nd.array([[1.0, 0.0], [0.0, 3.0]])
    x.attach_grad()
    with mx.autograd.record():
        y = nd.cast_storage(x, stype="csr")
        z = nd.sum(y * y)
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * x.asnumpy())


# ---------------------------------------------------------------- elementwise storage rules


@pytest.mark.parametrize("lhs,rhs,op,expect", [
    ("csr", "csr", "elemwise_add", "csr"), ("row_sparse", "row_sparse", "elemwise_add", "row_sparse"),
    ("default", "csr", "elemwise_add", "default"), ("row_sparse", "default", "elemwise_add", "default"),
    ("csr", "csr", "elemwise_sub", "csr"), ("row_sparse", "row_sparse", "elemwise_sub", "row_sparse"),
    ("csr", "default", "elemwise_sub", "default"), ("default", "row_sparse", "elemwise_sub", "default"),
    ("csr", "csr", "elemwise_mul", "csr"), ("row_sparse", "row_sparse", "elemwise_mul", "row_sparse"),
    ("default", "csr", "elemwise_mul", "csr"), ("csr", "default", "elemwise_mul", "csr"),
    ("row_sparse", "default", "elemwise_mul", "row_sparse"), ("default", "row_sparse", "elemwise_mul", "row_sparse"),
    ("csr", "csr", "elemwise_div", "default"),
])
def test_elemwise_storage_types_and_values(rng, lhs, rhs, op, expect):
    a = _rand_dense((7, 4), 0.4, rng)
    b = _rand_dense((7, 4), 0.4, rng)
    if op == "elemwise_div":
        b = rng.uniform(1, 2, (7, 4)).astype(np.float32)
    x = nd.array(a) if lhs == "default" else _sp(a, lhs)
    y = nd.array(b) if rhs == "default" else _sp(b, rhs)
    z = getattr(nd, op)(x, y)
    assert z.stype == expect
    ref = {"elemwise_add": np.add, "elemwise_sub": np.subtract, "elemwise_mul": np.multiply,
           "elemwise_div": np.divide}[op](a, b)
    np.testing.assert_allclose(z.asnumpy(), ref, rtol=1e-6)
    # Python arithmetic and mx.nd.sparse's functions take the same kernels.
    fn = {"elemwise_add": nd.sparse.add, "elemwise_sub": nd.sparse.subtract, "elemwise_mul": nd.sparse.multiply,
          "elemwise_div": nd.sparse.divide}[op]
    assert fn(x, y).stype == expect
    np.testing.assert_allclose(fn(x, y).asnumpy(), ref, rtol=1e-6)


def test_python_operators_keep_storage(rng):
    a = _rand_dense((5, 3), 0.5, rng)
    c, r = _sp(a, "csr"), _sp(a, "row_sparse")
    for x in (c, r):
        assert (x + x).stype == x.stype and (x - x).stype == x.stype and (x * x).stype == x.stype
        assert (x * 3).stype == x.stype and (x / 2).stype == x.stype and (-x).stype == x.stype
        np.testing.assert_allclose((x * 3 - x / 2).asnumpy(), a * 3 - a / 2, rtol=1e-6)
        assert (x + 1).stype == "default"
        np.testing.assert_allclose((x + 1).asnumpy(), a + 1)
        assert (x + 0).stype == x.stype
    assert (c / 0).stype == "default"  # 0/0 is NaN, not a stored zero


def test_unary_and_scalar_ops(rng):
    a = _rand_dense((6, 4), 0.4, rng)
    for stype in ("csr", "row_sparse"):
        x = _sp(a, stype)
        for name, ref in [("square", np.square(a)), ("abs", np.abs(a)), ("sign", np.sign(a)),
                          ("negative", -a), ("relu", np.maximum(a, 0)), ("tanh", np.tanh(a)),
                          ("sin", np.sin(a)), ("floor", np.floor(a)), ("expm1", np.expm1(a))]:
            y = getattr(nd.sparse, name)(x)
            assert y.stype == stype, name
            np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-5, atol=1e-7, err_msg=name)
        y = nd.sparse.exp(x)  # exp(0) = 1: dense
        assert y.stype == "default"
        np.testing.assert_allclose(y.asnumpy(), np.exp(a), rtol=1e-6)
        assert nd.clip(x, -0.5, 0.5).stype == stype
        np.testing.assert_allclose(nd.clip(x, -0.5, 0.5).asnumpy(), np.clip(a, -0.5, 0.5))
        assert nd.clip(x, 0.1, 0.5).stype == "default"
        np.testing.assert_allclose(nd.clip(x, 0.1, 0.5).asnumpy(), np.clip(a, 0.1, 0.5))
        z = nd.sparse.zeros_like(x)
        assert z.stype == stype and not z.asnumpy().any()


def test_add_n_row_sparse(rng):
    arrs = [_rand_dense((8, 3), 0.3, rng) for _ in range(3)]
    s = nd.add_n(*[_sp(a, "row_sparse") for a in arrs])
    assert s.stype == "row_sparse"
    np.testing.assert_allclose(s.asnumpy(), sum(arrs), rtol=1e-6)
    assert nd.sparse.ElementWiseSum(_sp(arrs[0], "row_sparse")).stype == "row_sparse"


def test_broadcast_mul_csr(rng):
    a = _rand_dense((5, 4), 0.5, rng)
    for b in (rng.random((5, 1)), rng.random((1, 4)), rng.random((4,))):
        b = b.astype(np.float32) + 0.5
        y = nd.sparse.broadcast_mul(_sp(a, "csr"), nd.array(b))
        assert y.stype == "csr"
        np.testing.assert_allclose(y.asnumpy(), a * b, rtol=1e-6)
        y = nd.sparse.broadcast_div(_sp(a, "csr"), nd.array(b))
        assert y.stype == "csr"
        np.testing.assert_allclose(y.asnumpy(), a / b, rtol=1e-6)
    assert nd.sparse.broadcast_add(_sp(a, "csr"), nd.ones((5, 1))).stype == "default"


def test_elemwise_shape_mismatch():
    with pytest.raises(mx.base.MXNetError, match="elemwise_add"):
        nd.elemwise_add(nd.sparse.zeros("csr", (3, 4)), nd.sparse.zeros("csr", (3, 5)))
    with pytest.raises(mx.base.MXNetError, match="elemwise_mul"):
        nd.elemwise_mul(nd.sparse.zeros("row_sparse", (3, 4)), nd.ones((4, 4)))


# ---------------------------------------------------------------- dot


def test_dot_storage_types_and_values(rng):
    a = _rand_dense((6, 5), 0.4, rng)
    b = rng.standard_normal((5, 3)).astype(np.float32)
    c = _sp(a, "csr")
    y = nd.dot(c, nd.array(b))
    assert y.stype == "default"
    np.testing.assert_allclose(y.asnumpy(), a @ b, rtol=1e-5, atol=1e-6)
    g = rng.standard_normal((6, 3)).astype(np.float32)
    y = nd.sparse.dot(c, nd.array(g), transpose_a=True)
    assert y.stype == "row_sparse"
    np.testing.assert_allclose(y.asnumpy(), a.T @ g, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(y.indices.asnumpy(), np.flatnonzero((a != 0).any(axis=0)))
    y = nd.dot(c, nd.array(g), transpose_a=True, forward_stype="default")
    assert y.stype == "default"
    d = rng.standard_normal((4, 6)).astype(np.float32)
    y = nd.dot(nd.array(d), c)
    assert y.stype == "csr"
    np.testing.assert_allclose(y.asnumpy(), d @ a, rtol=1e-5, atol=1e-6)
    e = rng.standard_normal((4, 5)).astype(np.float32)
    y = nd.dot(nd.array(e), c, transpose_b=True)
    np.testing.assert_allclose(y.asnumpy(), e @ a.T, rtol=1e-5, atol=1e-6)
    f = rng.standard_normal((3, 5)).astype(np.float32)
    y = nd.dot(c, nd.array(f), transpose_b=True)
    assert y.stype == "default"
    np.testing.assert_allclose(y.asnumpy(), a @ f.T, rtol=1e-5, atol=1e-6)
    # csr . row_sparse, csr . vector
    r = _rand_dense((5, 3), 0.5, rng)
    np.testing.assert_allclose(nd.dot(c, _sp(r, "row_sparse")).asnumpy(), a @ r, rtol=1e-5, atol=1e-6)
    v = rng.standard_normal(5).astype(np.float32)
    np.testing.assert_allclose(nd.dot(c, nd.array(v)).asnumpy(), a @ v, rtol=1e-5, atol=1e-6)
    # float64
    a64 = nd.array(a, dtype="float64").tostype("csr")
    np.testing.assert_allclose(nd.dot(a64, nd.array(b, dtype="float64")).asnumpy(),
                               a.astype(np.float64) @ b, rtol=1e-12)


def test_dot_errors():
    c = nd.sparse.zeros("csr", (3, 4))
    with pytest.raises(mx.base.MXNetError, match="dot"):
        nd.dot(c, nd.ones((5, 2)))
    with pytest.raises(mx.base.MXNetError, match="dot"):
        nd.dot(nd.ones((2, 5)), c)


@pytest.mark.parametrize("grad_stype", ["default", "row_sparse"])
def test_dot_gradient_to_dense_weight(rng, grad_stype):
    a = _rand_dense((8, 6), 0.3, rng)
    w0 = rng.standard_normal((6, 2)).astype(np.float32)
    og = rng.standard_normal((8, 2)).astype(np.float32)
    w = nd.array(w0)
    w.attach_grad(stype=grad_stype)
    with mx.autograd.record():
        y = nd.dot(_sp(a, "csr"), w)
    y.backward(nd.array(og))
    assert w.grad.stype == grad_stype
    np.testing.assert_allclose(w.grad.asnumpy(), a.T @ og, rtol=1e-5, atol=1e-6)


def test_dot_gradient_dense_times_csr(rng):
    a = _rand_dense((5, 4), 0.5, rng)
    x0 = rng.standard_normal((3, 5)).astype(np.float32)
    x = nd.array(x0)
    x.attach_grad()
    with mx.autograd.record():
        y = nd.dot(x, _sp(a, "csr"))
    og = rng.standard_normal((3, 4)).astype(np.float32)
    y.backward(nd.array(og))
    np.testing.assert_allclose(x.grad.asnumpy(), og @ a.T, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- reductions, slices, graph ops


def test_sum_mean_csr(rng):
    a = _rand_dense((7, 5), 0.4, rng)
    c = _sp(a, "csr")
    for axis in (0, 1, -1):
        for keepdims in (False, True):
            y = nd.sparse.sum(c, axis=axis, keepdims=keepdims)
            assert y.stype == "default"
            np.testing.assert_allclose(y.asnumpy(), a.sum(axis=axis, keepdims=keepdims), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(nd.sparse.mean(c, axis=axis, keepdims=keepdims).asnumpy(),
                                       a.mean(axis=axis, keepdims=keepdims), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(nd.sum(c).asnumpy(), [a.sum()], rtol=1e-5)
    np.testing.assert_allclose(nd.mean(c, keepdims=True).asnumpy(), [[a.mean()]], rtol=1e-5)
    r = _sp(a, "row_sparse")
    for axis in (0, 1, None):
        np.testing.assert_allclose(nd.sum(r, axis=axis).asnumpy(), np.atleast_1d(a.sum(axis=axis)), rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(nd.mean(r, axis=axis).asnumpy(), np.atleast_1d(a.mean(axis=axis)), rtol=1e-5,
                                   atol=1e-6)


def test_norm_of_sparse_arrays(rng):
    a = _rand_dense((6, 5), 0.4, rng)
    for stype in ("csr", "row_sparse"):
        x = _sp(a, stype)
        np.testing.assert_allclose(nd.sparse.norm(x).asnumpy(), [np.linalg.norm(a)], rtol=1e-5)
        np.testing.assert_allclose(nd.norm(x, ord=1).asnumpy(), [np.abs(a).sum()], rtol=1e-5)
        assert nd.norm(x, keepdims=True).shape == (1, 1)
        np.testing.assert_allclose(nd.norm(x, axis=1).asnumpy(), np.linalg.norm(a, axis=1), rtol=1e-5)


def test_slice_csr(rng):
    a = _rand_dense((8, 6), 0.5, rng)
    c = _sp(a, "csr")
    for begin, end in [((1,), (5,)), ((2, 1), (7, 4)), ((None, 3), (None, None)), ((-3, -4), (None, -1))]:
        y = nd.sparse.slice(c, begin=begin, end=end)
        assert y.stype == "csr"
        sl = tuple(slice(b, e) for b, e in zip(begin, end))
        np.testing.assert_array_equal(y.asnumpy(), a[sl])
    np.testing.assert_array_equal(c[3].asnumpy(), a[3:4])
    np.testing.assert_array_equal(c[2:6].asnumpy(), a[2:6])
    # A strided slice is served densely.
    np.testing.assert_array_equal(nd.slice(c, begin=(0,), end=(8,), step=(2,)).asnumpy(), a[0:8:2])


def test_getnnz_and_edge_id(rng):
    a = _rand_dense((5, 6), 0.4, rng)
    c = _sp(a, "csr")
    assert nd.contrib.getnnz(c).asnumpy().tolist() == [int((a != 0).sum())]
    np.testing.assert_array_equal(nd.contrib.getnnz(c, axis=0).asnumpy(), (a != 0).sum(axis=0))
    np.testing.assert_array_equal(nd.contrib.getnnz(c, axis=1).asnumpy(), (a != 0).sum(axis=1))
    assert nd.contrib.getnnz(c).dtype == np.int64
    np.testing.assert_array_equal(nd.contrib.getnnz(nd.array(a), axis=1).asnumpy(), (a != 0).sum(axis=1))
    with pytest.raises(mx.base.MXNetError, match="2-D"):
        nd.contrib.getnnz(nd.ones((2, 2, 2)))
    with pytest.raises(mx.base.MXNetError, match="axis"):
        nd.contrib.getnnz(c, axis=2)

    ids = np.zeros((4, 4), np.float32)
    ids[0, 1], ids[1, 2], ids[3, 0] = 5, 6, 7
    g = _sp(ids, "csr")
    u, v = nd.array([0, 1, 3, 2, 0]), nd.array([1, 2, 0, 2, 0])
    ref = [5, 6, 7, -1, -1]
    assert nd.contrib.edge_id(g, u, v).asnumpy().tolist() == ref
    assert nd.contrib.edge_id(nd.array(ids), u, v).asnumpy().tolist() == ref
    for arr in (g, nd.array(ids)):
        with pytest.raises(mx.base.MXNetError, match="out of range"):
            nd.contrib.edge_id(arr, nd.array([4]), nd.array([0])).asnumpy()
        with pytest.raises(mx.base.MXNetError, match="out of range"):
            nd.contrib.edge_id(arr, nd.array([0]), nd.array([-1])).asnumpy()
    with pytest.raises(mx.base.MXNetError, match="edge_id"):
        nd.contrib.edge_id(g, nd.array([0, 1]), nd.array([0]))


def test_sparse_retain(rng):
    a = _rand_dense((8, 3), 0.5, rng)
    a[1] = 0
    r = _sp(a, "row_sparse")
    keep = [6, 1, 0, 6]
    y = nd.sparse.retain(r, nd.array(keep, dtype="int64"))
    assert y.stype == "row_sparse"
    ref = np.zeros_like(a)
    ref[[0, 6]] = a[[0, 6]]
    np.testing.assert_array_equal(y.asnumpy(), ref)
    assert set(y.indices.asnumpy()) <= {0, 6}
    np.testing.assert_array_equal(r.retain(nd.array(keep)).asnumpy(), ref)
    np.testing.assert_array_equal(nd._internal._sparse_retain(nd.array(a), nd.array(keep)).asnumpy(), ref)
    for arr in (r, nd.array(a)):
        with pytest.raises(mx.base.MXNetError, match="out of range"):
            nd.sparse.retain(arr, nd.array([8])).asnumpy()
    with pytest.raises(mx.base.MXNetError, match="1-D indices"):
        nd.sparse.retain(r, nd.array([[0]]))
    # Gradient: the kept rows of the output gradient.
    x = nd.array(a)
    x.attach_grad()
    with mx.autograd.record():
        y = nd.sparse.retain(x, nd.array(keep))
    y.backward(nd.ones_like(y))
    np.testing.assert_array_equal(x.grad.asnumpy(), (ref != 0) | np.isin(np.arange(8), keep)[:, None])


def test_square_sum(rng):
    a = _rand_dense((7, 4), 0.5, rng)
    a[2] = 0
    r = _sp(a, "row_sparse")
    y = nd._internal._square_sum(r, axis=1, keepdims=True)
    assert y.stype == "row_sparse"
    np.testing.assert_allclose(y.asnumpy(), (a * a).sum(axis=1, keepdims=True), rtol=1e-5)
    for axis, keepdims in [(1, False), (0, False), (0, True)]:
        y = nd._internal._square_sum(r, axis=axis, keepdims=keepdims)
        assert y.stype == "default"
        np.testing.assert_allclose(y.asnumpy(), (a * a).sum(axis=axis, keepdims=keepdims), rtol=1e-5)
        np.testing.assert_allclose(nd._internal._square_sum(nd.array(a), axis=axis, keepdims=keepdims).asnumpy(),
                                   (a * a).sum(axis=axis, keepdims=keepdims), rtol=1e-5)
    with pytest.raises(mx.base.MXNetError, match="2-D"):
        nd._internal._square_sum(nd.ones((2, 2, 2)), axis=1)
    with pytest.raises(mx.base.MXNetError, match="exactly one axis"):
        nd._internal._square_sum(nd.ones((2, 2)), axis=(0, 1))
    x = mx.sym.var("x")
    for axis, keepdims in [(1, False), (0, True), (0, False)]:
        sym = mx.sym._internal._square_sum(x, axis=axis, keepdims=keepdims)
        check_numeric_gradient(sym, [rng.standard_normal((3, 4))], numeric_eps=1e-3, rtol=1e-2, atol=1e-3)


def test_embedding_row_sparse_weight(rng):
    w = _rand_dense((10, 3), 1.0, rng)
    w[[2, 5]] = 0
    wr = _sp(w, "row_sparse")
    idx = nd.array([[1, 2], [5, 9], [12, -3]])  # clipped into range, as the dense lookup does
    y = nd.sparse.Embedding(idx, wr, input_dim=10, output_dim=3)
    assert y.stype == "default"
    np.testing.assert_array_equal(y.asnumpy(), nd.Embedding(idx, nd.array(w), input_dim=10, output_dim=3).asnumpy())


def test_sparse_namespaces():
    c = nd.sparse.zeros("csr", (2, 3))
    again = nd.sparse._ndarray_cls(mx.base._api.weft_ndarray_cast_storage(c, 2))
    assert isinstance(again, nd.sparse.CSRNDArray) and again.shape == (2, 3)
    assert type(nd.sparse._ndarray_cls(mx.base._api.weft_ndarray_cast_storage(c, 0), stype=0)) is nd.NDArray
    for name in ("dot", "sum", "mean", "slice", "retain", "Embedding", "cast_storage", "zeros_like", "square",
                 "elemwise_add", "add_n", "broadcast_mul", "sgd_update", "adam_update", "abs", "exp"):
        assert callable(getattr(nd.sparse, name)), name
        assert callable(getattr(mx.sym.sparse, name)), name
    assert callable(nd.contrib.getnnz) and callable(nd.contrib.edge_id) and callable(mx.sym.contrib.edge_id)


# ---------------------------------------------------------------- no dense images


def _max_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def test_native_kernels_do_not_densify(rng):
    """A csr matrix of logical shape (10^6, 10^6) (4 TB dense) and a row_sparse one of
    (10^7, 64) (2.5 GB dense), each with 1000 stored values or rows: every operator below
    must work on the stored parts; a dense image would fail or show in the peak RSS."""
    n, nnz = 10 ** 6, 1000
    rows = np.sort(rng.choice(n, nnz, replace=False))
    cols = rng.integers(0, n, nnz)
    indptr = np.zeros(n + 1, np.int64)
    np.add.at(indptr, rows + 1, 1)
    indptr = np.cumsum(indptr)
    vals = rng.standard_normal(nnz).astype(np.float32)
    c = nd.sparse.csr_matrix((vals, cols, indptr), shape=(n, n))
    before = _max_rss_mb()
    assert int(nd.contrib.getnnz(c).asscalar()) == nnz
    np.testing.assert_allclose(nd.sum(c, axis=0).asnumpy()[cols], np.bincount(cols, vals, minlength=n)[cols],
                               rtol=1e-5)
    s = nd.slice(c, begin=(int(rows[10]), 0), end=(int(rows[10]) + 1, n))
    assert s.stype == "csr" and s.data.asnumpy()[0] == vals[10]
    assert (c + c).stype == "csr" and np.allclose((c * 2).data.asnumpy(), vals * 2)
    assert nd.sparse.square(c).stype == "csr"
    d = nd.ones((n, 2))
    y = nd.dot(c, d, transpose_a=True)
    assert y.stype == "row_sparse" and y.shape == (n, 2)
    np.testing.assert_allclose(y.data.asnumpy()[:, 0].sum(), vals.sum(), rtol=1e-4)
    assert nd.dot(c, d).shape == (n, 2)
    assert nd.contrib.edge_id(c, nd.array([rows[0]]), nd.array([cols[0]])).asscalar() == vals[0]
    np.testing.assert_allclose(nd.sum(c).asnumpy(), [vals.sum()], rtol=1e-4)
    np.testing.assert_allclose(nd.norm(c).asnumpy(), [np.linalg.norm(vals)], rtol=1e-5)

    big = 10 ** 7
    rrows = np.sort(rng.choice(big, nnz, replace=False))
    r = nd.sparse.row_sparse_array((rng.standard_normal((nnz, 64)).astype(np.float32), rrows), shape=(big, 64))
    assert (r + r).stype == "row_sparse" and (r * 0.5).stype == "row_sparse"
    assert nd.sparse.retain(r, nd.array(rrows[:10], dtype="int64")).data.shape == (10, 64)
    assert nd._internal._square_sum(r, axis=1, keepdims=True).stype == "row_sparse"
    assert nd.sparse.zeros_like(r).stype == "row_sparse"
    assert nd.sum(r, axis=0).shape == (64,)
    grown = _max_rss_mb() - before
    # The dense (n, 2) operands above take 8 MB each; a dense image of either sparse array
    # would take gigabytes.
    assert grown < 300, "peak RSS grew by %.0f MB" % grown


# ---------------------------------------------------------------- DGL graph operators


def _graph(n=8, density=0.4, seed=2):
    rng = np.random.default_rng(seed)
    mask = rng.random((n, n)) < density
    np.fill_diagonal(mask, False)
    ids = np.zeros((n, n), np.int64)
    ids[mask] = np.arange(1, mask.sum() + 1)  # edge ids, 0 meaning no edge in the dense view
    return ids, nd.array(ids, dtype="int64").tostype("csr")


def test_dgl_adjacency():
    ids, g = _graph()
    a = nd.contrib.dgl_adjacency(g)
    assert a.stype == "csr" and a.dtype == np.float32
    np.testing.assert_array_equal(a.asnumpy(), (ids != 0).astype(np.float32))
    with pytest.raises(mx.base.MXNetError, match="must be a csr graph"):
        nd.contrib.dgl_adjacency(nd.array(ids, dtype="int64"))
    with pytest.raises(mx.base.MXNetError, match="int64"):
        nd.contrib.dgl_adjacency(nd.array(ids).tostype("csr"))


def test_dgl_subgraph():
    ids, g = _graph()
    verts = [[0, 2, 3, 6], [1, 7]]
    outs = nd.contrib.dgl_subgraph(g, *[nd.array(v, dtype="int64") for v in verts], return_mapping=True)
    assert len(outs) == 4
    for k, v in enumerate(verts):
        sub, parent = outs[k], outs[k + 2]
        assert sub.stype == parent.stype == "csr" and sub.shape == (len(v), len(v))
        want = ids[np.ix_(v, v)]
        np.testing.assert_array_equal(parent.asnumpy(), want)
        np.testing.assert_array_equal(sub.indices.asnumpy(), parent.indices.asnumpy())
        np.testing.assert_array_equal(sub.data.asnumpy(), np.arange((want != 0).sum()))
    one = nd.contrib.dgl_subgraph(g, nd.array([0, 2], dtype="int64"), return_mapping=False)
    assert not isinstance(one, list) and one.shape == (2, 2)
    with pytest.raises(mx.base.MXNetError, match="sorted and distinct"):
        nd.contrib.dgl_subgraph(g, nd.array([3, 1], dtype="int64"), return_mapping=False)
    with pytest.raises(mx.base.MXNetError, match="vertex id 8 .* out of range"):
        nd.contrib.dgl_subgraph(g, nd.array([1, 8], dtype="int64"), return_mapping=False)
    with pytest.raises(mx.base.MXNetError, match="int64"):
        nd.contrib.dgl_subgraph(g, nd.array([1, 2]), return_mapping=False)
    with pytest.raises(mx.base.MXNetError, match="return_mapping"):
        nd.contrib.dgl_subgraph(g, nd.array([1, 2], dtype="int64"))


def _check_sample(ids, verts, sub, layer, seeds, num_hops, num_neighbor, max_v):
    count = int(verts[-1])
    v = verts[:count]
    assert count <= max_v and list(v) == sorted(set(v)) and (verts[count:-1] == -1).all()
    assert set(seeds) <= set(v) and (layer[count:] == -1).all()
    dense = sub.asnumpy()
    assert sub.shape == (max_v, ids.shape[1]) and not dense[count:].any()
    for i, vert in enumerate(v):
        hop = layer[i]
        assert 0 <= hop <= num_hops and (hop == 0) == (vert in seeds)
        row = dense[i]
        cols = np.flatnonzero(row)
        # Sampled edges are edges of the graph with their ids, at most num_neighbor a vertex.
        np.testing.assert_array_equal(row[cols], ids[vert, cols])
        assert len(cols) <= num_neighbor
        if hop == num_hops:
            assert len(cols) == 0


def test_dgl_neighbor_uniform_sample():
    ids, g = _graph(12, 0.3)
    mx.random.seed(11)
    seeds = [0, 5]
    out = nd.contrib.dgl_csr_neighbor_uniform_sample(g, nd.array(seeds, dtype="int64"), num_args=2, num_hops=2,
                                                     num_neighbor=2, max_num_vertices=12)
    verts, sub, layer = out[0].asnumpy(), out[1], out[2].asnumpy()
    assert out[0].shape == (13,) and out[2].shape == (12,)
    _check_sample(ids, verts, sub, layer, seeds, 2, 2, 12)
    mx.random.seed(11)
    again = nd.contrib.dgl_csr_neighbor_uniform_sample(g, nd.array(seeds, dtype="int64"), num_args=2, num_hops=2,
                                                       num_neighbor=2, max_num_vertices=12)
    np.testing.assert_array_equal(again[0].asnumpy(), verts)
    np.testing.assert_array_equal(again[1].asnumpy(), sub.asnumpy())
    # Every neighbor kept: the breadth-first neighborhood, exactly.
    out = nd.contrib.dgl_csr_neighbor_uniform_sample(g, nd.array([3], dtype="int64"), num_args=2, num_hops=1,
                                                     num_neighbor=12, max_num_vertices=12)
    count = int(out[0].asnumpy()[-1])
    assert sorted(out[0].asnumpy()[:count]) == sorted({3} | set(np.flatnonzero(ids[3])))
    row = list(out[0].asnumpy()[:count]).index(3)
    np.testing.assert_array_equal(out[1].asnumpy()[row], ids[3])
    # The vertex limit holds.
    out = nd.contrib.dgl_csr_neighbor_uniform_sample(g, nd.array([0, 1], dtype="int64"), num_args=2, num_hops=3,
                                                     num_neighbor=5, max_num_vertices=3)
    assert int(out[0].asnumpy()[-1]) <= 3
    with pytest.raises(mx.base.MXNetError, match="more than max_num_vertices"):
        nd.contrib.dgl_csr_neighbor_uniform_sample(g, nd.array([0, 1, 2], dtype="int64"), num_args=2,
                                                   max_num_vertices=2)
    with pytest.raises(mx.base.MXNetError, match="vertex id 12 .* out of range"):
        nd.contrib.dgl_csr_neighbor_uniform_sample(g, nd.array([12], dtype="int64"), num_args=2)
    with pytest.raises(mx.base.MXNetError, match="square"):
        nd.contrib.dgl_csr_neighbor_uniform_sample(nd.sparse.zeros("csr", (3, 4), dtype="int64"),
                                                   nd.array([0], dtype="int64"), num_args=2)


def test_dgl_neighbor_non_uniform_sample():
    ids, g = _graph(10, 0.6)
    prob = np.linspace(0, 1, 10).astype(np.float32)
    prob[[2, 4]] = 0
    mx.random.seed(5)
    seeds = [0, 9]
    out = nd.contrib.dgl_csr_neighbor_non_uniform_sample(g, nd.array(prob), nd.array(seeds, dtype="int64"),
                                                         num_args=3, num_hops=1, num_neighbor=2, max_num_vertices=10)
    assert len(out) == 4
    verts, sub, vprob, layer = out[0].asnumpy(), out[1], out[2].asnumpy(), out[3].asnumpy()
    _check_sample(ids, verts, sub, layer, seeds, 1, 2, 10)
    count = int(verts[-1])
    np.testing.assert_array_equal(vprob[:count], prob[verts[:count]])
    # Zero-probability vertices are never drawn while others remain.
    for i, vert in enumerate(verts[:count]):
        cols = np.flatnonzero(sub.asnumpy()[i])
        if (prob[np.flatnonzero(ids[vert])] > 0).sum() >= 2:
            assert not set(cols) & {2, 4}
    with pytest.raises(mx.base.MXNetError, match="not a finite non-negative"):
        nd.contrib.dgl_csr_neighbor_non_uniform_sample(g, nd.array(-prob), nd.array([0], dtype="int64"), num_args=3)


def test_dgl_graph_compact():
    ids, g = _graph(9, 0.4)
    mx.random.seed(3)
    out = nd.contrib.dgl_csr_neighbor_uniform_sample(g, nd.array([1, 4], dtype="int64"), num_args=2, num_hops=2,
                                                     num_neighbor=3, max_num_vertices=9)
    verts = out[0].asnumpy()
    count = int(verts[-1])
    c, mapping = nd.contrib.dgl_graph_compact(out[1], out[0], graph_sizes=(count,), return_mapping=True)
    assert c.stype == "csr" and c.shape == (count, count)
    sampled = out[1].asnumpy()[:count]
    v = verts[:count]
    np.testing.assert_array_equal(mapping.asnumpy(), sampled[:, v])  # columns renumbered, edge ids kept
    assert sorted(c.data.asnumpy()) == list(range((sampled != 0).sum()))
    with pytest.raises(mx.base.MXNetError, match="sampler's output"):
        nd.contrib.dgl_graph_compact(out[1], out[0], graph_sizes=(count + 1,), return_mapping=False)
    with pytest.raises(mx.base.MXNetError, match="graph_sizes"):
        nd.contrib.dgl_graph_compact(out[1], out[0], graph_sizes=(count, count), return_mapping=False)
    bad = out[0].asnumpy().copy()
    bad[:count] = 10 ** 6 + np.arange(count)  # vertex ids the graph's columns do not use
    with pytest.raises(mx.base.MXNetError, match="not among its vertices"):
        nd.contrib.dgl_graph_compact(out[1], nd.array(bad, dtype="int64"), graph_sizes=(count,), return_mapping=False)


def test_out_arguments_with_sparse_results(rng):
    a = _rand_dense((5, 4), 0.5, rng)
    c = _sp(a, "csr")
    # A sparse out= receives the result in its own storage type (its handle now holds it).
    out = nd.sparse.zeros("csr", (5, 4))
    r = nd.elemwise_add(c, c, out=out)
    assert r is out and out.stype == "csr"
    np.testing.assert_allclose(out.asnumpy(), 2 * a, rtol=1e-6)
    rsp_out = nd.sparse.zeros("row_sparse", (5, 4))
    nd.elemwise_mul(c, c, out=rsp_out)
    assert rsp_out.stype == "row_sparse"
    np.testing.assert_allclose(rsp_out.asnumpy(), a * a, rtol=1e-6)
    # A dense out= is written densely (values equal to the sparse result).
    g = rng.standard_normal((5, 2)).astype(np.float32)
    dense_out = nd.zeros((4, 2))
    nd.dot(c, nd.array(g), transpose_a=True, out=dense_out)
    assert dense_out.stype == "default"
    np.testing.assert_allclose(dense_out.asnumpy(), a.T @ g, rtol=1e-5, atol=1e-6)
    # The dense fallback fills a sparse out= too.
    nd.exp(c, out=out)
    assert out.stype == "csr"
    np.testing.assert_allclose(out.asnumpy(), np.exp(a), rtol=1e-6)
    with pytest.raises(mx.base.MXNetError, match="output 0 has shape"):
        nd.elemwise_add(c, c, out=nd.sparse.zeros("csr", (5, 5)))


def test_creation_with_storage_types():
    z = nd.zeros((3, 4), stype="csr", dtype="float64")
    assert z.stype == "csr" and z.dtype == np.float64 and not z.asnumpy().any()
    e = nd.empty((3, 4), stype="row_sparse")
    assert e.stype == "row_sparse" and e.indices.asnumpy().size == 0
    assert nd.zeros((2, 2), stype="default").stype == "default"
    src = nd.array([[1, 0], [0, 2.5]]).tostype("csr")
    c = nd.array(src, dtype="float64")
    assert c.stype == "csr" and c.dtype == np.float64
    np.testing.assert_array_equal(c.asnumpy(), [[1, 0], [0, 2.5]])
    r = src.tostype("row_sparse").astype("int32")
    assert r.stype == "row_sparse" and r.dtype == np.int32 and r.asnumpy().tolist() == [[1, 0], [0, 2]]
    with pytest.raises(ValueError, match="storage type"):
        nd.zeros((2, 2), stype="coo")


def test_gradients_through_sparse_kernels(rng):
    """Gradients flow through calls the sparse kernels ran (autograd records the sparse
    inputs themselves) and through the dense fallback, with the dense operators' values."""
    a = _rand_dense((4, 5), 0.5, rng)
    x0 = rng.standard_normal((4, 5)).astype(np.float32)
    for stype in ("csr", "row_sparse"):
        x = nd.array(x0)
        x.attach_grad()
        with mx.autograd.record():
            y = nd.elemwise_mul(_sp(a, stype), x)  # sparse kernel: sparse result
            z = nd.sum(nd.square(y), axis=1)       # sparse kernels again, then dense
            loss = nd.sum(z * nd.array(np.arange(1, 5, dtype=np.float32)))
        assert y.stype == stype
        loss.backward()
        want = 2 * (a * x0) * a * np.arange(1, 5, dtype=np.float32)[:, None]
        np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-5, atol=1e-6)
    # A sparse variable: its gradient comes back in its own storage type.
    w = _sp(a, "row_sparse")
    w.attach_grad(stype="row_sparse")
    with mx.autograd.record():
        out = nd.sum(w * 3.0)
    out.backward()
    assert w.grad.stype == "row_sparse"
    np.testing.assert_allclose(w.grad.asnumpy(), np.full_like(a, 3.0))
