"""The optimizers of MXNet 1.9.1 that Weft added late (LARS, LBSGD, DCASGD, SGLD, ccSGD,
Test, contrib's GroupAdaGrad, the aggregated and multi-precision LAMB): each one's steps
against a numpy version of MXNet's rule, and a short training whose loss must fall."""
import math

import numpy as np
import pytest

import weft as mx


def clip(x, c):
    return np.clip(x, -c, c) if c is not None else x


def run(opt, weights, grads_per_step, dtype=np.float32):
    """Applies `opt` through an Updater to weights (numpy arrays) for each list of gradients;
    all weights go in one call, as a Trainer hands them over."""
    upd = mx.optimizer.get_updater(opt)
    W = [mx.nd.array(w.astype(dtype), dtype=dtype) for w in weights]
    for grads in grads_per_step:
        G = [mx.nd.array(g.astype(dtype), dtype=dtype) for g in grads]
        upd(list(range(len(W))), G, W)
    return [w.asnumpy() for w in W], upd


def data(seed, shapes, steps):
    rng = np.random.default_rng(seed)
    ws = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    gs = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(steps)]
    return ws, gs


@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("aggregate", [1, 4])
def test_lars_matches_numpy(momentum, aggregate, monkeypatch):
    monkeypatch.setenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", str(aggregate))
    shapes = [(3, 4), (4,), (5,)]
    names = {0: "fc_weight", 1: "fc_bias", 2: "bn_gamma"}
    ws, gs = data(0, shapes, 3)
    kw = dict(learning_rate=0.1, momentum=momentum, eta=0.01, eps=1e-4, wd=0.01, rescale_grad=0.5,
              clip_gradient=0.8, param_idx2name=names)
    got, _ = run(mx.optimizer.create("lars", **kw), ws, gs)
    w = [x.astype(np.float64) for x in ws]
    mom = [np.zeros_like(x) for x in w]
    for grads in gs:
        for i, g in enumerate(grads):
            wd = 0.01 if names[i].endswith("_weight") else 0.0
            lr = 0.1
            if names[i] == "fc_weight":
                wn, gn = np.linalg.norm(w[i]), np.linalg.norm(g)
                lr = lr * 0.01 * wn / (gn * 0.5 + wd * wn + 1e-4)
            gg = clip(0.5 * g, 0.8)
            if momentum:
                mom[i] = momentum * mom[i] - lr * wd * w[i] - lr * gg
                w[i] = w[i] + mom[i]
            else:
                w[i] = (1 - lr * wd) * w[i] - lr * gg
    for a, b in zip(got, w):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_lars_momentum_correction_follows_scheduler():
    sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=0.1)
    opt = mx.optimizer.create("lars", momentum=0.9, eta=1.0, lr_scheduler=sched, param_idx2name={0: "b_bias"})
    ws, gs = data(1, [(4,)], 3)
    got, _ = run(opt, ws, gs)
    # The schedulers keep state, so the reference asks a fresh one the same questions.
    ref_sched = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=0.1)
    w, mom = ws[0].astype(np.float64), np.zeros(4)
    last = None
    for step, (g,) in enumerate(gs, start=1):
        lr = ref_sched(step)
        m = 0.9 * (lr / last) if last else 0.9
        last = lr
        mom = m * mom - lr * g
        w = w + mom
    np.testing.assert_allclose(got[0], w, rtol=1e-5, atol=1e-6)


def test_lars_multi_precision_tracks_float32():
    ws, gs = data(2, [(6,), (3, 3)], 4)
    names = {0: "a_weight", 1: "b_weight"}
    kw = dict(learning_rate=0.05, momentum=0.9, eta=0.1, param_idx2name=names)
    ref, _ = run(mx.optimizer.create("lars", **kw), ws, gs)
    half, upd = run(mx.optimizer.create("lars", multi_precision=True, **kw), ws, gs, dtype=np.float16)
    assert upd.states[0][1].dtype == np.float32
    for a, b in zip(half, ref):
        assert a.dtype == np.float16
        np.testing.assert_allclose(a.astype(np.float32), b, rtol=1e-2, atol=2e-2)


