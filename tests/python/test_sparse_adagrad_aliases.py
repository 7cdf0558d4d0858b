"""MXNet's sparse AdaGrad (_sparse_adagrad_update), the sparse regression outputs taking csr
labels and the sparse straight-through estimators, against numpy and the dense operators."""
import numpy as np
import pytest

import weft as mx
from weft import nd


@pytest.fixture
def rng():
    return np.random.default_rng(21)


def _np_adagrad(w, h, g_rows, rows, lr, eps, rescale=1.0, clip=-1.0):
    w, h = w.copy(), h.copy()
    for k, r in enumerate(rows):
        g = rescale * g_rows[k]
        if clip >= 0:
            g = np.clip(g, -clip, clip)
        h[r] += g * g
        w[r] -= lr * g / np.sqrt(h[r] + eps)
    return w, h


@pytest.mark.parametrize("rescale,clip", [(1.0, -1.0), (0.5, 0.3)])
def test_sparse_adagrad_dense_weight_touches_only_gradient_rows(rng, rescale, clip):
    w0 = rng.standard_normal((6, 4)).astype(np.float32)
    h0 = rng.uniform(0.1, 1.0, (6, 4)).astype(np.float32)
    rows = np.array([1, 4])
    g_rows = rng.standard_normal((2, 4)).astype(np.float32)
    w, h = nd.array(w0), nd.array(h0)
    g = nd.sparse.row_sparse_array((g_rows, rows), shape=(6, 4))
    nd.sparse.adagrad_update(w, g, h, lr=0.2, epsilon=1e-6, rescale_grad=rescale, clip_gradient=clip, out=w)
    want_w, want_h = _np_adagrad(w0, h0, g_rows, rows, 0.2, 1e-6, rescale, clip)
    np.testing.assert_allclose(w.asnumpy(), want_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.asnumpy(), want_h, rtol=1e-5, atol=1e-6)
    untouched = [0, 2, 3, 5]
    np.testing.assert_array_equal(w.asnumpy()[untouched], w0[untouched])
    np.testing.assert_array_equal(h.asnumpy()[untouched], h0[untouched])


def test_sparse_adagrad_untouched_rows_stay_finite_with_zero_history():
    # With epsilon 0 and an empty history a dense update would make 0/0 in the rows the
    # gradient does not store; the row update never computes them.
    w, h = nd.ones((4, 2)), nd.zeros((4, 2))
    g = nd.sparse.row_sparse_array((np.full((1, 2), 2.0, np.float32), [2]), shape=(4, 2))
    out = nd.sparse.adagrad_update(w, g, h, lr=0.5, epsilon=0.0)
    want = np.ones((4, 2), np.float32)
    want[2] = 1 - 0.5 * 2 / 2
    np.testing.assert_array_equal(out.asnumpy(), want)
    np.testing.assert_array_equal(h.asnumpy()[[0, 1, 3]], 0)
    np.testing.assert_array_equal(h.asnumpy()[2], 4)


