"""mx.contrib.svrg_optimization: SVRGModule against numpy's SVRG on a linear regression."""
import numpy as np
import pytest

import weft as mx
from weft.contrib.svrg_optimization import SVRGModule
from weft.contrib.svrg_optimization.svrg_optimizer import _AssignmentOptimizer, _SVRGOptimizer

N, D, BATCH = 96, 4, 16


def _problem(seed=0):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, size=(N, D)).astype(np.float32)
    w = rng.uniform(-2, 2, size=(D,)).astype(np.float32)
    y = (x @ w + 0.5 + 0.01 * rng.randn(N)).astype(np.float32)
    return x, y


def _symbol():
    data = mx.sym.var("data")
    label = mx.sym.var("lin_reg_label")
    fc = mx.sym.FullyConnected(data, num_hidden=1, name="fc")
    return mx.sym.LinearRegressionOutput(fc, label=label, name="lro")


def _module(x, y, update_freq=2):
    it = mx.io.NDArrayIter(x, y, batch_size=BATCH, label_name="lin_reg_label")
    mod = SVRGModule(_symbol(), data_names=["data"], label_names=["lin_reg_label"], update_freq=update_freq)
    return mod, it


def _batch_grads(x, y, w, b):
    """Per-batch sums of d(0.5 (x.w + b - y)^2) for w and b: LinearRegressionOutput's gradient."""
    out = []
    for s in range(0, N, BATCH):
        r = (x[s:s + BATCH] @ w + b - y[s:s + BATCH]).astype(np.float64)
        out.append((r @ x[s:s + BATCH], r.sum()))
    return out


def test_full_gradient_and_svrg_step_match_numpy():
    x, y = _problem()
    mod, it = _module(x, y)
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params(mx.init.Uniform(0.5))
    lr = 0.1
    mod.init_optimizer(optimizer="sgd", optimizer_params=(("learning_rate", lr),))
    args, _ = mod.get_params()
    w0, b0 = args["fc_weight"].asnumpy()[0], args["fc_bias"].asnumpy()[0]

    mod.update_full_grads(it)
    grads = _batch_grads(x, y, w0, b0)
    mu_w = np.mean([g for g, _ in grads], axis=0)
    mu_b = np.mean([g for _, g in grads])
    np.testing.assert_allclose(mod._param_dict[0]["fc_weight"].asnumpy()[0], mu_w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mod._param_dict[0]["fc_bias"].asnumpy()[0], mu_b, rtol=1e-4, atol=1e-5)

    # Move the weights away from the snapshot, then one SVRG step on the first batch.
    w1 = w0 + np.float32(0.3)
    b1 = b0 - np.float32(0.2)
    mod.set_params({"fc_weight": mx.nd.array(w1[None, :]), "fc_bias": mx.nd.array([b1])}, {})
    it.reset()
    batch = next(iter(it))
    mod.forward_backward(batch)
    mod.update()
    r_now = x[:BATCH] @ w1 + b1 - y[:BATCH]
    r_snap = x[:BATCH] @ w0 + b0 - y[:BATCH]
    g_w = r_now @ x[:BATCH] - r_snap @ x[:BATCH] + mu_w
    g_b = r_now.sum() - r_snap.sum() + mu_b
    args, _ = mod.get_params()
    np.testing.assert_allclose(args["fc_weight"].asnumpy()[0], w1 - lr * g_w / BATCH, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(args["fc_bias"].asnumpy()[0], b1 - lr * g_b / BATCH, rtol=1e-4, atol=1e-5)

    # A second refresh averages this pass only (not the previous mean).
    mod.update_full_grads(it)
    args, _ = mod.get_params()
    grads = _batch_grads(x, y, args["fc_weight"].asnumpy()[0], args["fc_bias"].asnumpy()[0])
    np.testing.assert_allclose(mod._param_dict[0]["fc_weight"].asnumpy()[0],
                               np.mean([g for g, _ in grads], axis=0), rtol=1e-4, atol=1e-5)


def test_fit_trains_a_linear_regression_to_a_low_loss():
    x, y = _problem(1)
    mod, it = _module(x, y, update_freq=2)
    metric = mx.metric.MSE()
    mod.fit(it, eval_metric=metric, optimizer="sgd", optimizer_params=(("learning_rate", 0.2),), num_epoch=30)
    args, _ = mod.get_params()
    pred = x @ args["fc_weight"].asnumpy()[0] + args["fc_bias"].asnumpy()[0]
    assert np.mean((pred - y) ** 2) < 1e-3
    assert metric.get()[1] < 1e-2


def test_optimizers_and_arguments():
    opt = mx.optimizer.create("_SVRGOptimizer", default_optimizer="sgd", learning_rate=0.5, momentum=0.9,
                              param_idx2name={0: "w", 1: "w_full"})
    assert isinstance(opt, _SVRGOptimizer) and isinstance(opt.default_opt, mx.optimizer.SGD)
    assert opt.default_opt.momentum == 0.9 and opt.lr == 0.5
    assert isinstance(opt.aux_opt, _AssignmentOptimizer)
    w, g = mx.nd.ones((3,)), mx.nd.array([1.0, 2.0, 3.0])
    opt.update(1, w, g, opt.create_state(1, w))  # a "_full" key: assigned
    np.testing.assert_array_equal(w.asnumpy(), [1, 2, 3])
    w2 = mx.nd.ones((3,))
    opt.update(0, w2, g, opt.create_state(0, w2))  # a parameter: SGD with momentum 0.9, first step
    np.testing.assert_allclose(w2.asnumpy(), 1 - 0.5 * g.asnumpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="integer"):
        SVRGModule(_symbol(), label_names=["lin_reg_label"], update_freq=None)
    with pytest.raises(ValueError, match="positive"):
        SVRGModule(_symbol(), label_names=["lin_reg_label"], update_freq=0)


def test_two_devices_share_the_full_gradient_through_the_kvstore():
    x, y = _problem(2)
    it = mx.io.NDArrayIter(x, y, batch_size=BATCH, label_name="lin_reg_label")
    mod = SVRGModule(_symbol(), label_names=["lin_reg_label"], update_freq=1, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params(mx.init.Uniform(0.5))
    mod.init_optimizer(kvstore="local", optimizer="sgd", optimizer_params=(("learning_rate", 0.2),))
    assert mod._kvstore is not None
    args, _ = mod.get_params()
    mod.update_full_grads(it)
    grads = _batch_grads(x, y, args["fc_weight"].asnumpy()[0], args["fc_bias"].asnumpy()[0])
    mu_w = np.mean([g for g, _ in grads], axis=0)
    # each device holds half: the store sums the devices' SVRG gradients again at the update
    for ctx in range(2):
        np.testing.assert_allclose(mod._param_dict[ctx]["fc_weight"].asnumpy()[0], mu_w / 2, rtol=1e-4, atol=1e-5)
    with pytest.warns(UserWarning, match="already initialized"):
        mod.fit(it, eval_metric="mse", optimizer="sgd", num_epoch=15)
    args, _ = mod.get_params()
    pred = x @ args["fc_weight"].asnumpy()[0] + args["fc_bias"].asnumpy()[0]
    assert np.mean((pred - y) ** 2) < 1e-2
