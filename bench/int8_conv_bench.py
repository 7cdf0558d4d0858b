"""Weft's int8 convolution (_contrib_quantized_conv on oneDNN's u8s8 kernels, requantized to
uint8 in the same pass, relu fused) against Weft's float32 Convolution on ResNet-50
layers, side by side through weft.nd: milliseconds per call, GOP/s and float32 time / int8
time (GOP/s count a direct convolution's operations; float32's 3x3 layers run Winograd from
batch 4, which does fewer, so their figure can pass the FMA peak). Both take and give
plain NCHW arrays, so the int8 figure includes the reorders to
and from oneDNN's int8 layout and the reorder of the weights, which the operator does at
every call. Prints the CPU, its VNNI flag and the load, since figures on a shared machine
mean little without them. With --cpu the clock is the process's CPU time divided by
OMP_NUM_THREADS instead of the wall clock: on a loaded machine that leaves out the time the
threads spent descheduled (run it with OMP_NUM_THREADS=1 there: spinning OpenMP threads
count as CPU time).

Usage: .venv/bin/python bench/int8_conv_bench.py [--batch N] [--seconds S] [--only SUBSTRING] [--cpu]
"""
import argparse
import os
import time

import numpy as np

import weft as mx
from timing import record, seconds_per_call

# (name, in channels, height/width, out channels, kernel, stride, pad)
LAYERS = [
    ("s0 3x3 64->64", 64, 56, 64, 3, 1, 1),
    ("s1 3x3 128->128", 128, 28, 128, 3, 1, 1),
    ("s2 3x3 256->256", 256, 14, 256, 3, 1, 1),
    ("s2 1x1 256->1024", 256, 14, 1024, 1, 1, 0),
    ("s3 3x3 512->512", 512, 7, 512, 3, 1, 1),
]


def cpu():
    name, vnni = "?", False
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and name == "?":
                name = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                vnni = "avx512_vnni" in line.split()
    return name, vnni


def cpu_seconds_per_call(run, min_seconds):
    """Process CPU seconds per call of run() over the threads OpenMP uses, after a warm-up."""
    run()
    threads = int(os.environ.get("OMP_NUM_THREADS", "0") or 0) or len(os.sched_getaffinity(0))
    count, start = 0, time.process_time()
    while time.process_time() - start < min_seconds * threads or count < 2:
        run()
        count += 1
    return (time.process_time() - start) / threads / count


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--only", default="")
    ap.add_argument("--cpu", action="store_true", help="time by process CPU time (see the module doc)")
    args = ap.parse_args()
    timer = cpu_seconds_per_call if args.cpu else seconds_per_call
    name, vnni = cpu()
    print("CPU: %s (avx512_vnni: %s), OMP_NUM_THREADS=%s, load average %.1f, batch %d, clock: %s"
          % (name, "yes" if vnni else "no", os.environ.get("OMP_NUM_THREADS", "unset"), os.getloadavg()[0],
             args.batch, "process CPU time" if args.cpu else "wall"))
    print("%-20s %10s %10s %10s %10s %8s" % ("layer", "f32 ms", "int8 ms", "f32 GOP/s", "int8 GOP/s", "f32/int8"))
    rng = np.random.RandomState(0)
    for lname, c, hw, f, k, s, p in LAYERS:
        if args.only not in lname:
            continue
        x = rng.uniform(0, 1, (args.batch, c, hw, hw)).astype(np.float32)
        w = rng.uniform(-0.1, 0.1, (f, c, k, k)).astype(np.float32)
        b = rng.uniform(-0.1, 0.1, (f,)).astype(np.float32)
        conv = dict(kernel=(k, k), stride=(s, s), pad=(p, p), num_filter=f)
        xf, wf, bf = mx.nd.array(x), mx.nd.array(w), mx.nd.array(b)

        def run_f32():
            mx.nd.Activation(mx.nd.Convolution(xf, wf, bf, **conv), act_type="relu").wait_to_read()

        qx = mx.nd.contrib.quantize_v2(xf, out_type="uint8", min_calib_range=0.0, max_calib_range=1.0)
        qw = mx.nd.contrib.quantize_v2(wf, out_type="int8")
        qb = mx.nd.contrib.quantize_v2(bf, out_type="int8")
        ref = mx.nd.Convolution(xf, wf, bf, **conv).asnumpy()
        calib = dict(min_calib_range=0.0, max_calib_range=float(ref.max()), with_relu=True)
        inputs = [qx[0], qw[0], qb[0], qx[1], qx[2], qw[1], qw[2], qb[1], qb[2]]

        def run_int8():
            mx.nd.contrib.quantized_conv(*inputs, **conv, **calib)[0].wait_to_read()

        f32 = timer(run_f32, args.seconds)
        i8 = timer(run_int8, args.seconds)
        oh = (hw + 2 * p - k) // s + 1
        ops = 2.0 * args.batch * f * oh * oh * c * k * k
        print("%-20s %10.3f %10.3f %10.1f %10.1f %8.2f"
              % (lname, f32 * 1e3, i8 * 1e3, ops / f32 / 1e9, ops / i8 / 1e9, f32 / i8))
        record("%s batch %d" % (lname, args.batch), i8 * 1e3, f32 * 1e3, "ms (peer: Weft float32)", False)


if __name__ == "__main__":
    main()
