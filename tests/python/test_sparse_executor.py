"""Executors bound with csr and row_sparse arrays (MXNet's bind/simple_bind with sparse
arguments and gradients): the results equal those of the dense arrays, and the storage
types of outputs and gradients are MXNet's."""
import numpy as np
import pytest

import weft as mx
from weft import nd
from weft.test_utils import check_symbolic_backward, check_symbolic_forward, check_numeric_gradient


def _rand(shape, density, seed):
    rng = np.random.RandomState(seed)
    a = rng.uniform(-1, 1, shape).astype(np.float32)
    a[rng.uniform(size=shape) > density] = 0
    return a


def _rows(shape, rows, seed):
    a = np.random.RandomState(seed).uniform(-1, 1, shape).astype(np.float32)
    keep = np.zeros(shape[0], bool)
    keep[rows] = True
    a[~keep] = 0
    return a


def test_dot_csr_dense_forward_backward():
    lhs_np, rhs_np = _rand((6, 5), 0.4, 0), _rand((5, 3), 1.0, 1)
    lhs = nd.array(lhs_np).tostype("csr")
    sym = mx.sym.sparse.dot(mx.sym.Variable("lhs"), mx.sym.Variable("rhs"))
    outs = check_symbolic_forward(sym, {"lhs": lhs, "rhs": rhs_np}, [lhs_np @ rhs_np], rtol=1e-5, atol=1e-6)
    assert outs[0].shape == (6, 3)
    ograd = np.random.RandomState(2).uniform(-1, 1, (6, 3)).astype(np.float32)
    grads = check_symbolic_backward(sym, {"lhs": lhs, "rhs": rhs_np}, [ograd], {"rhs": lhs_np.T @ ograd},
                                    grad_stypes={"rhs": "row_sparse"}, rtol=1e-5, atol=1e-6)
    # The gradient to the dense weight is csr.T . ograd: row_sparse over the columns used.
    assert grads["rhs"].stype == "row_sparse"
    used = np.nonzero(np.any(lhs_np != 0, axis=0))[0]
    assert grads["rhs"].indices.asnumpy().tolist() == used.tolist()
    # A dense gradient array gets the same values.
    dense = check_symbolic_backward(sym, {"lhs": lhs, "rhs": rhs_np}, [ograd], {"rhs": lhs_np.T @ ograd},
                                    rtol=1e-5, atol=1e-6)
    assert dense["rhs"].stype == "default"


def test_dot_transpose_a_csr():
    lhs_np, rhs_np = _rand((6, 4), 0.5, 3), _rand((6, 2), 1.0, 4)
    sym = mx.sym.sparse.dot(mx.sym.Variable("lhs"), mx.sym.Variable("rhs"), transpose_a=True)
    ex = sym.bind(mx.cpu(), {"lhs": nd.array(lhs_np).tostype("csr"), "rhs": nd.array(rhs_np)})
    out = ex.forward()[0]
    assert out.stype == "row_sparse"
    np.testing.assert_allclose(out.asnumpy(), lhs_np.T @ rhs_np, rtol=1e-5, atol=1e-6)


def test_retain_and_square_sum_stypes():
    x_np = _rows((8, 3), [1, 4, 6], 5)
    x = nd.array(x_np).tostype("row_sparse")
    idx = np.array([4, 6, 7], dtype=np.float32)
    sym = mx.sym.sparse.retain(mx.sym.Variable("data"), mx.sym.Variable("indices"))
    ex = sym.bind(mx.cpu(), {"data": x, "indices": nd.array(idx)})
    out = ex.forward()[0]
    assert out.stype == "row_sparse"
    want = np.zeros_like(x_np)
    want[[4, 6]] = x_np[[4, 6]]
    np.testing.assert_array_equal(out.asnumpy(), want)

    ss = mx.sym._internal._square_sum(mx.sym.Variable("x", stype="row_sparse"), axis=1, keepdims=True)
    out = ss.bind(mx.cpu(), {"x": x}).forward()[0]
    assert out.stype == "row_sparse"
    want = np.sum(x_np ** 2, axis=1, keepdims=True)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)
    check_symbolic_forward(mx.sym._internal._square_sum(mx.sym.Variable("x"), axis=0), {"x": x},
                           [np.sum(x_np ** 2, axis=0)], rtol=1e-5, atol=1e-6)
    # Backward with a row_sparse and with a dense head gradient, into a row_sparse gradient.
    og = np.random.RandomState(6).uniform(-1, 1, (8, 1)).astype(np.float32)
    for head in (nd.array(og).tostype("row_sparse"), og):
        grads = check_symbolic_backward(ss, [x], [head], [2 * x_np * og], grad_stypes={"x": "row_sparse"},
                                        rtol=1e-5, atol=1e-6)
        assert grads["x"].stype == "row_sparse"


