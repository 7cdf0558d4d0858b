"""Update operators and weft.optimizer against plain numpy implementations of MXNet 1.x's
formulas, over several steps, in float32 and float64."""
import math
import pickle

import numpy as np
import pytest

import weft as mx
from weft.base import WeftError


def np_array(x, **kwargs):
    """nd.array keeping a numpy source's dtype: these tests run each kernel in the dtype of
    their data, where MXNet's nd.array would make float32 of it."""
    kwargs.setdefault("dtype", getattr(x, "dtype", None))
    return mx.nd.array(x, **kwargs)


STEPS = 4
SHAPE = (5, 7)


def clip(x, c):
    return x if c is None or c < 0 else np.clip(x, -c, c)


# ---------------------------------------------------------------- numpy references
# Each takes the weight, the gradient and the states (float64 numpy arrays, states
# changed in place) and the operator's parameters, and returns the new weight.

def ref_sgd(w, g, st, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):
    return (1 - lr * wd) * w - lr * clip(rescale_grad * g, clip_gradient)


def ref_sgd_mom(w, g, st, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):
    (mom,) = st
    mom[:] = momentum * mom - lr * wd * w - lr * clip(rescale_grad * g, clip_gradient)
    return w + mom


def ref_nag(w, g, st, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):
    # MXNet 1.9's nag_mom_update: the momentum holds lr-scaled steps (as sgd_mom_update's).
    (mom,) = st
    prev = momentum * mom
    mom[:] = prev - lr * (clip(rescale_grad * g, clip_gradient) + wd * w)
    return w - prev + (momentum + 1) * mom


def ref_signsgd(w, g, st, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):
    return (1 - lr * wd) * w - lr * np.sign(g)


def ref_signum(w, g, st, lr, momentum=0.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, wd_lh=0.0):
    (mom,) = st
    mom[:] = momentum * mom - (1 - momentum) * (wd * w + clip(rescale_grad * g, clip_gradient))
    return (1 - lr * wd_lh) * w + lr * np.sign(mom)


def ref_adam(w, g, st, lr, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):
    mean, var = st
    gr = clip(rescale_grad * g + wd * w, clip_gradient)
    mean[:] = beta1 * mean + (1 - beta1) * gr
    var[:] = beta2 * var + (1 - beta2) * gr * gr
    return w - lr * mean / (np.sqrt(var) + epsilon)


def ref_adamw(w, g, st, lr, eta, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):
    mean, var = st
    gr = clip(rescale_grad * g, clip_gradient)
    mean[:] = beta1 * mean + (1 - beta1) * gr
    var[:] = beta2 * var + (1 - beta2) * gr * gr
    return w - eta * (lr * mean / (np.sqrt(var) + epsilon) + wd * w)


def ref_rmsprop(w, g, st, lr, gamma1=0.95, epsilon=1e-8, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
                clip_weights=-1.0):
    (n,) = st
    gr = clip(rescale_grad * g + wd * w, clip_gradient)
    n[:] = (1 - gamma1) * gr * gr + gamma1 * n
    return clip(w - lr * gr / np.sqrt(n + epsilon), clip_weights)


def ref_rmspropalex(w, g, st, lr, gamma1=0.95, gamma2=0.9, epsilon=1e-8, wd=0.0, rescale_grad=1.0,
                    clip_gradient=-1.0, clip_weights=-1.0):
    n, gm, delta = st
    gr = clip(rescale_grad * g + wd * w, clip_gradient)
    n[:] = (1 - gamma1) * gr * gr + gamma1 * n
    gm[:] = (1 - gamma1) * gr + gamma1 * gm
    delta[:] = gamma2 * delta - lr * gr / np.sqrt(n - gm * gm + epsilon)
    return clip(w + delta, clip_weights)


def ref_adagrad(w, g, st, lr, epsilon=1e-7, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):
    (h,) = st
    gr = clip(rescale_grad * g, clip_gradient)
    h += gr * gr
    return w - lr * (gr / np.sqrt(h + epsilon) + wd * w)


def ref_adadelta(w, g, st, rho=0.9, epsilon=1e-5, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):
    acc_g, acc_d = st
    gr = clip(rescale_grad * g, clip_gradient)
    acc_g[:] = rho * acc_g + (1 - rho) * gr * gr
    d = np.sqrt(acc_d + epsilon) / np.sqrt(acc_g + epsilon) * gr
    acc_d[:] = rho * acc_d + (1 - rho) * d * d
    return w - d - wd * w


def ref_ftrl(w, g, st, lr, lamda1=0.01, beta=1.0, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0):
    z, n = st
    gr = clip(rescale_grad * g, clip_gradient)
    z += gr - (np.sqrt(n + gr * gr) - np.sqrt(n)) * w / lr
    n += gr * gr
    return np.where(np.abs(z) > lamda1, (np.sign(z) * lamda1 - z) / ((beta + np.sqrt(n)) / lr + wd), 0.0)


def ref_ftml(w, g, st, t, lr, beta1=0.6, beta2=0.999, epsilon=1e-8, wd=0.0, rescale_grad=1.0, clip_grad=-1.0):
    d, v, z = st
    gr = clip(rescale_grad * g + wd * w, clip_grad)
    v[:] = beta2 * v + (1 - beta2) * gr * gr
    d_t = (1 - beta1 ** t) / lr * (np.sqrt(v / (1 - beta2 ** t)) + epsilon)
    z[:] = beta1 * z + (1 - beta1) * gr - (d_t - beta1 * d) * w
    d[:] = d_t
    return -z / d_t


# op name, number of states, reference, parameter sets (the common ones are added below)
OPS = [
    ("sgd_update", 0, ref_sgd, dict(lr=0.1)),
    ("sgd_mom_update", 1, ref_sgd_mom, dict(lr=0.1, momentum=0.9)),
    ("nag_mom_update", 1, ref_nag, dict(lr=0.1, momentum=0.9)),
    ("signsgd_update", 0, ref_signsgd, dict(lr=0.05)),
    ("signum_update", 1, ref_signum, dict(lr=0.05, momentum=0.9, wd_lh=0.01)),
    ("adam_update", 2, ref_adam, dict(lr=0.01, beta1=0.8, beta2=0.99, epsilon=1e-6)),
    ("rmsprop_update", 1, ref_rmsprop, dict(lr=0.01, gamma1=0.9, epsilon=1e-6)),
    ("rmspropalex_update", 3, ref_rmspropalex, dict(lr=0.01, gamma1=0.9, gamma2=0.8, epsilon=1e-6)),
    ("adagrad_update", 1, ref_adagrad, dict(lr=0.1, epsilon=1e-6)),
    ("adadelta_update", 2, ref_adadelta, dict(rho=0.8, epsilon=1e-4)),
    ("ftrl_update", 2, ref_ftrl, dict(lr=0.1, lamda1=0.05, beta=0.5)),
]
COMMON = [dict(), dict(rescale_grad=0.5), dict(clip_gradient=0.3), dict(wd=0.1),
          dict(rescale_grad=2.0, clip_gradient=0.5, wd=0.05)]
