"""The "device" and "nccl" key-value stores on one GPU: push, pull and pushpull against
numpy, with and without an optimizer, and the NCCL path run on a one-rank communicator
(the "nccl" store reduces and broadcasts through NCCL also with a single GPU), so that a
one-GPU machine executes it. Skips without a GPU (and the NCCL tests without NCCL).
"""
import os

import numpy as np
import pytest

import weft as mx
from weft import nd

pytestmark = pytest.mark.skipif(mx.context.num_gpus() == 0, reason="no GPU")

# No operator of its own: the stores run the elementwise and copy operators covered by
# test_gpu_elemwise.py, and engine operations (sums, NCCL collectives).
GPU_OPS = set()

_SHAPE = (5, 33)


def _needs_nccl():
    if not mx.runtime.Features().is_enabled("NCCL"):
        pytest.skip("this build has no NCCL")


def _values(n, seed):
    rng = np.random.RandomState(seed)
    return [rng.uniform(-1, 1, size=_SHAPE).astype(np.float32) for _ in range(n)]


@pytest.mark.parametrize("kind", ["device", "nccl"])
def test_push_pull_one_gpu(kind):
    if kind == "nccl":
        _needs_nccl()
    g = mx.gpu(0)
    kv = mx.kv.create(kind)
    init, a, b = _values(3, 0)
    kv.init("w", nd.array(init, ctx=g))
    out = nd.zeros(_SHAPE, ctx=g)
    kv.pull("w", out=out)
    np.testing.assert_allclose(out.asnumpy(), init)
    # One value: the store keeps it (no updater).
    kv.push("w", nd.array(a, ctx=g))
    kv.pull("w", out=out)
    np.testing.assert_allclose(out.asnumpy(), a, rtol=1e-6)
    # Several values of one key on the same GPU are summed there.
    kv.push("w", [nd.array(a, ctx=g), nd.array(b, ctx=g)])
    host = nd.zeros(_SHAPE, ctx=mx.cpu())
    kv.pull("w", out=[out, host])
    np.testing.assert_allclose(out.asnumpy(), a + b, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(host.asnumpy(), a + b, rtol=1e-6, atol=1e-6)
    # pushpull in one call, into another array and in place.
    res = nd.zeros(_SHAPE, ctx=g)
    kv.pushpull("w", nd.array(b, ctx=g), out=res)
    np.testing.assert_allclose(res.asnumpy(), b, rtol=1e-6)
    inplace = nd.array(a, ctx=g)
    kv.pushpull("w", inplace)
    np.testing.assert_allclose(inplace.asnumpy(), a, rtol=1e-6)


@pytest.mark.parametrize("kind", ["device", "nccl"])
def test_optimizer_on_store_one_gpu(kind):
    if kind == "nccl":
        _needs_nccl()
    if not all(mx.operator._has_gpu_compute(n) for n in ("sgd_update", "multi_sgd_update")):
        pytest.skip("the SGD update operators have no GPU code in this build")
    g = mx.gpu(0)
    kv = mx.kv.create(kind)
    w0, grad = _values(2, 1)
    kv.init("w", nd.array(w0, ctx=g))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, rescale_grad=1.0))
    kv.push("w", nd.array(grad, ctx=g))
    out = nd.zeros(_SHAPE, ctx=g)
    kv.pull("w", out=out)
    np.testing.assert_allclose(out.asnumpy(), w0 - 0.5 * grad, rtol=1e-5, atol=1e-6)


def test_nccl_store_runs_nccl_on_one_gpu(tmp_path):
    _needs_nccl()
    g = mx.gpu(0)
    kv = mx.kv.create("nccl")
    a, b = _values(2, 2)
    kv.init("x", nd.zeros(_SHAPE, ctx=g))
    mx.profiler.set_config(profile_all=True, aggregate_stats=True, filename=os.path.join(str(tmp_path), "p.json"))
    mx.profiler.set_state("run")
    try:
        kv.push("x", nd.array(a, ctx=g))
        out = nd.zeros(_SHAPE, ctx=g)
        kv.pull("x", out=out)
        got = out.asnumpy()
        nd.waitall()
    finally:
        mx.profiler.set_state("stop")
    table = mx.profiler.dumps(reset=True)
    np.testing.assert_allclose(got, a, rtol=1e-6)
    # The one-rank all-reduce went through NCCL: a reduce into the store, a broadcast out.
    assert "KVStoreNcclReduce" in table, table
    assert "KVStoreNcclBroadcast" in table, table
    # And its result feeds GPU work queued right after it (ordering across streams).
    kv.push("x", nd.array(b, ctx=g))
    kv.pull("x", out=out)
    np.testing.assert_allclose((out * 2).asnumpy(), 2 * b, rtol=1e-6)
