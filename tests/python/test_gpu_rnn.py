"""The fused RNN operator on the GPU (cuDNN 9's RNN API, one cuDNN RNN per layer) against
the CPU operator: outputs, final states and the gradients of data, packed parameters and
initial states, for rnn_relu, rnn_tanh, lstm and gru, one and two layers, one and two
directions, float32 and float64 (the CPU operator takes no float16); an LSTM projection and
cell clipping; `_backward_RNN` called by hand with a dropout mask, writing and adding; the
Gluon RNN/LSTM/GRU layers with the same parameters on both devices; Philox dropout masks
drawn on the GPU; and the configurations the GPU refuses.

float32 comparisons run with WEFT_CUDNN_ALLOW_TF32=0 and allow 1e-3: cuDNN sums in another
order than the CPU's GEMMs, and the CPU's float32 exp is a polynomial a few ulp off,
differences that recurrences carry on. One test runs the default, TF32 tensor cores, whose
10-bit mantissa needs a few 1e-2."""
import numpy as np
import pytest

import weft as mx
from weft import autograd, gluon, nd
from weft.test_utils import assert_almost_equal, check_consistency, environment

GPU_OPS = {"RNN", "_backward_RNN"}

pytestmark = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")

GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}
TOL = {np.float32: (1e-3, 1e-4), np.float64: (1e-9, 1e-11)}


def param_size(mode, I, H, L, D, P=None):
    """Length of MXNet's packed vector: per layer and direction i2h (G*H x In), h2h (G*H x
    Hout) and, with a projection, h2r (Hout x H); then two G*H biases each."""
    G = GATES[mode]
    Ho = P or H
    size = 0
    for l in range(L):
        In = I if l == 0 else D * Ho
        size += D * (G * H * In + G * H * Ho + (Ho * H if P else 0) + 2 * G * H)
    return size


def make_inputs(mode, T, N, I, H, L, D, P=None, seed=0):
    rng = np.random.RandomState(seed)
    Ho = P or H
    vals = [rng.uniform(-1, 1, (T, N, I)), rng.uniform(-0.4, 0.4, (param_size(mode, I, H, L, D, P),)),
            rng.uniform(-1, 1, (L * D, N, Ho))]
    if mode == "lstm":
        vals.append(rng.uniform(-1, 1, (L * D, N, H)))
    return vals


def run_rnn(ctx, dtype, vals, heads, kw, seed=None):
    """Forward (training mode) and backward of sum(out_i * head_i) on one device; returns
    the outputs and the input gradients as numpy arrays. A seed is set just before the
    forward, so that dropout draws the same mask on every device."""
    arrays = [nd.array(v, ctx=ctx, dtype=dtype) for v in vals]
    for a in arrays:
        a.attach_grad()
    if seed is not None:
        mx.random.seed(seed)
    with autograd.record():
        outs = nd.RNN(*arrays, **kw)
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        loss = sum((o * nd.array(h, ctx=ctx, dtype=dtype)).sum() for o, h in zip(outs, heads))
    loss.backward()
    return [o.asnumpy() for o in outs], [a.grad.asnumpy() for a in arrays]


