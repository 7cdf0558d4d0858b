"""MXNet 1.9's linalg operators (_linalg_*, nd.linalg / sym.linalg): forward against numpy in
float32 and float64 on single matrices and batches, every gradient against central
differences (float64, well-conditioned inputs), and the errors on bad input, hand-called
backward operators included."""
import itertools

import numpy as np
import pytest

import weft as mx
from weft import nd
from weft.test_utils import assert_almost_equal, check_numeric_gradient

RNG = np.random.RandomState(19)
DTYPES = [np.float32, np.float64]
TOL = {np.float32: dict(rtol=1e-4, atol=1e-5), np.float64: dict(rtol=1e-10, atol=1e-12)}
# Single matrices and batches with one and two batch dimensions.
BATCHES = [(), (3,), (2, 2)]
GRAD = dict(numeric_eps=1e-6, rtol=1e-5, atol=1e-7)


def arr(x, dtype):
    return nd.array(x, dtype=dtype)


def spd(batch, n, rng=RNG):
    """Symmetric positive-definite matrices, well conditioned."""
    m = rng.uniform(-1, 1, size=batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def well_conditioned(batch, n, rng=RNG):
    return rng.uniform(-1, 1, size=batch + (n, n)) + n * np.eye(n)


def lower_factor(batch, n, rng=RNG):
    """Lower triangular matrices with a diagonal far from zero."""
    return np.tril(rng.uniform(-1, 1, size=batch + (n, n))) + 2 * np.eye(n)


def tr(x):
    return np.swapaxes(x, -1, -2)


def sym_transpose(s, ndim):
    return mx.sym.transpose(s, axes=tuple(range(ndim - 2)) + (ndim - 1, ndim - 2))


# ---------------------------------------------------------------- names
def test_namespaces_and_aliases():
    names = ["gemm", "gemm2", "potrf", "potri", "trmm", "trsm", "sumlogdiag", "syrk", "gelqf", "syevd", "inverse",
             "det", "slogdet", "extractdiag", "makediag", "extracttrian", "maketrian"]
    for name in names:
        assert callable(getattr(nd.linalg, name)), name
        assert callable(getattr(mx.sym.linalg, name)), name
        if name != "syevd":  # MXNet 1.9 gives syevd no linalg_ alias
            assert callable(getattr(nd, "linalg_" + name)), name
    a = np.array([[1.0, 4.0], [2.0, 3.0]])
    assert_almost_equal(nd.invoke("_npi_inv", [arr(a, np.float64)]).asnumpy(), np.linalg.inv(a))
    assert_almost_equal(nd.invoke("_npi_det", [arr(a, np.float64)]).asnumpy(), [-5.0])


# ---------------------------------------------------------------- gemm / gemm2
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
def test_gemm_forward(dtype, batch, ta, tb):
    m, k, n = 3, 4, 5
    a = RNG.uniform(-1, 1, size=batch + ((k, m) if ta else (m, k))).astype(dtype)
    b = RNG.uniform(-1, 1, size=batch + ((n, k) if tb else (k, n))).astype(dtype)
    c = RNG.uniform(-1, 1, size=batch + (m, n)).astype(dtype)
    opa, opb = (tr(a) if ta else a), (tr(b) if tb else b)
    out = nd.linalg.gemm(arr(a, dtype), arr(b, dtype), arr(c, dtype), transpose_a=ta, transpose_b=tb, alpha=1.5,
                         beta=-0.5)
    assert out.dtype == dtype
    assert_almost_equal(out.asnumpy(), 1.5 * opa @ opb - 0.5 * c, **TOL[dtype])
    out2 = nd.linalg.gemm2(arr(a, dtype), arr(b, dtype), transpose_a=ta, transpose_b=tb, alpha=-2.0)
    assert_almost_equal(out2.asnumpy(), -2.0 * opa @ opb, **TOL[dtype])
    # Defaults: alpha = beta = 1.
    plain = nd.linalg.gemm2(arr(a, dtype), arr(b, dtype), transpose_a=ta, transpose_b=tb)
    assert_almost_equal(plain.asnumpy(), opa @ opb, **TOL[dtype])
    mac = nd.linalg_gemm(arr(a, dtype), arr(b, dtype), arr(c, dtype), transpose_a=ta, transpose_b=tb)
    assert_almost_equal(mac.asnumpy(), opa @ opb + c, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_gemm_row_axis(dtype):
    # Rows on axis 1 of 4-D tensors: the same as swapping axes 1 and 2, multiplying and swapping back.
    a = RNG.uniform(-1, 1, size=(2, 3, 4, 5)).astype(dtype)
    b = RNG.uniform(-1, 1, size=(2, 5, 4, 6)).astype(dtype)
    c = RNG.uniform(-1, 1, size=(2, 3, 4, 6)).astype(dtype)
    want = np.swapaxes(np.swapaxes(a, 1, 2) @ np.swapaxes(b, 1, 2), 1, 2)
    out = nd.linalg.gemm(arr(a, dtype), arr(b, dtype), arr(c, dtype), axis=1, alpha=2.0, beta=3.0)
    assert_almost_equal(out.asnumpy(), 2.0 * want + 3.0 * c, **TOL[dtype])
    out = nd.linalg.gemm2(arr(a, dtype), arr(b, dtype), axis=-3)
    assert_almost_equal(out.asnumpy(), want, **TOL[dtype])
    # B's matrices stored transposed: (2, 6, 4, 5) with its rows (6) on axis 1.
    bt = np.ascontiguousarray(np.swapaxes(b, 1, 3))
    out = nd.linalg.gemm2(arr(a, dtype), arr(bt, dtype), axis=1, transpose_b=True)
    assert_almost_equal(out.asnumpy(), want, **TOL[dtype])


@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
def test_gemm_gradient(ta, tb):
    m, k, n = 3, 4, 2
    a = RNG.uniform(-1, 1, size=(2, k, m) if ta else (2, m, k))
    b = RNG.uniform(-1, 1, size=(2, n, k) if tb else (2, k, n))
    c = RNG.uniform(-1, 1, size=(2, m, n))
    params = {"transpose_a": ta, "transpose_b": tb, "alpha": 0.7}
    check_numeric_gradient("_linalg_gemm", [a, b, c], params=dict(params, beta=-1.3), **GRAD)
    check_numeric_gradient("_linalg_gemm2", [a[0], b[0]], params=params, **GRAD)


def test_gemm_gradient_row_axis():
    a = RNG.uniform(-1, 1, size=(2, 3, 2, 4))
    b = RNG.uniform(-1, 1, size=(2, 4, 2, 3))
    c = RNG.uniform(-1, 1, size=(2, 3, 2, 3))
    check_numeric_gradient("_linalg_gemm", [a, b, c], params={"axis": 1, "alpha": 1.5, "beta": 0.5}, **GRAD)
    check_numeric_gradient("_linalg_gemm2", [a, b], params={"axis": 1, "transpose_a": False}, **GRAD)


# ---------------------------------------------------------------- potrf / potri
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("lower", [True, False])
def test_potrf_forward(dtype, batch, lower):
    a = spd(batch, 4)
    low = np.linalg.cholesky(a)
    # Only the triangle named by `lower` is read: garbage in the other one changes nothing.
    junk = a + (np.triu(np.ones((4, 4)), 1) if lower else np.tril(np.ones((4, 4)), -1)) * 100.0
    out = nd.linalg.potrf(arr(junk, dtype), lower=lower)
    assert out.dtype == dtype
    assert_almost_equal(out.asnumpy(), low if lower else tr(low), **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("lower", [True, False])
def test_potri_forward(dtype, batch, lower):
    a = spd(batch, 4)
    low = np.linalg.cholesky(a)
    factor = low if lower else tr(low)
    out = nd.linalg.potri(arr(factor, dtype), lower=lower)
    assert_almost_equal(out.asnumpy(), np.linalg.inv(a), rtol=1e-4 if dtype == np.float32 else 1e-9,
                        atol=1e-5 if dtype == np.float32 else 1e-11)


def test_potrf_documented_examples():
    a = np.array([[[4.0, 1.0], [1.0, 4.25]], [[16.0, 4.0], [4.0, 17.0]]])
    assert_almost_equal(nd.linalg.potrf(arr(a, np.float32)).asnumpy(),
                        np.array([[[2.0, 0], [0.5, 2.0]], [[4.0, 0], [1.0, 4.0]]]))
    assert_almost_equal(nd.linalg.potri(arr([[2.0, 0], [0.5, 2.0]], np.float64)).asnumpy(),
                        np.linalg.inv(np.array([[4.0, 1.0], [1.0, 4.25]])))


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("ndim", [2, 3])
def test_potrf_gradient(lower, ndim):
    # potrf reads one triangle of a matrix taken as symmetric and gives the symmetric
    # gradient, so the check runs through a symmetrization of a free matrix.
    a = spd((2,) * (ndim - 2), 3)
    x = mx.sym.Variable("A")
    s = mx.sym.linalg.potrf(0.5 * (x + sym_transpose(x, ndim)), lower=lower)
    check_numeric_gradient(s, [a], dtype=np.float64, **GRAD)
    check_numeric_gradient(s, [a], grad_nodes={"A": "add"}, dtype=np.float64, **GRAD)


@pytest.mark.parametrize("lower", [True, False])
def test_potri_gradient(lower):
    low = lower_factor((2,), 3)
    check_numeric_gradient("_linalg_potri", [low if lower else tr(low)], params={"lower": lower}, **GRAD)


@pytest.mark.parametrize("lower", [True, False])
def test_potrf_potri_chain_gradient(lower):
    # inverse through Cholesky, as a Gaussian process would compute it.
    a = spd((), 3)
    x = mx.sym.Variable("A")
    s = mx.sym.linalg.potri(mx.sym.linalg.potrf(0.5 * (x + mx.sym.transpose(x)), lower=lower), lower=lower)
    check_numeric_gradient(s, [a], dtype=np.float64, **GRAD)


# ---------------------------------------------------------------- trmm / trsm
TRI_FLAGS = list(itertools.product([False, True], repeat=3))  # rightside, transpose, lower


def _tri_operands(batch, rightside, dtype=np.float64):
    n, other = 3, 4
    a = RNG.uniform(-1, 1, size=batch + (n, n)) + 3 * np.eye(n)
    b = RNG.uniform(-1, 1, size=batch + ((other, n) if rightside else (n, other)))
    return a.astype(dtype), b.astype(dtype)


def _op_tri(a, lower, transpose):
    t = np.tril(a) if lower else np.triu(a)
    return tr(t) if transpose else t


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("rightside,transpose,lower", TRI_FLAGS)
def test_trmm_forward(dtype, batch, rightside, transpose, lower):
    a, b = _tri_operands(batch, rightside, dtype)
    t = _op_tri(a.astype(np.float64), lower, transpose)
    want = 1.5 * (b @ t if rightside else t @ b)
    out = nd.linalg.trmm(arr(a, dtype), arr(b, dtype), rightside=rightside, transpose=transpose, lower=lower,
                         alpha=1.5)
    assert out.shape == b.shape
    assert_almost_equal(out.asnumpy(), want, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("rightside,transpose,lower", TRI_FLAGS)
def test_trsm_forward(dtype, batch, rightside, transpose, lower):
    a, b = _tri_operands(batch, rightside, dtype)
    t = _op_tri(a.astype(np.float64), lower, transpose)
    if rightside:
        want = tr(np.linalg.solve(tr(t), tr(0.5 * b)))
    else:
        want = np.linalg.solve(t, 0.5 * b)
    out = nd.linalg.trsm(arr(a, dtype), arr(b, dtype), rightside=rightside, transpose=transpose, lower=lower,
                         alpha=0.5)
    assert_almost_equal(out.asnumpy(), want, **TOL[dtype])


def test_trmm_trsm_documented_examples():
    a = np.array([[1.0, 0], [1.0, 1.0]])
    b = np.ones((2, 3))
    assert_almost_equal(nd.linalg.trmm(arr(a, np.float32), arr(b, np.float32), alpha=2.0).asnumpy(),
                        [[2.0, 2.0, 2.0], [4.0, 4.0, 4.0]])
    assert_almost_equal(nd.linalg.trsm(arr(a, np.float32), arr([[2.0] * 3, [4.0] * 3], np.float32),
                                       alpha=0.5).asnumpy(), np.ones((2, 3)))


@pytest.mark.parametrize("rightside,transpose,lower", TRI_FLAGS)
def test_trmm_trsm_gradient(rightside, transpose, lower):
    a, b = _tri_operands((2,), rightside)
    params = {"rightside": rightside, "transpose": transpose, "lower": lower, "alpha": 0.8}
    check_numeric_gradient("_linalg_trmm", [a, b], params=params, **GRAD)
    check_numeric_gradient("_linalg_trsm", [a, b], params=params, **GRAD)


def test_trsm_gradient_zero_alpha():
    # dA is found without dividing by alpha, so alpha = 0 gives zero gradients, not NaN.
    a, b = _tri_operands((), False)
    check_numeric_gradient("_linalg_trsm", [a, b], params={"alpha": 0.0}, **GRAD)


# ---------------------------------------------------------------- sumlogdiag / syrk
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
def test_sumlogdiag(dtype, batch):
    a = RNG.uniform(0.5, 2.0, size=batch + (4, 4)).astype(dtype)
    out = nd.linalg.sumlogdiag(arr(a, dtype))
    want = np.sum(np.log(np.diagonal(a.astype(np.float64), axis1=-2, axis2=-1)), axis=-1)
    assert out.shape == (batch if batch else (1,))
    assert_almost_equal(out.asnumpy(), np.reshape(want, out.shape), **TOL[dtype])
    check_numeric_gradient("_linalg_sumlogdiag", [a.astype(np.float64)], **GRAD)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("transpose", [False, True])
def test_syrk(dtype, batch, transpose):
    a = RNG.uniform(-1, 1, size=batch + (3, 5)).astype(dtype)
    a64 = a.astype(np.float64)
    want = 0.5 * (tr(a64) @ a64 if transpose else a64 @ tr(a64))
    out = nd.linalg.syrk(arr(a, dtype), transpose=transpose, alpha=0.5)
    assert out.shape == want.shape
    assert_almost_equal(out.asnumpy(), want, **TOL[dtype])
    check_numeric_gradient("_linalg_syrk", [a64], params={"transpose": transpose, "alpha": 0.5}, **GRAD)


# ---------------------------------------------------------------- gelqf / syevd
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("shape", [(3, 5), (4, 4), (1, 3)])
def test_gelqf_forward(dtype, batch, shape):
    a = RNG.uniform(-1, 1, size=batch + shape).astype(dtype)
    q, l = nd.linalg.gelqf(arr(a, dtype))
    q, l = q.asnumpy(), l.asnumpy()
    m = shape[0]
    assert q.shape == a.shape and l.shape == batch + (m, m)
    flat_a = a.astype(np.float64).reshape((-1,) + shape)
    for i, mat in enumerate(flat_a):
        # numpy's QR of A^T runs LAPACK's Householder convention, as gelqf does.
        qq, rr = np.linalg.qr(mat.T)
        assert_almost_equal(q.reshape((-1,) + shape)[i], qq.T, **TOL[dtype])
        assert_almost_equal(l.reshape((-1, m, m))[i], rr.T, **TOL[dtype])
    assert_almost_equal(l @ q, a, **TOL[dtype])
    assert_almost_equal(q @ tr(q), np.broadcast_to(np.eye(m), batch + (m, m)), **TOL[dtype])
    assert np.all(np.triu(l, 1) == 0)


def test_gelqf_documented_example():
    q, l = nd.linalg.gelqf(arr([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float64))
    assert_almost_equal(q.asnumpy(), [[-0.26726124, -0.53452248, -0.80178373], [0.87287156, 0.21821789, -0.43643578]],
                        rtol=1e-7, atol=1e-8)
    assert_almost_equal(l.asnumpy(), [[-3.74165739, 0.0], [-8.55235974, 1.96396101]], rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("shape", [(2, 3, 5), (4, 4)])
def test_gelqf_gradient(shape):
    a = RNG.uniform(-1, 1, size=shape) + np.eye(shape[-2], shape[-1])
    check_numeric_gradient("_linalg_gelqf", [a], **GRAD)


def _eigh_rows(a):
    """numpy's eigendecomposition of the lower triangle, eigenvectors as rows, each signed so
    that its largest-magnitude entry is positive."""
    w, v = np.linalg.eigh(a, UPLO="L")
    u = np.swapaxes(v, -1, -2).copy()
    flat = u.reshape((-1, u.shape[-1]))
    for row in flat:
        if row[np.argmax(np.abs(row))] < 0:
            row *= -1
    return flat.reshape(u.shape), w


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("n", [1, 2, 5])
def test_syevd_forward(dtype, batch, n):
    a = RNG.uniform(-1, 1, size=batch + (n, n))
    a = (a + tr(a)).astype(dtype)
    # The upper triangle is not read.
    junk = a + np.triu(np.full((n, n), 7.0), 1).astype(dtype)
    u, w = nd.linalg.syevd(arr(junk, dtype))
    u, w = u.asnumpy(), w.asnumpy()
    assert u.shape == a.shape and w.shape == batch + (n,)
    want_u, want_w = _eigh_rows(a.astype(np.float64))
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-10)
    assert_almost_equal(w, want_w, **tol)
    assert_almost_equal(u, want_u, **tol)
    # U A = diag(L) U
    assert_almost_equal(u @ a.astype(np.float64), w[..., :, None] * u, **tol)


def test_syevd_documented_example():
    u, w = nd.linalg.syevd(arr([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 2.0], [2.0, 5.0]]], np.float64))
    assert_almost_equal(u.asnumpy(), [[[0.89442719, -0.4472136], [0.4472136, 0.89442719]],
                                      [[0.92387953, -0.38268343], [0.38268343, 0.92387953]]], rtol=1e-7, atol=1e-8)
    assert_almost_equal(w.asnumpy(), [[0.0, 5.0], [0.17157288, 5.82842712]], rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("output", [0, 1])
@pytest.mark.parametrize("ndim", [2, 3])
def test_syevd_gradient(output, ndim):
    # Distinct eigenvalues; the input runs through a symmetrization as syevd reads one triangle.
    batch = (2,) * (ndim - 2)
    q = np.linalg.qr(RNG.uniform(-1, 1, size=batch + (4, 4)))[0]
    a = q @ (np.array([1.0, 2.0, 3.5, 5.0])[:, None] * tr(q))
    x = mx.sym.Variable("A")
    s = mx.sym.linalg.syevd(0.5 * (x + sym_transpose(x, ndim)))[output]
    check_numeric_gradient(s, [a], dtype=np.float64, **GRAD)


# ---------------------------------------------------------------- inverse / det / slogdet
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
def test_inverse(dtype, batch):
    a = well_conditioned(batch, 4).astype(dtype)
    out = nd.linalg.inverse(arr(a, dtype))
    assert_almost_equal(out.asnumpy(), np.linalg.inv(a.astype(np.float64)), **TOL[dtype])
    check_numeric_gradient("_linalg_inverse", [a.astype(np.float64)], **GRAD)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
def test_det_slogdet(dtype, batch):
    a = RNG.uniform(-1, 1, size=batch + (4, 4)).astype(dtype)
    a64 = a.astype(np.float64)
    det = nd.linalg.det(arr(a, dtype))
    assert det.shape == (batch if batch else (1,))
    assert_almost_equal(det.asnumpy(), np.reshape(np.linalg.det(a64), det.shape), **TOL[dtype])
    sign, logabs = nd.linalg.slogdet(arr(a, dtype))
    want_sign, want_log = np.linalg.slogdet(a64)
    assert_almost_equal(sign.asnumpy(), np.reshape(want_sign, sign.shape))
    assert_almost_equal(logabs.asnumpy(), np.reshape(want_log, logabs.shape), **TOL[dtype])


def test_det_slogdet_singular():
    a = np.array([[[2.0, 3.0], [1.0, 4.0]], [[1.0, 2.0], [2.0, 4.0]], [[1.0, 2.0], [4.0, 3.0]]])
    sign, logabs = nd.linalg.slogdet(arr(a, np.float64))
    assert sign.asnumpy().tolist() == [1.0, 0.0, -1.0]
    assert_almost_equal(logabs.asnumpy(), [np.log(5.0), -np.inf, np.log(5.0)])
    assert_almost_equal(nd.linalg.det(arr(a, np.float32)).asnumpy(), [5.0, 0.0, -5.0])
    # No gradient flows back through a zero determinant.
    x = arr(a, np.float64)
    x.attach_grad()
    with mx.autograd.record():
        d = nd.linalg.det(x)
    d.backward()
    g = x.grad.asnumpy()
    assert np.all(g[1] == 0)
    assert_almost_equal(g[0], 5.0 * np.linalg.inv(a[0]).T)
    x.attach_grad()
    with mx.autograd.record():
        _, la = nd.linalg.slogdet(x)
    la.backward()
    g = x.grad.asnumpy()
    assert np.all(g[1] == 0)
    assert_almost_equal(g[2], np.linalg.inv(a[2]).T)


@pytest.mark.parametrize("batch", BATCHES)
def test_det_slogdet_gradient(batch):
    a = well_conditioned(batch, 3)
    a[..., 0, :] *= -1  # negative determinants too
    check_numeric_gradient("_linalg_det", [a], **GRAD)
    check_numeric_gradient("_linalg_slogdet", [a], **GRAD)


# ---------------------------------------------------------------- diag / trian copies
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("offset", [0, 1, -2])
def test_extractdiag_makediag(dtype, batch, offset):
    a = RNG.uniform(-1, 1, size=batch + (4, 4)).astype(dtype)
    d = nd.linalg.extractdiag(arr(a, dtype), offset=offset)
    want = np.diagonal(a, offset=offset, axis1=-2, axis2=-1)
    assert_almost_equal(d.asnumpy(), want)
    made = nd.linalg.makediag(arr(want, dtype), offset=offset).asnumpy()
    k = 4 - abs(offset)
    expect = np.zeros(batch + (4, 4), dtype)
    for i in range(k):
        expect[..., i + max(-offset, 0), i + max(offset, 0)] = want[..., i]
    assert_almost_equal(made, expect)
    check_numeric_gradient("_linalg_extractdiag", [a.astype(np.float64)], params={"offset": offset}, **GRAD)
    check_numeric_gradient("_linalg_makediag", [want.astype(np.float64)], params={"offset": offset}, **GRAD)


def _trian_positions(n, offset, lower):
    """MXNet's order: a lower triangle row by row, an upper one column by column."""
    k, m = abs(offset), n - abs(offset)
    upper = offset > 0 or (offset == 0 and not lower)
    return [(c, r + k) if upper else (r + k, c) for r in range(m) for c in range(r + 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("offset,lower", [(0, True), (0, False), (1, True), (2, False), (-1, True), (-2, False)])
def test_extracttrian_maketrian(dtype, batch, offset, lower):
    n = 4
    a = RNG.uniform(-1, 1, size=batch + (n, n)).astype(dtype)
    pos = _trian_positions(n, offset, lower)
    v = nd.linalg.extracttrian(arr(a, dtype), offset=offset, lower=lower).asnumpy()
    want = np.stack([a[..., i, j] for i, j in pos], axis=-1)
    assert_almost_equal(v, want)
    made = nd.linalg.maketrian(arr(want, dtype), offset=offset, lower=lower).asnumpy()
    expect = np.zeros_like(a)
    for t, (i, j) in enumerate(pos):
        expect[..., i, j] = want[..., t]
    assert_almost_equal(made, expect)
    params = {"offset": offset, "lower": lower}
    check_numeric_gradient("_linalg_extracttrian", [a.astype(np.float64)], params=params, **GRAD)
    check_numeric_gradient("_linalg_maketrian", [want.astype(np.float64)], params=params, **GRAD)


def test_trian_documented_examples():
    a = arr([[1.0, 2.0], [3.0, 4.0]], np.float32)
    assert nd.linalg.extracttrian(a).asnumpy().tolist() == [1.0, 3.0, 4.0]
    assert nd.linalg.extracttrian(a, lower=False).asnumpy().tolist() == [1.0, 2.0, 4.0]
    assert nd.linalg.extracttrian(a, offset=1).asnumpy().tolist() == [2.0]
    assert nd.linalg.extracttrian(a, offset=-1).asnumpy().tolist() == [3.0]
    v = arr([1.0, 2.0, 3.0], np.float32)
    assert nd.linalg.maketrian(v).asnumpy().tolist() == [[1.0, 0.0], [2.0, 3.0]]
    assert nd.linalg.maketrian(v, lower=False).asnumpy().tolist() == [[1.0, 2.0], [0.0, 3.0]]
    assert nd.linalg.maketrian(v, offset=1).asnumpy().tolist() == [[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0]]
    assert nd.linalg.maketrian(v, offset=-1).asnumpy().tolist() == [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0],
                                                                    [2.0, 3.0, 0.0]]
    assert nd.linalg.makediag(arr([1.0, 2.0], np.float32), offset=1).asnumpy().tolist() == [
        [0.0, 1.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]]


# ---------------------------------------------------------------- symbolic use
def test_symbolic_cholesky_solve():
    # The Gaussian-process pattern: solve A x = b through potrf and two trsm calls, in a graph.
    a = spd((2,), 4)
    b = RNG.uniform(-1, 1, size=(2, 4, 3))
    A, B = mx.sym.Variable("A"), mx.sym.Variable("B")
    low = mx.sym.linalg.potrf(A)
    x = mx.sym.linalg.trsm(low, mx.sym.linalg.trsm(low, B), transpose=True)
    exe = x.bind(mx.cpu(), args={"A": arr(a, np.float64), "B": arr(b, np.float64)})
    exe.forward()
    assert_almost_equal(exe.outputs[0].asnumpy(), np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
    _, out_shapes, _ = mx.sym.linalg.det(A).infer_shape(A=(5, 3, 3))
    assert out_shapes == [(5,)]
    _, out_shapes, _ = mx.sym.linalg.gelqf(A).infer_shape(A=(2, 3, 4))
    assert out_shapes == [(2, 3, 4), (2, 3, 3)]


# ---------------------------------------------------------------- errors
def _raises(match, fn):
    with pytest.raises(mx.base.MXNetError, match=match):
        out = fn()
        for o in (out if isinstance(out, (list, tuple)) else [out]):
            o.asnumpy()


def test_potrf_not_positive_definite():
    a = np.array([[[4.0, 1.0], [1.0, 4.25]], [[1.0, 2.0], [2.0, 1.0]]])
    _raises("matrix 1 of the batch is not positive definite", lambda: nd.linalg.potrf(arr(a, np.float64)))
    _raises("not positive definite", lambda: nd.linalg.potrf(arr(-np.eye(3), np.float32)))
    _raises("not positive definite", lambda: nd.linalg.potrf(arr(np.full((2, 2), np.nan), np.float32)))


def test_singular_errors():
    _raises("singular", lambda: nd.linalg.inverse(arr([[1.0, 2.0], [2.0, 4.0]], np.float64)))
    _raises("singular", lambda: nd.linalg.potri(arr([[1.0, 0.0], [3.0, 0.0]], np.float32)))


def test_shape_errors():
    f = np.float32
    _raises("square", lambda: nd.linalg.potrf(arr(np.ones((2, 3)), f)))
    _raises("at least 2 dimensions", lambda: nd.linalg.potri(arr(np.ones(3), f)))
    _raises("square", lambda: nd.linalg.inverse(arr(np.ones((4, 2, 3)), f)))
    _raises("square", lambda: nd.linalg.det(arr(np.ones((2, 3)), f)))
    _raises("square", lambda: nd.linalg.syevd(arr(np.ones((2, 3)), f)))
    _raises("square", lambda: nd.linalg.sumlogdiag(arr(np.ones((2, 3)), f)))
    _raises("do not fit", lambda: nd.linalg.gemm2(arr(np.ones((2, 3)), f), arr(np.ones((2, 3)), f)))
    _raises("expects", lambda: nd.linalg.gemm(arr(np.ones((2, 3)), f), arr(np.ones((3, 4)), f),
                                              arr(np.ones((2, 5)), f)))
    _raises("batch dimensions", lambda: nd.linalg.trmm(arr(np.ones((2, 3, 3)), f), arr(np.ones((3, 3, 3)), f)))
    _raises("do not fit", lambda: nd.linalg.trsm(arr(np.ones((3, 3)), f), arr(np.ones((2, 3)), f)))
    _raises("row axis", lambda: nd.linalg.gemm2(arr(np.ones((2, 3)), f), arr(np.ones((3, 2)), f), axis=-1))
    _raises("more rows than columns", lambda: nd.linalg.gelqf(arr(np.ones((3, 2)), f)))
    _raises("offset", lambda: nd.linalg.extractdiag(arr(np.ones((3, 3)), f), offset=3))
    _raises("triangle", lambda: nd.linalg.maketrian(arr(np.ones(4), f)))
    _raises("float32 and float64", lambda: nd.linalg.potrf(nd.array(np.eye(2), dtype="int32")))
    _raises("float32 and float64", lambda: nd.linalg.gemm2(nd.array(np.eye(2), dtype="float16"),
                                                           nd.array(np.eye(2), dtype="float16")))


def test_backward_operators_check_their_inputs():
    # Hand-called backward operators must refuse ill-fitting inputs instead of reading past them.
    f = np.float64
    _raises("expects", lambda: nd.invoke("_backward_linalg_potrf", [arr(np.ones((3, 3)), f), arr(np.eye(2), f)]))
    _raises("expects", lambda: nd.invoke("_backward_linalg_gemm2", [arr(np.ones((2, 2)), f), arr(np.ones((2, 3)), f),
                                                                    arr(np.ones((3, 4)), f)]))
    _raises("expects", lambda: nd.invoke("_backward_linalg_gemm", [arr(np.ones((2, 4)), f), arr(np.ones((2, 3)), f),
                                                                   arr(np.ones((3, 4)), f), arr(np.ones((1, 4)), f)]))
    _raises("expects", lambda: nd.invoke("_backward_linalg_trsm", [arr(np.ones((3, 2)), f), arr(np.eye(3), f),
                                                                   arr(np.ones((3, 2)), f), arr(np.ones((2, 2)), f)]))
    _raises("expects", lambda: nd.invoke("_backward_linalg_syevd", [arr(np.ones((3, 3)), f), arr(np.ones(2), f),
                                                                    arr(np.eye(3), f), arr(np.ones(3), f)]))
    _raises("expects", lambda: nd.invoke("_backward_linalg_gelqf", [arr(np.ones((2, 3)), f), arr(np.ones((3, 3)), f),
                                                                    arr(np.ones((2, 3)), f), arr(np.eye(2), f)]))
    _raises("expects", lambda: nd.invoke("_backward_linalg_sumlogdiag", [arr(np.ones(3), f), arr(np.eye(2), f)]))
    lu = arr(np.eye(2), f)
    good_piv = nd.array([1, 2], dtype="int32")
    _raises("expects", lambda: nd.invoke("_backward_linalg_det", [arr([1.0], f), arr([1.0], f), lu,
                                                                  nd.array([1, 2, 3], dtype="int32")]))
    _raises("outside", lambda: nd.invoke("_backward_linalg_det", [arr([1.0], f), arr([1.0], f), lu,
                                                                  nd.array([1, 7], dtype="int32")]))
    _raises("dtype", lambda: nd.invoke("_backward_linalg_det", [arr([1.0], f), arr([1.0], f), lu,
                                                                arr([1.0, 2.0], f)]))
    # With fitting inputs the hand call gives det * A^-T.
    g = nd.invoke("_backward_linalg_det", [arr([2.0], f), arr([1.0], f), lu, good_piv])
    assert_almost_equal(g.asnumpy(), 2.0 * np.eye(2))