@pytest.mark.parametrize("lstype,rstype,out_stype", [
    ("row_sparse", "row_sparse", "row_sparse"),
    ("csr", "csr", "csr"),
    ("row_sparse", "default", "default"),
    ("csr", "row_sparse", "default"),  # no kernel mixes them: the dense fallback
])
def test_elemwise_add_mixed_stypes(lstype, rstype, out_stype):
    a_np, b_np = _rows((5, 4), [0, 3], 6), _rows((5, 4), [3, 4], 7)
    a = nd.array(a_np).tostype(lstype)
    b = nd.array(b_np).tostype(rstype)
    sym = mx.sym.sparse.elemwise_add(mx.sym.Variable("lhs"), mx.sym.Variable("rhs"))
    ex = sym.bind(mx.cpu(), {"lhs": a, "rhs": b})
    out = ex.forward()[0]
    assert out.stype == out_stype
    np.testing.assert_allclose(out.asnumpy(), a_np + b_np, rtol=1e-6)


def test_elemwise_mul_backward_row_sparse_grads():
    a_np, b_np = _rows((6, 3), [0, 2, 5], 8), _rows((6, 3), [2, 3, 5], 9)
    loc = {"lhs": nd.array(a_np).tostype("row_sparse"), "rhs": nd.array(b_np).tostype("row_sparse")}
    sym = mx.sym.sparse.elemwise_mul(mx.sym.Variable("lhs"), mx.sym.Variable("rhs"))
    check_symbolic_forward(sym, loc, [a_np * b_np], rtol=1e-6, atol=1e-7)
    og = np.random.RandomState(10).uniform(-1, 1, (6, 3)).astype(np.float32)
    grads = check_symbolic_backward(sym, loc, [og], {"lhs": og * b_np, "rhs": og * a_np},
                                    grad_stypes={"lhs": "row_sparse", "rhs": "row_sparse"}, rtol=1e-6, atol=1e-7)
    assert grads["lhs"].stype == grads["rhs"].stype == "row_sparse"
    # grad_req="add" adds to what the (row_sparse) gradient arrays held.
    check_symbolic_backward(sym, loc, [og], {"lhs": og * b_np, "rhs": og * a_np}, grad_req="add",
                            grad_stypes={"lhs": "row_sparse", "rhs": "row_sparse"}, rtol=1e-5, atol=1e-6)


def test_cast_storage_in_a_graph():
    x_np = _rand((4, 5), 0.5, 11)
    x = mx.sym.Variable("x")
    sym = mx.sym.sparse.cast_storage(x, stype="csr") * 2
    ex = sym.bind(mx.cpu(), {"x": nd.array(x_np).tostype("row_sparse")})
    out = ex.forward()[0]
    assert out.stype == "csr"
    np.testing.assert_allclose(out.asnumpy(), 2 * x_np, rtol=1e-6)
    # Dense arguments too: the graph makes a sparse array, so the executor runs node by node
    # and the output keeps its storage type; the gradient to the dense input is dense.
    for stype in ("csr", "row_sparse"):
        s2 = mx.sym.cast_storage(x, stype=stype)
        ex = s2.bind(mx.cpu(), {"x": nd.array(x_np)}, args_grad={"x": nd.zeros((4, 5))})
        out = ex.forward(is_train=True)[0]
        assert out.stype == stype
        np.testing.assert_array_equal(out.asnumpy(), x_np)
        og = np.random.RandomState(3).uniform(-1, 1, (4, 5)).astype(np.float32)
        ex.backward(nd.array(og))
        assert ex.grad_dict["x"].stype == "default"
        np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), og, rtol=1e-6)
    # cast_storage to default keeps the planned executor.
    assert mx.sym.cast_storage(x, stype="default").bind(mx.cpu(), {"x": nd.array(x_np)}).outputs


