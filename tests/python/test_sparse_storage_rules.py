"""MXNet 1.9's storage-type rules for operators with sparse inputs (issue 21): each sparse
result must equal the dense computation, carry the storage type MXNet gives, and the
differentiable ones must match numeric gradients."""
import numpy as np
import pytest

import weft as mx
from weft import nd
from weft.test_utils import check_numeric_gradient, check_symbolic_forward


def _rand(shape, density, seed, low=-1.0, high=1.0):
    rng = np.random.RandomState(seed)
    a = rng.uniform(low, high, shape).astype(np.float32)
    a[rng.uniform(size=shape) > density] = 0
    return a


def _rows(shape, rows, seed):
    """A dense array whose only nonzero rows are `rows` (for row_sparse operands)."""
    a = np.zeros(shape, np.float32)
    a[rows] = np.random.RandomState(seed).uniform(0.5, 1.5, (len(rows),) + shape[1:])
    return a


# ---------------------------------------------------------------- dot forward_stype

@pytest.mark.parametrize("lhs_stype,rhs_stype", [("csr", "default"), ("default", "csr"), ("csr", "row_sparse"),
                                                 ("csr", "csr"), ("row_sparse", "default")])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("forward_stype", ["default", "csr", "row_sparse"])
def test_dot_forward_stype_gives_that_storage(lhs_stype, rhs_stype, ta, tb, forward_stype):
    a = _rand((6, 7) if not ta else (7, 6), 0.4, 1)
    b = _rand((7, 5) if not tb else (5, 7), 0.4, 2)
    want = np.dot(a.T if ta else a, b.T if tb else b)
    out = nd.dot(nd.array(a).tostype(lhs_stype), nd.array(b).tostype(rhs_stype), transpose_a=ta, transpose_b=tb,
                 forward_stype=forward_stype)
    assert out.stype == forward_stype
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_dot_forward_stype_in_a_sparse_graph():
    a = _rand((6, 7), 0.4, 3)
    b = _rand((5, 7), 0.5, 4)
    lhs = mx.sym.Variable("lhs", stype="default")
    rhs = mx.sym.Variable("rhs", stype="csr")
    out = mx.sym.sparse.dot(lhs, rhs, transpose_b=True, forward_stype="csr")
    res = check_symbolic_forward(out, {"lhs": nd.array(a), "rhs": nd.array(b).tostype("csr")}, [a.dot(b.T)],
                                 rtol=1e-5, atol=1e-6)
    assert res[0].stype == "csr"


def test_dot_csr_gradient_to_dense_rhs_is_numeric():
    x = mx.sym.Variable("x", stype="csr")
    w = mx.sym.Variable("w")
    out = mx.sym.sparse.dot(x, w, forward_stype="default")
    loc = {"x": nd.array(_rand((4, 6), 0.5, 5)).tostype("csr"), "w": _rand((6, 3), 1.0, 6)}
    check_numeric_gradient(out, loc, grad_nodes=["w"], numeric_eps=1e-3, rtol=1e-2, atol=1e-3)


# ---------------------------------------------------------------- _maximum, _minimum, _hypot

@pytest.mark.parametrize("op,fn", [("_maximum", np.maximum), ("_minimum", np.minimum), ("_hypot", np.hypot)])
@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_max_min_hypot_keep_the_storage_of_two_sparse_operands(op, fn, stype):
    if stype == "row_sparse":
        a, b = _rows((6, 3), [0, 2, 5], 7), -_rows((6, 3), [2, 3], 8)
    else:
        a, b = _rand((6, 3), 0.5, 7), _rand((6, 3), 0.5, 8)
    f = getattr(nd._internal, op)
    out = f(nd.array(a).tostype(stype), nd.array(b).tostype(stype))
    assert out.stype == stype
    np.testing.assert_allclose(out.asnumpy(), fn(a, b), rtol=1e-6)
    mixed = f(nd.array(a).tostype(stype), nd.array(b))
    assert mixed.stype == "default"
    np.testing.assert_allclose(mixed.asnumpy(), fn(a, b), rtol=1e-6)


def test_hypot_gradient_with_a_sparse_head_is_nan_where_both_inputs_are_zero():
    # d hypot(x, y) / dx = x / hypot(x, y) is 0 / 0 at x = y = 0, whatever the head
    # gradient stores there (MXNet computes it densely).
    a, b = _rows((4, 2), [1], 9), _rows((4, 2), [1, 2], 10)
    lhs = nd.array(a).tostype("row_sparse")
    rhs = nd.array(b).tostype("row_sparse")
    lhs.attach_grad(stype="default")
    rhs.attach_grad(stype="default")
    with mx.autograd.record():
        out = nd._internal._hypot(lhs, rhs)
    assert out.stype == "row_sparse"
    head = nd.array(_rows((4, 2), [1], 11)).tostype("row_sparse")
    out.backward(head)
    h = np.hypot(a, b)
    with np.errstate(invalid="ignore", divide="ignore"):
        want = head.asnumpy() * a / h
    np.testing.assert_allclose(lhs.grad.asnumpy(), want, rtol=1e-5, equal_nan=True)
    assert np.isnan(lhs.grad.asnumpy()[[0, 3]]).all()


