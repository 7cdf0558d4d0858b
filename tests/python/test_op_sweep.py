"""The MXNet 1.9.1 legacy operators the sweep of issue 21 found missing: forward against
numpy, numeric gradients, and the errors of ill-fitting inputs (hand-called backward
operators included)."""
import numpy as np
import pytest

import weft as mx
from weft import autograd
from weft.ndarray import _ops as nd_ops
from weft.test_utils import assert_almost_equal, check_numeric_gradient

rng = np.random.RandomState(21)
MXNetError = mx.base.MXNetError


def rand(*shape, dtype=np.float64):
    return rng.uniform(-1, 1, size=shape).astype(dtype)


def invoke(name, *args, **params):
    return nd_ops.get(name)(*args, **params)


# ------------------------------------------------------------------ interleaved attention
def heads_of(x, heads, parts, part):
    """Projection `part` of a (L, B, heads * parts * D) tensor as (B * heads, L, D)."""
    L, B, W = x.shape
    D = W // (heads * parts)
    t = x.reshape(L, B, heads, parts, D)[:, :, :, part, :]
    return t.transpose(1, 2, 0, 3).reshape(B * heads, L, D)


def merge_heads(o, batch, heads):
    """(B * heads, L, D) back to (L, B, heads * D)."""
    bh, L, D = o.shape
    return o.reshape(batch, heads, L, D).transpose(2, 0, 1, 3).reshape(L, batch, heads * D)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_selfatt_qk_and_valatt_match_numpy(dtype):
    L, B, H, D = 5, 2, 3, 4
    qkv = rand(L, B, 3 * H * D, dtype=dtype)
    att = rand(B * H, L, L, dtype=dtype)
    qk = mx.nd.contrib.interleaved_matmul_selfatt_qk(mx.nd.array(qkv, dtype=dtype), heads=H)
    q, k, v = (heads_of(qkv, H, 3, p) for p in range(3))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert qk.shape == (B * H, L, L) and qk.dtype == dtype
    assert_almost_equal(qk.asnumpy(), q @ k.transpose(0, 2, 1) / np.sqrt(D), rtol=tol, atol=tol)
    out = mx.nd.contrib.interleaved_matmul_selfatt_valatt(mx.nd.array(qkv, dtype=dtype), mx.nd.array(att, dtype=dtype),
                                                          heads=H)
    assert out.shape == (L, B, H * D)
    assert_almost_equal(out.asnumpy(), merge_heads(att @ v, B, H), rtol=tol, atol=tol)


@pytest.mark.parametrize("L,B,C,H", [(4, 2, 20, 2), (3, 1, 16, 2), (5, 3, 25, 4)])
def test_selfatt_qk_last_axis_not_a_multiple_of_3_heads(L, B, C, H):
    # MXNet takes any last axis C: head_dim D = (C // 3) // H, and the input's first
    # L * B * H * 3 * D elements are read in the (L, B, H * 3 * D) layout.
    D = C // 3 // H
    qkv = rand(L, B, C)
    view = qkv.reshape(-1)[:L * B * H * 3 * D].reshape(L, B, H * 3 * D)
    q, k = heads_of(view, H, 3, 0), heads_of(view, H, 3, 1)
    want = q @ k.transpose(0, 2, 1) / np.sqrt(D)
    got = mx.nd.contrib.interleaved_matmul_selfatt_qk(mx.nd.array(qkv, dtype="float64"), heads=H)
    assert got.shape == (B * H, L, L)
    assert_almost_equal(got.asnumpy(), want, rtol=1e-12, atol=1e-12)
    # The symbol infers the same shape, and the gradient is the gradient of that reading
    # (zero for the elements past the view).
    _, out_shapes, _ = mx.sym.contrib.interleaved_matmul_selfatt_qk(mx.sym.var("x"), heads=H).infer_shape(
        x=(L, B, C))
    assert out_shapes == [(B * H, L, L)]
    check_numeric_gradient("_contrib_interleaved_matmul_selfatt_qk", [qkv], params=dict(heads=H))
    x = mx.nd.array(qkv, dtype="float64")
    x.attach_grad()
    head = rand(B * H, L, L)
    with autograd.record():
        y = mx.nd.contrib.interleaved_matmul_selfatt_qk(x, heads=H)
    y.backward(mx.nd.array(head, dtype="float64"))
    g = np.zeros(L * B * H * 3 * D)
    gv = g.reshape(L, B, H, 3, D)
    s = 1 / np.sqrt(D)
    qk_grad_q = head @ k * s                    # (B*H, L, D)
    qk_grad_k = head.transpose(0, 2, 1) @ q * s
    gv[:, :, :, 0, :] = qk_grad_q.reshape(B, H, L, D).transpose(2, 0, 1, 3)
    gv[:, :, :, 1, :] = qk_grad_k.reshape(B, H, L, D).transpose(2, 0, 1, 3)
    want_grad = np.zeros(L * B * C)
    want_grad[:g.size] = g
    assert_almost_equal(x.grad.asnumpy(), want_grad.reshape(L, B, C), rtol=1e-10, atol=1e-12)


