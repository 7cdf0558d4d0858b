"""Memory bandwidth of an elementwise op: `a + b` on 64 MiB float32 arrays, Weft against
PyTorch. Each operation moves 3 x 64 MiB (two reads, one write); GB/s counts those bytes.
"""
import peer  # first: it sets the environment the libraries read

import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import weft  # noqa: E402

NBYTES = 64 << 20
N = NBYTES // 4
REPEATS = 20
MOVED = 3 * NBYTES


def inputs():
    rng = np.random.default_rng(0)
    return rng.standard_normal(N, dtype=np.float32), rng.standard_normal(N, dtype=np.float32)


def time_weft(a_np, b_np):
    a, b = weft.nd.array(a_np), weft.nd.array(b_np)
    # Pushing runs ahead of execution, so the loop keeps several outputs alive at once; one
    # untimed pass fills the pool with them and the timed pass measures the steady state.
    for _ in range(REPEATS):
        c = a + b
    weft.nd.waitall()
    start = time.perf_counter()
    for _ in range(REPEATS):
        c = a + b
    weft.nd.waitall()
    elapsed = time.perf_counter() - start
    np.testing.assert_array_equal(c.asnumpy(), a_np + b_np)
    return elapsed / REPEATS


def time_torch(a_np, b_np):
    a, b = torch.from_numpy(a_np), torch.from_numpy(b_np)
    for _ in range(REPEATS):
        c = a + b
    start = time.perf_counter()
    for _ in range(REPEATS):
        c = a + b
    elapsed = time.perf_counter() - start
    np.testing.assert_array_equal(c.numpy(), a_np + b_np)
    return elapsed / REPEATS


def main():
    a_np, b_np = inputs()
    w, t = time_weft(a_np, b_np), time_torch(a_np, b_np)
    print(f"a + b on 64 MiB float32 arrays ({REPEATS} times), 3 x 64 MiB moved per op")
    print(f"{'':>6} {'ms/op':>8} {'GB/s':>8}")
    print(f"{'Weft':>6} {w * 1e3:>8.2f} {MOVED / w / 1e9:>8.2f}")
    print(f"{'torch':>6} {t * 1e3:>8.2f} {MOVED / t / 1e9:>8.2f}")
    print(f"Weft/torch bandwidth ratio: {t / w:.2f}")
    peer.record("a + b on 64 MiB arrays", MOVED / w / 1e9, MOVED / t / 1e9, "GB/s", True)


if __name__ == "__main__":
    main()
