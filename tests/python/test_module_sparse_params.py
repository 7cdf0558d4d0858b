"""Module keeps a row_sparse variable's storage type in its parameter copies (MXNet's
Module.bind makes _arg_params of each executor array's stype), and initialises them."""
import numpy as np

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