def test_hypot_numeric_gradient_with_sparse_inputs():
    x = mx.sym.Variable("x", stype="row_sparse")
    y = mx.sym.Variable("y", stype="row_sparse")
    loc = {"x": nd.array(_rows((4, 3), [0, 1, 2, 3], 12)).tostype("row_sparse"),
           "y": nd.array(_rows((4, 3), [0, 1, 2, 3], 13)).tostype("row_sparse")}
    check_numeric_gradient(mx.sym._internal._hypot(x, y), loc, numeric_eps=1e-3, rtol=1e-2, atol=1e-3)


# ---------------------------------------------------------------- scatter operators

@pytest.mark.parametrize("rhs_stype", ["row_sparse", "default", "csr"])
def test_scatter_elemwise_div_computes_only_the_lhs_rows(rhs_stype):
    a = _rows((6, 4), [1, 3, 4], 14)
    b = _rows((6, 4), [3, 4, 5], 15) if rhs_stype == "row_sparse" else _rand((6, 4), 1.0, 15, 0.5, 1.5)
    out = nd._internal._scatter_elemwise_div(nd.array(a).tostype("row_sparse"), nd.array(b).tostype(rhs_stype))
    assert out.stype == "row_sparse"
    assert out.indices.asnumpy().tolist() == [1, 3, 4]
    with np.errstate(invalid="ignore", divide="ignore"):
        want = a / b
    got = out.asnumpy()
    np.testing.assert_allclose(got[[1, 3, 4]], want[[1, 3, 4]], rtol=1e-6)
    assert (got[[0, 2, 5]] == 0).all()


def test_scatter_elemwise_div_of_a_dense_lhs_is_elemwise_div():
    a, b = _rand((3, 4), 1.0, 16), _rand((3, 4), 1.0, 17, 0.5, 1.5)
    out = nd._internal._scatter_elemwise_div(nd.array(a), nd.array(b).tostype("row_sparse"))
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), a / b, rtol=1e-6)


@pytest.mark.parametrize("op,sign", [("_scatter_plus_scalar", 1.0), ("_scatter_minus_scalar", -1.0)])
@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_scatter_scalar_ops_change_only_stored_values(op, sign, stype):
    a = _rows((5, 3), [0, 3], 18) if stype == "row_sparse" else _rand((5, 3), 0.5, 18)
    out = getattr(nd._internal, op)(nd.array(a).tostype(stype), scalar=2.5)
    assert out.stype == stype
    np.testing.assert_allclose(out.asnumpy(), np.where(a != 0, a + sign * 2.5, 0), rtol=1e-6)
    dense = getattr(nd._internal, op)(nd.array(a), scalar=2.5)
    np.testing.assert_allclose(dense.asnumpy(), a + sign * 2.5, rtol=1e-6)


@pytest.mark.parametrize("op", ["_scatter_plus_scalar", "_scatter_minus_scalar"])
def test_scatter_scalar_numeric_gradient(op):
    check_numeric_gradient(op, [np.random.RandomState(19).uniform(-1, 1, (3, 4))], params={"scalar": 1.5})


# ---------------------------------------------------------------- quadratic, take

def test_quadratic_of_csr_stays_csr_only_without_constant():
    a = _rand((4, 5), 0.5, 20)
    x = nd.array(a).tostype("csr")
    out = nd.contrib.quadratic(x, a=0.5, b=-2.0, c=0.0)
    assert out.stype == "csr"
    np.testing.assert_allclose(out.asnumpy(), 0.5 * a * a - 2.0 * a, rtol=1e-6)
    out = nd.contrib.quadratic(x, a=0.5, b=-2.0, c=1.0)
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), 0.5 * a * a - 2.0 * a + 1.0, rtol=1e-6)


@pytest.mark.parametrize("mode", ["clip", "wrap"])
def test_take_of_csr_rows_is_csr(mode):
    a = _rand((5, 6), 0.5, 21)
    idx = np.array([0, -1, 7, 2, 2, -8], np.float32)
    out = nd.take(nd.array(a).tostype("csr"), nd.array(idx), mode=mode)
    assert out.stype == "csr"
    assert out.indptr[0].asscalar() == 0
    np.testing.assert_array_equal(out.asnumpy(), np.take(a, idx.astype(np.int64), axis=0, mode=mode))


