"""What every benchmark shares: PyTorch, the peer, set up to run at its best on this
machine (peer_env.py: the OpenBLAS core and OpenMP settings), and the timing loop
(timing.py). Import it first, before numpy or torch: it sets the environment OpenBLAS and
OpenMP read when they load, then prints what the peer uses, with a standalone PyTorch
reference step, so that a handicapped peer shows at once. Worker processes (worker.py) get
the same environment before their first import.
"""
import os
import sys

import peer_env

for _k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(_k, None)
os.environ.update(peer_env.environment())

import torch  # noqa: E402

torch.set_num_threads(2)

from timing import record, seconds_per_call  # noqa: E402,F401  (the benchmarks take them from here)


def _loaded_core():
    """The core of the OpenBLAS this process loaded (torch and numpy share it), or None."""
    import ctypes
    lib = ctypes.CDLL("libblas.so.3")
    if not hasattr(lib, "openblas_get_corename"):
        return None
    lib.openblas_get_corename.restype = ctypes.c_char_p
    return lib.openblas_get_corename().decode()


def reference_step_samples_per_second(batch=128, steps=20):
    """A standalone PyTorch step (784-512-512-10 MLP, SGD momentum, batch 128): what the
    peer does on its own, to compare with its figures inside a benchmark."""
    import time
    net = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                              torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(batch, 784), torch.randint(0, 10, (batch,))
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(net(x), y).backward()
        opt.step()
    for _ in range(5):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return batch * steps / (time.perf_counter() - start)


def describe(out=None):
    """Prints the peer's versions, BLAS core, threads and reference step (to stderr in a
    worker process, whose stdout is its line protocol)."""
    out = out or (sys.stderr if os.environ.get("WEFT_BENCH_WORKER") == "1" else sys.stdout)
    loaded = _loaded_core()
    print("peer: PyTorch %s, %d threads, OMP_WAIT_POLICY=%s; %s; in this process: %s"
          % (torch.__version__, torch.get_num_threads(), os.environ.get("OMP_WAIT_POLICY"), peer_env.BLAS_LINE,
             "OpenBLAS core " + loaded if loaded else "the reference BLAS"), file=out)
    if peer_env.CORETYPE and loaded != peer_env.CORETYPE:
        print("peer: WARNING: OpenBLAS loaded with core %s, not %s: numpy or torch was imported before "
              "peer.py without the peer's environment" % (loaded, peer_env.CORETYPE), file=out)
    print("peer: standalone reference step (784-512-512-10 MLP, batch 128): %.0f samples/s"
          % reference_step_samples_per_second(), file=out)


describe()
