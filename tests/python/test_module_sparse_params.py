"""Module keeps a row_sparse variable's storage type in its parameter copies (MXNet's
Module.bind makes _arg_params of each executor array's stype), and initialises them."""
import numpy as np
import pytest

import weft as mx


def test_row_sparse_param_is_row_sparse_and_initialised():
    rows = 30
    x = mx.sym.Variable("data", stype="csr")
    v = mx.sym.var("v", shape=(rows, 1), init=mx.init.Uniform(scale=0.1), stype="row_sparse")
    out = mx.sym.LinearRegressionOutput(mx.sym.dot(x, v), mx.sym.Variable("label"), name="out")
    data = mx.nd.sparse.csr_matrix(np.eye(8, rows, dtype=np.float32))
    it = mx.io.NDArrayIter(data=data, label={"label": mx.nd.zeros((8, 1))}, batch_size=8,
                           last_batch_handle="discard")
    mod = mx.mod.Module(out, data_names=["data"], label_names=["label"])
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params()
    arg_params, _ = mod.get_params()
    v_val = arg_params["v"]
    assert v_val.stype == "row_sparse"
    values = v_val.asnumpy()
    assert values.shape == (rows, 1)
    assert np.any(values != 0) and np.all(np.abs(values) <= 0.1)
    # The dense data parameter-free path: a dense variable stays dense.
    mod2 = mx.mod.Module(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc"),
                         label_names=None)
    mod2.bind(data_shapes=[("data", (4, 3))])
    mod2.init_params()
    assert mod2.get_params()[0]["fc_weight"].stype == "default"


def _sparse_linear_module(rows=30):
    x = mx.sym.Variable("data", stype="csr")
    v = mx.sym.var("v", shape=(rows, 1), init=mx.init.Uniform(scale=0.1), stype="row_sparse")
    b = mx.sym.var("b", shape=(1,), init=mx.init.Zero())
    out = mx.sym.LinearRegressionOutput(mx.sym.broadcast_add(mx.sym.dot(x, v), b), mx.sym.Variable("label"),
                                        name="out")
    data = mx.nd.sparse.csr_matrix(np.eye(8, rows, dtype=np.float32))
    it = mx.io.NDArrayIter(data=data, label={"label": mx.nd.zeros((8, 1))}, batch_size=8,
                           last_batch_handle="discard")
    mod = mx.mod.Module(out, data_names=["data"], label_names=["label"])
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params()
    return mod, next(iter(it))


def test_prepare_pulls_the_row_sparse_parameters_sparse_row_id_fn_names():
    mod, batch = _sparse_linear_module()
    # Without a store that runs the optimizer there is nothing to pull: MXNet's warning.
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    with pytest.warns(UserWarning, match="Parameters are not updated in the KVStore"):
        mod.prepare(batch, sparse_row_id_fn=lambda b: {"v": b.data[0].indices})

    mod, batch = _sparse_linear_module()
    kv = mx.kv.create("local")
    mod.init_optimizer(kvstore=kv, optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    assert mod._update_on_kvstore
    weight = mod._exec_group.param_arrays[mod._exec_group.param_names.index("v")][0]
    stored = weight.asnumpy().copy()
    assert np.any(stored != 0)
    weight[:] = mx.nd.zeros(weight.shape).tostype("row_sparse")
    assert not np.any(weight.asnumpy())
    calls = []

    def row_ids(b):
        calls.append(b)
        return {"v": b.data[0].indices}

    mod.prepare(batch, sparse_row_id_fn=row_ids)
    assert calls == [batch]
    np.testing.assert_array_equal(weight.asnumpy(), stored)
    with pytest.warns(UserWarning, match="b.stype is not 'row_sparse'"):
        mod.prepare(batch, sparse_row_id_fn=lambda b: {"b": mx.nd.array([0])})
    with pytest.raises(ValueError, match="names 'w', which is not a parameter"):
        mod.prepare(batch, sparse_row_id_fn=lambda b: {"w": mx.nd.array([0])})
    with pytest.raises(TypeError, match="must return a dict"):
        mod.prepare(batch, sparse_row_id_fn=lambda b: [0])