def test_take_of_csr_with_raise_mode_or_another_axis_is_dense():
    a = _rand((5, 6), 0.5, 22)
    x = nd.array(a).tostype("csr")
    out = nd.take(x, nd.array([1, 0, 3]), axis=1)
    assert out.stype == "default"
    np.testing.assert_array_equal(out.asnumpy(), np.take(a, [1, 0, 3], axis=1))
    out = nd.take(x, nd.array([4, 0]), mode="raise")
    assert out.stype == "default"
    np.testing.assert_array_equal(out.asnumpy(), a[[4, 0]])


# ---------------------------------------------------------------- BatchNorm fallback

def _bn_location(shape, seed):
    rng = np.random.RandomState(seed)
    data = nd.array(rng.normal(-0.1, 0.1, shape)).tostype("row_sparse")
    c = shape[1]
    gamma = nd.array(rng.uniform(0.5, 1.5, (c,))).tostype("row_sparse")
    beta = nd.array(rng.uniform(0.5, 1.5, (c,))).tostype("row_sparse")
    aux = [nd.array(rng.uniform(size=(c,))), nd.array(rng.uniform(0.5, 1.0, (c,)))]
    return [data, gamma, beta], aux


def test_batchnorm_fix_gamma_refuses_sparse_inputs():
    loc, aux = _bn_location((2, 3), 23)
    sym = mx.sym.BatchNorm(mx.sym.Variable("data", stype="row_sparse"), fix_gamma=True)
    with pytest.raises(mx.base.MXNetError, match="fix_gamma=True is not supported with sparse"):
        check_numeric_gradient(sym, loc, aux, numeric_eps=1e-3, rtol=0.16, atol=1e-2)
    with pytest.raises(mx.base.MXNetError, match="fix_gamma=True is not supported with sparse"):
        nd.BatchNorm(*loc, *aux, fix_gamma=True)


def test_batchnorm_falls_back_densely_for_sparse_inputs():
    loc, aux = _bn_location((2, 3, 2, 2), 24)
    got = nd.BatchNorm(*loc, *aux, fix_gamma=False)
    want = nd.BatchNorm(*[a.tostype("default") for a in loc], *aux, fix_gamma=False)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    sym = mx.sym.BatchNorm(mx.sym.Variable("data", stype="row_sparse"), fix_gamma=False)
    check_numeric_gradient(sym, loc, aux, numeric_eps=1e-3, rtol=0.16, atol=1e-2)


# ---------------------------------------------------------------- gamma's gradient at its poles

@pytest.mark.parametrize("stype", ["default", "row_sparse"])
def test_gamma_and_gammaln_gradients_at_zero_are_infinite(stype):
    # psi has a pole at 0; MXNet's psi returns the largest double there, infinite in float32.
    x = nd.zeros((2, 3)).tostype(stype)
    x.attach_grad()
    with mx.autograd.record():
        y = nd.gamma(x)
    y.backward(nd.ones((2, 3)))
    assert np.isposinf(x.grad.asnumpy()).all()
    x = nd.zeros((2, 3))
    x.attach_grad()
    with mx.autograd.record():
        y = nd.gammaln(x)
    y.backward(nd.ones((2, 3)))
    assert np.isposinf(x.grad.asnumpy()).all()
    check_numeric_gradient("gamma", [np.random.RandomState(25).uniform(0.5, 2.0, (3, 2))])


# ---------------------------------------------------------------- symbols and sparse executors

def test_symbol_functions_ignore_out():
    l = mx.sym.Variable("lhs", stype="row_sparse")
    r = mx.sym.Variable("rhs", stype="row_sparse")
    s = mx.sym.sparse.elemwise_add(l, r, out=l)
    assert s.list_arguments() == ["lhs", "rhs"]
    a, b = _rows((4, 2), [1], 26), _rows((4, 2), [2], 27)
    res = check_symbolic_forward(s, {"lhs": nd.array(a).tostype("row_sparse"),
                                     "rhs": nd.array(b).tostype("row_sparse")}, [a + b])
    assert res[0].stype == "row_sparse"


def test_sparse_executor_outputs_have_their_shapes_before_forward():
    data = mx.sym.Variable("data")
    weight = mx.sym.Variable("w", stype="row_sparse")
    out = mx.sym.contrib.SparseEmbedding(data=data, weight=weight, input_dim=10, output_dim=3)
    exe = out.simple_bind(mx.cpu(), grad_req={"data": "null", "w": "write"}, data=(4,))
    assert [o.shape for o in exe.outputs] == [(4, 3)]
    exe.arg_dict["data"][:] = np.array([1, 3, 3, 9])
    w = _rows((10, 3), [1, 3, 9], 28)
    exe.arg_dict["w"][:] = nd.array(w).tostype("row_sparse")
    exe.forward(is_train=True)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), w[[1, 3, 3, 9]], rtol=1e-6)