def compare(mode, T, N, I, H, L, bidir, dtype, P=None, tf32="0", tol=None, seed=None, **extra):
    D = 2 if bidir else 1
    Ho = P or H
    vals = make_inputs(mode, T, N, I, H, L, D, P)
    kw = dict(state_size=H, num_layers=L, bidirectional=bidir, mode=mode, state_outputs=True, **extra)
    if P:
        kw["projection_size"] = P
    rng = np.random.RandomState(1)
    heads = [rng.uniform(-1, 1, (T, N, D * Ho)), rng.uniform(-1, 1, (L * D, N, Ho))]
    if mode == "lstm":
        heads.append(rng.uniform(-1, 1, (L * D, N, H)))
    cpu_outs, cpu_grads = run_rnn(mx.cpu(), dtype, vals, heads, kw, seed)
    with environment("WEFT_CUDNN_ALLOW_TF32", tf32):
        gpu_outs, gpu_grads = run_rnn(mx.gpu(0), dtype, vals, heads, kw, seed)
    rtol, atol = tol or TOL[dtype]
    assert len(gpu_outs) == len(cpu_outs) == (3 if mode == "lstm" else 2)
    names = ["output", "state", "state_cell"]
    for name, g, c in zip(names, gpu_outs, cpu_outs):
        assert_almost_equal(g, c, rtol, atol, names=("gpu " + name, "cpu " + name))
    for name, g, c in zip(["data", "parameters", "state", "state_cell"], gpu_grads, cpu_grads):
        assert_almost_equal(g, c, rtol, atol, names=("gpu d" + name, "cpu d" + name))
    return cpu_outs


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["rnn_relu", "rnn_tanh", "lstm", "gru"])
@pytest.mark.parametrize("L,bidir", [(1, False), (1, True), (2, False), (2, True)])
def test_rnn_matches_cpu(mode, L, bidir, dtype):
    compare(mode, 5, 3, 4, 6, L, bidir, dtype)


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_rnn_wider_batch_and_input_match_cpu(mode):
    compare(mode, 7, 17, 13, 8, 2, True, np.float32)


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_float32_on_tf32_tensor_cores_matches_cpu(mode):
    compare(mode, 6, 8, 16, 32, 2, True, np.float32, tf32="1", tol=(3e-2, 5e-2))


@pytest.mark.parametrize("L,bidir", [(1, False), (2, True)])
def test_lstm_projection_matches_cpu(L, bidir):
    compare("lstm", 4, 3, 5, 8, L, bidir, np.float64, P=3)


def test_lstm_state_clip_matches_cpu():
    outs = compare("lstm", 6, 3, 4, 5, 2, False, np.float64, lstm_state_clip_min=-0.3, lstm_state_clip_max=0.2)
    # The bounds are reached, so the clipped paths (and their zero gradients) are compared.
    cy = outs[2]
    assert np.isclose(cy, 0.2).any() and np.isclose(cy, -0.3).any()
    assert cy.max() <= 0.2 + 1e-12 and cy.min() >= -0.3 - 1e-12


def test_without_state_outputs_matches_cpu():
    vals = make_inputs("gru", 4, 2, 3, 5, 2, 1)
    kw = dict(state_size=5, num_layers=2, mode="gru")
    heads = [np.random.RandomState(2).uniform(-1, 1, (4, 2, 5))]
    cpu_outs, cpu_grads = run_rnn(mx.cpu(), np.float64, vals, heads, kw)
    gpu_outs, gpu_grads = run_rnn(mx.gpu(0), np.float64, vals, heads, kw)
    assert len(gpu_outs) == 1
    assert_almost_equal(gpu_outs[0], cpu_outs[0], 1e-9, 1e-11)
    for g, c in zip(gpu_grads, cpu_grads):
        assert_almost_equal(g, c, 1e-9, 1e-11)


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_backward_op_with_mask(mode):
    # _backward_RNN by hand with a dropout mask between the layers: the GPU reruns the
    # forward with that mask, so its gradients must be the CPU's, also written into given
    # arrays.
    T, N, I, H, L, D = 3, 2, 3, 4, 2, 2
    vals = make_inputs(mode, T, N, I, H, L, D, seed=3)
    kw = dict(state_size=H, num_layers=L, bidirectional=True, mode=mode, state_outputs=True, p=0.4)
    rng = np.random.RandomState(4)
    mask = (rng.uniform(size=(L - 1, T, N, D * H)) > 0.4) / 0.6
    heads = [rng.uniform(-1, 1, (T, N, D * H)), rng.uniform(-1, 1, (L * D, N, H))]
    if mode == "lstm":
        heads.append(rng.uniform(-1, 1, (L * D, N, H)))

    def grads(ctx, out=None):
        arrays = [nd.array(v, ctx=ctx, dtype=np.float64) for v in vals]
        extra = [nd.array(mask, ctx=ctx, dtype=np.float64), nd.zeros((1,), ctx=ctx, dtype=np.float64)]
        hs = [nd.array(h, ctx=ctx, dtype=np.float64) for h in heads]
        res = nd.invoke("_backward_RNN", arrays + extra + hs, kw, out=out)
        return [r.asnumpy() for r in (out if out is not None else res)]

    cpu = grads(mx.cpu())
    gpu = grads(mx.gpu(0))
    for g, c in zip(gpu, cpu):
        assert_almost_equal(g, c, 1e-9, 1e-11)
    base = [nd.array(np.ones(v.shape), ctx=mx.gpu(0), dtype=np.float64) for v in vals]
    written = grads(mx.gpu(0), out=base)
    for w, c in zip(written, cpu):
        assert_almost_equal(w, c, 1e-9, 1e-11)


