"""cpu_shared (MXNet's device type 5): host memory other processes map. Arrays on it compute
like CPU arrays, travel to other processes (by (pid, id), by multiprocessing's pickler) without
a copy, come back from DataLoader workers, and leave no segment behind once freed."""
import gc
import multiprocessing
import os
import threading

import numpy as np
import pytest

import weft as mx
from weft import autograd, gluon, nd
from weft.gluon import data as gdata
from weft.ndarray.ndarray import _new_from_shared_mem

SEGMENT = "/memfd:weft_cpu_shared"


def _segment_fds(pid="self"):
    """The descriptors of process `pid` that are cpu_shared segments."""
    found = set()
    base = "/proc/%s/fd" % pid
    for name in os.listdir(base):
        try:
            if os.readlink(os.path.join(base, name)).startswith(SEGMENT):
                found.add(int(name))
        except OSError:
            pass  # closed while listing
    return found


def _segment_maps(pid="self"):
    with open("/proc/%s/maps" % pid) as f:
        return sum(1 for line in f if "memfd:weft_cpu_shared" in line)


def _settle():
    """Frees what Python and the pool still hold, so that only live arrays keep segments."""
    gc.collect()
    nd.waitall()
    mx.cpu_shared().empty_cache()


def _bounded(fn, seconds):
    out, err = [], []

    def run():
        try:
            out.append(fn())
        except BaseException as e:  # noqa: B902 - re-raised in the caller's thread
            err.append(e)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "hung for %ss" % seconds
    if err:
        raise err[0]
    return out[0]


def test_context_is_a_device_of_its_own():
    ctx = mx.cpu_shared()
    assert str(ctx) == "cpu_shared(0)" and ctx.device_typeid == 5 and ctx.device_type == "cpu_shared"
    assert mx.Context(5, 2) == mx.cpu_shared(2) and mx.Context("cpu_shared") == ctx
    src = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = nd.array(src, ctx=ctx)
    assert a.context == ctx and str(a.context) == "cpu_shared(0)" and a.context.device_typeid == 5
    np.testing.assert_array_equal(a.asnumpy(), src)
    z = nd.zeros((2, 3), ctx=ctx, dtype="int32")
    assert z.context == ctx and z.dtype == np.int32 and not z.asnumpy().any()
    r = nd.random.uniform(shape=(100,), ctx=ctx)
    assert r.context == ctx and 0 <= r.asnumpy().min() and r.asnumpy().max() < 1
    assert a.__dlpack_device__() == (1, 0)
    assert ctx.memory_stat("bytes_in_use") >= a.size * 4


def test_copies_both_ways():
    src = np.random.RandomState(0).randn(4, 5).astype(np.float64)
    cpu = nd.array(src, dtype=np.float64)
    shared = cpu.as_in_context(mx.cpu_shared())
    assert shared.context == mx.cpu_shared() and shared.dtype == np.float64
    assert shared.as_in_context(mx.cpu_shared()) is shared
    back = shared.copyto(mx.cpu())
    assert back.context == mx.cpu()
    np.testing.assert_array_equal(back.asnumpy(), src)
    target = nd.zeros((4, 5), ctx=mx.cpu_shared(), dtype=np.float64)
    cpu.copyto(target)
    np.testing.assert_array_equal(target.asnumpy(), src)
    assert shared.copy().context == mx.cpu_shared()
    np.testing.assert_array_equal(shared.as_in_context(mx.cpu()).asnumpy(), src)


def test_operators_and_gradients_on_cpu_shared():
    rng = np.random.RandomState(1)
    x, w = rng.randn(3, 4).astype(np.float32), rng.randn(5, 4).astype(np.float32)
    xs = nd.array(x, ctx=mx.cpu_shared())
    ys = nd.array(w, ctx=mx.cpu_shared())
    assert (xs * 2 + 1).context == mx.cpu_shared()
    np.testing.assert_allclose((xs * 2 + 1).asnumpy(), x * 2 + 1, rtol=1e-6)
    # Mixed with CPU arrays, as a DataLoader's batch meets a network's parameters: the result
    # is on the first input's context.
    wc = nd.array(w)
    out = nd.dot(xs, wc, transpose_b=True)
    assert out.context == mx.cpu_shared()
    np.testing.assert_allclose(out.asnumpy(), x @ w.T, rtol=1e-5)
    assert nd.dot(wc, xs, transpose_b=True).context == mx.cpu()
    np.testing.assert_allclose(nd.dot(ys, xs, transpose_b=True).asnumpy(), w @ x.T, rtol=1e-5)
    # Two CPUs stay apart.
    with pytest.raises(mx.base.MXNetError, match="all inputs must be on one context"):
        nd.elemwise_add(nd.ones((2,)), nd.ones((2,), ctx=mx.cpu(1)))
    # Gradients flow to a CPU parameter through a cpu_shared batch.
    wc.attach_grad()
    with autograd.record():
        loss = (nd.dot(xs, wc, transpose_b=True) ** 2).sum()
    loss.backward()
    np.testing.assert_allclose(wc.grad.asnumpy(), 2 * (x @ w.T).T @ x, rtol=1e-4)