def test_encdec_qk_and_valatt_match_numpy():
    Lq, Lk, B, H, D = 3, 6, 2, 2, 5
    q = rand(Lq, B, H * D)
    kv = rand(Lk, B, 2 * H * D)
    att = rand(B * H, Lq, Lk)
    qk = mx.nd.contrib.interleaved_matmul_encdec_qk(mx.nd.array(q, dtype="float64"), mx.nd.array(kv, dtype="float64"),
                                                    heads=H)
    qh, k, v = heads_of(q, H, 1, 0), heads_of(kv, H, 2, 0), heads_of(kv, H, 2, 1)
    assert_almost_equal(qk.asnumpy(), qh @ k.transpose(0, 2, 1) / np.sqrt(D), rtol=1e-12, atol=1e-12)
    out = mx.nd.contrib.interleaved_matmul_encdec_valatt(mx.nd.array(kv, dtype="float64"),
                                                         mx.nd.array(att, dtype="float64"), heads=H)
    assert out.shape == (Lq, B, H * D)
    assert_almost_equal(out.asnumpy(), merge_heads(att @ v, B, H), rtol=1e-12, atol=1e-12)


def test_interleaved_matmul_numeric_gradients():
    L, Lk, B, H, D = 3, 4, 2, 2, 3
    p = dict(heads=H)
    check_numeric_gradient("_contrib_interleaved_matmul_selfatt_qk", [rand(L, B, 3 * H * D)], params=p)
    check_numeric_gradient("_contrib_interleaved_matmul_selfatt_valatt", [rand(L, B, 3 * H * D), rand(B * H, L, L)],
                           params=p)
    check_numeric_gradient("_contrib_interleaved_matmul_encdec_qk", [rand(L, B, H * D), rand(Lk, B, 2 * H * D)],
                           params=p)
    check_numeric_gradient("_contrib_interleaved_matmul_encdec_valatt", [rand(Lk, B, 2 * H * D), rand(B * H, L, Lk)],
                           params=p)


def test_interleaved_matmul_gradient_accumulates_with_grad_req_add():
    L, B, H, D = 3, 2, 2, 2
    qkv = mx.sym.var("qkv")
    sym = mx.sym.contrib.interleaved_matmul_selfatt_qk(qkv, heads=H)
    x = mx.nd.array(rand(L, B, 3 * H * D, dtype=np.float32))
    grad = mx.nd.ones(x.shape)
    ex = sym.bind(mx.cpu(), {"qkv": x}, args_grad={"qkv": grad}, grad_req="add")
    ex.forward(is_train=True)
    head = mx.nd.array(rand(B * H, L, L, dtype=np.float32))
    ex.backward([head])
    x.attach_grad()
    with autograd.record():
        y = mx.nd.contrib.interleaved_matmul_selfatt_qk(x, heads=H)
    y.backward(head)
    assert_almost_equal(grad.asnumpy(), 1 + x.grad.asnumpy(), rtol=1e-5, atol=1e-6)
    # The value third of each head gets no gradient from the qk product.
    assert np.all(x.grad.asnumpy().reshape(L, B, H, 3, D)[:, :, :, 2, :] == 0)


