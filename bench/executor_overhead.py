"""Executor overhead: forward of a 200-node graph of tiny elementwise ops, run by a bound
executor, against the same 200 operators called one by one from Python (Weft imperative)
and against PyTorch eager. With 16-element arrays the arithmetic is free: this measures
what running a node costs on each path (the executor with fusion off), with the fused
executor, which runs the chain as a few loops, beside it."""
import os

import peer  # first: it sets the environment the libraries read

import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import weft as mx  # noqa: E402

NODES = 200
REPEATS = 300
SHAPE = (16,)
# Unary ops that keep values in a sane range, applied in turn.
CYCLE = ["sin", "cos", "tanh", "sigmoid"]


def symbolic():
    h = mx.sym.Variable("x")
    for i in range(NODES):
        h = getattr(mx.sym, CYCLE[i % len(CYCLE)])(h, name="n%d" % i)
    return h


def imperative(x):
    for i in range(NODES):
        x = getattr(mx.nd, CYCLE[i % len(CYCLE)])(x)
    return x


def torch_eager(x):
    for i in range(NODES):
        x = getattr(torch, CYCLE[i % len(CYCLE)])(x)
    return x


def best_of(fn, rounds=5):
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(REPEATS):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / REPEATS


def main():
    xv = np.linspace(-1, 1, SHAPE[0]).astype(np.float32)
    # Per-node cost needs every node run: fusion off for this executor (it is read at
    # bind), on for the second one, which runs the chain as a few fused loops.
    os.environ["WEFT_EXEC_FUSE"] = "0"
    ex = symbolic().simple_bind(mx.cpu(), grad_req="null", x=SHAPE)
    os.environ.pop("WEFT_EXEC_FUSE")
    fused = symbolic().simple_bind(mx.cpu(), grad_req="null", x=SHAPE)
    ex.arg_dict["x"][:] = xv
    fused.arg_dict["x"][:] = xv
    x = mx.nd.array(xv)
    xt = torch.from_numpy(xv)

    def run_executor():
        ex.forward()
        mx.nd.waitall()

    def run_fused():
        fused.forward()
        mx.nd.waitall()

    def run_imperative():
        imperative(x)
        mx.nd.waitall()

    np.testing.assert_allclose(ex.forward()[0].asnumpy(), imperative(x).asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(imperative(x).asnumpy(), torch_eager(xt).numpy(), rtol=1e-5)
    np.testing.assert_allclose(fused.forward()[0].asnumpy(), ex.forward()[0].asnumpy(), rtol=1e-6)
    for fn in (run_executor, run_fused, run_imperative, lambda: torch_eager(xt)):
        fn()
    t_exec = best_of(run_executor)
    t_fused = best_of(run_fused)
    t_imp = best_of(run_imperative)
    t_torch = best_of(lambda: torch_eager(xt))
    print("forward of a %d-node graph of %s ops on %s float32 arrays (best of 5 x %d)"
          % (NODES, "/".join(CYCLE), SHAPE, REPEATS))
    print("%-22s %10s %12s" % ("", "us/graph", "us/node"))
    for name, t in (("Weft executor", t_exec), ("Weft fused executor", t_fused), ("Weft imperative", t_imp),
                    ("torch eager", t_torch)):
        print("%-22s %10.1f %12.2f" % (name, t * 1e6, t * 1e6 / NODES))
    print("executor / imperative: %.2f   executor / torch: %.2f" % (t_exec / t_imp, t_exec / t_torch))
    peer.record("%d-node graph, executor" % NODES, t_exec * 1e6, t_torch * 1e6, "us/graph", False)


if __name__ == "__main__":
    main()
