"""The local and device key-value stores through weft.kv, checked against numpy."""
import numpy as np
import pytest

import weft as mx


def arr(x):
    return mx.nd.array(np.asarray(x, dtype=np.float32))


def test_alias_and_types():
    assert mx.kv is mx.kvstore
    kv = mx.kv.create("local")
    assert kv.type == "local" and kv.rank == 0 and kv.num_workers == 1
    kv._barrier()  # nothing to wait for outside dist
    assert mx.kv.create("device").type == "device"
    with pytest.raises(mx.WeftError, match="unknown type 'cloud'"):
        mx.kv.create("cloud")


@pytest.mark.parametrize("kind", ["local", "device"])
def test_push_sums_per_device_values_and_pull_broadcasts(kind):
    rng = np.random.default_rng(0)
    kv = mx.kv.create(kind)
    shape = (4, 5)
    kv.init(3, arr(np.zeros(shape)))
    vals = [rng.standard_normal(shape).astype(np.float32) for _ in range(4)]
    kv.push(3, [arr(v) for v in vals])
    outs = [mx.nd.zeros(shape) for _ in range(3)]
    kv.pull(3, out=outs)
    for o in outs:
        np.testing.assert_allclose(o.asnumpy(), sum(vals), rtol=1e-6)


def test_lists_of_keys_and_string_keys():
    kv = mx.kv.create("local")
    kv.init(["a", "b"], [arr([1, 2]), arr([[1, 1], [2, 2]])])
    kv.push(["a", "b"], [[arr([1, 1]), arr([2, 2])], arr([[0, 1], [0, 1]])])
    oa, ob = mx.nd.zeros((2,)), mx.nd.zeros((2, 2))
    kv.pull(["a", "b"], out=[oa, ob])
    np.testing.assert_array_equal(oa.asnumpy(), [3, 3])
    np.testing.assert_array_equal(ob.asnumpy(), [[0, 1], [0, 1]])


def test_updater_semantics_as_mxnet():
    kv = mx.kv.create("local")
    kv.init(9, arr([1.0, 2.0]))
    seen = []

    def update(key, merged, stored):
        seen.append((key, merged.asnumpy().copy()))
        stored[:] = stored - 0.1 * merged

    kv._set_updater(update)
    kv.push(9, [arr([1, 1]), arr([3, 5])])
    out = mx.nd.zeros((2,))
    kv.pull(9, out=out)
    np.testing.assert_allclose(out.asnumpy(), [1.0 - 0.4, 2.0 - 0.6], rtol=1e-6)
    assert seen[0][0] == 9 and isinstance(seen[0][0], int)
    np.testing.assert_array_equal(seen[0][1], [4, 6])
    # pushpull: push, update, then pull into the given outputs.
    kv.pushpull(9, arr([1, 1]), out=out)
    np.testing.assert_allclose(out.asnumpy(), [0.5, 1.3], rtol=1e-6)


def test_push_and_pull_return_before_the_work_is_read():
    kv = mx.kv.create("local")
    big = np.arange(1 << 20, dtype=np.float32)
    kv.init("w", arr(np.zeros_like(big)))
    out = mx.nd.zeros(big.shape)
    for _ in range(3):
        kv.push("w", [arr(big), arr(big)])
        kv.pull("w", out=out)
    # Reading waits for the queued pushes and pulls: the last sum is there.
    np.testing.assert_array_equal(out.asnumpy(), 2 * big)


def test_set_optimizer_runs_sgd_and_states_round_trip(tmp_path):
    kv = mx.kv.create("local")
    w0 = np.array([1.0, -1.0, 0.5], dtype=np.float32)
    kv.init(0, arr(w0))
    kv.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9))
    g = np.array([1.0, 2.0, -1.0], dtype=np.float32)
    out = mx.nd.zeros((3,))
    mom = np.zeros(3, np.float32)
    w = w0.copy()
    for _ in range(3):
        kv.push(0, arr(g))
        mom = 0.9 * mom - 0.1 * g
        w = w + mom
    kv.pull(0, out=out)
    np.testing.assert_allclose(out.asnumpy(), w, rtol=1e-5)
    fname = str(tmp_path / "states")
    kv.save_optimizer_states(fname)
    kv2 = mx.kv.create("local")
    kv2.init(0, arr(w))
    kv2.set_optimizer(mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9))
    kv2.load_optimizer_states(fname)
    kv.push(0, arr(g))
    kv2.push(0, arr(g))
    o2 = mx.nd.zeros((3,))
    kv.pull(0, out=out)
    kv2.pull(0, out=o2)
    np.testing.assert_allclose(o2.asnumpy(), out.asnumpy(), rtol=1e-6)


