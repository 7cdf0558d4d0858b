"""Matrix product throughput: dot of float32 squares (512, 1024, 2048), Weft's `dot`
against `torch.mm`, in GFLOP/s (2 n^3 floating-point operations per product).
"""
import peer  # first: it sets the environment the libraries read

import numpy as np  # noqa: E402
import torch  # noqa: E402

import weft  # noqa: E402

SIZES = (512, 1024, 2048)
MIN_SECONDS = 1.0  # repeat each product until at least this long has passed


def repeat_timed(run, sync):
    return peer.seconds_per_call(run, MIN_SECONDS, sync=sync)


def check(result, a_np, b_np):
    expected = a_np.astype(np.float64) @ b_np.astype(np.float64)
    np.testing.assert_allclose(result, expected, rtol=1e-3, atol=1e-3 * np.sqrt(a_np.shape[1]))


def time_weft(a_np, b_np):
    a, b = weft.nd.array(a_np), weft.nd.array(b_np)
    last = {}

    def run():
        last["c"] = weft.nd.dot(a, b)

    seconds = repeat_timed(run, weft.nd.waitall)
    check(last["c"].asnumpy(), a_np, b_np)
    return seconds


def time_torch(a_np, b_np):
    a, b = torch.from_numpy(a_np), torch.from_numpy(b_np)
    last = {}

    def run():
        last["c"] = torch.mm(a, b)

    seconds = repeat_timed(run, lambda: None)
    check(last["c"].numpy(), a_np, b_np)
    return seconds


def main():
    rng = np.random.default_rng(0)
    print(f"{'n':>5} {'Weft GFLOP/s':>13} {'torch GFLOP/s':>14} {'Weft/torch':>11}")
    for n in SIZES:
        a_np = rng.standard_normal((n, n), dtype=np.float32)
        b_np = rng.standard_normal((n, n), dtype=np.float32)
        w, t = time_weft(a_np, b_np), time_torch(a_np, b_np)
        flops = 2.0 * n ** 3
        print(f"{n:>5} {flops / w / 1e9:>13.1f} {flops / t / 1e9:>14.1f} {t / w:>11.2f}")
        peer.record(f"dot {n}x{n}", flops / w / 1e9, flops / t / 1e9, "GFLOP/s", True)


if __name__ == "__main__":
    main()
