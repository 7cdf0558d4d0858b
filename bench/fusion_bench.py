"""Pointwise fusion: a chain of 8 cheap elementwise operators (memory-bound when unfused)
on a 16M-element float32 array,
run by an executor with fusion (one loop, intermediates in cache-sized tiles) and without
(WEFT_EXEC_FUSE=0: one pass over memory per operator), beside PyTorch eager."""
import os

import peer  # first: it sets the environment the libraries read

import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import weft as mx  # noqa: E402

N = 1 << 26


def chain_sym():
    x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
    h = x * 2.0
    h = h - y
    h = mx.sym.abs(h + 0.5)
    h = mx.sym.square(h * y)
    return mx.sym.relu(h - 0.25)


def chain_torch(x, y):
    h = x * 2.0
    h = h - y
    h = torch.abs(h + 0.5)
    h = torch.square(h * y)
    return torch.relu(h - 0.25)


def executor(fuse, xv, yv):
    os.environ["WEFT_EXEC_FUSE"] = "1" if fuse else "0"
    ex = chain_sym().simple_bind(mx.cpu(), grad_req="null", x=(N,), y=(N,))
    os.environ.pop("WEFT_EXEC_FUSE")
    ex.arg_dict["x"][:] = xv
    ex.arg_dict["y"][:] = yv
    return ex


def best(fn, rounds=5):
    fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    rng = np.random.RandomState(0)
    xv = rng.uniform(-1, 1, N).astype(np.float32)
    yv = rng.uniform(0, 1, N).astype(np.float32)
    fused, plain = executor(True, xv, yv), executor(False, xv, yv)
    xt, yt = torch.from_numpy(xv), torch.from_numpy(yv)
    ref = chain_torch(xt, yt).numpy()
    for ex in (fused, plain):
        np.testing.assert_allclose(ex.forward()[0].asnumpy(), ref, rtol=1e-5, atol=1e-6)

    def run(ex):
        ex.forward()
        mx.nd.waitall()

    t_fused, t_plain = best(lambda: run(fused)), best(lambda: run(plain))
    t_torch = best(lambda: chain_torch(xt, yt))
    print("8 pointwise ops on %d float32 elements (best of 5)" % N)
    for name, t in (("Weft fused", t_fused), ("Weft unfused", t_plain), ("torch eager", t_torch)):
        print("%-14s %8.1f ms" % (name, t * 1e3))
    print("fused / unfused: %.2f   fused / torch: %.2f" % (t_fused / t_plain, t_fused / t_torch))
    peer.record("8 pointwise ops, fused", t_fused * 1e3, t_torch * 1e3, "ms", False)


if __name__ == "__main__":
    main()