@pytest.mark.parametrize("mode", ["rnn_tanh", "lstm"])
def test_grad_req_add_accumulates(mode):
    T, N, I, H, L, D = 4, 3, 3, 5, 2, 2
    vals = make_inputs(mode, T, N, I, H, L, D, seed=8)
    kw = dict(state_size=H, num_layers=L, bidirectional=True, mode=mode)
    head = np.random.RandomState(9).uniform(-1, 1, (T, N, D * H))
    _, cpu_grads = run_rnn(mx.cpu(), np.float64, vals, [head], kw)
    arrays = [nd.array(v, ctx=mx.gpu(0), dtype=np.float64) for v in vals]
    for a in arrays:
        a.attach_grad(grad_req="add")
        a.grad[:] = 0.5
    for _ in range(2):
        with autograd.record():
            loss = (nd.RNN(*arrays, **kw) * nd.array(head, ctx=mx.gpu(0), dtype=np.float64)).sum()
        loss.backward()
    for a, c in zip(arrays, cpu_grads):
        assert_almost_equal(a.grad.asnumpy(), 2 * c + 0.5, 1e-9, 1e-11)


def test_symbol_consistency_with_grad_req_add():
    T, N, I, H = 4, 3, 5, 6
    sym = mx.sym.RNN(data=mx.sym.Variable("data"), parameters=mx.sym.Variable("parameters"),
                     state=mx.sym.Variable("state"), state_cell=mx.sym.Variable("state_cell"), state_size=H,
                     num_layers=2, bidirectional=True, mode="lstm", state_outputs=True, name="rnn")
    shapes = dict(data=(T, N, I), parameters=(param_size("lstm", I, H, 2, 2),), state=(4, N, H), state_cell=(4, N, H))
    ctx_list = [dict(ctx=mx.cpu(), type_dict={"data": np.float64}, **shapes),
                dict(ctx=mx.gpu(0), type_dict={"data": np.float64}, **shapes)]
    for req in ("write", "add"):
        check_consistency(sym, ctx_list, scale=0.5, grad_req=req, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("layer", ["LSTM", "GRU", "RNN"])
def test_gluon_layers_match_cpu(layer):
    net = getattr(gluon.rnn, layer)(8, num_layers=2, bidirectional=True, input_size=5)
    net.initialize(mx.init.Uniform(0.3), ctx=mx.cpu())
    net.hybridize()
    x = np.random.RandomState(5).uniform(-1, 1, (6, 4, 5)).astype(np.float32)
    head = np.random.RandomState(6).uniform(-1, 1, (6, 4, 16)).astype(np.float32)

    def run(ctx):
        data = nd.array(x, ctx=ctx)
        data.attach_grad()
        with autograd.record():
            out = net(data)
            loss = (out * nd.array(head, ctx=ctx)).sum()
        loss.backward()
        grads = {name: p.grad(ctx).asnumpy() for name, p in net.collect_params().items()}
        return out.asnumpy(), data.grad.asnumpy(), grads

    cpu_out, cpu_dx, cpu_grads = run(mx.cpu())
    net.collect_params().reset_ctx(mx.gpu(0))
    with environment("WEFT_CUDNN_ALLOW_TF32", "0"):
        gpu_out, gpu_dx, gpu_grads = run(mx.gpu(0))
    assert_almost_equal(gpu_out, cpu_out, 1e-3, 1e-4)
    assert_almost_equal(gpu_dx, cpu_dx, 1e-3, 1e-4)
    assert set(gpu_grads) == set(cpu_grads)
    for name in cpu_grads:
        assert_almost_equal(gpu_grads[name], cpu_grads[name], 1e-3, 1e-4, names=("gpu " + name, "cpu " + name))


@pytest.mark.parametrize("mode,bidir", [("lstm", False), ("gru", True), ("rnn_tanh", True)])
def test_dropout_between_layers_matches_cpu(mode, bidir):
    # After the same seed the GPU draws the CPU's Philox mask, so training with dropout
    # gives the CPU's outputs, states and gradients.
    outs = compare(mode, 5, 4, 3, 6, 3, bidir, np.float64, seed=13, p=0.5)
    ref = compare(mode, 5, 4, 3, 6, 3, bidir, np.float64)
    assert not np.allclose(outs[0], ref[0])


def test_dropout_on_gpu_is_seeded_and_inference_ignores_it():
    T, N, I, H, L = 5, 4, 3, 6, 3
    vals = make_inputs("lstm", T, N, I, H, L, 1, seed=7)
    arrays = [nd.array(v, ctx=mx.gpu(0)) for v in vals]
    kw = dict(state_size=H, num_layers=L, mode="lstm", state_outputs=True, p=0.5)
    ref = nd.RNN(*arrays, **dict(kw, p=0.0))
    inference = nd.RNN(*arrays, **kw)
    for a, b in zip(inference, ref):
        assert_almost_equal(a, b.asnumpy(), 1e-6, 1e-7)
    mx.random.seed(11)
    with autograd.train_mode():
        first = [o.asnumpy() for o in nd.RNN(*arrays, **kw)]
    mx.random.seed(11)
    with autograd.train_mode():
        again = [o.asnumpy() for o in nd.RNN(*arrays, **kw)]
    for a, b in zip(first, again):
        assert np.array_equal(a, b)
    assert not np.allclose(first[0], ref[0].asnumpy())
    # Dropout acts between layers, so the first layer's final state is untouched by it.
    assert_almost_equal(first[1][0], ref[1].asnumpy()[0], 1e-6, 1e-7)


@pytest.mark.parametrize("extra,match", [
    (dict(use_sequence_length=True), "use_sequence_length"),
    (dict(lstm_state_clip_min=-1.0, lstm_state_clip_max=1.0, lstm_state_clip_nan=True), "lstm_state_clip_nan"),
    (dict(projection_size=6), "projection_size must be less than state_size"),
])
def test_unsupported_on_gpu(extra, match):
    T, N, I, H = 3, 2, 3, 4
    P = extra.get("projection_size")
    vals = make_inputs("lstm", T, N, I, H, 1, 1, P)
    arrays = [nd.array(v, ctx=mx.gpu(0)) for v in vals]
    if extra.get("use_sequence_length"):
        arrays.append(nd.array([3, 2], ctx=mx.gpu(0), dtype=np.int32))
    with pytest.raises(mx.base.MXNetError, match=match):
        nd.RNN(*arrays, state_size=H, num_layers=1, mode="lstm", **extra)[0].asnumpy()


def test_float16_rejected_as_on_cpu():
    vals = make_inputs("gru", 3, 2, 3, 4, 1, 1)
    for ctx in (mx.cpu(), mx.gpu(0)):
        arrays = [nd.array(v, ctx=ctx, dtype=np.float16) for v in vals]
        with pytest.raises(mx.base.MXNetError, match="float32 or float64"):
            nd.RNN(*arrays, state_size=4, num_layers=1, mode="gru").asnumpy()
