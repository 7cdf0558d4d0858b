"""Per-operation overhead: tiny float32 operations from Python, Weft against PyTorch.

With 1 and 16 elements the arithmetic is free, so the time per operation is what the
framework costs: Python binding, argument handling, output allocation and, for Weft,
running through the engine (the final waitall is inside the timing). Cases: `c = a + b` on
1 and 16 elements, `a += b`, `nd.relu(a)` and `a.sum()` on 16.

Each framework runs in its own process (the other's libraries and threads stay out of
it), one after the other, `--rounds` times. Time is CPU time (time.process_time, all the
process's threads) per operation, best of `--repeats` loops of `--ops` operations: on a
loaded machine wall time mostly measures the other processes. The load average and the
CPU are printed with the figures.

    python3 bench/op_overhead.py [--ops 100000] [--repeats 5] [--rounds 2]
"""
import argparse
import json
import os
import subprocess
import sys

CASES = (("c = a + b", 1), ("c = a + b", 16), ("a += b", 16), ("relu(a)", 16), ("a.sum()", 16))


def worker(framework, ops, repeats):
    import time

    import numpy as np
    if framework == "torch":
        import peer  # noqa: F401  (the peer's environment and threads)
        import torch
        make, relu, sync = torch.tensor, torch.relu, lambda: None
    else:
        import weft
        make, relu, sync = weft.nd.array, weft.nd.relu, weft.nd.waitall

    def loop(case, a, b):
        if case == "c = a + b":
            for _ in range(ops):
                c = a + b
        elif case == "a += b":
            for _ in range(ops):
                a += b
            c = a
        elif case == "relu(a)":
            for _ in range(ops):
                c = relu(a)
        else:
            for _ in range(ops):
                c = a.sum()
        sync()
        return c

    result = {}
    for case, n in CASES:
        x = np.arange(n, dtype=np.float32) - 4
        a, b = make(x.copy()), make(np.ones(n, dtype=np.float32))
        c = loop(case, a, b)  # warm-up
        best = float("inf")
        for _ in range(repeats):
            start = time.process_time()
            c = loop(case, a, b)
            best = min(best, time.process_time() - start)
        if case == "c = a + b":
            np.testing.assert_array_equal(np.asarray(c.asnumpy() if framework == "weft" else c.numpy()), x + 1)
        elif case == "relu(a)":
            np.testing.assert_array_equal(np.asarray(c.asnumpy() if framework == "weft" else c.numpy()),
                                          np.maximum(x, 0))
        result[f"{case} on {n}"] = best / ops * 1e6
    print(json.dumps(result))


def cpu_model():
    with open("/proc/cpuinfo") as f:
        return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "unknown CPU")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--worker", choices=("weft", "torch"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.ops, args.repeats)
        return

    import peer
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), WEFT_BENCH_WORKER="1")
    env.update(peer.peer_env.environment())
    engine = os.environ.get("WEFT_ENGINE_TYPE", "ThreadedEngine")
    load_before = os.getloadavg()
    best = {"weft": {}, "torch": {}}
    for _ in range(args.rounds):
        for framework in ("weft", "torch"):
            out = subprocess.run([sys.executable, __file__, "--worker", framework, "--ops", str(args.ops),
                                  "--repeats", str(args.repeats)], env=env, check=True, capture_output=True,
                                 text=True).stdout
            for case, us in json.loads(out.splitlines()[-1]).items():
                best[framework][case] = min(us, best[framework].get(case, us))
    load_after = os.getloadavg()
    print(f"float32, CPU time per op, best of {args.rounds} rounds x {args.repeats} loops of {args.ops}; "
          f"Weft engine: {engine}; {cpu_model()}; load {load_before[0]:.2f} -> {load_after[0]:.2f}")
    print(f"{'case':>18} {'Weft us/op':>11} {'torch us/op':>12} {'Weft/torch':>11}")
    for case in best["weft"]:
        w, t = best["weft"][case], best["torch"][case]
        print(f"{case:>18} {w:>11.3f} {t:>12.3f} {w / t:>11.2f}")
        peer.record(case + " floats", w, t, "us/op", False)


if __name__ == "__main__":
    main()