def test_fallback_op_densifies_and_grads_cast_back():
    # exp has no sparse kernel: the dense fallback, and a row_sparse gradient array receives
    # the dense gradient cast to row_sparse.
    x_np = _rows((5, 2), [1, 3], 12)
    sym = mx.sym.exp(mx.sym.Variable("x"))
    loc = {"x": nd.array(x_np).tostype("row_sparse")}
    check_symbolic_forward(sym, loc, [np.exp(x_np)], rtol=1e-5)
    og = np.ones((5, 2), np.float32)
    grads = check_symbolic_backward(sym, loc, [og], {"x": np.exp(x_np)}, grad_stypes={"x": "row_sparse"},
                                    rtol=1e-5)
    assert grads["x"].stype == "row_sparse"
    check_numeric_gradient(sym, {"x": x_np}, grad_stype_dict={"x": "row_sparse"}, numeric_eps=1e-3, rtol=1e-2,
                           atol=1e-3)


def test_embedding_sparse_grad_in_executor():
    V, D = 10, 3
    w_np = np.random.RandomState(13).uniform(-1, 1, (V, D)).astype(np.float32)
    idx = np.array([[1, 7], [7, 3]], np.float32)
    sym = mx.sym.Embedding(mx.sym.Variable("data"), mx.sym.Variable("weight"), input_dim=V, output_dim=D,
                           sparse_grad=True)
    grad = nd.sparse.zeros("row_sparse", (V, D))
    ex = sym.bind(mx.cpu(), {"data": nd.array(idx), "weight": nd.array(w_np)}, args_grad={"weight": grad},
                  grad_req={"data": "null", "weight": "write"})
    out = ex.forward(is_train=True)[0]
    np.testing.assert_allclose(out.asnumpy(), w_np[idx.astype(int)], rtol=1e-6)
    og = np.random.RandomState(14).uniform(-1, 1, (2, 2, D)).astype(np.float32)
    ex.backward(nd.array(og))
    want = np.zeros((V, D), np.float32)
    np.add.at(want, idx.astype(int).ravel(), og.reshape(-1, D))
    # The caller's gradient object holds the new rows: only those the indices used.
    assert grad.stype == "row_sparse" and ex.grad_dict["weight"] is grad
    assert grad.indices.asnumpy().tolist() == [1, 3, 7]
    np.testing.assert_allclose(grad.asnumpy(), want, rtol=1e-5, atol=1e-6)
    # A second step with other indices replaces the gradient ("write").
    ex.forward(is_train=True, data=nd.array(np.array([[2, 2], [2, 2]], np.float32)))
    ex.backward(nd.array(og))
    assert grad.indices.asnumpy().tolist() == [2]
    np.testing.assert_allclose(grad.asnumpy()[2], og.reshape(-1, D).sum(0), rtol=1e-5)


def test_simple_bind_stype_dict():
    data = mx.sym.Variable("data", stype="csr")
    weight = mx.sym.Variable("weight")
    sym = mx.sym.sparse.dot(data, weight)
    ex = sym.simple_bind(mx.cpu(), data=(4, 6), weight=(6, 2), grad_req={"weight": "write"})
    assert ex.arg_dict["data"].stype == "csr" and ex.arg_dict["weight"].stype == "default"
    assert ex.grad_dict["weight"].stype == "row_sparse" and "data" not in ex.grad_dict
    ex2 = sym.simple_bind(mx.cpu(), stype_dict={"weight": "row_sparse"}, data=(4, 6), weight=(6, 2))
    assert ex2.arg_dict["weight"].stype == "row_sparse" and ex2.grad_dict["weight"].stype == "row_sparse"
    assert ex2.grad_dict["data"].stype == "default"
    d_np, w_np = _rand((4, 6), 0.4, 15), _rand((6, 2), 1.0, 16)
    ex.arg_dict["weight"][:] = w_np
    out = ex.forward(is_train=True, data=nd.array(d_np).tostype("csr"))[0]
    np.testing.assert_allclose(out.asnumpy(), d_np @ w_np, rtol=1e-5, atol=1e-6)
    ex.backward(nd.ones((4, 2)))
    np.testing.assert_allclose(ex.grad_dict["weight"].asnumpy(), d_np.T @ np.ones((4, 2)), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="stype_dict names \\['nope'\\]"):
        sym.simple_bind(mx.cpu(), stype_dict={"nope": "csr"}, data=(4, 6), weight=(6, 2))
    with pytest.raises(ValueError, match="must be 'default', 'row_sparse' or 'csr'"):
        sym.simple_bind(mx.cpu(), stype_dict={"weight": "coo"}, data=(4, 6), weight=(6, 2))