def test_gradient_compression_on_device_store():
    kv = mx.kv.create("device")
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init("g", arr(np.zeros(4)))
    out = mx.nd.zeros((4,))
    g = np.array([0.3, -0.4, 0.45, 0.0], dtype=np.float32)
    total = np.zeros(4, np.float32)
    for _ in range(4):
        kv.push("g", arr(g))
        kv.pull("g", out=out)
        total += out.asnumpy()
    # Each step sends +-0.5 or 0; with |g| below the threshold, error feedback keeps the
    # total sent within one threshold of the total pushed.
    assert set(np.unique(out.asnumpy())) <= {-0.5, 0.0, 0.5}
    np.testing.assert_array_less(np.abs(total - 4 * g), 0.5 + 1e-6)
    with pytest.raises(mx.WeftError, match="not supported for type 'local'"):
        mx.kv.create("local").set_gradient_compression({"type": "2bit"})
    with pytest.raises(mx.WeftError, match="expected type '2bit' or 'none'"):
        kv.set_gradient_compression({"type": "4bit"})


def test_errors_are_clear():
    kv = mx.kv.create("local")
    kv.init(1, arr([1, 2]))
    with pytest.raises(mx.WeftError, match=r"holds \(2,\) float32, got a value of \(3,\) float32"):
        kv.push(1, arr([1, 2, 3]))
    with pytest.raises(mx.WeftError, match="'8' was never initialised"):
        kv.pull(8, out=mx.nd.zeros((2,)))
    with pytest.raises(mx.WeftError, match="already initialised"):
        kv.init(1, arr([0, 0]))
    with pytest.raises(TypeError, match="NDArray"):
        kv.push(1, [1, 2])
    with pytest.raises(ValueError, match="'out' is required"):
        kv.pull(1)
    with pytest.raises(mx.WeftError, match="need a dist store"):
        kv._send_command_to_servers(0, b"x")

    def broken(key, merged, stored):
        raise RuntimeError("boom")

    kv._set_updater(broken)
    with pytest.raises(mx.WeftError, match="updater failed on key '1'"):
        kv.push(1, arr([1, 1]))
    with pytest.raises(RuntimeError, match="no optimizer states"):
        mx.kv.create("local").save_optimizer_states("/tmp/never-written")


