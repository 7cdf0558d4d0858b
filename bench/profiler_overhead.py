"""What the profiler costs: one LeNet training step (forward, backward, SGD update of every
parameter, batch 64 of 1x28x28, through a bound executor), timed with the profiler off and
on (profile_all, aggregate statistics, no periodic dump thread), rounds interleaved so that
both see the same machine, best round of each. The issue's bound: on / off under 1.05.

Two clocks: wall time per step, and the CPU time the whole process (engine workers
included) spends per step. On a machine shared with other work the wall time swings with
the load, while the CPU time stays put: read the CPU ratio there.

    .venv/bin/python bench/profiler_overhead.py [--rounds 7] [--steps 30]
"""
import argparse
import os
import platform
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import peer_env  # noqa: E402

os.environ.update(peer_env.environment())

import numpy as np  # noqa: E402

import weft as mx  # noqa: E402
from models import lenet  # noqa: E402

BATCH = 64


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def build():
    net = lenet()
    exe = net.simple_bind(mx.cpu(), data=(BATCH, 1, 28, 28), softmax_label=(BATCH,), grad_req="write")
    rng = np.random.default_rng(0)
    for name, arr in exe.arg_dict.items():
        if name == "data":
            arr[:] = rng.standard_normal(arr.shape).astype(np.float32)
        elif name == "softmax_label":
            arr[:] = rng.integers(0, 10, arr.shape).astype(np.float32)
        else:
            arr[:] = (rng.standard_normal(arr.shape) * 0.05).astype(np.float32)
    params = [(exe.arg_dict[n], exe.grad_dict[n]) for n in net.list_arguments() if n not in ("data", "softmax_label")]

    def step():
        exe.forward(is_train=True)
        exe.backward()
        for w, g in params:
            mx.nd.sgd_update(w, g, lr=0.01, rescale_grad=1.0 / BATCH, out=w)
        mx.nd.waitall()
    return step


def seconds_per_step(step, steps):
    """(wall, CPU) seconds per step."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        step()
    return (time.perf_counter() - wall) / steps, (time.process_time() - cpu) / steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()
    step = build()
    for _ in range(5):
        step()
    trace = os.path.join(tempfile.mkdtemp(), "profile.json")
    mx.profiler.set_config(profile_all=True, aggregate_stats=True, continuous_dump=False, filename=trace)
    off, on = [], []
    for _ in range(args.rounds):
        off.append(seconds_per_step(step, args.steps))
        mx.profiler.set_state("run")
        on.append(seconds_per_step(step, args.steps))
        mx.profiler.set_state("stop")
    mx.profiler.dump(finished=True)
    size = os.path.getsize(trace)
    os.remove(trace)
    w_off, w_on = min(t[0] for t in off), min(t[0] for t in on)
    c_off, c_on = min(t[1] for t in off), min(t[1] for t in on)
    print("LeNet training step, batch %d, %s, %d cores, load average %.1f (best of %d rounds x %d steps)"
          % (BATCH, cpu_model(), len(os.sched_getaffinity(0)), os.getloadavg()[0], args.rounds, args.steps))
    print("%-34s %14s %14s" % ("", "wall ms/step", "CPU ms/step"))
    print("%-34s %14.3f %14.3f" % ("profiler off", w_off * 1e3, c_off * 1e3))
    print("%-34s %14.3f %14.3f" % ("profiler on (profile_all, stats)", w_on * 1e3, c_on * 1e3))
    print("on / off: wall %.3f, CPU %.3f   (bound: < 1.05)   trace of the on rounds: %.1f MB"
          % (w_on / w_off, c_on / c_off, size / 1e6))


if __name__ == "__main__":
    main()