def test_sparse_executor_errors():
    sym = mx.sym.sparse.dot(mx.sym.Variable("lhs"), mx.sym.Variable("rhs"))
    lhs = nd.array(_rand((4, 3), 0.5, 17)).tostype("csr")
    with pytest.raises(mx.base.MXNetError, match="contracted dimension is 3 in the first input and 5"):
        sym.bind(mx.cpu(), {"lhs": lhs, "rhs": nd.zeros((5, 2))})
    with pytest.raises(mx.base.MXNetError, match="gradient array of 'rhs' has shape"):
        sym.bind(mx.cpu(), {"lhs": lhs, "rhs": nd.zeros((3, 2))},
                 args_grad={"rhs": nd.sparse.zeros("row_sparse", (4, 2))})
    ex = sym.bind(mx.cpu(), {"lhs": lhs, "rhs": nd.zeros((3, 2))},
                  args_grad={"rhs": nd.sparse.zeros("row_sparse", (3, 2))})
    with pytest.raises(mx.base.MXNetError, match="run forward first"):
        ex.backward(nd.ones((4, 2)))
    ex.forward(is_train=False)
    with pytest.raises(mx.base.MXNetError, match="head gradient 0 has shape"):
        ex.backward(nd.ones((4, 3)))
    with pytest.raises(mx.base.MXNetError, match="cannot be reshaped"):
        ex.reshape(lhs=(2, 3))
    with pytest.raises(mx.base.MXNetError, match="expected shape"):
        mx.base._api.weft_executor_set_array(ex.handle, 0, 1, nd.zeros((2, 2)))
    dense = sym.bind(mx.cpu(), {"lhs": nd.zeros((4, 3)), "rhs": nd.zeros((3, 2))})
    with pytest.raises(mx.base.MXNetError, match="only an executor bound with sparse arrays"):
        mx.base._api.weft_executor_set_array(dense.handle, 0, 0, nd.zeros((4, 3)))


def _embedding_net(hybridize, seed=0):
    from weft import gluon
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Embedding(20, 4, sparse_grad=True))
        net.add(gluon.nn.Dense(3, flatten=True, in_units=8))
    net.initialize(mx.init.Xavier(rnd_type="gaussian", magnitude=2))
    rng = np.random.RandomState(seed)
    for p in net.collect_params().values():
        p.set_data(nd.array(rng.uniform(-1, 1, p.shape)))
    if hybridize:
        net.hybridize()
    return net


