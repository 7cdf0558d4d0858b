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
    # Only the rows the batch reads (its columns, 0-7) are pulled: the device's copy holds
    # those, with the store's values, and no other row.
    np.testing.assert_array_equal(weight.indices.asnumpy(), np.arange(8))
    want = np.zeros_like(stored)
    want[:8] = stored[:8]
    np.testing.assert_array_equal(weight.asnumpy(), want)
    # get_params reads the whole parameter from the store.
    np.testing.assert_array_equal(mod.get_params()[0]["v"].asnumpy(), stored)
    with pytest.warns(UserWarning, match="b.stype is not 'row_sparse'"):
        mod.prepare(batch, sparse_row_id_fn=lambda b: {"b": mx.nd.array([0])})
    with pytest.raises(ValueError, match="names 'w', which is not a parameter"):
        mod.prepare(batch, sparse_row_id_fn=lambda b: {"w": mx.nd.array([0])})
    with pytest.raises(TypeError, match="must return a dict"):
        mod.prepare(batch, sparse_row_id_fn=lambda b: [0])


def test_training_with_prepare_matches_dense_training():
    # The device's row_sparse weight holds only the rows prepare() pulls for each batch,
    # the store updates the whole weight (SGD touches only rows with a gradient, as a dense
    # update does without weight decay): training follows the dense module's exactly.
    rows, n, batch = 40, 32, 8
    rng = np.random.RandomState(5)
    x = (rng.rand(n, rows) * (rng.rand(n, rows) < 0.1)).astype(np.float32)
    x[np.arange(n), rng.randint(0, rows, n)] = 1.0  # every sample reads at least one row
    y = rng.randn(n, 1).astype(np.float32)
    init = rng.uniform(-0.1, 0.1, (rows, 1)).astype(np.float32)

    def train(stype):
        data = mx.sym.Variable("data", stype="csr")
        v = mx.sym.var("v", shape=(rows, 1), stype=stype)
        out = mx.sym.LinearRegressionOutput(mx.sym.dot(data, v), mx.sym.Variable("label"), name="out")
        it = mx.io.NDArrayIter(data=mx.nd.sparse.csr_matrix(x), label={"label": mx.nd.array(y)}, batch_size=batch,
                               last_batch_handle="discard")
        mod = mx.mod.Module(out, data_names=["data"], label_names=["label"])
        mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
        mod.init_params(arg_params={"v": mx.nd.array(init).tostype(stype)})
        mod.init_optimizer(kvstore=mx.kv.create("local"), optimizer="sgd",
                           optimizer_params={"learning_rate": 0.5})
        held = []
        for _ in range(3):
            it.reset()
            for b in it:
                if stype == "row_sparse":
                    mod.prepare(b, sparse_row_id_fn=lambda b: {"v": b.data[0].indices})
                    w = mod._exec_group.param_arrays[0][0]
                    held.append((w.indices.asnumpy(), np.unique(b.data[0].indices.asnumpy())))
                mod.forward_backward(b)
                mod.update()
        return mod.get_params()[0]["v"].asnumpy(), held

    sparse, held = train("row_sparse")
    dense, _ = train("default")
    for got, want in held:
        np.testing.assert_array_equal(got, want)
    assert all(len(got) < rows for got, _ in held)
    np.testing.assert_allclose(sparse, dense, rtol=1e-5, atol=1e-6)
    assert np.abs(dense - init).max() > 1e-2