def test_sparse_adagrad_row_sparse_weight_and_history(rng):
    w0 = rng.standard_normal((5, 3)).astype(np.float32)
    h0 = rng.uniform(0.1, 1.0, (5, 3)).astype(np.float32)
    rows = np.array([0, 3])
    g_rows = rng.standard_normal((2, 3)).astype(np.float32)
    w, h = nd.array(w0).tostype("row_sparse"), nd.array(h0).tostype("row_sparse")
    g = nd.sparse.row_sparse_array((g_rows, rows), shape=(5, 3))
    out = nd.sparse.adagrad_update(w, g, h, lr=0.1)
    want_w, want_h = _np_adagrad(w0, h0, g_rows, rows, 0.1, 1e-7)
    assert out.stype == "row_sparse"
    np.testing.assert_allclose(out.asnumpy(), want_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.asnumpy(), want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(w.asnumpy(), w0)  # the weight itself is not written


def test_sparse_adagrad_dense_gradient_is_the_dense_update(rng):
    w0 = rng.standard_normal((3, 4)).astype(np.float32)
    g0 = rng.standard_normal((3, 4)).astype(np.float32)
    h1, h2 = nd.ones((3, 4)), nd.ones((3, 4))
    a = nd.sparse.adagrad_update(nd.array(w0), nd.array(g0), h1, lr=0.3)
    b = nd.adagrad_update(nd.array(w0), nd.array(g0), h2, lr=0.3)
    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    np.testing.assert_array_equal(h1.asnumpy(), h2.asnumpy())
    want_w, _ = _np_adagrad(w0, np.ones((3, 4), np.float32), g0, range(3), 0.3, 1e-7)
    np.testing.assert_allclose(a.asnumpy(), want_w, rtol=1e-5)


def test_sparse_adagrad_errors():
    w, h = nd.ones((4, 2)), nd.ones((4, 2))
    g = nd.sparse.row_sparse_array((np.ones((1, 2), np.float32), [1]), shape=(4, 2))
    with pytest.raises(mx.base.MXNetError, match="weight decay is not supported"):
        nd.sparse.adagrad_update(w, g, h, lr=0.1, wd=0.01)
    with pytest.raises(mx.base.MXNetError, match="shape"):
        nd.sparse.adagrad_update(w, g, nd.ones((3, 2)), lr=0.1)
    partial = nd.sparse.row_sparse_array((np.ones((2, 2), np.float32), [0, 2]), shape=(4, 2))
    with pytest.raises(mx.base.MXNetError, match="must store every row"):
        nd.sparse.adagrad_update(partial, g, nd.ones((4, 2)).tostype("row_sparse"), lr=0.1)
    with pytest.raises(mx.base.MXNetError, match="expected weight, grad and history all row_sparse"):
        nd.sparse.adagrad_update(w.tostype("row_sparse"), g, h, lr=0.1)


def test_sparse_adagrad_symbol_binds_dense():
    w, g, h = mx.sym.var("w"), mx.sym.var("g"), mx.sym.var("h")
    s = mx.sym.sparse.adagrad_update(w, g, h, lr=0.5)
    h_arr = nd.zeros((2, 2))
    ex = s.bind(mx.cpu(), {"w": nd.ones((2, 2)), "g": nd.array([[2, 0], [0, 0]])}, aux_states={"h": h_arr})
    out = ex.forward()[0].asnumpy()
    np.testing.assert_allclose(out, [[1 - 0.5 * 2 / np.sqrt(4 + 1e-7), 1], [1, 1]], rtol=1e-6)
    np.testing.assert_array_equal(h_arr.asnumpy(), [[4, 0], [0, 0]])


@pytest.mark.parametrize("name", ["LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput"])
def test_regression_outputs_take_csr_labels(rng, name):
    data = rng.standard_normal((4, 3)).astype(np.float32)
    label = np.where(rng.uniform(size=(4, 3)) < 0.5, 0, rng.standard_normal((4, 3))).astype(np.float32)
    sparse_op, dense_op = getattr(nd.sparse, name), getattr(nd, name)
    outs, grads = [], []
    for lab in (nd.array(label).tostype("csr"), nd.array(label)):
        x = nd.array(data)
        x.attach_grad()
        with mx.autograd.record():
            y = (sparse_op if lab.stype == "csr" else dense_op)(x, lab, grad_scale=2.0)
        y.backward()
        outs.append(y.asnumpy())
        grads.append(x.grad.asnumpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(grads[0], grads[1])
    fwd = {"LinearRegressionOutput": data, "LogisticRegressionOutput": 1 / (1 + np.exp(-data)),
           "MAERegressionOutput": data}[name]
    np.testing.assert_allclose(outs[0], fwd, rtol=1e-6)
    diff = fwd - label
    want_grad = 2.0 * (np.sign(diff) if name == "MAERegressionOutput" else diff) / 3  # scaled by 1/num_output
    np.testing.assert_allclose(grads[0], want_grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
@pytest.mark.parametrize("name,fn", [("round_ste", np.round), ("sign_ste", np.sign)])
def test_ste_keep_storage_and_pass_gradient(rng, stype, name, fn):
    a = np.where(rng.uniform(size=(5, 4)) < 0.6, 0, rng.uniform(-3, 3, (5, 4))).astype(np.float32)
    a[0, 0] = 2.5  # half-way: MXNet (and numpy's sign) agree; round goes away from zero
    x = nd.array(a).tostype(stype)
    x.attach_grad()
    with mx.autograd.record():
        y = getattr(nd.sparse, "_contrib_" + name)(x)
    assert y.stype == stype
    dense = getattr(nd.contrib, name)(nd.array(a)).asnumpy()
    np.testing.assert_array_equal(y.asnumpy(), dense)
    want = np.sign(a) * np.floor(np.abs(a) + 0.5) if name == "round_ste" else fn(a)
    np.testing.assert_array_equal(y.asnumpy(), want)
    y.backward(nd.array(np.full((5, 4), 3.0, np.float32)))
    np.testing.assert_array_equal(x.grad.asnumpy(), np.full((5, 4), 3.0))