@pytest.mark.parametrize("optimizer,params", [("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}),
                                              ("adam", {"learning_rate": 0.05})])
def test_hybridized_embedding_sparse_grad_trains_as_imperative(optimizer, params):
    from weft import autograd, gluon
    nets = [_embedding_net(False), _embedding_net(True)]
    trainers = [gluon.Trainer(n.collect_params(), optimizer, dict(params)) for n in nets]
    batches = [np.array([[1, 5], [5, 7]]), np.array([[2, 2], [9, 1]]), np.array([[19, 0], [3, 5]])]
    for step, x in enumerate(batches):
        for net, trainer in zip(nets, trainers):
            with autograd.record():
                y = net(nd.array(x))
                loss = (y * y).sum()
            loss.backward()
            g = net[0].weight.grad()
            # The weight's gradient stays row_sparse: only the rows the batch used.
            assert g.stype == "row_sparse"
            assert g.indices.asnumpy().tolist() == sorted(set(x.ravel().tolist()))
            trainer.step(2)
        for (a, b) in zip(nets[0].collect_params().values(), nets[1].collect_params().values()):
            np.testing.assert_allclose(b.data().asnumpy(), a.data().asnumpy(), rtol=1e-5, atol=1e-6,
                                       err_msg="step %d, %s" % (step, a.name))


@pytest.mark.parametrize("weight_stype", ["default", "row_sparse"])
def test_simple_bind_embedding_sparse_grad_gets_row_sparse_gradient(weight_stype):
    V, D, B = 12, 3, 5
    data = mx.sym.Variable("data")
    weight = mx.sym.Variable("embed_weight", stype=weight_stype)
    sym = mx.sym.sparse.Embedding(data=data, weight=weight, input_dim=V, output_dim=D, sparse_grad=True)
    ex = sym.simple_bind(mx.cpu(), grad_req={"data": "null", "embed_weight": "write"}, data=(B,))
    assert ex.grad_dict["embed_weight"].stype == "row_sparse"
    assert ex.arg_dict["embed_weight"].stype == weight_stype
    idx = np.array([3, 0, 3, 11, 7])
    ex.arg_dict["data"][:] = idx
    w = _rows((V, D), [0, 3, 5, 11], 20)
    ex.arg_dict["embed_weight"][:] = nd.array(w).tostype(weight_stype)
    og = np.random.RandomState(21).uniform(-1, 1, (B, D)).astype(np.float32)
    out = ex.forward(is_train=True)[0]
    np.testing.assert_allclose(out.asnumpy(), w[idx], rtol=1e-6)
    ex.backward([nd.array(og)])
    onehot = np.eye(V, dtype=np.float32)[idx]
    g = ex.grad_dict["embed_weight"]
    assert g.stype == "row_sparse" and g.indices.asnumpy().tolist() == [0, 3, 7, 11]
    np.testing.assert_allclose(g.asnumpy(), onehot.T @ og, rtol=1e-5, atol=1e-6)
    # Without sparse_grad the gradient is dense, and so is the executor.
    dense = mx.sym.Embedding(data=data, weight=mx.sym.Variable("w"), input_dim=V, output_dim=D)
    assert dense.simple_bind(mx.cpu(), data=(B,)).grad_dict["w"].stype == "default"


def test_sparse_setitem_whole_array():
    r = nd.sparse.zeros("row_sparse", (4, 2))
    r[:] = nd.array(_rows((4, 2), [1, 2], 22))
    assert r.stype == "row_sparse" and r.indices.asnumpy().tolist() == [1, 2]
    np.testing.assert_array_equal(r.asnumpy(), _rows((4, 2), [1, 2], 22))
    r[:] = 2.5
    np.testing.assert_array_equal(r.asnumpy(), np.full((4, 2), 2.5, np.float32))
    c = nd.sparse.zeros("csr", (3, 4))
    c[:] = _rand((3, 4), 0.5, 23)
    assert c.stype == "csr"
    np.testing.assert_array_equal(c.asnumpy(), _rand((3, 4), 0.5, 23))
    other = nd.sparse.zeros("csr", (3, 4))
    c.copyto(other)
    np.testing.assert_array_equal(other.asnumpy(), c.asnumpy())
    with pytest.raises(ValueError, match="Assigning numeric types to CSRNDArray.*got the number 1"):
        c[:] = 1.0
    with pytest.raises(mx.base.NotSupportedForSparseNDArray):
        r[1:3] = 1.0
    with pytest.raises(mx.base.MXNetError, match="shape"):
        r[:] = nd.zeros((5, 2))


def _train_linear_module(sparse):
    rng = np.random.RandomState(30)
    X = rng.uniform(size=(32, 10)).astype(np.float32)
    X[X < 0.7] = 0
    y = X @ rng.uniform(size=(10, 1)).astype(np.float32)
    data = nd.array(X).tostype("csr") if sparse else nd.array(X)
    it = mx.io.NDArrayIter(data, nd.array(y), batch_size=8, last_batch_handle="discard", label_name="label")
    x = mx.sym.Variable("data", stype="csr" if sparse else None)
    w = mx.sym.Variable("w", stype="row_sparse" if sparse else None, shape=(10, 1), init=mx.init.Zero())
    out = (mx.sym.sparse.dot if sparse else mx.sym.dot)(x, w)
    mod = mx.mod.Module(mx.sym.LinearRegressionOutput(out, mx.sym.Variable("label")), data_names=["data"],
                        label_names=["label"])
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params()
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1}, kvstore=None)
    for _ in range(3):
        it.reset()
        for batch in it:
            mod.forward(batch, is_train=True)
            mod.backward()
            mod.update()
    return mod


def test_module_with_csr_data_and_row_sparse_weight_trains_as_dense():
    sparse, dense = _train_linear_module(True), _train_linear_module(False)
    ex = sparse._exec_group.execs[0]
    assert ex.arg_dict["data"].stype == "csr" and ex.arg_dict["w"].stype == "row_sparse"
    assert ex.grad_dict["w"].stype == "row_sparse"
    # Plain SGD: the lazy row updates give the dense training's numbers.
    w = sparse.get_params()[0]["w"].asnumpy()
    assert np.abs(w).min() > 0.01  # every row was trained away from its zero start
    np.testing.assert_allclose(w, dense.get_params()[0]["w"].asnumpy(), rtol=1e-5, atol=1e-6)