def test_gluon_networks_take_cpu_shared_batches():
    rng = np.random.RandomState(2)
    x = rng.randn(8, 6).astype(np.float32)
    for hybridize in (False, True):
        net = gluon.nn.HybridSequential()
        net.add(gluon.nn.Dense(5, activation="relu"), gluon.nn.Dense(3))
        net.initialize(mx.init.Xavier(), ctx=mx.cpu())
        if hybridize:
            net.hybridize()
        ref = net(nd.array(x)).asnumpy()
        with autograd.record():
            out = net(nd.array(x, ctx=mx.cpu_shared()))
        out.backward()
        np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-6)
        assert net[0].weight.grad().context == mx.cpu()
        assert np.abs(net[0].weight.grad().asnumpy()).sum() > 0


def test_shared_mem_handles_in_one_process():
    a = nd.array(np.arange(6, dtype=np.int32).reshape(2, 3), ctx=mx.cpu_shared(), dtype="int32")
    pid, sid, shape, dtype = a._to_shared_mem()
    assert pid == os.getpid() and sid in _segment_fds() and shape == (2, 3) and dtype == np.int32
    b = nd.NDArray(_new_from_shared_mem(pid, sid, shape, dtype))
    assert b.context == mx.cpu_shared() and b.shape == (2, 3) and b.dtype == np.int32
    np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())
    b[:] = 7  # one memory: a sees it
    assert (a.asnumpy() == 7).all()
    # Fewer elements than the segment holds are fine; more are not.
    np.testing.assert_array_equal(nd.NDArray(_new_from_shared_mem(pid, sid, (4,), np.int32)).asnumpy(), [7] * 4)


def test_shared_mem_errors():
    a = nd.array(np.ones((2, 3)), ctx=mx.cpu_shared())
    pid, sid, _, _ = a._to_shared_mem()
    with pytest.raises(mx.base.MXNetError, match="shared id 9999 of process %d is unknown: this process has no open "
                                                  "descriptor 9999" % pid):
        _new_from_shared_mem(pid, 9999, (2, 3), np.float32)
    with pytest.raises(mx.base.MXNetError, match=r"holds 64 bytes, but an array of 4000 bytes"):
        _new_from_shared_mem(pid, sid, (1000,), np.float32)
    with pytest.raises(TypeError, match="expected a dtype among .*got 'complex64'"):
        _new_from_shared_mem(pid, sid, (2,), "complex64")
    r, w = os.pipe()
    try:
        with pytest.raises(mx.base.MXNetError, match="not a shared-memory segment of Weft: expected "
                                                      "/memfd:weft_cpu_shared, got pipe:"):
            _new_from_shared_mem(pid, r, (2,), np.float32)
    finally:
        os.close(r)
        os.close(w)
    with pytest.raises(mx.base.MXNetError, match=r"expected an array on cpu_shared, got one on cpu\(0\)"):
        nd.ones((2,))._to_shared_mem()
    with pytest.raises(mx.base.MXNetError, match="this view starts at byte 12 of its shared segment"):
        a[1]._to_shared_mem()
    with pytest.raises(mx.base.MXNetError, match=r"\(0,3\) holds no bytes"):
        nd.array(np.zeros((0, 3), np.float32), ctx=mx.cpu_shared())._to_shared_mem()


def _child_doubles(pid, sid, shape, dtype, conn):
    """In another process: maps the parent's array by (pid, id), checks it, doubles it in
    place, and reports its own segments before mapping and after freeing."""
    before = _segment_fds()
    b = nd.NDArray(_new_from_shared_mem(pid, sid, shape, dtype))
    mapped = len(_segment_fds() - before)
    total = float(b.sum().asscalar())
    b *= 2
    b.wait_to_read()
    del b
    _settle()
    conn.send((total, mapped, sorted(_segment_fds() - before)))
    conn.close()


