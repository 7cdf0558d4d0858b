"""What every benchmark shares: PyTorch, the peer, set up to run at its best on this
machine, and the timing loop. Import it first: it sets the environment that OpenBLAS and
OpenMP read when they load."""
import os

os.environ.pop("OPENBLAS_CORETYPE", None)  # this machine sets it, which slows OpenBLAS
os.environ.pop("OPENBLAS_L2_SIZE", None)   # also set here: it shrinks OpenBLAS's blocking
os.environ["OMP_WAIT_POLICY"] = "PASSIVE"

import time  # noqa: E402

import torch  # noqa: E402

torch.set_num_threads(2)


def seconds_per_call(run, min_seconds=1.0, min_runs=1, sync=None):
    """Seconds per call of run(): one warm-up call, then calls until both min_seconds and
    min_runs are reached; sync(), when given, runs after each call inside the timing."""
    run()
    if sync:
        sync()
    count, start = 0, time.perf_counter()
    while True:
        run()
        if sync:
            sync()
        count += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds and count >= min_runs:
            return elapsed / count