TOL = {np.float32: dict(rtol=2e-4, atol=2e-5), np.float64: dict(rtol=1e-10, atol=1e-12)}


def initial_states(name, n, rng):
    # Momenta start random (a resumed run); accumulators of squares start at zero or
    # positive, as they would be after earlier steps.
    if n == 0:
        return []
    if name in ("sgd_mom_update", "nag_mom_update", "signum_update"):
        return [rng.standard_normal(SHAPE) * 0.1]
    if name == "rmspropalex_update":
        return [np.zeros(SHAPE) for _ in range(3)]
    return [np.abs(rng.standard_normal(SHAPE)) * 0.1 for _ in range(n)]


def run_steps(name, n_states, ref, params, dtype, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(SHAPE).astype(dtype)
    states = [s.astype(dtype) for s in initial_states(name, n_states, rng)]
    w_nd = np_array(w, dtype=dtype)
    s_nd = [np_array(s, dtype=dtype) for s in states]
    w_ref = w.astype(np.float64)
    s_ref = [s.astype(np.float64) for s in states]
    op = getattr(mx.nd, name)
    for _ in range(STEPS):
        g = rng.standard_normal(SHAPE).astype(dtype)
        res = op(w_nd, np_array(g, dtype=dtype), *s_nd, out=w_nd, **params)
        assert res is w_nd
        w_ref = ref(w_ref, g.astype(np.float64), s_ref, **params)
    assert w_nd.dtype == dtype
    np.testing.assert_allclose(w_nd.asnumpy(), w_ref, **TOL[dtype])
    for a, b in zip(s_nd, s_ref):
        np.testing.assert_allclose(a.asnumpy(), b, **TOL[dtype])
    return w_ref


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("common", COMMON, ids=lambda c: ",".join("%s=%s" % kv for kv in c.items()) or "plain")
@pytest.mark.parametrize("name,n_states,ref,params", OPS, ids=[o[0] for o in OPS])
def test_update_op_matches_numpy(name, n_states, ref, params, common, dtype):
    run_steps(name, n_states, ref, dict(params, **common), dtype)


# float16 weights and states: the kernels compute in float32 and store each state rounded
# to float16 (the formulas the CUDA kernels share, update_math.h). Two steps, so that the
# second one starts from rounded states; the reference runs in float64 on the same rounded
# values, and the tolerance is a few float16 rounding steps.
@pytest.mark.parametrize("common", [dict(), dict(rescale_grad=2.0, clip_gradient=0.5, wd=0.05)],
                         ids=["plain", "rescale,clip,wd"])
@pytest.mark.parametrize("name,n_states,ref,params", OPS, ids=[o[0] for o in OPS])
def test_update_op_float16_matches_numpy(name, n_states, ref, params, common):
    params = dict(params, **common)
    rng = np.random.default_rng(11)
    w16 = rng.standard_normal(SHAPE).astype(np.float16)
    s16 = [s.astype(np.float16) for s in initial_states(name, n_states, rng)]
    w_nd, s_nd = np_array(w16), [np_array(s) for s in s16]
    op = getattr(mx.nd, name)
    for _ in range(2):
        g16 = rng.standard_normal(SHAPE).astype(np.float16)
        # The reference starts each step from the stored (rounded) values.
        w_ref = w_nd.asnumpy().astype(np.float64)
        s_ref = [s.asnumpy().astype(np.float64) for s in s_nd]
        op(w_nd, np_array(g16), *s_nd, out=w_nd, **params)
        w_ref = ref(w_ref, g16.astype(np.float64), s_ref, **params)
        assert w_nd.dtype == np.float16
        np.testing.assert_allclose(w_nd.asnumpy(), w_ref, rtol=2e-3, atol=2e-3)
        for a, b in zip(s_nd, s_ref):
            np.testing.assert_allclose(a.asnumpy(), b, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rmsprop_clip_weights(dtype):
    w = run_steps("rmsprop_update", 1, ref_rmsprop, dict(lr=0.5, gamma1=0.9, clip_weights=0.2), dtype)
    assert np.abs(w).max() <= 0.2 + 1e-7


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("common", [dict(), dict(rescale_grad=0.5, clip_gradient=0.3, wd=0.1)])
def test_adamw_matches_numpy(dtype, common):
    rng = np.random.default_rng(3)
    w = rng.standard_normal(SHAPE).astype(dtype)
    w_nd = np_array(w)
    mean, var = mx.nd.zeros(SHAPE, dtype=dtype), mx.nd.zeros(SHAPE, dtype=dtype)
    s_ref = [np.zeros(SHAPE), np.zeros(SHAPE)]
    w_ref = w.astype(np.float64)
    rescale = common.get("rescale_grad", 1.0)
    kw = {k: v for k, v in common.items() if k != "rescale_grad"}
    scale = np_array(np.array([rescale], dtype=dtype))
    for _ in range(STEPS):
        g = rng.standard_normal(SHAPE).astype(dtype)
        mx.nd.adamw_update(w_nd, np_array(g), mean, var, scale, out=w_nd, lr=0.01, eta=0.5, **kw)
        w_ref = ref_adamw(w_ref, g.astype(np.float64), s_ref, lr=0.01, eta=0.5, rescale_grad=rescale, **kw)
    np.testing.assert_allclose(w_nd.asnumpy(), w_ref, **TOL[dtype])
    np.testing.assert_allclose(mean.asnumpy(), s_ref[0], **TOL[dtype])
    np.testing.assert_allclose(var.asnumpy(), s_ref[1], **TOL[dtype])


def test_adamw_both_names_and_skip_on_overflow():
    rng = np.random.default_rng(4)
    w = rng.standard_normal(SHAPE).astype(np.float32)
    g = rng.standard_normal(SHAPE).astype(np.float32)
    results = []
    for op in (mx.nd.adamw_update, mx.nd._internal._adamw_update):
        w_nd, m, v = np_array(w), mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE)
        op(w_nd, np_array(g), m, v, np_array([1.0]), out=w_nd, lr=0.1, eta=1.0, wd=0.01)
        results.append(w_nd.asnumpy())
    np.testing.assert_array_equal(results[0], results[1])
    assert not np.allclose(results[0], w)
    # A non-finite scale (an overflowed fp16 step) leaves weight and states untouched.
    for bad in (np.inf, np.nan, 0.0):
        w_nd, m, v = np_array(w), mx.nd.zeros(SHAPE), mx.nd.zeros(SHAPE)
        mx.nd.adamw_update(w_nd, np_array(g), m, v, np_array([bad]), out=w_nd, lr=0.1, eta=1.0)
        np.testing.assert_array_equal(w_nd.asnumpy(), w)
        assert not m.asnumpy().any() and not v.asnumpy().any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("extra", [dict(), dict(rescale_grad=0.5, clip_grad=0.3, wd=0.1)])
def test_ftml_matches_numpy(dtype, extra):
    rng = np.random.default_rng(16)
    w = rng.standard_normal(SHAPE).astype(dtype)
    w_nd = np_array(w)
    st_nd = [mx.nd.zeros(SHAPE, dtype=dtype) for _ in range(3)]
    st_ref = [np.zeros(SHAPE) for _ in range(3)]
    w_ref = w.astype(np.float64)
    for t in range(1, STEPS + 1):
        g = rng.standard_normal(SHAPE).astype(dtype)
        mx.nd.ftml_update(w_nd, np_array(g), *st_nd, out=w_nd, lr=0.05, t=t, beta1=0.7, **extra)
        w_ref = ref_ftml(w_ref, g.astype(np.float64), st_ref, t=t, lr=0.05, beta1=0.7, **extra)
    np.testing.assert_allclose(w_nd.asnumpy(), w_ref, **TOL[dtype])
    for a, b in zip(st_nd, st_ref):
        np.testing.assert_allclose(a.asnumpy(), b, **TOL[dtype])


def ref_lamb(w, g, st, t, lr, wd, beta1=0.9, beta2=0.999, epsilon=1e-6, bias_correction=True, rescale_grad=1.0,
             clip_gradient=-1.0, lower_bound=-1.0, upper_bound=-1.0):
    mean, var = st
    gr = clip(rescale_grad * g, clip_gradient)
    mean[:] = beta1 * mean + (1 - beta1) * gr
    var[:] = beta2 * var + (1 - beta2) * gr * gr
    m, v = mean, var
    if bias_correction:
        m, v = mean / (1 - beta1 ** t), var / (1 - beta2 ** t)
    d = m / (np.sqrt(v) + epsilon) + wd * w
    r1, r2 = np.linalg.norm(w), np.linalg.norm(d)
    if lower_bound >= 0:
        r1 = max(r1, lower_bound)
    if upper_bound >= 0:
        r1 = min(r1, upper_bound)
    ratio = 1.0 if r1 == 0 or r2 == 0 else r1 / r2
    return w - lr * ratio * d


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("extra", [dict(), dict(bias_correction=False, rescale_grad=0.5, clip_gradient=0.4),
                                   dict(lower_bound=0.5, upper_bound=1.0)])
def test_lamb_phases_match_numpy(dtype, extra):
    rng = np.random.default_rng(5)
    w = rng.standard_normal(SHAPE).astype(dtype)
    w_nd, mean, var = np_array(w), mx.nd.zeros(SHAPE, dtype=dtype), mx.nd.zeros(SHAPE, dtype=dtype)
    s_ref = [np.zeros(SHAPE), np.zeros(SHAPE)]
    w_ref = w.astype(np.float64)
    p1 = {k: v for k, v in extra.items() if k not in ("lower_bound", "upper_bound")}
    p2 = {k: v for k, v in extra.items() if k in ("lower_bound", "upper_bound")}
    for t in range(1, STEPS + 1):
        g = rng.standard_normal(SHAPE).astype(dtype)
        d = mx.nd.lamb_update_phase1(w_nd, np_array(g), mean, var, t=t, wd=0.01, **p1)
        assert d.shape == SHAPE and d.dtype == dtype
        mx.nd.lamb_update_phase2(w_nd, d, mx.nd.norm(w_nd), mx.nd.norm(d), out=w_nd, lr=0.05, **p2)
        w_ref = ref_lamb(w_ref, g.astype(np.float64), s_ref, t=t, lr=0.05, wd=0.01, **extra)
    np.testing.assert_allclose(w_nd.asnumpy(), w_ref, **TOL[dtype])
    np.testing.assert_allclose(mean.asnumpy(), s_ref[0], **TOL[dtype])


def test_lamb_phase2_zero_norm_uses_ratio_one():
    w = np_array(np.zeros((3,), np.float32))
    g = np_array(np.array([1.0, -2.0, 3.0], np.float32))
    mx.nd.lamb_update_phase2(w, g, mx.nd.norm(w), mx.nd.norm(g), out=w, lr=0.5)
    np.testing.assert_allclose(w.asnumpy(), [-0.5, 1.0, -1.5])


def test_update_without_out_leaves_weight_and_updates_state():
    w = np_array(np.ones((4,), np.float32))
    mom = mx.nd.zeros((4,))
    new = mx.nd.sgd_mom_update(w, mx.nd.ones((4,)), mom, lr=0.5, momentum=0.9)
    np.testing.assert_array_equal(w.asnumpy(), np.ones(4))
    np.testing.assert_allclose(new.asnumpy(), np.full(4, 0.5))
    np.testing.assert_allclose(mom.asnumpy(), np.full(4, -0.5))


def test_large_array_parallel_path():
    # Large enough for the loop to be split across threads.
    n = 1 << 18
    rng = np.random.default_rng(6)
    w, g, m = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    w_nd, m_nd = np_array(w), np_array(m)
    mx.nd.sgd_mom_update(w_nd, np_array(g), m_nd, lr=0.1, momentum=0.9, wd=0.01, clip_gradient=1.0, out=w_nd)
    m_ref = 0.9 * m.astype(np.float64) - 0.1 * 0.01 * w - 0.1 * np.clip(g, -1, 1)
    np.testing.assert_allclose(m_nd.asnumpy(), m_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w_nd.asnumpy(), w + m_ref, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- multi-precision and multi-tensor

@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_mp_sgd_updates_master_copy(momentum):
    rng = np.random.default_rng(7)
    w32 = rng.standard_normal(SHAPE).astype(np.float32)
    w16_nd = np_array(w32.astype(np.float16))
    w32_nd = np_array(w32)
    mom_nd = mx.nd.zeros(SHAPE)
    w_ref, mom_ref = w32.astype(np.float64), [np.zeros(SHAPE)]
    kw = dict(lr=0.1, wd=0.01, rescale_grad=0.5, clip_gradient=0.4)
    for _ in range(STEPS):
        g16 = rng.standard_normal(SHAPE).astype(np.float16)
        if momentum:
            mx.nd.mp_sgd_mom_update(w16_nd, np_array(g16), mom_nd, w32_nd, out=w16_nd, momentum=momentum, **kw)
            w_ref = ref_sgd_mom(w_ref, g16.astype(np.float64), mom_ref, momentum=momentum, **kw)
        else:
            mx.nd.mp_sgd_update(w16_nd, np_array(g16), w32_nd, out=w16_nd, **kw)
            w_ref = ref_sgd(w_ref, g16.astype(np.float64), [], **kw)
    assert w16_nd.dtype == np.float16 and w32_nd.dtype == np.float32
    np.testing.assert_allclose(w32_nd.asnumpy(), w_ref, rtol=1e-5, atol=1e-6)
    # The float16 weight is the master copy rounded.
    np.testing.assert_array_equal(w16_nd.asnumpy(), w32_nd.asnumpy().astype(np.float16))


def test_mp_nag_updates_master_copy():
    rng = np.random.default_rng(15)
    w32 = rng.standard_normal(SHAPE).astype(np.float32)
    w16_nd, w32_nd, mom_nd = np_array(w32.astype(np.float16)), np_array(w32), mx.nd.zeros(SHAPE)
    w_ref, mom_ref = w32.astype(np.float64), [np.zeros(SHAPE)]
    kw = dict(lr=0.1, momentum=0.9, wd=0.01, rescale_grad=0.5, clip_gradient=0.4)
    for _ in range(STEPS):
        g16 = rng.standard_normal(SHAPE).astype(np.float16)
        mx.nd.mp_nag_mom_update(w16_nd, np_array(g16), mom_nd, w32_nd, out=w16_nd, **kw)
        w_ref = ref_nag(w_ref, g16.astype(np.float64), mom_ref, **kw)
    np.testing.assert_allclose(w32_nd.asnumpy(), w_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mom_nd.asnumpy(), mom_ref[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(w16_nd.asnumpy(), w32_nd.asnumpy().astype(np.float16))


def test_mp_sgd_rejects_float16_master_copy():
    w = mx.nd.ones((3,), dtype=np.float16)
    with pytest.raises(WeftError, match="float32"):
        mx.nd.mp_sgd_update(w, mx.nd.ones((3,), dtype=np.float16), mx.nd.ones((3,), dtype=np.float16), lr=0.1,
                            out=w)


SHAPES = [(3,), (4, 5), (1,), (2, 3, 2)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_multi_sgd_equals_per_tensor(dtype, momentum):
    rng = np.random.default_rng(8)
    lrs, wds = [0.1, 0.2, 0.05, 0.3], [0.0, 0.01, 0.1, 0.02]
    common = dict(rescale_grad=0.5, clip_gradient=0.6)
    ws = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    multi_w = [np_array(w) for w in ws]
    single_w = [np_array(w) for w in ws]
    multi_m = [mx.nd.zeros(s, dtype=dtype) for s in SHAPES]
    single_m = [mx.nd.zeros(s, dtype=dtype) for s in SHAPES]
    for _ in range(STEPS):
        gs = [np_array(rng.standard_normal(s).astype(dtype)) for s in SHAPES]
        if momentum:
            args = [x for trio in zip(multi_w, gs, multi_m) for x in trio]
            res = mx.nd.multi_sgd_mom_update(*args, out=multi_w, num_weights=4, lrs=lrs, wds=wds, momentum=momentum,
                                             **common)
            for w, g, m, lr, wd in zip(single_w, gs, single_m, lrs, wds):
                mx.nd.sgd_mom_update(w, g, m, out=w, lr=lr, wd=wd, momentum=momentum, **common)
        else:
            args = [x for pair in zip(multi_w, gs) for x in pair]
            res = mx.nd.multi_sgd_update(*args, out=multi_w, num_weights=4, lrs=lrs, wds=wds, **common)
            for w, g, lr, wd in zip(single_w, gs, lrs, wds):
                mx.nd.sgd_update(w, g, out=w, lr=lr, wd=wd, **common)
        assert res is multi_w
    for a, b in zip(multi_w + multi_m, single_w + single_m):
        assert a.dtype == dtype
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_multi_mp_sgd_equals_per_tensor(momentum):
    rng = np.random.default_rng(9)
    lrs, wds = [0.1, 0.2, 0.05, 0.3], [0.0, 0.01, 0.1, 0.02]
    w32s = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    sets = []
    for _ in range(2):
        sets.append(dict(w=[np_array(w.astype(np.float16)) for w in w32s], w32=[np_array(w) for w in w32s],
                         m=[mx.nd.zeros(s) for s in SHAPES]))
    multi, single = sets
    for _ in range(STEPS):
        gs = [np_array(rng.standard_normal(s).astype(np.float16)) for s in SHAPES]
        if momentum:
            args = [x for q in zip(multi["w"], gs, multi["m"], multi["w32"]) for x in q]
            mx.nd.multi_mp_sgd_mom_update(*args, out=multi["w"], num_weights=4, lrs=lrs, wds=wds, momentum=momentum)
            for w, g, m, w32, lr, wd in zip(single["w"], gs, single["m"], single["w32"], lrs, wds):
                mx.nd.mp_sgd_mom_update(w, g, m, w32, out=w, lr=lr, wd=wd, momentum=momentum)
        else:
            args = [x for q in zip(multi["w"], gs, multi["w32"]) for x in q]
            mx.nd.multi_mp_sgd_update(*args, out=multi["w"], num_weights=4, lrs=lrs, wds=wds)
            for w, g, w32, lr, wd in zip(single["w"], gs, single["w32"], lrs, wds):
                mx.nd.mp_sgd_update(w, g, w32, out=w, lr=lr, wd=wd)
    for key in ("w", "w32", "m"):
        for a, b in zip(multi[key], single[key]):
            np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    assert multi["w"][0].dtype == np.float16


@pytest.mark.parametrize("mp", [False, True])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_multi_sgd_matches_numpy(momentum, mp):
    """multi_[mp_]sgd[_mom]_update against the numpy formulas directly (float32 weights, or
    float16 weights with float32 master copies and momenta)."""
    rng = np.random.default_rng(12)
    lrs, wds = [0.1, 0.2, 0.05, 0.3], [0.0, 0.01, 0.1, 0.02]
    common = dict(rescale_grad=0.5, clip_gradient=0.6)
    ref_w = [rng.standard_normal(s).astype(np.float32).astype(np.float64) for s in SHAPES]
    ref_m = [[np.zeros(s)] for s in SHAPES]
    wdt = np.float16 if mp else np.float32
    ws = [np_array(w.astype(wdt)) for w in ref_w]
    w32s = [np_array(w.astype(np.float32)) for w in ref_w]
    moms = [mx.nd.zeros(s) for s in SHAPES]
    for _ in range(STEPS):
        gs = [rng.standard_normal(s).astype(wdt) for s in SHAPES]
        groups = []
        for k in range(len(SHAPES)):
            groups += [ws[k], np_array(gs[k])] + ([moms[k]] if momentum else []) + ([w32s[k]] if mp else [])
        op = getattr(mx.nd, "multi_%ssgd_%supdate" % ("mp_" if mp else "", "mom_" if momentum else ""))
        kw = dict(momentum=momentum) if momentum else {}
        op(*groups, out=ws, num_weights=len(SHAPES), lrs=lrs, wds=wds, **kw, **common)
        for k in range(len(SHAPES)):
            g = gs[k].astype(np.float64)
            if momentum:
                ref_w[k] = ref_sgd_mom(ref_w[k], g, ref_m[k], lr=lrs[k], wd=wds[k], momentum=momentum, **common)
            else:
                ref_w[k] = ref_sgd(ref_w[k], g, [], lr=lrs[k], wd=wds[k], **common)
    for k in range(len(SHAPES)):
        assert ws[k].dtype == wdt
        got = (w32s[k] if mp else ws[k]).asnumpy()
        np.testing.assert_allclose(got, ref_w[k], rtol=1e-5, atol=1e-6)
        if mp:
            np.testing.assert_array_equal(ws[k].asnumpy(), w32s[k].asnumpy().astype(np.float16))
        if momentum:
            np.testing.assert_allclose(moms[k].asnumpy(), ref_m[k][0], rtol=1e-5, atol=1e-6)


def test_multi_sgd_errors():
    w, g = mx.nd.ones((3,)), mx.nd.ones((3,))
    with pytest.raises(WeftError, match=r"'lrs' must hold one value per weight \(num_weights = 2\), got 1"):
        mx.nd.multi_sgd_update(w, g, w, g, out=[w, w], num_weights=2, lrs=(0.1,), wds=(0.0, 0.0))
    with pytest.raises(WeftError, match="expected 6 inputs"):
        mx.nd.multi_sgd_mom_update(w, g, w, g, out=[w, w], num_weights=2, lrs=(0.1, 0.1), wds=(0.0, 0.0))
    with pytest.raises(WeftError, match=r"shape \(4,\)"):
        mx.nd.multi_sgd_update(w, mx.nd.ones((4,)), out=[w], num_weights=1, lrs=(0.1,), wds=(0.0,))


def test_update_op_errors_are_clear():
    w = mx.nd.ones((3, 4))
    with pytest.raises(WeftError, match=r"sgd_mom_update.*input 'mom' has shape \(4,3\) but the operator expects \(3,4\)"):
        mx.nd.sgd_mom_update(w, mx.nd.ones((3, 4)), mx.nd.ones((4, 3)), lr=0.1, out=w)
    with pytest.raises(WeftError, match=r"adam_update.*'grad'.*\(3,5\)"):
        mx.nd.adam_update(w, mx.nd.ones((3, 5)), mx.nd.zeros((3, 4)), mx.nd.zeros((3, 4)), lr=0.1, out=w)
    with pytest.raises(WeftError, match="float64"):
        mx.nd.sgd_update(w, mx.nd.ones((3, 4), dtype=np.float64), lr=0.1, out=w)
    with pytest.raises(WeftError, match="floating-point"):
        mx.nd.sgd_update(mx.nd.ones((3,), dtype=np.int32), mx.nd.ones((3,), dtype=np.int32), lr=0.1)
    with pytest.raises(WeftError, match="'lr'"):
        mx.nd.sgd_update(w, w)
    with pytest.raises(WeftError, match="'r1' must hold one value"):
        mx.nd.lamb_update_phase2(w, w, mx.nd.ones((2,)), mx.nd.ones((1,)), lr=0.1)
    with pytest.raises(WeftError, match="'t'"):
        mx.nd.lamb_update_phase1(w, w, mx.nd.zeros((3, 4)), mx.nd.zeros((3, 4)), t=0, wd=0.0)


def test_update_ops_are_not_differentiable():
    w = mx.nd.ones((3,))
    w.attach_grad()
    with mx.autograd.record():
        y = mx.nd.sgd_update(w, mx.nd.ones((3,)), lr=0.1)
    with pytest.raises(WeftError, match="sgd_update' has no gradient"):
        y.backward()


# ---------------------------------------------------------------- optimizer classes

def numpy_run(kind, kw, weights, grads_per_step, lr_of, wd_of):
    """Applies optimizer `kind` (numpy) to weights (dict index -> float64 array) for each
    step's grads; lr_of(index, num_update) and wd_of(index) give the rates."""
    w = {i: v.astype(np.float64).copy() for i, v in weights.items()}
    states, counts = {}, {}
    sched = {"m": 1.0}  # Nadam's momentum schedule product, shared by all parameters
    num_update = 0
    rescale = kw.get("rescale_grad", 1.0)
    cg = kw.get("clip_gradient") or -1.0
    for grads in grads_per_step:
        for i in sorted(grads):
            counts[i] = counts.get(i, 0) + 1
            num_update = max(num_update, counts[i])
            t = counts[i]
            lr, wd = lr_of(i, num_update), wd_of(i)
            g = grads[i].astype(np.float64)
            st = states.setdefault(i, [np.zeros_like(w[i]) for _ in range(3)])
            common = dict(rescale_grad=rescale, clip_gradient=cg)
            if kind == "sgd":
                mu = kw.get("momentum", 0.0)
                w[i] = ref_sgd_mom(w[i], g, st[:1], lr=lr, momentum=mu, wd=wd, **common) if mu else \
                    ref_sgd(w[i], g, [], lr=lr, wd=wd, **common)
            elif kind == "nag":
                w[i] = ref_nag(w[i], g, st[:1], lr=lr, momentum=kw["momentum"], wd=wd, **common)
            elif kind == "adam":
                b1, b2 = kw.get("beta1", 0.9), kw.get("beta2", 0.999)
                lr_t = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
                w[i] = ref_adam(w[i], g, st[:2], lr=lr_t, beta1=b1, beta2=b2, epsilon=kw.get("epsilon", 1e-8),
                                wd=wd, **common)
            elif kind == "adamw":
                b1, b2 = kw.get("beta1", 0.9), kw.get("beta2", 0.999)
                lr_t = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
                w[i] = ref_adamw(w[i], g, st[:2], lr=1.0, eta=lr_t, beta1=b1, beta2=b2,
                                 epsilon=kw.get("epsilon", 1e-6), wd=wd, **common)
            elif kind == "rmsprop":
                p = dict(lr=lr, gamma1=kw.get("gamma1", 0.9), epsilon=kw.get("epsilon", 1e-8), wd=wd,
                         clip_weights=kw.get("clip_weights") or -1.0, **common)
                if kw.get("centered"):
                    w[i] = ref_rmspropalex(w[i], g, st, gamma2=kw.get("gamma2", 0.9), **p)
                else:
                    w[i] = ref_rmsprop(w[i], g, st[:1], **p)
            elif kind == "adagrad":
                w[i] = ref_adagrad(w[i], g, st[:1], lr=lr, epsilon=kw.get("eps", 1e-7), wd=wd, **common)
            elif kind == "adadelta":
                w[i] = ref_adadelta(w[i], g, st[:2], rho=kw.get("rho", 0.9), epsilon=kw.get("epsilon", 1e-5),
                                    wd=wd, **common)
            elif kind == "ftrl":
                w[i] = ref_ftrl(w[i], g, st[:2], lr=lr, lamda1=kw.get("lamda1", 0.01), beta=kw.get("beta", 1.0),
                                wd=wd, **common)
            elif kind == "signum":
                mu = kw.get("momentum", 0.9)
                w[i] = ref_signum(w[i], g, st[:1], lr=lr, momentum=mu, wd=wd, wd_lh=kw.get("wd_lh", 0.0), **common)
            elif kind == "ftml":
                w[i] = ref_ftml(w[i], g, st, t=t, lr=lr, beta1=kw.get("beta1", 0.6), wd=wd, rescale_grad=rescale,
                                clip_grad=cg)
            elif kind == "adamax":
                b1, b2 = kw.get("beta1", 0.9), kw.get("beta2", 0.999)
                gr = clip(rescale * g + wd * w[i], cg)
                st[0][:] = b1 * st[0] + (1 - b1) * gr
                st[1][:] = np.maximum(b2 * st[1], np.abs(gr))
                w[i] = w[i] - lr / (1 - b1 ** t) * st[0] / st[1]
            elif kind == "nadam":
                b1, b2, decay = kw.get("beta1", 0.9), kw.get("beta2", 0.999), kw.get("schedule_decay", 0.004)
                gr = clip(rescale * g + wd * w[i], cg)
                mu_t = b1 * (1 - 0.5 * 0.96 ** (t * decay))
                mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * decay))
                sched["m"] *= mu_t
                st[0][:] = b1 * st[0] + (1 - b1) * gr
                st[1][:] = b2 * st[1] + (1 - b2) * gr * gr
                m_bar = (1 - mu_t) * gr / (1 - sched["m"]) + mu_next * st[0] / (1 - sched["m"] * mu_next)
                w[i] = w[i] - lr * m_bar / (np.sqrt(st[1] / (1 - b2 ** t)) + kw.get("epsilon", 1e-8))
            elif kind == "lamb":
                w[i] = ref_lamb(w[i], g, st[:2], t=t, lr=lr, wd=wd, beta1=kw.get("beta1", 0.9),
                                beta2=kw.get("beta2", 0.999), epsilon=kw.get("epsilon", 1e-6), **common)
            else:
                raise AssertionError(kind)
    return w


NAMES = {0: "fc1_weight", 1: "fc1_bias", 2: "bn_gamma", 3: "bn_beta"}
PSHAPES = {0: (4, 3), 1: (4,), 2: (3,), 3: (3,)}

OPT_CASES = [
    ("sgd", dict(momentum=0.0)),
    ("sgd", dict(momentum=0.9)),
    ("nag", dict(momentum=0.9)),
    ("adam", dict(beta1=0.8, beta2=0.99)),
    ("adamw", dict()),
    ("rmsprop", dict(gamma1=0.8)),
    ("rmsprop", dict(centered=True, gamma1=0.8, gamma2=0.7, clip_weights=2.0)),
    ("adagrad", dict(eps=1e-6)),
    ("adadelta", dict(rho=0.8)),
    ("ftrl", dict(lamda1=0.02)),
    ("signum", dict(momentum=0.8, wd_lh=0.01)),
    ("ftml", dict(beta1=0.7)),
    ("adamax", dict(beta1=0.8)),
    ("nadam", dict(schedule_decay=0.01)),
    ("lamb", dict()),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind,kw", OPT_CASES, ids=["%s-%d" % (c[0], i) for i, c in enumerate(OPT_CASES)])
def test_optimizer_matches_numpy(kind, kw, dtype):
    rng = np.random.default_rng(10)
    weights = {i: rng.standard_normal(s) for i, s in PSHAPES.items()}
    steps = [{i: rng.standard_normal(s) for i, s in PSHAPES.items()} for _ in range(5)]
    common = dict(rescale_grad=0.5, clip_gradient=0.8, wd=0.05)
    sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=0.1)
    opt = mx.optimizer.create(kind, learning_rate=0.1, lr_scheduler=sched, param_idx2name=NAMES, **dict(kw, **common))
    opt.set_lr_mult({"fc1_weight": 0.5, 2: 2.0})
    opt.set_wd_mult({"bn_beta": 3.0})
    updater = mx.optimizer.get_updater(opt)
    nd_w = {i: np_array(v.astype(dtype)) for i, v in weights.items()}
    for grads in steps:
        for i in sorted(grads):
            updater(i, np_array(grads[i].astype(dtype)), nd_w[i])

    lr_mult = {0: 0.5, 1: 1.0, 2: 2.0, 3: 1.0}
    # fc1_bias ends in neither _weight nor _gamma: wd_mult 0; bn_beta's is set explicitly.
    wd_mult = {0: 1.0, 1: 0.0, 2: 1.0, 3: 3.0}

    def lr_of(i, num_update):
        # FactorScheduler(step=2, factor=0.5): halves after every 2 updates.
        return 0.1 * 0.5 ** ((num_update - 1) // 2) * lr_mult[i]

    ref = numpy_run(kind, dict(kw, **common), {i: v.astype(dtype) for i, v in weights.items()}, steps, lr_of,
                    lambda i: 0.05 * wd_mult[i])
    assert opt.num_update == 5
    tol = TOL[dtype] if kind not in ("signum",) else dict(rtol=1e-5, atol=1e-6)
    for i in nd_w:
        np.testing.assert_allclose(nd_w[i].asnumpy(), ref[i], err_msg="parameter %s" % NAMES[i], **tol)


def test_adamw_follows_changing_rescale_grad():
    opt = mx.optimizer.AdamW(learning_rate=0.1, wd=0.01, correct_bias=False)
    upd = mx.optimizer.get_updater(opt)
    w = np_array(np.array([1.0, -2.0], np.float32))
    w_ref, st = np.array([1.0, -2.0]), [np.zeros(2), np.zeros(2)]
    for scale in (1.0, 0.25, 0.25, 2.0):
        opt.rescale_grad = scale
        upd(0, np_array(np.array([0.5, 0.3], np.float32)), w)
        w_ref = ref_adamw(w_ref, np.array([0.5, 0.3]), st, lr=1.0, eta=0.1, epsilon=1e-6, wd=0.01, rescale_grad=scale)
    np.testing.assert_allclose(w.asnumpy(), w_ref, rtol=1e-4, atol=1e-5)


def test_lr_wd_lookup_order():
    class P(object):
        lr_mult, wd_mult = 3.0, 0.25

    opt = mx.optimizer.SGD(learning_rate=0.2, wd=0.1, param_idx2name={0: "a_weight", 1: "a_bias", 2: "c_gamma"},
                           param_dict={5: P()})
    opt.set_lr_mult({0: 2.0, "a_bias": 4.0})
    assert opt._get_lrs([0, 1, 2, 5, 9]) == pytest.approx([0.4, 0.8, 0.2, 0.6, 0.2])
    assert opt._get_wds([0, 1, 2, 5, 9]) == pytest.approx([0.1, 0.0, 0.1, 0.025, 0.1])
    assert opt.learning_rate == 0.2
    opt.set_learning_rate(0.3)
    assert opt.learning_rate == 0.3


def test_symbol_attributes_give_multipliers():
    data = mx.sym.Variable("data")
    w = mx.sym.Variable("fc_weight", lr_mult=0.1, wd_mult=0.5)
    b = mx.sym.Variable("fc_bias")
    net = mx.sym.FullyConnected(data, weight=w, bias=b, num_hidden=3, name="fc")
    opt = mx.optimizer.SGD(sym=net, param_idx2name={0: "fc_weight", 1: "fc_bias"}, wd=1.0)
    assert opt.lr_mult == {"fc_weight": 0.1}
    assert opt.wd_mult == {"fc_bias": 0.0, "fc_weight": 0.5}


def test_begin_num_update_and_scheduler_warning():
    sched = mx.lr_scheduler.FactorScheduler(step=10, factor=0.5, base_lr=1.0)
    with pytest.warns(UserWarning, match="replaces base_lr"):
        opt = mx.optimizer.SGD(learning_rate=0.4, lr_scheduler=sched, begin_num_update=20)
    assert sched.base_lr == 0.4
    upd = mx.optimizer.get_updater(opt)
    w = mx.nd.zeros((2,))
    upd(0, mx.nd.ones((2,)), w)
    assert opt.num_update == 21
    # Update 21 is past two steps of 10: 0.4 * 0.5^2.
    np.testing.assert_allclose(w.asnumpy(), [-0.1, -0.1], rtol=1e-6)
    with pytest.raises(UserWarning, match="lr_scheduler"):
        opt.set_learning_rate(0.1)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_aggregated_equals_one_by_one(momentum):
    rng = np.random.default_rng(11)
    shapes = [(3,), (2, 2), (5,), (1,), (4, 3)]
    init = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    results = []
    for agg in (0, 3):
        opt = mx.optimizer.SGD(learning_rate=0.1, momentum=momentum, wd=0.01, rescale_grad=0.5, clip_gradient=0.9)
        opt.aggregate_num = agg
        upd = mx.optimizer.Updater(opt)
        ws = [np_array(x) for x in init]
        g_rng = np.random.default_rng(12)
        for _ in range(3):
            gs = [np_array(g_rng.standard_normal(s).astype(np.float32)) for s in shapes]
            upd(list(range(len(ws))), gs, ws)
        results.append([w.asnumpy() for w in ws])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_sgd_aggregated_uses_multi_op(monkeypatch):
    calls = []
    real = mx.nd.multi_sgd_mom_update

    def spy(*args, **kwargs):
        calls.append(kwargs["num_weights"])
        return real(*args, **kwargs)

    monkeypatch.setattr(mx.nd, "multi_sgd_mom_update", spy)
    opt = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9)
    assert opt.aggregate_num == 4
    upd = mx.optimizer.get_updater(opt)
    ws = [mx.nd.ones((2,)) for _ in range(6)]
    upd(list(range(6)), [mx.nd.ones((2,)) for _ in range(6)], ws)
    # Six parameters in groups of at most four; a group of two still uses the multi op.
    assert calls == [4, 2]
    np.testing.assert_allclose(ws[5].asnumpy(), [0.9, 0.9])


@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("kind", ["sgd", "nag", "adam"])
def test_multi_precision_float16(kind, momentum):
    rng = np.random.default_rng(13)
    # Exactly representable in float16, so that both runs start from the same values.
    w0 = rng.standard_normal((6,)).astype(np.float16).astype(np.float32)
    extra = dict(momentum=momentum) if kind in ("sgd", "nag") else dict()
    opt = mx.optimizer.create(kind, learning_rate=0.05, multi_precision=True, wd=0.01, **extra)
    ref_opt = mx.optimizer.create(kind, learning_rate=0.05, wd=0.01, **extra)
    upd, ref_upd = mx.optimizer.get_updater(opt), mx.optimizer.get_updater(ref_opt)
    w16, w32 = np_array(w0.astype(np.float16)), np_array(w0)
    for _ in range(3):
        g = rng.standard_normal((6,)).astype(np.float16)
        upd(0, np_array(g), w16)
        ref_upd(0, np_array(g.astype(np.float32)), w32)
    assert w16.dtype == np.float16
    master = upd.states[0][1] if kind in ("sgd", "nag") else upd.states[0][0]
    assert master.dtype == np.float32
    # The master copy follows the float32 run; the weight is it rounded.
    np.testing.assert_allclose(master.asnumpy(), w32.asnumpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(w16.asnumpy(), master.asnumpy().astype(np.float16))


@pytest.mark.parametrize("dump_optimizer", [False, True])
@pytest.mark.parametrize("kind,kw", [("sgd", dict(momentum=0.9)), ("adam", dict()),
                                     ("rmsprop", dict(centered=True)), ("lamb", dict())])
def test_updater_states_round_trip(kind, kw, dump_optimizer):
    rng = np.random.default_rng(14)
    shapes = {0: (3, 2), 1: (4,)}
    opt = mx.optimizer.create(kind, learning_rate=0.05, **kw)
    upd = mx.optimizer.get_updater(opt)
    ws = {i: np_array(rng.standard_normal(s).astype(np.float32)) for i, s in shapes.items()}
    grads = [{i: rng.standard_normal(s).astype(np.float32) for i, s in shapes.items()} for _ in range(6)]
    for step in grads[:3]:
        for i in shapes:
            upd(i, np_array(step[i]), ws[i])
    blob = upd.get_states(dump_optimizer=dump_optimizer)
    assert isinstance(blob, bytes)

    restored_opt = opt if not dump_optimizer else mx.optimizer.create(kind, learning_rate=0.05, **kw)
    restored = mx.optimizer.get_updater(pickle.loads(pickle.dumps(restored_opt)) if not dump_optimizer
                                        else restored_opt)
    restored.set_states(blob)
    if dump_optimizer:
        assert restored.optimizer is not opt and restored.optimizer.num_update == 3
    ws2 = {i: ws[i].copy() for i in ws}
    for step in grads[3:]:
        for i in shapes:
            upd(i, np_array(step[i]), ws[i])
            restored(i, np_array(step[i]), ws2[i])
    for i in shapes:
        np.testing.assert_array_equal(ws[i].asnumpy(), ws2[i].asnumpy())


@pytest.mark.parametrize("kind", ["sgd", "nag", "adam", "adamw", "rmsprop", "adagrad", "adadelta", "ftrl", "ftml",
                                  "signum", "lamb"])
def test_optimizer_pickles_with_protocol_0(kind):
    # A distributed KVStore sends the optimizer to its servers pickled with protocol 0.
    class LocalParam(object):  # a local class cannot be pickled: param_dict must be left out
        lr_mult, wd_mult = 1.0, 1.0

    opt = mx.optimizer.create(kind, learning_rate=0.05, wd=0.01, rescale_grad=0.5, param_dict={0: LocalParam()})
    upd = mx.optimizer.get_updater(opt)
    w = np_array(np.arange(4, dtype=np.float32))
    upd(0, mx.nd.ones((4,)), w)
    clone = pickle.loads(pickle.dumps(opt, 0))
    assert type(clone) is type(opt) and clone.param_dict == {}
    assert clone.num_update == 1 and clone.lr == 0.05 and clone.rescale_grad == 0.5
    w1, w2 = w.copy(), w.copy()
    upd2 = mx.optimizer.get_updater(clone)
    upd2.set_states(upd.get_states())
    upd(0, mx.nd.ones((4,)), w1)
    upd2(0, mx.nd.ones((4,)), w2)
    np.testing.assert_array_equal(w1.asnumpy(), w2.asnumpy())


def test_sync_state_context_keeps_structure():
    upd = mx.optimizer.get_updater(mx.optimizer.SGD())
    a, b = mx.nd.ones((2,)), mx.nd.zeros((1,))
    out = upd.sync_state_context((a, [b, None]), mx.cpu(0))
    assert isinstance(out, tuple) and isinstance(out[1], list) and out[1][1] is None
    np.testing.assert_array_equal(out[0].asnumpy(), [1, 1])


def test_register_and_create():
    @mx.optimizer.register
    class MyHalvingOpt(mx.optimizer.Optimizer):
        def update(self, index, weight, grad, state):
            weight[:] = weight.asnumpy() * 0.5

    opt = mx.optimizer.create("myhalvingopt", learning_rate=0.3)
    assert isinstance(opt, MyHalvingOpt) and opt.lr == 0.3
    w = mx.nd.ones((2,))
    mx.optimizer.get_updater(opt)(0, mx.nd.ones((2,)), w)
    np.testing.assert_array_equal(w.asnumpy(), [0.5, 0.5])
    for name, klass in [("SGD", mx.optimizer.SGD), ("nag", mx.optimizer.NAG), ("Adam", mx.optimizer.Adam),
                        ("adamw", mx.optimizer.AdamW), ("rmsprop", mx.optimizer.RMSProp),
                        ("adagrad", mx.optimizer.AdaGrad), ("adadelta", mx.optimizer.AdaDelta),
                        ("ftrl", mx.optimizer.Ftrl), ("ftml", mx.optimizer.FTML),
                        ("adamax", mx.optimizer.Adamax), ("nadam", mx.optimizer.Nadam), ("signum", mx.optimizer.Signum), ("lamb", mx.optimizer.LAMB)]:
        assert type(mx.optimizer.create(name)) is klass
    assert mx.optimizer.Optimizer.create_optimizer("sgd").lr == 0.01


def test_optimizer_errors():
    with pytest.raises(ValueError, match="Cannot find optimizer 'sgdd'.*registered optimizers: .*sgd"):
        mx.optimizer.create("sgdd")
    with pytest.raises(TypeError, match="param_idx2name"):
        mx.optimizer.SGD(param_idx2name=[1, 2])
    upd = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
    with pytest.raises(ValueError, match=r"parameter 0: the gradient has shape \(3,\) but the weight has shape \(2,\)"):
        upd(0, mx.nd.ones((3,)), mx.nd.ones((2,)))
    with pytest.raises(ValueError, match="2 indices, 1 gradients and 2 weights"):
        upd([0, 1], [mx.nd.ones((2,))], [mx.nd.ones((2,)), mx.nd.ones((2,))])
    with pytest.raises(NotImplementedError, match="update"):
        mx.optimizer.Optimizer().update(0, mx.nd.ones((1,)), mx.nd.ones((1,)), None)