def test_round_trip_to_another_process_leaves_nothing_behind():
    ctx = multiprocessing.get_context("fork")
    _settle()
    fds, maps = _segment_fds(), _segment_maps()
    shm_files = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    src = np.random.RandomState(3).rand(64, 33).astype(np.float32)
    a = nd.array(src, ctx=mx.cpu_shared())
    parent_conn, child_conn = ctx.Pipe()
    p = ctx.Process(target=_child_doubles, args=(*a._to_shared_mem(), child_conn))
    p.start()
    total, mapped, left = _bounded(parent_conn.recv, 60)
    p.join(30)
    assert p.exitcode == 0
    np.testing.assert_allclose(total, src.sum(), rtol=1e-4)
    assert mapped == 1 and left == []
    np.testing.assert_allclose(a.asnumpy(), 2 * src, rtol=1e-6)
    del a
    _settle()
    assert _segment_fds() == fds and _segment_maps() == maps
    if os.path.isdir("/dev/shm"):
        assert not [f for f in set(os.listdir("/dev/shm")) - shm_files if "weft" in f]


def _child_sends(queue, n, received):
    # The arrays are freed here right after sending: the receiver still gets them.
    for i in range(n):
        queue.put(nd.array(np.full((3, 5), i, np.float32), ctx=mx.cpu()))
    queue.put(nd.arange(10).reshape(2, 5)[1])  # a view, which travels as a copy
    queue.put(nd.array(np.zeros((0, 4), np.float32)))
    queue.put(None)
    # The receiver fetches each descriptor from this process (multiprocessing's resource
    # sharer) as it unpickles: stay until it has.
    received.wait(60)


def test_forking_pickler_sends_arrays_as_segments():
    ctx = multiprocessing.get_context("fork")
    _settle()
    fds = _segment_fds()
    q = ctx.Queue()
    received = ctx.Event()
    p = ctx.Process(target=_child_sends, args=(q, 4, received))
    p.start()
    got = []
    while True:
        item = _bounded(lambda: q.get(timeout=30), 60)
        if item is None:
            break
        got.append(item)
    received.set()
    p.join(30)
    assert p.exitcode == 0
    for i, a in enumerate(got[:4]):
        assert a.context == mx.cpu_shared() and a.shape == (3, 5)
        np.testing.assert_array_equal(a.asnumpy(), np.full((3, 5), i))
    np.testing.assert_array_equal(got[4].asnumpy(), [5, 6, 7, 8, 9])
    assert got[5].shape == (0, 4) and got[5].context == mx.cpu_shared()
    # The child has exited: these arrays hold the only references to their segments.
    assert len(_segment_fds() - fds) == 5
    del got, a
    _settle()
    assert _segment_fds() == fds


class _Images(gdata.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return nd.full((3, 4, 5), i, dtype="float32"), np.int64(i)


def test_dataloader_workers_return_batches_on_cpu_shared():
    _settle()
    fds = _segment_fds()
    loader = gdata.DataLoader(_Images(10), batch_size=4, num_workers=2, timeout=30)
    for _ in range(2):
        batches = _bounded(lambda: list(loader), 60)
        assert [d.shape for d, _ in batches] == [(4, 3, 4, 5), (4, 3, 4, 5), (2, 3, 4, 5)]
        for k, (data, label) in enumerate(batches):
            assert data.context == mx.cpu_shared() and label.context == mx.cpu_shared()
            idx = np.arange(4 * k, min(4 * k + 4, 10))
            np.testing.assert_array_equal(label.asnumpy(), idx)
            np.testing.assert_array_equal(data.asnumpy(), np.broadcast_to(idx[:, None, None, None], data.shape))
        # A network on the CPU takes them as they are.
        net = gluon.nn.Dense(2, in_units=60)
        net.initialize(ctx=mx.cpu())
        assert net(batches[0][0].reshape((4, 60))).shape == (4, 2)
    # A user's collation: its arrays come back in shared memory too, numpy values as they are.
    custom = gdata.DataLoader(_Images(6), batch_size=3, num_workers=2, timeout=30,
                              batchify_fn=lambda s: (nd.stack(*[d for d, _ in s]).sum(), [int(l) for _, l in s]))
    got = _bounded(lambda: list(custom), 60)
    assert [g[1] for g in got] == [[0, 1, 2], [3, 4, 5]]
    assert got[1][0].context == mx.cpu_shared() and got[1][0].asscalar() == 60 * 12
    pinned = gdata.DataLoader(_Images(4), batch_size=2, num_workers=1, pin_memory=True, timeout=30)
    assert _bounded(lambda: next(iter(pinned))[0].context, 60) == mx.cpu_pinned(0)
    for l in (loader, custom, pinned):
        l.close()
    del batches, got, data, label, net
    _settle()
    assert _segment_fds() == fds
