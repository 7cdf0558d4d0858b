"""Per-operation overhead: `c = a + b` on tiny float32 arrays, Weft against PyTorch.

With 1 and 16 elements the arithmetic is free, so the time per operation is what the
framework costs: Python binding, argument handling, output allocation and, for Weft,
pushing to the engine (the final waitall is inside the timing).
"""
import os

import peer  # first: it sets the environment the libraries read

import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import weft  # noqa: E402

REPEATS = 200_000
WARMUP = 1_000


def time_weft(n):
    a = weft.nd.array(np.arange(n, dtype=np.float32))
    b = weft.nd.array(np.ones(n, dtype=np.float32))
    for _ in range(WARMUP):
        c = a + b
    weft.nd.waitall()
    start = time.perf_counter()
    for _ in range(REPEATS):
        c = a + b
    weft.nd.waitall()
    elapsed = time.perf_counter() - start
    np.testing.assert_array_equal(c.asnumpy(), np.arange(n, dtype=np.float32) + 1)
    return elapsed / REPEATS


def time_torch(n):
    a = torch.arange(n, dtype=torch.float32)
    b = torch.ones(n, dtype=torch.float32)
    for _ in range(WARMUP):
        c = a + b
    start = time.perf_counter()
    for _ in range(REPEATS):
        c = a + b
    elapsed = time.perf_counter() - start
    np.testing.assert_array_equal(c.numpy(), np.arange(n, dtype=np.float32) + 1)
    return elapsed / REPEATS


def main():
    engine = os.environ.get("WEFT_ENGINE_TYPE", "ThreadedEngine")
    print(f"c = a + b, float32, {REPEATS} times; Weft engine: {engine}")
    print(f"{'elements':>8} {'Weft us/op':>11} {'torch us/op':>12} {'Weft/torch':>11}")
    for n in (1, 16):
        w, t = time_weft(n), time_torch(n)
        print(f"{n:>8} {w * 1e6:>11.2f} {t * 1e6:>12.2f} {w / t:>11.2f}")
        peer.record(f"c = a + b on {n} floats", w * 1e6, t * 1e6, "us/op", False)


if __name__ == "__main__":
    main()
