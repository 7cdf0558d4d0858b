"""Small eager calls of the operators whose time the inline rule estimates (dot, batch_dot,
Pooling, Deconvolution and their backward operators): wall and CPU time per call run with
the estimates (default) and with every estimated call sent to a worker
(WEFT_ENGINE_INLINE_NS=0, which for these calls, all over 64 KiB, is where the byte rule
alone sent them). Each setting runs in a process of its own, alternating, `--rounds`
times; the least wall and CPU time of each is printed, with the CPU and the load average.
Each call is followed by a wait for its result, as a loop reading its results does.

    .venv/bin/python bench/inline_estimates.py [--rounds R] [--calls N]
"""
import argparse
import os
import subprocess
import sys
import time


def cases():
    import numpy as np
    from weft import nd
    rng = np.random.default_rng(0)

    def arr(*shape):
        return nd.array(rng.standard_normal(shape, dtype=np.float32))
    a, b, g = arr(64, 512), arr(512, 10), arr(64, 10)
    la, lb = arr(32, 16, 32), arr(32, 32, 16)
    p = arr(8, 20, 24, 24)
    pool = {"kernel": (2, 2), "stride": (2, 2), "pool_type": "max"}
    pooled, pg = nd.Pooling(p, **pool), arr(8, 20, 12, 12)
    d, w, dg = arr(16, 16, 8, 8), arr(16, 1, 2, 2), arr(16, 1, 16, 16)
    deconv = {"kernel": (2, 2), "stride": (2, 2), "num_filter": 1, "no_bias": True}
    return [
        ("dot (64,512)x(512,10)", lambda: nd.dot(a, b)),
        ("_backward_dot of it", lambda: nd.invoke("_backward_dot", [g, a, b], {})),
        ("batch_dot (32,16,32)x(32,32,16)", lambda: nd.batch_dot(la, lb)),
        ("Pooling max 2x2 (8,20,24,24)", lambda: nd.Pooling(p, **pool)),
        ("_backward_Pooling of it", lambda: nd.invoke("_backward_Pooling", [pg, p, pooled], pool)),
        ("Deconvolution (16,16,8,8) 2x2/2 ->1", lambda: nd.Deconvolution(d, w, **deconv)),
        ("_backward_Deconvolution of it", lambda: nd.invoke("_backward_Deconvolution", [dg, d, w], deconv)),
    ]


def worker(calls):
    from weft import nd
    out = []
    for name, f in cases():
        for _ in range(50):
            f()
        nd.waitall()
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(calls):
            r = f()
            (r[0] if isinstance(r, list) else r).wait_to_read()
        nd.waitall()
        out.append("%s|%.3f|%.3f" % (name, (time.perf_counter() - t0) / calls * 1e6,
                                     (time.process_time() - c0) / calls * 1e6))
    print("\n".join(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--worker", action="store_true")
    args = ap.parse_args()
    if args.worker:
        worker(args.calls)
        return
    info = {}
    for line in open("/proc/cpuinfo"):
        key, _, value = line.partition(":")
        info.setdefault(key.strip(), value.strip())
    print("CPU: %s (family %s, model %s), %d cores; load average at start %.2f %.2f %.2f"
          % (info.get("model name"), info.get("cpu family"), info.get("model"), os.cpu_count(), *os.getloadavg()))
    best = {}
    for _ in range(args.rounds):
        for setting, env in (("estimates", {}), ("to a worker", {"WEFT_ENGINE_INLINE_NS": "0"})):
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", "--calls", str(args.calls)],
                                 env=dict(os.environ, **env), capture_output=True, text=True, check=True).stdout
            for line in out.strip().splitlines():
                name, wall, cpu_us = line.split("|")
                old = best.get((name, setting), (float("inf"), float("inf")))
                best[(name, setting)] = (min(old[0], float(wall)), min(old[1], float(cpu_us)))
    print("us per call (least of %d rounds)         inline: wall    cpu   | worker: wall    cpu   | cpu saved" % args.rounds)
    for name in [n for n, s in best if s == "estimates"]:
        w1, c1 = best[(name, "estimates")]
        w2, c2 = best[(name, "to a worker")]
        print("%-38s %12.1f %7.1f | %12.1f %7.1f | %5.0f %%" % (name, w1, c1, w2, c2, 100 * (1 - c1 / c2)))
    print("load average at end %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
