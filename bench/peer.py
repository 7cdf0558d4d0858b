"""What every benchmark shares: PyTorch, the peer, set up to run at its best on this
machine, and the timing loop (timing.py). Import it first: it sets the environment that
OpenBLAS and OpenMP read when they load."""
import os

os.environ.pop("OPENBLAS_CORETYPE", None)  # this machine sets it, which slows OpenBLAS
os.environ.pop("OPENBLAS_L2_SIZE", None)   # also set here: it shrinks OpenBLAS's blocking
os.environ["OMP_WAIT_POLICY"] = "PASSIVE"

import torch  # noqa: E402

torch.set_num_threads(2)

from timing import seconds_per_call  # noqa: E402,F401  (the benchmarks take it from here)