def test_interleaved_matmul_shape_errors():
    with pytest.raises(MXNetError, match="must be 3-D"):
        mx.nd.contrib.interleaved_matmul_selfatt_qk(mx.nd.ones((4, 6)), heads=2)
    with pytest.raises(MXNetError, match="at least 3 \\* heads = 6"):
        mx.nd.contrib.interleaved_matmul_selfatt_qk(mx.nd.ones((4, 2, 5)), heads=2)
    with pytest.raises(MXNetError, match="multiple of 3 \\* heads = 6"):
        mx.nd.contrib.interleaved_matmul_selfatt_valatt(mx.nd.ones((4, 2, 9)), mx.nd.ones((4, 4, 4)), heads=2)
    with pytest.raises(MXNetError, match="attention' must have shape \\(4,3,3\\)"):
        mx.nd.contrib.interleaved_matmul_selfatt_valatt(mx.nd.ones((3, 2, 12)), mx.nd.ones((4, 3, 2)), heads=2)
    with pytest.raises(MXNetError, match="keys_values must have shape"):
        mx.nd.contrib.interleaved_matmul_encdec_qk(mx.nd.ones((3, 2, 4)), mx.nd.ones((5, 2, 4)), heads=2)
    with pytest.raises(MXNetError, match="attention' must have shape"):
        mx.nd.contrib.interleaved_matmul_encdec_valatt(mx.nd.ones((5, 2, 8)), mx.nd.ones((3, 3, 5)), heads=2)
    with pytest.raises(MXNetError, match="heads"):
        mx.nd.contrib.interleaved_matmul_selfatt_qk(mx.nd.ones((3, 2, 6)), heads=0)


def test_interleaved_matmul_backward_called_by_hand_checks_every_input():
    qkv = mx.nd.ones((3, 2, 12))
    with pytest.raises(MXNetError, match="input 'ograd' has shape \\(4,3,2\\) but the operator expects \\(4,3,3\\)"):
        invoke("_backward_interleaved_matmul_selfatt_qk", mx.nd.ones((4, 3, 2)), qkv, heads=2)
    with pytest.raises(MXNetError, match="attention' must have shape"):
        invoke("_backward_interleaved_matmul_selfatt_valatt", mx.nd.ones((3, 2, 4)), qkv, mx.nd.ones((4, 3, 1)),
               heads=2)
    with pytest.raises(MXNetError, match="input 'ograd' has shape \\(3,2,2\\) but the operator expects \\(3,2,4\\)"):
        invoke("_backward_interleaved_matmul_encdec_valatt", mx.nd.ones((3, 2, 2)), mx.nd.ones((5, 2, 8)),
               mx.nd.ones((4, 3, 5)), heads=2)
    with pytest.raises(MXNetError, match="input 'ograd' has shape \\(4,3,4\\) but the operator expects \\(4,3,5\\)"):
        invoke("_backward_interleaved_matmul_encdec_qk", mx.nd.ones((4, 3, 4)), mx.nd.ones((3, 2, 4)),
               mx.nd.ones((5, 2, 8)), heads=2)


# ------------------------------------------------------------------ fft / ifft
def interleave(c):
    return np.stack([c.real, c.imag], axis=-1).reshape(c.shape[:-1] + (2 * c.shape[-1],))


