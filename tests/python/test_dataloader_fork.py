"""DataLoader with forked worker processes, as in MXNet: a script without a main guard, batches
through shared memory equal to those loaded in-process, the engine (custom operators
included) usable after a fork in the parent and in the child, prefetch and auto_reload.
Every run is bounded by a timeout, so a hang fails."""
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import weft as mx
from weft.gluon import data as gdata

SCRIPT = textwrap.dedent("""
    # No `if __name__ == "__main__":` guard, as in MXNet's crash course.
    import os
    import numpy as np
    import weft as mx
    from weft.gluon.data import ArrayDataset, DataLoader
    from weft.gluon.data.vision import transforms

    @mx.operator.register("fork_twice")
    class TwiceProp(mx.operator.CustomOpProp):
        def create_operator(self, ctx, shapes, dtypes):
            return Twice()

    class Twice(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * 2)

    # The engine and a custom operator run before any fork.
    warm = mx.nd.Custom(mx.nd.arange(1000), op_type="fork_twice").sum().asscalar()
    assert warm == 999000, warm

    rng = np.random.RandomState(0)
    images = mx.nd.array(rng.randint(0, 256, (45, 8, 6, 3)), dtype=np.uint8)
    labels = np.arange(45, dtype=np.float32)
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize(0.5, 0.25)])
    ds = ArrayDataset(images, labels).transform_first(transform)

    def epoch(loader):
        return [(d.asnumpy(), l.asnumpy()) for d, l in loader]

    ref = epoch(DataLoader(ds, batch_size=7, num_workers=0))
    loader = DataLoader(ds, batch_size=7, num_workers=2, timeout=60)
    for _ in range(2):
        got = epoch(loader)
        assert len(got) == len(ref) == 7
        for (d, l), (rd, rl) in zip(got, ref):
            assert d.shape == rd.shape == (7, 3, 8, 6) or d.shape == rd.shape == (3, 3, 8, 6), d.shape
            np.testing.assert_allclose(d, rd, rtol=1e-6)
            np.testing.assert_array_equal(l, rl)
    # A worker's lambda transform sees the worker's own pid.
    pids = DataLoader(ArrayDataset(np.arange(8)).transform(lambda x: os.getpid()), batch_size=2, num_workers=2)
    assert os.getpid() not in set(np.concatenate([p.asnumpy() for p in pids]).tolist())
    loader.close()
    pids.close()
    # The batches came in shared memory; freed, they leave no segment in this process.
    import gc
    gc.collect()
    mx.nd.waitall()
    mx.cpu_shared().empty_cache()
    def is_segment(fd):
        try:
            return os.readlink("/proc/self/fd/" + fd).startswith("/memfd:weft_cpu_shared")
        except OSError:
            return False
    left = [fd for fd in os.listdir("/proc/self/fd") if is_segment(fd)]
    assert not left, left

    # The engine after the forks, in this process and in a child forked now.
    parent = mx.nd.Custom(mx.nd.ones((4,)), op_type="fork_twice").sum().asscalar()
    assert parent == 8, parent
    pid = os.fork()
    if pid == 0:
        v = mx.nd.Custom(mx.nd.arange(10), op_type="fork_twice").sum().asscalar()
        w = (mx.nd.ones((50, 50)) * 3).sum().asscalar()
        os._exit(0 if (v, w) == (90, 7500) else 3)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    print("FORK-OK")
""")


def test_script_without_main_guard_forks_workers(tmp_path):
    script = tmp_path / "crash_course.py"
    script.write_text(SCRIPT)
    for engine in ("ThreadedEngine", "NaiveEngine"):
        env = dict(os.environ, WEFT_ENGINE_TYPE=engine)
        proc = subprocess.Popen([sys.executable, str(script)], cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0 and "FORK-OK" in out, (engine, out, err[-4000:])


def _bounded(fn, seconds):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "DataLoader hung for %ss" % seconds
    return out[0]


class CountingDataset(gdata.Dataset):
    def __init__(self, n):
        self.n = n
        self.calls = 0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        self.calls += 1
        return np.float32(i)


def test_prefetch_with_forked_workers():
    ds = gdata.ArrayDataset(np.arange(11, dtype=np.float32))
    for prefetch in (0, 1, 5):
        loader = gdata.DataLoader(ds, batch_size=3, num_workers=2, prefetch=prefetch, timeout=30)
        batches = _bounded(lambda: [b.asnumpy() for b in loader], 60)
        np.testing.assert_array_equal(np.concatenate(batches), np.arange(11))
        loader.close()


def test_auto_reload_prefetches_the_next_epoch():
    ds = CountingDataset(6)
    lazy = gdata.DataLoader(ds, batch_size=2, num_workers=1, thread_pool=True)
    time.sleep(0.2)
    assert ds.calls == 0
    lazy.close()
    eager = gdata.DataLoader(ds, batch_size=2, num_workers=1, thread_pool=True, auto_reload=True)
    deadline = time.time() + 10
    while ds.calls == 0 and time.time() < deadline:
        time.sleep(0.01)
    assert ds.calls > 0  # the first epoch started at construction
    for _ in range(3):
        got = _bounded(lambda: [b.asnumpy().tolist() for b in eager], 30)
        assert got == [[0, 1], [2, 3], [4, 5]]
    # The epoch after the last one iterated is loading already: beyond the 3 * 6 samples read.
    deadline = time.time() + 10
    while ds.calls <= 18 and time.time() < deadline:
        time.sleep(0.01)
    assert ds.calls > 18, ds.calls
    eager.close()
    with pytest.raises(ValueError, match="timeout must be positive"):
        gdata.DataLoader(ds, batch_size=2, timeout=0)
