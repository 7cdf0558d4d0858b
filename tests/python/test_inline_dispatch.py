"""Eager calls whose inputs are ready run on the calling thread when their operator's
estimate of their time is small (a softmax of (32, 1000), a FullyConnected 1024 -> 10 at
batch 64, small dot, batch_dot, Pooling and Deconvolution calls, forward and backward), and
go to an engine worker when it is large (a LeNet convolution over as many bytes, an int32
product or lp pooling over few bytes); which thread ran each call is read from the profiler's
trace. Where a call runs changes none of its results, its ordering against pending writes
or its gradients; the limits come from WEFT_ENGINE_INLINE_NS and WEFT_ENGINE_INLINE_BYTES."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import weft as mx
from weft import autograd, nd, profiler

pytestmark = pytest.mark.skipif(
    "Naive" in os.environ.get("WEFT_ENGINE_TYPE", "")
    or any(k in os.environ for k in ("WEFT_ENGINE_INLINE_NS", "WEFT_ENGINE_INLINE_BYTES")),
    reason="the naive engine runs every call on the calling thread; the defaults are what is tested")

CPU = mx.cpu()


def softmax_np(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def conv_np(x, w, b):
    n, c, h, wd = x.shape
    f, _, k, _ = w.shape
    out = np.zeros((n, f, h - k + 1, wd - k + 1))
    for i in range(k):
        for j in range(k):
            out += np.einsum("nchw,fc->nfhw", x[:, :, i:i + h - k + 1, j:j + wd - k + 1], w[:, :, i, j])
    return out + b[None, :, None, None]


def run_traced(tmp_path, calls):
    """Runs each call of `calls` (functions returning arrays) with its inputs ready, under the
    profiler; returns their results and, per operator name, whether it ran on a worker."""
    path = tmp_path / "trace.json"
    profiler.set_config(profile_imperative=True, profile_symbolic=False, profile_memory=False, profile_api=False,
                        filename=str(path), continuous_dump=False)
    results = []
    try:
        profiler.set_state("run")
        for call in calls:
            nd.waitall()
            out = call()
            nd.waitall()
            results.append(out)
        profiler.set_state("stop")
        profiler.dump(finished=True)
    finally:
        profiler.set_state("stop")
    trace = json.loads(path.read_text())
    threads = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
               if e.get("ph") == "M" and e["name"] == "thread_name"}
    on_worker = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "operator":
            on_worker.setdefault(e["name"], set()).add("worker" in threads[e["tid"]])
    return results, on_worker


def test_softmax_and_small_fully_connected_run_on_the_calling_thread(tmp_path):
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((32, 1000), dtype=np.float32)  # 128 KB in, 128 KB out
    d_np = rng.standard_normal((64, 1024), dtype=np.float32)
    w_np = rng.standard_normal((10, 1024), dtype=np.float32) * 0.03
    b_np = rng.standard_normal(10, dtype=np.float32)
    g_np = rng.standard_normal((64, 10), dtype=np.float32)
    x, d, w, b, g = (nd.array(a, ctx=CPU) for a in (x_np, d_np, w_np, b_np, g_np))
    (sm, fc, grads), on_worker = run_traced(tmp_path, [
        lambda: nd.softmax(x),
        lambda: nd.FullyConnected(d, w, b, num_hidden=10),
        lambda: nd.invoke("_backward_FullyConnected", [g, d, w, b], {"num_hidden": 10}),
    ])
    for op in ("softmax", "FullyConnected", "_backward_FullyConnected"):
        assert on_worker.get(op) == {False}, (op, on_worker)
    np.testing.assert_allclose(sm.asnumpy(), softmax_np(x_np.astype(np.float64)), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(fc.asnumpy(), d_np @ w_np.T + b_np, rtol=1e-4, atol=1e-4)
    dx, dw, db = (a.asnumpy() for a in grads)
    np.testing.assert_allclose(dx, g_np @ w_np, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dw, g_np.T @ d_np, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(db, g_np.sum(axis=0), rtol=1e-4, atol=1e-4)


def test_convolution_over_as_many_bytes_goes_to_a_worker(tmp_path):
    # LeNet's first convolution at batch 8: 396 KB in and out, about the softmax's bytes, but
    # 4.6 MFLOP (65 us on one core).
    rng = np.random.default_rng(1)
    x_np = rng.standard_normal((8, 1, 28, 28), dtype=np.float32)
    w_np = rng.standard_normal((20, 1, 5, 5), dtype=np.float32) * 0.2
    b_np = rng.standard_normal(20, dtype=np.float32)
    x, w, b = (nd.array(a, ctx=CPU) for a in (x_np, w_np, b_np))
    (out,), on_worker = run_traced(tmp_path, [lambda: nd.Convolution(x, w, b, kernel=(5, 5), num_filter=20)])
    assert on_worker.get("Convolution") == {True}, on_worker
    np.testing.assert_allclose(out.asnumpy(), conv_np(x_np, w_np, b_np), rtol=1e-4, atol=1e-4)


def deconv_np(x, w, stride):
    """Deconvolution without padding: each input element scatters its weights into a
    kernel-sized patch of the output, stride apart."""
    n, c, h, wd = x.shape
    _, f, k, _ = w.shape
    out = np.zeros((n, f, (h - 1) * stride + k, (wd - 1) * stride + k))
    for i in range(h):
        for j in range(wd):
            out[:, :, i * stride:i * stride + k, j * stride:j * stride + k] += np.einsum("nc,cfab->nfab", x[:, :, i, j],
                                                                                       w)
    return out


def test_small_dot_batch_dot_pooling_and_deconvolution_run_on_the_calling_thread(tmp_path):
    # Each call touches more than 64 KiB, so the byte rule alone would send it to a worker,
    # but is estimated at a few microseconds.
    rng = np.random.default_rng(4)
    a_np = rng.standard_normal((64, 512), dtype=np.float32)
    b_np = rng.standard_normal((512, 10), dtype=np.float32)
    g_np = rng.standard_normal((64, 10), dtype=np.float32)
    la_np = rng.standard_normal((32, 16, 32), dtype=np.float32)
    lb_np = rng.standard_normal((32, 32, 16), dtype=np.float32)
    p_np = rng.standard_normal((8, 20, 24, 24), dtype=np.float32)
    pg_np = rng.standard_normal((8, 20, 12, 12), dtype=np.float32)
    d_np = rng.standard_normal((16, 16, 8, 8), dtype=np.float32)
    w_np = rng.standard_normal((16, 1, 2, 2), dtype=np.float32)
    dg_np = rng.standard_normal((16, 1, 16, 16), dtype=np.float32)
    a, b, g, la, lb, p, pg, d, w, dg = (nd.array(v, ctx=CPU) for v in (a_np, b_np, g_np, la_np, lb_np, p_np, pg_np,
                                                                       d_np, w_np, dg_np))
    pool = {"kernel": (2, 2), "stride": (2, 2), "pool_type": "max"}
    deconv = {"kernel": (2, 2), "stride": (2, 2), "num_filter": 1, "no_bias": True}
    pooled = nd.Pooling(p, **pool)
    (dot, dot_grads, bdot, pool_out, pool_grad, dec, dec_grads), on_worker = run_traced(tmp_path, [
        lambda: nd.dot(a, b),
        lambda: nd.invoke("_backward_dot", [g, a, b], {}),
        lambda: nd.batch_dot(la, lb),
        lambda: nd.Pooling(p, **pool),
        lambda: nd.invoke("_backward_Pooling", [pg, p, pooled], pool),
        lambda: nd.Deconvolution(d, w, **deconv),
        lambda: nd.invoke("_backward_Deconvolution", [dg, d, w], deconv),
    ])
    for op in ("dot", "_backward_dot", "batch_dot", "Pooling", "_backward_Pooling", "Deconvolution",
               "_backward_Deconvolution"):
        assert on_worker.get(op) == {False}, (op, on_worker)
    np.testing.assert_allclose(dot.asnumpy(), a_np @ b_np, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dot_grads[0].asnumpy(), g_np @ b_np.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dot_grads[1].asnumpy(), a_np.T @ g_np, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(bdot.asnumpy(), np.matmul(la_np, lb_np), rtol=1e-4, atol=1e-4)
    windows = p_np.reshape(8, 20, 12, 2, 12, 2)
    np.testing.assert_array_equal(pool_out.asnumpy(), windows.max(axis=(3, 5)))
    # The gradient of each window goes to its largest element (no ties in random data).
    at_max = windows == windows.max(axis=(3, 5), keepdims=True)
    np.testing.assert_allclose(pool_grad.asnumpy(), (at_max * pg_np[:, :, :, None, :, None]).reshape(p_np.shape))
    np.testing.assert_allclose(dec.asnumpy(), deconv_np(d_np, w_np, 2), rtol=1e-4, atol=1e-5)
    # Stride equal to the kernel: each output element comes from one input element.
    patches = dg_np.reshape(16, 1, 8, 2, 8, 2)
    np.testing.assert_allclose(dec_grads[0].asnumpy(), np.einsum("nfiajb,cfab->ncij", patches, w_np), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(dec_grads[1].asnumpy(), np.einsum("ncij,nfiajb->cfab", d_np, patches), rtol=1e-4,
                               atol=1e-3)


def test_expensive_calls_over_few_bytes_go_to_a_worker(tmp_path):
    # Each call touches less than 64 KiB, which the byte rule alone would run here, but is
    # estimated above 40 us: an int32 product (off oneDNN), lp pooling with p=3, and a
    # deconvolution with 16 -> 16 channels and a 3x3 kernel.
    rng = np.random.default_rng(5)
    ia_np = rng.integers(-50, 50, (64, 64)).astype(np.int32)
    ib_np = rng.integers(-50, 50, (64, 64)).astype(np.int32)
    p_np = rng.standard_normal((4, 8, 16, 16), dtype=np.float32)
    d_np = rng.standard_normal((4, 16, 8, 8), dtype=np.float32)
    w_np = rng.standard_normal((16, 16, 3, 3), dtype=np.float32) * 0.1
    ia, ib = nd.array(ia_np, ctx=CPU, dtype="int32"), nd.array(ib_np, ctx=CPU, dtype="int32")
    p, d, w = (nd.array(v, ctx=CPU) for v in (p_np, d_np, w_np))
    (idot, lp, dec), on_worker = run_traced(tmp_path, [
        lambda: nd.dot(ia, ib),
        lambda: nd.Pooling(p, kernel=(2, 2), stride=(2, 2), pool_type="lp", p_value=3),
        lambda: nd.Deconvolution(d, w, kernel=(3, 3), num_filter=16, no_bias=True),
    ])
    for op in ("dot", "Pooling", "Deconvolution"):
        assert on_worker.get(op) == {True}, (op, on_worker)
    np.testing.assert_array_equal(idot.asnumpy(), ia_np.astype(np.int64) @ ib_np)
    # MXNet's lp pooling: the p-th root of the sum of the p-th powers (signed, p odd).
    lp_np = np.cbrt((p_np.astype(np.float64) ** 3).reshape(4, 8, 8, 2, 8, 2).sum(axis=(3, 5)))
    np.testing.assert_allclose(lp.asnumpy(), lp_np, rtol=1e-4)
    np.testing.assert_allclose(dec.asnumpy(), deconv_np(d_np, w_np, 1), rtol=1e-4, atol=1e-4)


def test_call_on_the_calling_thread_keeps_its_order_with_pending_writes():
    rng = np.random.default_rng(2)
    a_np = rng.standard_normal((32, 512), dtype=np.float32)
    b_np = rng.standard_normal((512, 1000), dtype=np.float32) * 0.05
    a, b = nd.array(a_np, ctx=CPU), nd.array(b_np, ctx=CPU)
    nd.waitall()
    x = nd.dot(a, b)  # still running on a worker when the softmax is called
    y = nd.softmax(x)
    x *= 0  # written after the softmax read it
    np.testing.assert_allclose(y.asnumpy(), softmax_np((a_np @ b_np).astype(np.float64)), rtol=1e-4, atol=1e-6)
    assert not x.asnumpy().any()


def test_gradients_through_calls_run_on_the_calling_thread():
    rng = np.random.default_rng(3)
    d_np = rng.standard_normal((64, 1024), dtype=np.float32)
    w_np = rng.standard_normal((10, 1024), dtype=np.float32) * 0.03
    b_np = rng.standard_normal(10, dtype=np.float32)
    d, w, b = (nd.array(a, ctx=CPU) for a in (d_np, w_np, b_np))
    for a in (d, w, b):
        a.attach_grad()
    nd.waitall()
    with autograd.record():
        p = nd.softmax(nd.FullyConnected(d, w, b, num_hidden=10))
        loss = (p * p).sum()
    loss.backward()
    z = d_np.astype(np.float64) @ w_np.T + b_np
    s = softmax_np(z)
    dp = 2 * s
    dz = s * (dp - (dp * s).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(w.grad.asnumpy(), dz.T @ d_np, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(d.grad.asnumpy(), dz @ w_np, rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(b.grad.asnumpy(), dz.sum(axis=0), rtol=1e-3, atol=1e-5)


_WHERE = textwrap.dedent("""
    import json
    import numpy as np
    import weft as mx
    from weft import nd, profiler
    x = nd.array(np.linspace(-3, 3, 32000, dtype=np.float32).reshape(32, 1000))
    w = nd.array(np.linspace(-1, 1, 500, dtype=np.float32).reshape(20, 1, 5, 5))
    d = nd.array(np.linspace(0, 1, 8 * 784, dtype=np.float32).reshape(8, 1, 28, 28))
    nd.waitall()
    profiler.set_config(profile_imperative=True, filename="trace.json", continuous_dump=False)
    profiler.set_state("run")
    s = nd.softmax(x)
    nd.waitall()
    c = nd.Convolution(d, w, kernel=(5, 5), num_filter=20, no_bias=True)
    nd.waitall()
    profiler.set_state("stop")
    profiler.dump(finished=True)
    trace = json.load(open("trace.json"))["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in trace if e.get("ph") == "M" and e["name"] == "thread_name"}
    where = {e["name"]: "worker" in threads[e["tid"]] for e in trace if e.get("cat") == "operator"}
    print(json.dumps({"softmax_on_worker": where["softmax"], "conv_on_worker": where["Convolution"],
                      "softmax_sum": float(s.asnumpy().sum()), "conv_sum": float(c.asnumpy().sum())}))
""")


def where_with(tmp_path, **env):
    full = dict(os.environ, **env)
    proc = subprocess.run([sys.executable, "-c", _WHERE], env=full, cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    return proc


def test_limits_come_from_the_environment(tmp_path):
    runs = {}
    for name, env in (("default", {}), ("no_estimates", {"WEFT_ENGINE_INLINE_NS": "0"}),
                      ("all_estimated", {"WEFT_ENGINE_INLINE_NS": "1000000000"}),
                      ("nothing", {"WEFT_ENGINE_INLINE_NS": "1000000000", "WEFT_ENGINE_INLINE_BYTES": "0"})):
        proc = where_with(tmp_path, **env)
        assert proc.returncode == 0, proc.stderr
        runs[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (runs["default"]["softmax_on_worker"], runs["default"]["conv_on_worker"]) == (False, True)
    assert (runs["no_estimates"]["softmax_on_worker"], runs["no_estimates"]["conv_on_worker"]) == (True, True)
    assert (runs["all_estimated"]["softmax_on_worker"], runs["all_estimated"]["conv_on_worker"]) == (False, False)
    assert (runs["nothing"]["softmax_on_worker"], runs["nothing"]["conv_on_worker"]) == (True, True)
    # The same kernels ran wherever they ran.
    for name in ("no_estimates", "all_estimated", "nothing"):
        for key in ("softmax_sum", "conv_sum"):
            assert runs[name][key] == pytest.approx(runs["default"][key], rel=1e-6), (name, key)
    assert runs["default"]["softmax_sum"] == pytest.approx(32.0, rel=1e-5)


def test_a_bad_limit_is_an_error_naming_it(tmp_path):
    proc = where_with(tmp_path, WEFT_ENGINE_INLINE_NS="fast")
    assert proc.returncode != 0
    assert "WEFT_ENGINE_INLINE_NS: expected a non-negative integer, got 'fast'" in proc.stderr, proc.stderr
