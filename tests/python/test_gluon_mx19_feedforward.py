"""MXNet 1.x's deprecated mx.model.FeedForward: fit equals numpy's SGD on a softmax
regression step for step; predict/score/save/load/create; bad arguments raise."""
import numpy as np
import pytest

import weft as mx

N, D, K, B = 12, 4, 3, 4


def _net():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=K, name="fc")
    return mx.sym.SoftmaxOutput(fc, name="softmax")


def _data(seed=0):
    rs = np.random.RandomState(seed)
    x = rs.uniform(-1, 1, (N, D)).astype(np.float32)
    y = rs.randint(0, K, N).astype(np.float32)
    return x, y


def _init(seed=1):
    rs = np.random.RandomState(seed)
    return {"fc_weight": rs.uniform(-0.3, 0.3, (K, D)).astype(np.float32), "fc_bias": np.zeros(K, np.float32)}


def _softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_fit_equals_numpy_sgd_and_predict_score():
    x, y = _data()
    w0 = _init()
    model = mx.model.FeedForward(_net(), num_epoch=2, optimizer="sgd", learning_rate=0.5,
                                 arg_params={k: mx.nd.array(v) for k, v in w0.items()})
    it = mx.io.NDArrayIter(x, y, batch_size=B, shuffle=False, label_name="softmax_label")
    batches = []
    model.fit(it, batch_end_callback=lambda p: batches.append((p.epoch, p.nbatch)))
    assert batches == [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (1, 3)]
    w, b = w0["fc_weight"].astype(np.float64), w0["fc_bias"].astype(np.float64)
    for _ in range(2):
        for i in range(0, N, B):
            xb, yb = x[i:i + B], y[i:i + B].astype(int)
            g = _softmax(xb @ w.T + b)
            g[np.arange(B), yb] -= 1
            w -= 0.5 * (g.T @ xb) / B
            b -= 0.5 * g.sum(0) / B
    np.testing.assert_allclose(model.arg_params["fc_weight"].asnumpy(), w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(model.arg_params["fc_bias"].asnumpy(), b, rtol=1e-4, atol=1e-5)
    prob = model.predict(x)   # an array: wrapped in an iterator, the padding dropped
    np.testing.assert_allclose(prob, _softmax(x @ w.T + b), rtol=1e-4, atol=1e-5)
    acc = model.score(mx.io.NDArrayIter(x, y, batch_size=B, label_name="softmax_label"))
    np.testing.assert_allclose(acc, np.mean(prob.argmax(1) == y))
    out, data, label = model.predict(mx.io.NDArrayIter(x[:5], y[:5], batch_size=B), return_data=True)
    assert out.shape == (5, K) and data.shape == (5, D) and label.shape == (5,)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_save_load_create(tmp_path):
    x, y = _data(3)
    model = mx.model.FeedForward.create(_net(), x, y, num_epoch=1, numpy_batch_size=6, learning_rate=0.1,
                                        initializer=mx.init.Xavier())
    prefix = str(tmp_path / "ff")
    model.save(prefix)
    loaded = mx.model.FeedForward.load(prefix, 1)
    assert loaded.begin_epoch == 1
    np.testing.assert_allclose(loaded.predict(x), model.predict(x), rtol=1e-6)


def test_errors():
    with pytest.warns(DeprecationWarning, match="deprecated"):
        model = mx.model.FeedForward(_net(), num_epoch=1)
    x, y = _data()
    with pytest.raises(ValueError, match="y must be given"):
        model.fit(x)
    with pytest.raises(ValueError, match="12 data points but 3 labels"):
        model.fit(x, y[:3])
    with pytest.raises(RuntimeError, match="no parameters yet"):
        model.predict(x)
    with pytest.raises(TypeError, match="DataIter"):
        model.fit([1, 2, 3], y)
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="one context"):
        mx.model.FeedForward(_net(), ctx=[mx.cpu(0), mx.cpu(1)])
