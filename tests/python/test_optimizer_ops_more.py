"""The update operators MXNet 1.9.1 has beyond the basic ones (multi-precision AdamW, the
multi-tensor AdamW and LAMB, mixed-precision LAMB phases, preloaded multi SGD, group
AdaGrad, multi_sum_sq, multi_lars), each against a numpy version of its rule."""
import numpy as np
import pytest

import weft as mx


def clip(x, c):
    return np.clip(x, -c, c) if c >= 0 else x


def rand(rng, shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def ref_adamw(w, g, mean, var, lr, eta, wd, scale, beta1=0.9, beta2=0.999, eps=1e-8, clip_gradient=-1.0):
    g = clip(scale * g, clip_gradient)
    mean = beta1 * mean + (1 - beta1) * g
    var = beta2 * var + (1 - beta2) * g * g
    return w - eta * (lr * mean / (np.sqrt(var) + eps) + wd * w), mean, var


def ref_lamb_dir(w, g, mean, var, t, wd, beta1=0.9, beta2=0.999, eps=1e-6, bias_correction=True, rescale=1.0,
                 clip_gradient=-1.0):
    g = clip(rescale * g, clip_gradient)
    mean = beta1 * mean + (1 - beta1) * g
    var = beta2 * var + (1 - beta2) * g * g
    mh, vh = (mean / (1 - beta1 ** t), var / (1 - beta2 ** t)) if bias_correction else (mean, var)
    return mh / (np.sqrt(vh) + eps) + wd * w, mean, var


def ref_lamb_step(w, d, lr, r1, lower=-1.0, upper=-1.0):
    r2 = np.linalg.norm(d)
    if lower >= 0:
        r1 = max(r1, lower)
    if upper >= 0:
        r1 = min(r1, upper)
    ratio = 1.0 if r1 == 0 or r2 == 0 else r1 / r2
    return w - lr * ratio * d


@pytest.mark.parametrize("scale,clip_gradient", [(0.5, -1.0), (2.0, 0.3)])
def test_mp_adamw_matches_numpy(scale, clip_gradient):
    rng = np.random.default_rng(0)
    w32 = rand(rng, (5, 7))
    g = rand(rng, (5, 7)).astype(np.float16)
    mean, var = rand(rng, (5, 7)) * 0.1, np.abs(rand(rng, (5, 7))) * 0.1
    W, G = mx.nd.array(w32.astype(np.float16), dtype="float16"), mx.nd.array(g, dtype="float16")
    M, V, W32 = mx.nd.array(mean), mx.nd.array(var), mx.nd.array(w32)
    R = mx.nd.array([scale])
    kw = dict(lr=0.1, eta=0.5, wd=0.01, clip_gradient=clip_gradient)
    mx.nd.mp_adamw_update(W, G, M, V, W32, R, out=W, **kw)
    ew, em, ev = ref_adamw(w32, g.astype(np.float32), mean, var, 0.1, 0.5, 0.01, scale, clip_gradient=clip_gradient)
    np.testing.assert_allclose(W32.asnumpy(), ew, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(M.asnumpy(), em, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(V.asnumpy(), ev, rtol=1e-5, atol=1e-7)
    assert W.dtype == np.float16
    np.testing.assert_array_equal(W.asnumpy(), ew.astype(np.float16))
    # A zero (overflow) scale leaves everything as it was.
    before = W32.asnumpy().copy()
    mx.nd._internal._mp_adamw_update(W, G, M, V, W32, mx.nd.array([0.0]), out=W, **kw)
    np.testing.assert_array_equal(W32.asnumpy(), before)


def test_mp_adamw_rejects_float16_states():
    w = mx.nd.ones((3,), dtype="float16")
    bad = mx.nd.zeros((3,), dtype="float16")
    with pytest.raises(mx.base.MXNetError, match="float32"):
        mx.nd.mp_adamw_update(w, w, bad, bad, bad, mx.nd.array([1.0]), lr=0.1, eta=1.0, out=w).wait_to_read()


@pytest.mark.parametrize("mp", [False, True])
def test_multi_adamw_matches_per_tensor(mp):
    rng = np.random.default_rng(1)
    shapes = [(4,), (3, 5), (2, 2, 2)]
    lrs, wds, etas = [0.1, 0.05, 0.2], [0.0, 0.01, 0.1], [1.0, 0.5, 0.25]
    wdt = np.float16 if mp else np.float32
    ws = [rand(rng, s) for s in shapes]
    gs = [rand(rng, s) for s in shapes]
    ms = [rand(rng, s) * 0.1 for s in shapes]
    vs = [np.abs(rand(rng, s)) * 0.1 for s in shapes]
    W = [mx.nd.array(w.astype(wdt), dtype=wdt) for w in ws]
    G = [mx.nd.array(g.astype(wdt), dtype=wdt) for g in gs]
    M = [mx.nd.array(m) for m in ms]
    V = [mx.nd.array(v) for v in vs]
    args = []
    for i in range(3):
        args += [W[i], G[i], M[i], V[i]]
        if mp:
            args.append(mx.nd.array(ws[i]))
    args.append(mx.nd.array([0.5]))
    op = mx.nd._internal._multi_mp_adamw_update if mp else mx.nd._internal._multi_adamw_update
    op(*args, out=W, num_weights=3, lrs=lrs, wds=wds, etas=etas, clip_gradient=0.4)
    for i in range(3):
        g = gs[i].astype(wdt).astype(np.float32)
        w0 = ws[i] if mp else ws[i]
        ew, em, ev = ref_adamw(w0, g, ms[i], vs[i], lrs[i], etas[i], wds[i], 0.5, clip_gradient=0.4)
        np.testing.assert_allclose(W[i].asnumpy().astype(np.float32), ew, rtol=1e-3 if mp else 1e-5,
                                   atol=1e-3 if mp else 1e-6)
        np.testing.assert_allclose(M[i].asnumpy(), em, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(V[i].asnumpy(), ev, rtol=1e-5, atol=1e-6)


def test_multi_adamw_python_wrappers_and_skip():
    w = [mx.nd.ones((3,)), mx.nd.ones((2,))]
    g = [mx.nd.ones((3,)), mx.nd.ones((2,))]
    m = [mx.nd.zeros((3,)), mx.nd.zeros((2,))]
    v = [mx.nd.zeros((3,)), mx.nd.zeros((2,))]
    mx.nd.contrib.multi_adamw_update(w, g, m, v, float("inf"), lrs=[0.1, 0.1], wds=[0, 0], etas=[1, 1], out=w)
    np.testing.assert_array_equal(w[0].asnumpy(), np.ones(3))
    np.testing.assert_array_equal(m[1].asnumpy(), np.zeros(2))
    mx.nd.contrib.multi_adamw_update(w, g, m, v, 1.0, lrs=[0.1, 0.1], wds=[0, 0], etas=[1, 1], out=w)
    ew, _, _ = ref_adamw(np.ones(3, np.float32), np.ones(3, np.float32), 0, 0, 0.1, 1, 0, 1.0)
    np.testing.assert_allclose(w[0].asnumpy(), ew, rtol=1e-5)


def test_multi_adamw_float64_with_float64_scale():
    w, g = mx.nd.ones((3,), dtype="float64"), mx.nd.full((3,), 0.5, dtype="float64")
    m, v = mx.nd.zeros((3,), dtype="float64"), mx.nd.zeros((3,), dtype="float64")
    mx.nd._internal._multi_adamw_update(w, g, m, v, mx.nd.array([2.0], dtype="float64"), num_weights=1, lrs=[0.1],
                                        wds=[0.0], etas=[1.0], out=[w])
    ew, _, _ = ref_adamw(np.ones(3), np.full(3, 0.5), 0, 0, 0.1, 1.0, 0.0, 2.0)
    np.testing.assert_allclose(w.asnumpy(), ew, rtol=1e-12)


def test_multi_adamw_errors():
    w = mx.nd.ones((3,))
    with pytest.raises(mx.base.MXNetError, match="etas"):
        mx.nd._internal._multi_adamw_update(w, w, w, w, mx.nd.array([1.0]), num_weights=1, lrs=[0.1], wds=[0],
                                            etas=[1, 2], out=[w])
    with pytest.raises(mx.base.MXNetError, match="rescale_grad"):
        mx.nd._internal._multi_adamw_update(w, w, w, w, mx.nd.ones((2,)), num_weights=1, lrs=[0.1], wds=[0],
                                            etas=[1], out=[w])


@pytest.mark.parametrize("bias_correction", [True, False])
def test_mp_lamb_phases_match_numpy(bias_correction):
    rng = np.random.default_rng(2)
    w32 = rand(rng, (6, 4))
    g = rand(rng, (6, 4)).astype(np.float16)
    mean, var = np.zeros((6, 4), np.float32), np.zeros((6, 4), np.float32)
    W, G = mx.nd.array(w32.astype(np.float16), dtype="float16"), mx.nd.array(g, dtype="float16")
    M, V, W32 = mx.nd.array(mean), mx.nd.array(var), mx.nd.array(w32)
    D = mx.nd.mp_lamb_update_phase1(W, G, M, V, W32, t=3, wd=0.01, bias_correction=bias_correction,
                                    rescale_grad=0.5, clip_gradient=0.7)
    assert D.dtype == np.float32
    ed, em, ev = ref_lamb_dir(w32, g.astype(np.float32), mean, var, 3, 0.01, bias_correction=bias_correction,
                              rescale=0.5, clip_gradient=0.7)
    np.testing.assert_allclose(D.asnumpy(), ed, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(M.asnumpy(), em, rtol=1e-6)
    r1 = np.linalg.norm(w32)
    mx.nd.mp_lamb_update_phase2(W, D, mx.nd.array([r1]), mx.nd.norm(D), W32, lr=0.1, upper_bound=1.5, out=W)
    ew = ref_lamb_step(w32, ed, 0.1, r1, upper=1.5)
    np.testing.assert_allclose(W32.asnumpy(), ew, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(W.asnumpy(), W32.asnumpy().astype(np.float16))


def test_mp_lamb_phase2_errors():
    w = mx.nd.ones((3,), dtype="float16")
    d = mx.nd.ones((3,))
    with pytest.raises(mx.base.MXNetError, match="r1"):
        mx.nd.mp_lamb_update_phase2(w, d, mx.nd.ones((2,)), mx.nd.ones((1,)), d, lr=0.1, out=w).wait_to_read()


@pytest.mark.parametrize("mp", [False, True])
def test_multi_lamb_matches_numpy(mp):
    rng = np.random.default_rng(3)
    shapes = [(5,), (3, 4)]
    lrs, wds, steps = [0.1, 0.02], [0.01, 0.0], [1, 4]
    wdt = np.float16 if mp else np.float32
    ws = [rand(rng, s) for s in shapes]
    gs = [rand(rng, s).astype(wdt).astype(np.float32) for s in shapes]
    ms = [rand(rng, s) * 0.1 for s in shapes]
    vs = [np.abs(rand(rng, s)) * 0.1 for s in shapes]
    W = [mx.nd.array(w.astype(wdt), dtype=wdt) for w in ws]
    G = [mx.nd.array(g.astype(wdt), dtype=wdt) for g in gs]
    M = [mx.nd.array(m) for m in ms]
    V = [mx.nd.array(v) for v in vs]
    W32 = [mx.nd.array(w) for w in ws]
    kw = dict(step_count=steps, lrs=lrs, wds=wds, rescale_grad=0.5, clip_gradient=1.0, lower_bound=0.1,
              upper_bound=10.0)
    if mp:
        mx.nd.contrib.multi_mp_lamb_update(W, G, M, V, W32, out=W, **kw)
    else:
        mx.nd.contrib.multi_lamb_update(W, G, M, V, out=W, **kw)
    for i in range(2):
        d, em, ev = ref_lamb_dir(ws[i], gs[i], ms[i], vs[i], steps[i], wds[i], rescale=0.5, clip_gradient=1.0)
        # The weight norm is that of the weight as given (float16 when mp), as in MXNet.
        r1 = np.linalg.norm(ws[i].astype(wdt).astype(np.float64))
        ew = ref_lamb_step(ws[i], d, lrs[i], r1, lower=0.1, upper=10.0)
        tol = dict(rtol=2e-3, atol=2e-3) if mp else dict(rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(W[i].asnumpy().astype(np.float32), ew, **tol)
        if mp:
            np.testing.assert_allclose(W32[i].asnumpy(), ew, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(M[i].asnumpy(), em, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(V[i].asnumpy(), ev, rtol=1e-5, atol=1e-6)


def test_multi_lamb_errors():
    w = mx.nd.ones((3,))
    with pytest.raises(mx.base.MXNetError, match="step_count"):
        mx.nd._internal._multi_lamb_update(w, w, w, w, num_tensors=1, learning_rates=[0.1], wds=[0],
                                           step_count=[0], out=[w])
    with pytest.raises(mx.base.MXNetError, match="learning_rates"):
        mx.nd._internal._multi_lamb_update(w, w, w, w, num_tensors=1, learning_rates=[0.1, 0.2], wds=[0],
                                           step_count=[1], out=[w])


@pytest.mark.parametrize("kind", ["sgd", "sgd_mom", "mp_sgd", "mp_sgd_mom"])
def test_preloaded_multi_sgd_matches_numpy(kind):
    rng = np.random.default_rng(4)
    shapes = [(4,), (2, 3), (5,)]
    lrs, wds = np.array([0.1, 0.2, 0.05], np.float32), np.array([0.0, 0.01, 0.1], np.float32)
    mp = kind.startswith("mp")
    mom = kind.endswith("mom")
    wdt = np.float16 if mp else np.float32
    ws = [rand(rng, s) for s in shapes]
    gs = [rand(rng, s).astype(wdt).astype(np.float32) for s in shapes]
    moms = [rand(rng, s) * 0.1 for s in shapes]
    W = [mx.nd.array(w.astype(wdt), dtype=wdt) for w in ws]
    args = []
    states = []
    for i in range(3):
        args += [W[i], mx.nd.array(gs[i].astype(wdt), dtype=wdt)]
        if mom:
            states.append(mx.nd.array(moms[i]))
            args.append(states[-1])
        if mp:
            args.append(mx.nd.array(ws[i]))
    args += [mx.nd.array(lrs), mx.nd.array(wds)]
    kw = dict(rescale_grad=0.5, clip_gradient=0.6)
    if mom:
        kw["momentum"] = 0.9
    getattr(mx.nd, "preloaded_multi_%s_update" % kind)(*args, out=W, num_weights=3, **kw)
    for i in range(3):
        g = clip(0.5 * gs[i], 0.6)
        if mom:
            m = 0.9 * moms[i] - lrs[i] * wds[i] * ws[i] - lrs[i] * g
            ew = ws[i] + m
            np.testing.assert_allclose(states[i].asnumpy(), m, rtol=1e-5, atol=1e-6)
        else:
            ew = (1 - lrs[i] * wds[i]) * ws[i] - lrs[i] * g
        tol = dict(rtol=2e-3, atol=2e-3) if mp else dict(rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(W[i].asnumpy().astype(np.float32), ew, **tol)


def test_preloaded_multi_sgd_errors():
    w = mx.nd.ones((3,))
    with pytest.raises(mx.base.MXNetError, match="lrs"):
        mx.nd.preloaded_multi_sgd_update(w, w, mx.nd.ones((2,)), mx.nd.ones((1,)), num_weights=1, out=[w])
    with pytest.raises(mx.base.MXNetError, match="shape"):
        mx.nd.preloaded_multi_sgd_update(w, mx.nd.ones((4,)), mx.nd.ones((1,)), mx.nd.ones((1,)), num_weights=1,
                                         out=[w])


def test_group_adagrad_matches_numpy():
    rng = np.random.default_rng(5)
    w, g = rand(rng, (4, 6)), rand(rng, (4, 6))
    h = np.abs(rand(rng, (4, 1)))
    W, H = mx.nd.array(w), mx.nd.array(h)
    mx.nd.contrib.group_adagrad_update(W, mx.nd.array(g), H, lr=0.1, rescale_grad=2.0, clip_gradient=1.5,
                                       epsilon=1e-5, out=W)
    gg = clip(2.0 * g, 1.5)
    eh = h + np.mean(gg * gg, axis=1, keepdims=True)
    ew = w - 0.1 * gg / np.sqrt(eh + 1e-5)
    np.testing.assert_allclose(H.asnumpy(), eh, rtol=1e-5)
    np.testing.assert_allclose(W.asnumpy(), ew, rtol=1e-5, atol=1e-6)
    with pytest.raises(mx.base.MXNetError, match="history"):
        mx.nd.contrib.group_adagrad_update(W, mx.nd.array(g), mx.nd.ones((3, 1)), lr=0.1, out=W)


def test_multi_sum_sq_and_multi_lars():
    rng = np.random.default_rng(6)
    arrs = [rand(rng, (3, 4)), rand(rng, (7,)), np.zeros((2,), np.float32)]
    ss = mx.nd.multi_sum_sq(*[mx.nd.array(a) for a in arrs], num_arrays=3)
    assert ss.shape == (3,) and ss.dtype == np.float32
    np.testing.assert_allclose(ss.asnumpy(), [np.sum(a.astype(np.float64) ** 2) for a in arrs], rtol=1e-6)
    half = mx.nd.multi_sum_sq(mx.nd.array(arrs[0], dtype="float16"), num_arrays=1)
    np.testing.assert_allclose(half.asnumpy(), [np.sum(arrs[0].astype(np.float16).astype(np.float64) ** 2)],
                               rtol=1e-5)
    lrs = np.array([0.1, 0.2, 0.3], np.float32)
    wss = np.array([4.0, 0.0, 9.0], np.float32)
    gss = np.array([1.0, 2.0, 0.25], np.float32)
    wds = np.array([0.01, 0.0, 0.1], np.float32)
    out = mx.nd.multi_lars(mx.nd.array(lrs), mx.nd.array(wss), mx.nd.array(gss), mx.nd.array(wds), eta=0.5,
                           eps=1e-3, rescale_grad=2.0)
    wn, gn = np.sqrt(wss), np.sqrt(gss)
    expect = np.where((wn > 0) & (gn > 0), lrs * 0.5 * wn / (gn * 2.0 + wds * wn + 1e-3), lrs)
    np.testing.assert_allclose(out.asnumpy(), expect, rtol=1e-6)
    with pytest.raises(mx.base.MXNetError, match="shape"):
        mx.nd.multi_lars(mx.nd.array(lrs), mx.nd.ones((2,)), mx.nd.array(gss), mx.nd.array(wds), eta=0.5, eps=0)


def test_sym_contrib_adamw_wrappers_take_a_number():
    w, g, m, v = (mx.sym.var(n) for n in ("w", "g", "m", "v"))
    y = mx.sym.contrib.adamw_update(w, g, m, v, 0.5, lr=0.1, eta=1.0)
    # The states the update writes are the node's auxiliary states, as in MXNet.
    assert y.list_auxiliary_states() == ["m", "v"]
    out = y.bind(mx.cpu(), {"w": mx.nd.ones((3,)), "g": mx.nd.ones((3,))},
                 aux_states={"m": mx.nd.zeros((3,)), "v": mx.nd.zeros((3,))}).forward()[0].asnumpy()
    ew, _, _ = ref_adamw(np.ones(3, np.float32), np.ones(3, np.float32), 0, 0, 0.1, 1.0, 0.0, 0.5)
    np.testing.assert_allclose(out, ew, rtol=1e-5)
    w32 = mx.sym.var("w32")
    y = mx.sym.contrib.mp_adamw_update(w, g, m, v, w32, 2.0, lr=0.1, eta=1.0)
    out = y.bind(mx.cpu(), {"w": mx.nd.ones((3,), dtype="float16"), "g": mx.nd.ones((3,), dtype="float16")},
                 aux_states={"m": mx.nd.zeros((3,)), "v": mx.nd.zeros((3,)), "w32": mx.nd.ones((3,))}
                 ).forward()[0].asnumpy()
    ew, _, _ = ref_adamw(np.ones(3, np.float32), np.ones(3, np.float32), 0, 0, 0.1, 1.0, 0.0, 2.0)
    np.testing.assert_allclose(out.astype(np.float32), ew, rtol=1e-3)