@pytest.mark.parametrize("sparse_grad,want", [(True, "row_sparse"), (False, "default")])
def test_embedding_weight_gradient_storage_follows_sparse_grad(sparse_grad, want):
    data = mx.sym.Variable("data")
    weight = mx.sym.Variable("w", stype="row_sparse")
    out = mx.sym.sparse.Embedding(data=data, weight=weight, input_dim=6, output_dim=2, sparse_grad=sparse_grad)
    exe = out.simple_bind(mx.cpu(), grad_req={"data": "null", "w": "write"}, data=(3,))
    exe.arg_dict["data"][:] = np.array([0, 4, 4])
    exe.arg_dict["w"][:] = nd.array(_rows((6, 2), [0, 4], 29)).tostype("row_sparse")
    exe.forward(is_train=True)
    g = _rand((3, 2), 1.0, 30)
    exe.backward([nd.array(g)])
    assert exe.grad_dict["w"].stype == want
    onehot = np.eye(6, dtype=np.float32)[[0, 4, 4]]
    np.testing.assert_allclose(exe.grad_dict["w"].asnumpy(), onehot.T.dot(g), rtol=1e-5)


def test_sparse_executor_converts_head_gradient_dtype():
    cond = mx.sym.Variable("condition", stype="csr")
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    c = (_rand((3, 4), 0.5, 31) != 0).astype(np.float32)
    exe = mx.sym.where(cond, x, y).simple_bind(mx.cpu(), condition=(3, 4), x=(3, 4), y=(3, 4), grad_req="write")
    exe.forward(is_train=True, condition=nd.array(c).tostype("csr"), x=np.ones((3, 4)), y=np.zeros((3, 4)))
    head = np.arange(12, dtype=np.int32).reshape(3, 4) + 20
    exe.backward(nd.array(head, dtype=np.int32))
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), np.where(c != 0, head, 0))
    np.testing.assert_array_equal(exe.grad_dict["y"].asnumpy(), np.where(c != 0, 0, head))


# ---------------------------------------------------------------- FullyConnected with a (num_hidden, 1) bias

@pytest.mark.parametrize("data_stype", ["default", "csr"])
def test_fully_connected_takes_a_column_bias_with_sparse_parameters(data_stype):
    x, w, b = _rand((5, 10), 0.5, 32), _rand((8, 10), 1.0, 33), _rand((8, 1), 1.0, 34)
    out = nd.sparse.FullyConnected(nd.array(x).tostype(data_stype), nd.array(w).tostype("row_sparse"),
                                   nd.array(b).tostype("row_sparse"), num_hidden=8)
    np.testing.assert_allclose(out.asnumpy(), x.dot(w.T) + b.T, rtol=1e-5, atol=1e-6)


def test_fully_connected_column_bias_gradient_keeps_its_shape():
    x, w, b = (nd.array(_rand(s, 1.0, 35 + i)) for i, s in enumerate([(4, 6), (3, 6), (3, 1)]))
    b.attach_grad()
    with mx.autograd.record():
        y = nd.FullyConnected(x, w, b, num_hidden=3)
    g = _rand((4, 3), 1.0, 38)
    y.backward(nd.array(g))
    assert b.grad.shape == (3, 1)
    np.testing.assert_allclose(b.grad.asnumpy(), g.sum(axis=0)[:, None], rtol=1e-5)
    sym = mx.sym.FullyConnected(mx.sym.Variable("x"), mx.sym.Variable("w"), mx.sym.Variable("b"), num_hidden=3)
    check_numeric_gradient(sym, {"x": _rand((4, 6), 1.0, 39), "w": _rand((3, 6), 1.0, 40),
                                 "b": _rand((3, 1), 1.0, 41)}, numeric_eps=1e-3, rtol=1e-2, atol=1e-3)


def test_fully_connected_refuses_other_bias_shapes():
    x, w = nd.ones((2, 4)), nd.ones((3, 4))
    with pytest.raises(mx.base.MXNetError, match="input 'bias' has shape"):
        nd.FullyConnected(x, w, nd.ones((3, 2)), num_hidden=3)
    with pytest.raises(mx.base.MXNetError, match="input 'bias' has shape"):
        nd.FullyConnected(x, w, nd.ones((1, 3)), num_hidden=3)