def test_dist_without_a_launcher_says_what_is_missing(monkeypatch):
    for name in ("DMLC_ROLE", "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(mx.WeftError, match="DMLC_PS_ROOT_URI is not set"):
        mx.kv.create("dist_sync")
    monkeypatch.setenv("DMLC_ROLE", "boss")
    with pytest.raises(mx.WeftError, match="expected DMLC_ROLE to be worker, server or scheduler, got 'boss'"):
        mx.kv.create("dist_async")
    with pytest.raises(mx.WeftError, match="unknown dist type 'dist_fast'"):
        mx.kv.create("dist_fast")


# ------------------------------------------------------------------ the device store
@pytest.mark.parametrize("kind", ["device", "nccl", "local_allreduce_device"])
def test_device_store_on_cpu_values_sums_updates_and_pushpulls(kind):
    """With host values the device store reduces as local does: exact sums, several keys at
    once, MXNet's updater semantics and pushpull."""
    rng = np.random.default_rng(1)
    kv = mx.kv.create(kind)
    assert kv.type == kind
    shapes = {"w0": (3, 4), "w1": (7,), "5": (2, 2)}
    inits = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    kv.init(list(shapes), [arr(inits[k]) for k in shapes])
    grads = {k: [rng.standard_normal(s).astype(np.float32) for _ in range(3)] for k, s in shapes.items()}
    kv.push(list(shapes), [[arr(g) for g in grads[k]] for k in shapes])
    outs = {k: [mx.nd.zeros(s), mx.nd.zeros(s)] for k, s in shapes.items()}
    kv.pull(list(shapes), out=[outs[k] for k in shapes])
    for k in shapes:
        for o in outs[k]:
            np.testing.assert_allclose(o.asnumpy(), sum(grads[k]), rtol=1e-5, atol=1e-6)

    seen = []

    def update(key, merged, stored):
        seen.append(key)
        stored[:] = stored - 0.5 * merged

    kv._set_updater(update)
    before = {k: outs[k][0].asnumpy() for k in shapes}
    kv.push(list(shapes), [[arr(g) for g in grads[k]] for k in shapes])
    kv.pull(list(shapes), out=[outs[k][0] for k in shapes])
    for k in shapes:
        np.testing.assert_allclose(outs[k][0].asnumpy(), before[k] - 0.5 * sum(grads[k]), rtol=1e-5, atol=1e-6)
    assert sorted(map(str, seen)) == sorted(map(str, shapes))
    # pushpull: the update, then the new value into every out.
    g = np.full((7,), 2.0, np.float32)
    o1, o2 = mx.nd.zeros((7,)), mx.nd.zeros((7,))
    expect = outs["w1"][0].asnumpy() - 0.5 * 2 * g
    kv.pushpull("w1", [arr(g), arr(g)], out=[o1, o2])
    np.testing.assert_allclose(o1.asnumpy(), expect, rtol=1e-6)
    np.testing.assert_allclose(o2.asnumpy(), expect, rtol=1e-6)


def test_device_store_keeps_integer_dtypes_exact():
    kv = mx.kv.create("device")
    kv.init(0, mx.nd.array(np.zeros(5), dtype="int32"))
    vals = [np.arange(5, dtype=np.int32) * (i + 1) for i in range(4)]
    kv.push(0, [mx.nd.array(v, dtype="int32") for v in vals])
    out = mx.nd.zeros((5,), dtype="int32")
    kv.pull(0, out=out)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out.asnumpy(), sum(vals))


def _gpus():
    return mx.num_gpus()


@pytest.mark.skipif(_gpus() == 0, reason="no GPU is visible")
def test_device_store_reduces_gpu_values_on_a_gpu():
    """Values on every GPU (two on gpu(0)) and one on the host: the sum reaches GPU and host
    outs; the updater then runs where the sum is."""
    n = _gpus()
    rng = np.random.default_rng(2)
    shape = (64, 33)
    kv = mx.kv.create("device")
    kv.init("w", arr(np.ones(shape)))
    ctxs = [mx.gpu(0), mx.gpu(0)] + [mx.gpu(i) for i in range(1, n)] + [mx.cpu()]
    vals = [rng.standard_normal(shape).astype(np.float32) for _ in ctxs]
    kv.push("w", [mx.nd.array(v, ctx=c) for v, c in zip(vals, ctxs)])
    outs = [mx.nd.zeros(shape, ctx=mx.gpu(i)) for i in range(n)] + [mx.nd.zeros(shape)]
    kv.pull("w", out=outs)
    for o in outs:
        np.testing.assert_allclose(o.asnumpy(), sum(vals), rtol=1e-5, atol=1e-5)

    def update(key, merged, stored):
        assert merged.context == stored.context and merged.context.device_type == "gpu"
        stored[:] = stored - 0.25 * merged

    kv._set_updater(update)
    kv.push("w", [mx.nd.array(v, ctx=c) for v, c in zip(vals, ctxs)])
    kv.pull("w", out=outs)
    for o in outs:
        np.testing.assert_allclose(o.asnumpy(), 0.75 * sum(vals), rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(_gpus() < 2, reason="needs two GPUs")
def test_device_store_one_value_per_gpu_reduce_and_broadcast():
    """One value per GPU and one out per GPU: the grouped NCCL reduce and broadcast where
    NCCL is built in, peer copies otherwise; either way the exact sum everywhere."""
    n = _gpus()
    kv = mx.kv.create("nccl")
    kv.init(1, mx.nd.zeros((1000,)))
    vals = [np.full(1000, i + 1, np.float32) for i in range(n)]
    outs = [mx.nd.zeros((1000,), ctx=mx.gpu(i)) for i in range(n)]
    for _ in range(2):
        kv.pushpull(1, [mx.nd.array(v, ctx=mx.gpu(i)) for i, v in enumerate(vals)], out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), sum(vals))