@pytest.mark.parametrize("shape", [(3, 8), (2, 5), (4, 12), (2, 1, 3, 7), (2, 1)])
def test_fft_matches_numpy(shape):
    x = rand(*shape, dtype=np.float32)
    y = mx.nd.contrib.fft(mx.nd.array(x))
    assert y.shape == shape[:-1] + (2 * shape[-1],) and y.dtype == np.float32
    assert_almost_equal(y.asnumpy(), interleave(np.fft.fft(x.astype(np.float64), axis=-1)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("d", [8, 6, 13])
def test_ifft_is_the_unscaled_inverse(d):
    z = rand(3, 2 * d)
    c = z[:, 0::2] + 1j * z[:, 1::2]
    y = mx.nd.contrib.ifft(mx.nd.array(z, dtype="float64"))
    assert y.shape == (3, d)
    assert_almost_equal(y.asnumpy(), (np.fft.ifft(c, axis=-1) * d).real, rtol=1e-10, atol=1e-10)
    x = mx.nd.array(rand(2, d), dtype="float64")
    back = mx.nd.contrib.ifft(mx.nd.contrib.fft(x))
    assert_almost_equal(back.asnumpy(), d * x.asnumpy(), rtol=1e-10, atol=1e-10)


def test_fft_through_mxnets_contrib_namespaces():
    x = mx.nd.array(rand(2, 4, dtype=np.float32))
    want = interleave(np.fft.fft(x.asnumpy().astype(np.float64), axis=-1))
    assert_almost_equal(mx.contrib.nd.fft(x).asnumpy(), want, rtol=1e-5, atol=1e-5)
    sym = mx.contrib.symbol.fft(mx.sym.var("data"))
    assert mx.contrib.sym.ifft is mx.sym.contrib.ifft
    assert sym.infer_shape(data=(2, 4))[1] == [(2, 8)]


def test_fft_and_ifft_numeric_gradients():
    check_numeric_gradient("_contrib_fft", [rand(3, 6)])
    check_numeric_gradient("_contrib_fft", [rand(2, 8)], params=dict(compute_size=4))
    check_numeric_gradient("_contrib_ifft", [rand(3, 10)])


def test_fft_errors():
    with pytest.raises(MXNetError, match="must be even"):
        mx.nd.contrib.ifft(mx.nd.ones((2, 5)))
    with pytest.raises(MXNetError, match="floating-point"):
        mx.nd.contrib.fft(mx.nd.ones((2, 4), dtype="int32"))
    with pytest.raises(MXNetError, match="compute_size"):
        mx.nd.contrib.fft(mx.nd.ones((2, 4)), compute_size=0)


# ------------------------------------------------------------------ count_sketch
def sketch(x, h, s, out_dim):
    rows = x.reshape(-1, x.shape[-1])
    out = np.zeros((rows.shape[0], out_dim))
    for j in range(x.shape[-1]):
        out[:, int(h[j])] += s[j] * rows[:, j]
    return out.reshape(x.shape[:-1] + (out_dim,))


@pytest.mark.parametrize("shape", [(4, 7), (2, 3, 2, 5)])
def test_count_sketch_matches_numpy(shape):
    d, k = shape[-1], 4
    x = rand(*shape, dtype=np.float32)
    h = rng.randint(0, k, size=(1, d)).astype(np.float32)
    s = rng.choice([-1.0, 1.0], size=(1, d)).astype(np.float32)
    y = mx.nd.contrib.count_sketch(mx.nd.array(x), mx.nd.array(h), mx.nd.array(s), out_dim=k)
    assert y.shape == shape[:-1] + (k,)
    assert_almost_equal(y.asnumpy(), sketch(x, h[0], s[0], k), rtol=1e-5, atol=1e-6)


def test_count_sketch_mxnet_doc_example():
    x = mx.nd.array([[1.2, 2.5, 3.4], [3.2, 5.7, 6.6]])
    # Called where MXNet's example calls it.
    y = mx.contrib.ndarray.count_sketch(x, mx.nd.array([[0, 3, 4]]), mx.nd.array([[1, -1, 1]]), out_dim=5)
    assert_almost_equal(y.asnumpy(), np.array([[1.2, 0, 0, -2.5, 3.4], [3.2, 0, 0, -5.7, 6.6]]), rtol=1e-6, atol=1e-6)


def test_count_sketch_numeric_gradient():
    # The symbol form perturbs only the checked arguments, so the hash stays whole numbers.
    sym = mx.sym.contrib.count_sketch(mx.sym.var("data"), mx.sym.var("h"), mx.sym.var("s"), out_dim=3)
    location = dict(data=rand(3, 5), h=np.array([[2, 0, 2, 1, 0]], dtype=np.float64), s=rand(1, 5))
    check_numeric_gradient(sym, location, grad_nodes=["data", "s"], dtype=np.float64, numeric_eps=1e-6,
                           rtol=1e-5, atol=1e-8)


def test_count_sketch_errors():
    x = mx.nd.ones((2, 3))
    with pytest.raises(MXNetError, match="h\\[1\\] = 5 is outside \\[0, out_dim = 5\\)"):
        mx.nd.contrib.count_sketch(x, mx.nd.array([[0, 5, 1]]), mx.nd.ones((1, 3)), out_dim=5).asnumpy()
    with pytest.raises(MXNetError, match="input 'h' must hold one entry per column"):
        mx.nd.contrib.count_sketch(x, mx.nd.array([[0, 1]]), mx.nd.ones((1, 3)), out_dim=5)
    with pytest.raises(MXNetError, match="at least 2 axes"):
        mx.nd.contrib.count_sketch(mx.nd.ones((3,)), mx.nd.zeros((1, 3)), mx.nd.ones((1, 3)), out_dim=5)
    with pytest.raises(MXNetError, match="input 'ograd' has shape \\(2,4\\) but the operator expects \\(2,5\\)"):
        invoke("_backward_contrib_count_sketch", mx.nd.ones((2, 4)), x, mx.nd.zeros((1, 3)), mx.nd.ones((1, 3)),
               out_dim=5)


# ------------------------------------------------------------------ hawkesll
def hawkes_reference(lda, alpha, beta, state, lags, marks, valid, max_time):
    N, K = lda.shape
    ll = np.zeros(N)
    out_state = np.zeros((N, K))
    for n in range(N):
        times = np.cumsum(lags[n, :int(valid[n])])
        events = list(zip(times, marks[n, :int(valid[n])]))
        for k in range(K):
            # Intensity at each event of process k: background plus the decayed excitation
            # of the earlier events of k and of the memory carried in.
            own = [t for t, m in events if m == k]
            for i, t in enumerate(own):
                excite = state[n, k] * np.exp(-beta[k] * t) + sum(np.exp(-beta[k] * (t - u)) for u in own[:i])
                ll[n] += np.log(lda[n, k] + alpha[k] * beta[k] * excite)
            T = max_time[n]
            # The integral of the intensity over (0, T].
            ll[n] -= lda[n, k] * T + alpha[k] * state[n, k] * (1 - np.exp(-beta[k] * T))
            ll[n] -= alpha[k] * sum(1 - np.exp(-beta[k] * (T - u)) for u in own)
            out_state[n, k] = state[n, k] * np.exp(-beta[k] * T) + sum(np.exp(-beta[k] * (T - u)) for u in own)
    return ll, out_state


def hawkes_inputs(dtype=np.float64):
    N, T, K = 3, 5, 2
    lda = rng.uniform(0.5, 2.0, size=(N, K))
    alpha = rng.uniform(0.1, 0.8, size=K)
    beta = rng.uniform(0.5, 2.0, size=K)
    state = rng.uniform(0.0, 1.0, size=(N, K))
    lags = rng.uniform(0.1, 1.0, size=(N, T))
    marks = rng.randint(0, K, size=(N, T)).astype(np.int32)
    valid = np.array([5.0, 2.0, 0.0])
    max_time = lags.sum(axis=1) + 0.5
    floats = [lda, alpha, beta, state, lags]
    return [mx.nd.array(a, dtype=dtype) for a in floats] + [mx.nd.array(marks, dtype="int32")] + \
        [mx.nd.array(valid, dtype=dtype), mx.nd.array(max_time, dtype=dtype)]


def test_hawkesll_matches_a_direct_sum():
    args = hawkes_inputs()
    ll, state = mx.nd.contrib.hawkesll(*args)
    ref_ll, ref_state = hawkes_reference(*[a.asnumpy() for a in args])
    assert ll.shape == (3,) and state.shape == (3, 2)
    assert_almost_equal(ll.asnumpy(), ref_ll, rtol=1e-10, atol=1e-10)
    assert_almost_equal(state.asnumpy(), ref_state, rtol=1e-10, atol=1e-10)


def test_hawkesll_gradients_match_central_differences():
    args = hawkes_inputs()
    heads = [mx.nd.array(rng.uniform(-1, 1, size=(3,)), dtype="float64"),
             mx.nd.array(rng.uniform(-1, 1, size=(3, 2)), dtype="float64")]
    for a in args[:4]:
        a.attach_grad()
    with autograd.record():
        outs = mx.nd.contrib.hawkesll(*args)
    autograd.backward(list(outs), heads)

    def objective(values):
        o = mx.nd.contrib.hawkesll(*values)
        return sum(float((x.asnumpy() * h.asnumpy()).sum()) for x, h in zip(o, heads))

    eps = 1e-6
    for i in range(4):
        base = args[i].asnumpy()
        numeric = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            vals = []
            for sign in (1, -1):
                moved = base.copy()
                moved[idx] += sign * eps
                vals.append(objective(args[:i] + [mx.nd.array(moved, dtype="float64")] + args[i + 1:]))
            numeric[idx] = (vals[0] - vals[1]) / (2 * eps)
        assert_almost_equal(args[i].grad.asnumpy(), numeric, rtol=1e-5, atol=1e-7,
                            names=("analytic input %d" % i, "numeric input %d" % i))


def test_hawkesll_errors():
    args = hawkes_inputs()
    bad = list(args)
    bad[1] = mx.nd.ones((3,), dtype="float64")
    with pytest.raises(MXNetError, match="input 'alpha' must have shape \\(2,\\)"):
        mx.nd.contrib.hawkesll(*bad)
    bad = list(args)
    bad[5] = mx.nd.array(np.full((3, 5), 2), dtype="int32")
    with pytest.raises(MXNetError, match="is not a process of \\[0, 2\\)"):
        mx.nd.contrib.hawkesll(*bad)[0].asnumpy()
    bad = list(args)
    bad[6] = mx.nd.array([6.0, 1.0, 1.0], dtype="float64")
    with pytest.raises(MXNetError, match="valid_length\\[0\\] = 6"):
        mx.nd.contrib.hawkesll(*bad)[0].asnumpy()
    with pytest.raises(MXNetError, match="input 'ograd' has shape \\(2,\\) but the operator expects \\(3,\\)"):
        invoke("_contrib_backward_hawkesll", mx.nd.ones((2,), dtype="float64"), mx.nd.ones((3, 2), dtype="float64"),
               *args)[0].asnumpy()


# ------------------------------------------------------------------ intgemm
def quantize(x, maxabs):
    return np.clip(np.rint(x * (127.0 / maxabs)), -127, 127).astype(np.int8)


def test_intgemm_maxabsolute_and_prepare_data():
    x = rand(4, 64, dtype=np.float32)
    x[1, 3] = -1.5
    m = mx.nd.contrib.intgemm_maxabsolute(mx.nd.array(x))
    assert m.shape == (1,) and m.asnumpy()[0] == np.float32(1.5)
    q = mx.nd.contrib.intgemm_prepare_data(mx.nd.array(x), m)
    assert q.dtype == np.int8
    np.testing.assert_array_equal(q.asnumpy(), quantize(x, 1.5))
    # A range narrower than the data saturates at +-127, never -128.
    q = mx.nd.contrib.intgemm_prepare_data(mx.nd.array(x), mx.nd.array([0.5])).asnumpy()
    assert q.min() == -127 and q.max() == 127


def test_intgemm_prepare_weight_and_take_weight():
    w = rand(8, 16, dtype=np.float32)
    m = mx.nd.contrib.intgemm_maxabsolute(mx.nd.array(w))
    p = mx.nd.contrib.intgemm_prepare_weight(mx.nd.array(w), m)
    np.testing.assert_array_equal(p.asnumpy(), quantize(w, np.abs(w).max()))
    again = mx.nd.contrib.intgemm_prepare_weight(p, already_quantized=True)
    np.testing.assert_array_equal(again.asnumpy(), p.asnumpy())
    idx = np.array([5, 0, 5, 7], dtype=np.int32)
    taken = mx.nd.contrib.intgemm_take_weight(p, mx.nd.array(idx, dtype="int32"))
    np.testing.assert_array_equal(taken.asnumpy(), p.asnumpy()[idx])


@pytest.mark.parametrize("no_bias", [True, False])
def test_intgemm_fully_connected_int32_is_the_exact_product(no_bias):
    a = rng.randint(-127, 128, size=(3, 32)).astype(np.int8)
    w = rng.randint(-127, 128, size=(5, 32)).astype(np.int8)
    b = rng.randint(-1000, 1000, size=(5,)).astype(np.int32)
    args = [mx.nd.array(a, dtype="int8"), mx.nd.array(w, dtype="int8")] + ([] if no_bias else [mx.nd.array(b, dtype="int32")])
    y = mx.nd.contrib.intgemm_fully_connected(*args, num_hidden=5, out_type="int32", no_bias=no_bias)
    assert y.dtype == np.int32
    want = a.astype(np.int64) @ w.astype(np.int64).T + (0 if no_bias else b)
    np.testing.assert_array_equal(y.asnumpy(), want)


def test_intgemm_fully_connected_extreme_values_do_not_saturate():
    # Pairs of 127 * 127 products overflow int16, where GEMMs without VNNI sum them.
    a = np.full((4, 256), 127, dtype=np.int8)
    a[1] = -127
    w = np.full((8, 256), 127, dtype=np.int8)
    w[::2] = -127
    y = mx.nd.contrib.intgemm_fully_connected(mx.nd.array(a, dtype="int8"), mx.nd.array(w, dtype="int8"),
                                              num_hidden=8, out_type="int32", no_bias=True)
    np.testing.assert_array_equal(y.asnumpy(), a.astype(np.int64) @ w.astype(np.int64).T)


def test_intgemm_fully_connected_float_rescales_the_quantized_product():
    x = rand(4, 3, 16, dtype=np.float32)
    w = rand(6, 48, dtype=np.float32)
    b = rand(6, dtype=np.float32)
    wmax, xmax = np.abs(w).max(), np.abs(x).max()
    wq = mx.nd.contrib.intgemm_prepare_weight(mx.nd.array(w), mx.nd.array([wmax]))
    # Float data, quantized on the fly by its own maximum; flatten collapses (3, 16).
    scaling = mx.nd.array([wmax / 127.0])
    y = mx.nd.contrib.intgemm_fully_connected(mx.nd.array(x), wq, scaling, mx.nd.array(b), num_hidden=6)
    xq = quantize(x.reshape(4, 48), xmax).astype(np.int64)
    want = (xq @ wq.asnumpy().astype(np.int64).T) * (wmax / 127.0) * (xmax / 127.0) + b
    assert_almost_equal(y.asnumpy(), want, rtol=1e-5, atol=1e-5)
    # The quantized layer approximates the float one.
    assert np.abs(y.asnumpy() - (x.reshape(4, 48) @ w.T + b)).max() < 0.05 * np.abs(x.reshape(4, 48) @ w.T).max()
    # Int8 data from prepare_data, without flattening: the scaling carries both ranges.
    x2 = rand(2, 3, 48, dtype=np.float32)
    x2max = np.abs(x2).max()
    dq = mx.nd.contrib.intgemm_prepare_data(mx.nd.array(x2), mx.nd.array([x2max]))
    y2 = mx.nd.contrib.intgemm_fully_connected(dq, wq, mx.nd.array([x2max / 127.0 * wmax / 127.0]), num_hidden=6,
                                               no_bias=True, flatten=False)
    assert y2.shape == (2, 3, 6)
    want2 = (dq.asnumpy().astype(np.int64) @ wq.asnumpy().astype(np.int64).T) * (x2max / 127.0 * wmax / 127.0)
    assert_almost_equal(y2.asnumpy(), want2, rtol=1e-5, atol=1e-5)


def test_intgemm_fully_connected_passes_zero_gradients():
    x = mx.nd.array(rand(2, 8, dtype=np.float32))
    x.attach_grad()
    wq = mx.nd.array(rng.randint(-127, 128, size=(3, 8)), dtype="int8")
    with autograd.record():
        y = mx.nd.contrib.intgemm_fully_connected(x, wq, mx.nd.array([0.01]), num_hidden=3, no_bias=True)
    y.backward()
    assert np.all(x.grad.asnumpy() == 0)


def test_intgemm_errors():
    with pytest.raises(MXNetError, match="has dtype float64 but the operator expects float32"):
        mx.nd.contrib.intgemm_prepare_data(mx.nd.ones((2, 4), dtype="float64"), mx.nd.array([1.0]))
    with pytest.raises(MXNetError, match="bans -128"):
        mx.nd.contrib.intgemm_prepare_weight(mx.nd.array([[-128, 3]], dtype="int8"), already_quantized=True).asnumpy()
    with pytest.raises(MXNetError, match="indices\\[1\\] = 4 is out of range for a weight of 4 rows"):
        mx.nd.contrib.intgemm_take_weight(mx.nd.zeros((4, 8), dtype="int8"),
                                          mx.nd.array([0, 4], dtype="int32")).asnumpy()
    with pytest.raises(MXNetError, match="has dtype float32 but the operator expects int8"):
        mx.nd.contrib.intgemm_fully_connected(mx.nd.ones((2, 8)), mx.nd.ones((3, 8)), mx.nd.array([1.0]),
                                              num_hidden=3, no_bias=True)
    with pytest.raises(MXNetError, match="bias' must have shape \\(3,\\) or \\(3, 1\\)"):
        mx.nd.contrib.intgemm_fully_connected(mx.nd.ones((2, 8)), mx.nd.zeros((3, 8), dtype="int8"),
                                              mx.nd.array([1.0]), mx.nd.ones((4,)), num_hidden=3)
    with pytest.raises(MXNetError, match="maxabs must be a finite value >= 0"):
        mx.nd.contrib.intgemm_prepare_data(mx.nd.ones((2, 4)), mx.nd.array([-1.0])).asnumpy()


# ------------------------------------------------------------------ MXNet's other names
def test_sparse_embedding_is_embedding_on_dense_arrays():
    idx = mx.nd.array([[0, 2], [1, 2]])
    w = rand(3, 4)
    y = mx.nd.contrib.SparseEmbedding(idx, mx.nd.array(w, dtype="float64"), input_dim=3, output_dim=4,
                                      deterministic=True)
    assert_almost_equal(y.asnumpy(), w[[[0, 2], [1, 2]]], rtol=0, atol=0)
    check_numeric_gradient("_contrib_SparseEmbedding", [np.array([0.0, 2.0, 2.0]), w],
                           params=dict(input_dim=3, output_dim=4), grad_nodes=[1])
    with pytest.raises(MXNetError, match="sparse_grad"):
        mx.nd.contrib.SparseEmbedding(idx, mx.nd.array(w), input_dim=3, output_dim=4, sparse_grad=True)


def test_scatter_and_backward_names_compute_their_dense_counterparts():
    a, b = rand(3, 4), rand(3, 4) + 2
    A, B = mx.nd.array(a, dtype="float64"), mx.nd.array(b, dtype="float64")
    assert_almost_equal(invoke("_scatter_elemwise_div", A, B).asnumpy(), a / b, rtol=1e-12, atol=0)
    assert_almost_equal(invoke("_scatter_plus_scalar", A, scalar=1.5).asnumpy(), a + 1.5, rtol=1e-12, atol=0)
    assert_almost_equal(invoke("_scatter_minus_scalar", A, scalar=1.5).asnumpy(), a - 1.5, rtol=1e-12, atol=0)
    assert_almost_equal(invoke("_broadcast_backward", A, axis=0, keepdims=True).asnumpy(), a.sum(0, keepdims=True),
                        rtol=1e-12, atol=0)
    assert_almost_equal(invoke("_rnn_param_concat", A, B, num_args=2, dim=0).asnumpy(), np.concatenate([a, b]),
                        rtol=0, atol=0)


@pytest.mark.parametrize("params, pieces", [
    (dict(indices=(0, 1, 4), axis=1), [(2, 1, 3), (2, 3, 3), (2, 1, 3)]),
    (dict(indices=(), sections=3, axis=-1), [(2, 5, 1), (2, 5, 1), (2, 5, 1)]),
    (dict(indices=(), sections=2, axis=0, squeeze_axis=True), [(5, 3), (5, 3)]),
])
def test_split_v2_backward_joins_the_pieces(params, pieces):
    grads = [rand(*s) for s in pieces]
    y = invoke("_split_v2_backward", *[mx.nd.array(g, dtype="float64") for g in grads], **params)
    axis = params["axis"]
    want = np.stack(grads, axis) if params.get("squeeze_axis") else np.concatenate(grads, axis)
    assert_almost_equal(y.asnumpy(), want, rtol=0, atol=0)
    # And it undoes _split_v2.
    back = invoke("_split_v2", y, **params)
    for g, piece in zip(grads, back):
        assert_almost_equal(piece.asnumpy(), g, rtol=0, atol=0)


def test_split_v2_backward_errors():
    with pytest.raises(MXNetError, match="may differ only along axis 1"):
        invoke("_split_v2_backward", mx.nd.ones((2, 1)), mx.nd.ones((3, 2)), indices=(0, 1), axis=1)
    with pytest.raises(MXNetError, match="not the pieces _split_v2 cuts"):
        invoke("_split_v2_backward", mx.nd.ones((2, 2)), mx.nd.ones((2, 1)), indices=(0, 1), axis=1)
    with pytest.raises(MXNetError, match="no pieces to join"):
        invoke("_split_v2_backward", indices=(), axis=1)
