"""MXNet 1.x's SequentialModule, PythonModule and PythonLossModule: a chain of modules trains
exactly as the one-symbol Module does; a Python loss with a numpy gradient trains as
SoftmaxOutput does; wiring, labels and errors."""
import numpy as np
import pytest

import weft as mx

N, D, H, K, B = 12, 5, 4, 3, 4


def _data():
    rs = np.random.RandomState(0)
    return rs.uniform(-1, 1, (N, D)).astype(np.float32), rs.randint(0, K, N).astype(np.float32)


def _params():
    rs = np.random.RandomState(1)
    return {"fc1_weight": rs.uniform(-.5, .5, (H, D)), "fc1_bias": rs.uniform(-.1, .1, (H,)),
            "fc2_weight": rs.uniform(-.5, .5, (K, H)), "fc2_bias": rs.uniform(-.1, .1, (K,))}


def _nd(params):
    return {k: mx.nd.array(v) for k, v in params.items()}


def _fit(mod, epochs=2):
    x, y = _data()
    it = mx.io.NDArrayIter(x, y, batch_size=B, shuffle=False, label_name="softmax_label")
    mod.fit(it, num_epoch=epochs, arg_params=_nd(_params()), optimizer="sgd",
            optimizer_params={"learning_rate": 0.5}, eval_metric="acc")
    return mod.get_params()[0]


def _hidden(data):
    return mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=H, name="fc1"), act_type="relu")


def test_sequential_equals_one_module():
    whole = mx.mod.Module(mx.sym.SoftmaxOutput(mx.sym.FullyConnected(_hidden(mx.sym.var("data")), num_hidden=K,
                                                                      name="fc2"), name="softmax"))
    want = _fit(whole)
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(_hidden(mx.sym.var("data")), label_names=None))
    top = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("feat"), num_hidden=K, name="fc2"), name="softmax")
    seq.add(mx.mod.Module(top, data_names=["feat"]), take_labels=True, auto_wiring=True)
    got = _fit(seq)
    assert sorted(got) == sorted(want)
    for k in want:
        np.testing.assert_allclose(got[k].asnumpy(), want[k].asnumpy(), rtol=1e-5, atol=1e-6)
    assert seq.output_shapes == [("softmax_output", (B, K))]
    x, _ = _data()
    pred = seq.predict(mx.io.NDArrayIter(x, batch_size=B)).asnumpy()
    ref = whole.predict(mx.io.NDArrayIter(x, batch_size=B)).asnumpy()
    np.testing.assert_allclose(pred, ref, rtol=1e-5, atol=1e-6)


def _softmax_grad(scores, labels):
    s = scores.asnumpy()
    p = np.exp(s - s.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(len(p)), labels.asnumpy().astype(int)] -= 1
    return p


def test_python_loss_module_trains_as_softmax_output():
    whole = mx.mod.Module(mx.sym.SoftmaxOutput(mx.sym.FullyConnected(_hidden(mx.sym.var("data")), num_hidden=K,
                                                                      name="fc2"), name="softmax"))
    want = _fit(whole)
    seq = mx.mod.SequentialModule()
    seq.add(mx.mod.Module(mx.sym.FullyConnected(_hidden(mx.sym.var("data")), num_hidden=K, name="fc2"),
                          label_names=None))
    seq.add(mx.mod.PythonLossModule(data_names=["fc2_output"], grad_func=_softmax_grad), take_labels=True)
    got = _fit(seq)
    for k in want:
        np.testing.assert_allclose(got[k].asnumpy(), want[k].asnumpy(), rtol=1e-5, atol=1e-6)


def test_python_module_contract_and_errors():
    loss = mx.mod.PythonLossModule(name="l")
    loss.bind([("data", (2, 3))], [("softmax_label", (2,))])
    assert loss.output_shapes == [("l_output", (2, 3))] and loss.get_params() == ({}, {})
    batch = mx.io.DataBatch([mx.nd.ones((2, 3))], [mx.nd.zeros((2,))])
    loss.forward(batch)
    with pytest.raises(NotImplementedError, match="grad_func"):
        loss.backward()
    with pytest.raises(ValueError, match="bound with data"):
        mx.mod.PythonLossModule().bind([("x", (2, 3))])
    with pytest.raises(ValueError, match="one data and one label"):
        mx.mod.PythonLossModule(data_names=("a", "b"))
    with pytest.raises(ValueError, match="unknown meta"):
        mx.mod.SequentialModule().add(loss, take_label=True)
    with pytest.raises(ValueError, match="no module"):
        mx.mod.SequentialModule().bind([("data", (2, 3))])
    dup = mx.mod.SequentialModule()
    dup.add(mx.mod.Module(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc"), label_names=None))
    dup.add(mx.mod.Module(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=3, name="fc"), label_names=None),
            auto_wiring=True)
    dup.bind([("data", (2, 3))])
    with pytest.raises(ValueError, match="parameter 'fc_weight' of module 1"):
        dup.init_params()