def ref_lamb(ws, gs, lr, wd, beta1=0.9, beta2=0.999, eps=1e-6, lower=None, upper=None):
    w = [x.astype(np.float64) for x in ws]
    m = [np.zeros_like(x) for x in w]
    v = [np.zeros_like(x) for x in w]
    for t, grads in enumerate(gs, start=1):
        for i, g in enumerate(grads):
            m[i] = beta1 * m[i] + (1 - beta1) * g
            v[i] = beta2 * v[i] + (1 - beta2) * g * g
            d = (m[i] / (1 - beta1 ** t)) / (np.sqrt(v[i] / (1 - beta2 ** t)) + eps) + wd * w[i]
            r1, r2 = np.linalg.norm(w[i]), np.linalg.norm(d)
            if lower:
                r1 = max(r1, lower)
            if upper:
                r1 = min(r1, upper)
            ratio = 1.0 if r1 == 0 or r2 == 0 else r1 / r2
            w[i] = w[i] - lr * ratio * d
    return w


@pytest.mark.parametrize("aggregate", ["1", "45"])
def test_lamb_single_and_aggregated_match_numpy(aggregate, monkeypatch):
    monkeypatch.setenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", aggregate)
    ws, gs = data(3, [(4, 3), (5,)], 3)
    opt = mx.optimizer.create("lamb", learning_rate=0.01, wd=0.01, upper_bound=2.0)
    assert opt.aggregate_num == int(aggregate)
    got, _ = run(opt, ws, gs)
    for a, b in zip(got, ref_lamb(ws, gs, 0.01, 0.01, upper=2.0)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("aggregate", ["1", "45"])
def test_lamb_multi_precision(aggregate, monkeypatch):
    monkeypatch.setenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", aggregate)
    ws, gs = data(4, [(8,), (2, 5)], 4)
    half, upd = run(mx.optimizer.create("lamb", learning_rate=0.05, multi_precision=True), ws, gs, np.float16)
    ref = ref_lamb([w.astype(np.float16).astype(np.float32) for w in ws],
                   [[g.astype(np.float16).astype(np.float32) for g in step] for step in gs], 0.05, 0.0)
    for k, (a, b) in enumerate(zip(half, ref)):
        assert a.dtype == np.float16
        # The master copy follows the float32 rule; the weight is its rounding.
        np.testing.assert_allclose(upd.states[k][0].asnumpy(), b, rtol=2e-3, atol=2e-3)
        np.testing.assert_array_equal(a, upd.states[k][0].asnumpy().astype(np.float16))


@pytest.mark.parametrize("strategy", ["linear", "power2", "sqrt", "lars"])
@pytest.mark.parametrize("momentum", [0.0, 0.5])
def test_lbsgd_matches_numpy(strategy, momentum):
    ws, gs = data(5, [(6,)], 6)
    opt = mx.optimizer.create("lbsgd", learning_rate=0.1, momentum=momentum, warmup_strategy=strategy,
                              warmup_epochs=2, updates_per_epoch=2, batch_scale=2, wd=0.01)
    got, _ = run(opt, ws, gs)
    w, mom, cum, n = ws[0].astype(np.float64), np.zeros(6), None, 0
    for (g,) in gs:
        n += 1
        cum = g.astype(np.float64) if cum is None or n == 1 else cum + g
        if n % 2:
            continue
        gg = cum / 2
        nwup = 4
        if strategy == "lars":
            w2, g2 = np.sum(w * w), np.sum(gg * gg)
            mult = min(max(math.sqrt(w2 / (g2 + 0.01 * w2 + 1e-18)), 0.01), 100)
        elif n >= nwup:
            mult = 2.0
        elif strategy == "linear":
            mult = 1 + n / nwup
        elif strategy == "power2":
            mult = 1 + n * n / nwup ** 2
        else:
            mult = 1 + math.sqrt(n / nwup)
        lr = 0.1 * mult
        if momentum:
            mom = momentum * mom - lr * 0.01 * w - lr * gg
            w = w + mom
        else:
            w = (1 - lr * 0.01) * w - lr * gg
        cum = np.zeros(6)
    np.testing.assert_allclose(got[0], w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_dcasgd_matches_numpy(momentum):
    ws, gs = data(6, [(3, 2)], 3)
    got, _ = run(mx.optimizer.create("dcasgd", learning_rate=0.1, momentum=momentum, lamda=0.5, wd=0.01,
                                     rescale_grad=2.0, clip_gradient=1.0), ws, gs)
    w = ws[0].astype(np.float64)
    prev, mom = w.copy(), np.zeros_like(w)
    for (g,) in gs:
        gg = clip(2.0 * g, 1.0)
        step = -0.1 * (gg + 0.01 * w + 0.5 * gg * gg * (w - prev))
        if momentum:
            mom = momentum * mom + step
            step = mom
        prev = w.copy()
        w = w + step
    np.testing.assert_allclose(got[0], w, rtol=1e-5, atol=1e-6)


def test_sgld_step_is_half_sgd_plus_seeded_noise():
    ws, gs = data(7, [(50,)], 1)
    lr, wd = 0.04, 0.1
    mx.random.seed(11)
    noise = mx.nd.random.normal(0, math.sqrt(lr), shape=(50,)).asnumpy()
    mx.random.seed(11)
    got, _ = run(mx.optimizer.create("sgld", learning_rate=lr, wd=wd), ws, gs)
    expect = ws[0] - lr / 2 * (gs[0][0] + wd * ws[0]) + noise
    np.testing.assert_allclose(got[0], expect, rtol=1e-5, atol=1e-6)
    # The noise has the variance lr.
    mx.random.seed(12)
    many, _ = run(mx.optimizer.create("sgld", learning_rate=lr), [np.zeros(20000, np.float32)],
                  [[np.zeros(20000, np.float32)]])
    assert abs(many[0].std() - math.sqrt(lr)) < 0.01 * math.sqrt(lr) * 3
    assert abs(many[0].mean()) < 4 * math.sqrt(lr / 20000)


def test_ccsgd_is_sgd_and_test_optimizer():
    ws, gs = data(8, [(5,)], 2)
    a, _ = run(mx.optimizer.create("ccsgd", learning_rate=0.1, momentum=0.9), ws, gs)
    b, _ = run(mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9), ws, gs)
    np.testing.assert_array_equal(a[0], b[0])
    got, upd = run(mx.optimizer.create("test", rescale_grad=0.5), ws, gs)
    np.testing.assert_allclose(got[0], ws[0] + 0.5 * (gs[0][0] + gs[1][0]), rtol=1e-6)
    np.testing.assert_array_equal(upd.states[0].asnumpy(), got[0])


def test_group_adagrad_matches_numpy():
    ws, gs = data(9, [(4, 3)], 3)
    opt = mx.optimizer.create("groupadagrad", learning_rate=0.1, eps=1e-4, rescale_grad=0.5, clip_gradient=0.6)
    assert isinstance(opt, mx.optimizer.contrib.GroupAdaGrad)
    got, upd = run(opt, ws, gs)
    w, h = ws[0].astype(np.float64), np.zeros((4, 1))
    for (g,) in gs:
        gg = clip(0.5 * g, 0.6)
        h = h + np.mean(gg * gg, axis=1, keepdims=True)
        w = w - 0.1 * gg / np.sqrt(h + 1e-4)
    np.testing.assert_allclose(got[0], w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(upd.states[0].asnumpy(), h, rtol=1e-5)
    with pytest.raises(ValueError, match="weight decay"):
        run(mx.optimizer.create("groupadagrad", wd=0.1), ws, gs)
    with pytest.raises(ValueError, match="2-D"):
        run(mx.optimizer.create("groupadagrad"), [np.ones(3, np.float32)], [[np.ones(3, np.float32)]])


@pytest.mark.parametrize("name,kw", [
    ("lars", dict(learning_rate=0.5, momentum=0.9, eta=1.0)),
    ("lbsgd", dict(learning_rate=0.05, momentum=0.9, batch_scale=2, warmup_epochs=1, updates_per_epoch=2)),
    ("dcasgd", dict(learning_rate=0.05, momentum=0.9)),
    # Langevin dynamics settles where the noise balances the pull of the loss: summed over
    # the samples, the loss is sharp enough for the weights to settle near the optimum.
    ("sgld", dict(learning_rate=1e-3, rescale_grad=64.0)),
    ("ccsgd", dict(learning_rate=0.05)),
    ("lamb", dict(learning_rate=0.05)),
    ("groupadagrad", dict(learning_rate=0.3)),
])
def test_short_training_decreases_loss(name, kw):
    # Least squares y = X w_true through autograd and an Updater.
    mx.random.seed(3)
    rng = np.random.default_rng(10)
    X = mx.nd.array(rng.standard_normal((64, 5)).astype(np.float32))
    w_true = rng.standard_normal((5, 1)).astype(np.float32)
    y = mx.nd.dot(X, mx.nd.array(w_true))
    w = mx.nd.zeros((5, 1))
    w.attach_grad()
    upd = mx.optimizer.get_updater(mx.optimizer.create(name, param_idx2name={0: "fc_weight"}, **kw))

    def loss_of():
        return float(mx.nd.mean(mx.nd.square(mx.nd.dot(X, w) - y)).asscalar())

    first = loss_of()
    for _ in range(60):
        with mx.autograd.record():
            loss = mx.nd.mean(mx.nd.square(mx.nd.dot(X, w) - y))
        loss.backward()
        upd(0, w.grad, w)
    assert loss_of() < 0.5 * first
