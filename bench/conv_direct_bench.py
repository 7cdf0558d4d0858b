"""Weft's Convolution on the convolution layers of ResNet-50 (batch 32, 224x224, the
shapes of bench/models.py: the 7x7 stem and every distinct 1x1 and 3x3 layer) against
oneDNN called directly (weft_conv_direct_bench, the C++ program of
bench/conv_direct_bench.cc) and PyTorch, same thread count, float32.

Per layer: GFLOP/s of each, Weft's share of the machine's FP32 peak (timing.peak_flops:
455 GFLOP/s on 2 AVX-512 cores, 157 on 2 AVX2 cores at 2.45 GHz) and Weft's speed as a fraction of oneDNN's (direct time / Weft time, so 1.0
is parity; the issue asks for >= 0.9). oneDNN is timed twice: "dnnl" with every tensor in
its own blocked layout (the best case, what a graph that keeps blocked layouts between
layers sees) and "dnnl-nchw" reading and writing plain NCHW arrays with the reorders timed
(what an operator on plain arrays can reach). Weft is timed through weft.nd, steady state
(primitives cached after the warm-up call). The last row weighs each layer by how often it
occurs in ResNet-50.

With --train, the backward (_backward_Convolution, data + weight gradients) is timed too,
against oneDNN's backward-data + backward-weights on blocked layouts.

The three are timed layer by layer, one after the other, so that a machine shared with
other jobs loads them alike. With --cpu the clock is the process's CPU time divided by the
thread count (2) instead of the wall clock: on a loaded machine that estimates the unloaded
figures (it leaves out the time the threads spent descheduled), where the wall clock
mostly measures the load.

Usage: /usr/bin/python3 bench/conv_direct_bench.py [--bin PATH] [--train] [--seconds S]
       [--only SUBSTRING] [--cpu]
The binary is built with: cmake --build <dir> --target weft_conv_direct_bench; by default
it is looked for in the build directory whose python/ holds the weft package imported,
then in the repository's build/.
"""
import argparse
import os
import subprocess
import sys
import time

import peer  # noqa: F401  (first: it sets the environment the libraries read)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import weft  # noqa: E402
from weft import nd  # noqa: E402
from timing import peak_flops  # noqa: E402

PEAK = peak_flops()[0]  # this machine's FP32 peak (timing.py)
BATCH = 32
THREADS = 2  # torch.set_num_threads(2) in peer; oneDNN's OpenMP pool on these 2 cores
# (name, count in ResNet-50, in channels, height/width, out channels, kernel, stride, pad)
LAYERS = [
    ("stem 7x7/2 3->64", 1, 3, 224, 64, 7, 2, 3),
    ("s0 1x1 64->64", 1, 64, 56, 64, 1, 1, 0),
    ("s0 3x3 64->64", 3, 64, 56, 64, 3, 1, 1),
    ("s0 1x1 64->256", 4, 64, 56, 256, 1, 1, 0),
    ("s0 1x1 256->64", 2, 256, 56, 64, 1, 1, 0),
    ("s1 1x1 256->128", 1, 256, 56, 128, 1, 1, 0),
    ("s1 3x3/2 128->128", 1, 128, 56, 128, 3, 2, 1),
    ("s1 1x1/2 256->512", 1, 256, 56, 512, 1, 2, 0),
    ("s1 3x3 128->128", 3, 128, 28, 128, 3, 1, 1),
    ("s1 1x1 128->512", 4, 128, 28, 512, 1, 1, 0),
    ("s1 1x1 512->128", 3, 512, 28, 128, 1, 1, 0),
    ("s2 1x1 512->256", 1, 512, 28, 256, 1, 1, 0),
    ("s2 3x3/2 256->256", 1, 256, 28, 256, 3, 2, 1),
    ("s2 1x1/2 512->1024", 1, 512, 28, 1024, 1, 2, 0),
    ("s2 3x3 256->256", 5, 256, 14, 256, 3, 1, 1),
    ("s2 1x1 256->1024", 6, 256, 14, 1024, 1, 1, 0),
    ("s2 1x1 1024->256", 5, 1024, 14, 256, 1, 1, 0),
    ("s3 1x1 1024->512", 1, 1024, 14, 512, 1, 1, 0),
    ("s3 3x3/2 512->512", 1, 512, 14, 512, 3, 2, 1),
    ("s3 1x1/2 1024->2048", 1, 1024, 14, 2048, 1, 2, 0),
    ("s3 3x3 512->512", 2, 512, 7, 512, 3, 1, 1),
    ("s3 1x1 512->2048", 3, 512, 7, 2048, 1, 1, 0),
    ("s3 1x1 2048->512", 2, 2048, 7, 512, 1, 1, 0),
]


def out_size(size, k, s, p):
    return (size + 2 * p - k) // s + 1


def flops(layer):
    _, _, cin, size, cout, k, s, p = layer
    o = out_size(size, k, s, p)
    return 2.0 * BATCH * cout * cin * k * k * o * o


def spec(layer):
    _, _, cin, size, cout, k, s, p = layer
    return "%d,%d,%d,%d,%d,%d,%d,%d" % (BATCH, cin, size, size, cout, k, s, p)


def default_bin():
    # weft imported from <build>/python/weft: the program sits in <build>; imported from the
    # venv tools/build.sh installs into, it sits in the repository's build/.
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(weft.__file__))))
    here = os.path.join(build, "weft_conv_direct_bench")
    repo_build = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build",
                              "weft_conv_direct_bench")
    return here if os.path.exists(here) or not os.path.exists(repo_build) else repo_build


def direct_times(binary, layers, seconds, cpu):
    """{spec: (fwd, fwd_plain, bwd_data, bwd_wei)} in seconds from the C++ program."""
    clock = ["-c", str(THREADS)] if cpu else []
    proc = subprocess.run([binary, "-t", str(seconds)] + clock + [spec(l) for l in layers], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        sys.exit("weft_conv_direct_bench failed (%d): %s" % (proc.returncode, proc.stderr.strip()))
    times = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        times[parts[0]] = tuple(float(v) / 1e3 for v in parts[1:])
    return times


def seconds_per_call(run, min_seconds, cpu):
    """peer.seconds_per_call, or the same loop on the process's CPU time / THREADS."""
    if not cpu:
        return peer.seconds_per_call(run, min_seconds, 3)
    run()
    count, start = 0, time.process_time()
    while True:
        run()
        count += 1
        elapsed = (time.process_time() - start) / THREADS
        if elapsed >= min_seconds and count >= 3:
            return elapsed / count


def weft_and_torch_times(layer, seconds, train, cpu):
    _, _, cin, size, cout, k, s, p = layer
    rng = np.random.RandomState(0)
    x_np = rng.uniform(-1, 1, (BATCH, cin, size, size)).astype(np.float32)
    w_np = rng.uniform(-0.1, 0.1, (cout, cin, k, k)).astype(np.float32)
    params = dict(kernel=(k, k), stride=(s, s), pad=(p, p), num_filter=cout, no_bias=True)
    x, w = nd.array(x_np), nd.array(w_np)
    y = nd.Convolution(x, w, **params)
    ref = F.conv2d(torch.tensor(x_np), torch.tensor(w_np), stride=s, padding=p)
    # A benchmark of wrong results would be worthless: check before timing.
    np.testing.assert_allclose(y.asnumpy(), ref.numpy(), rtol=1e-3, atol=1e-3)
    xt, wt = torch.tensor(x_np), torch.tensor(w_np)

    def weft_fwd():
        nd.Convolution(x, w, out=y, **params)
        nd.waitall()

    def torch_fwd():
        with torch.no_grad():
            F.conv2d(xt, wt, stride=s, padding=p)

    res = {"weft": seconds_per_call(weft_fwd, seconds, cpu),
           "torch": seconds_per_call(torch_fwd, seconds, cpu)}
    if train:
        og = nd.array(rng.uniform(-1, 1, y.shape).astype(np.float32))
        dx, dw = nd.zeros(x.shape), nd.zeros(w.shape)

        def weft_bwd():
            nd.invoke("_backward_Convolution", [og, x, w], params, out=[dx, dw])
            nd.waitall()
        res["weft_bwd"] = seconds_per_call(weft_bwd, seconds, cpu)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=None, help="path of weft_conv_direct_bench")
    ap.add_argument("--train", action="store_true", help="also time the backward")
    ap.add_argument("--seconds", type=float, default=0.5, help="minimum timing per figure")
    ap.add_argument("--only", default="", help="only layers whose name contains this")
    ap.add_argument("--cpu", action="store_true", help="time on CPU time / threads instead of the wall clock")
    args = ap.parse_args()
    binary = args.bin or default_bin()
    if not os.path.exists(binary):
        sys.exit("no %s: build it with cmake --build <dir> --target weft_conv_direct_bench, or pass --bin"
                 % binary)
    layers = [l for l in LAYERS if args.only in l[0]]

    head = "%-22s %3s %9s %6s %9s %9s %7s %10s %7s %9s" % (
        "layer (batch 32)", "n", "weft GF/s", "%peak", "dnnl GF/s", "dnnl-nchw", "w/dnnl", "w/dnnl-nchw",
        "torch", "w/torch")
    if args.train:
        head += " %10s %9s %7s" % ("bwd GF/s", "dnnl bwd", "w/dnnl")
    print("clock: %s; load average %.1f" % ("CPU time / %d threads" % THREADS if args.cpu else "wall",
                                              os.getloadavg()[0]))
    print(head)
    tot = {"weft": 0.0, "dnnl": 0.0, "plain": 0.0, "torch": 0.0, "flops": 0.0, "bwd": 0.0, "dbwd": 0.0}
    for layer in layers:
        name, count = layer[0], layer[1]
        f = flops(layer)
        d_fwd, d_plain, d_bd, d_bw = direct_times(binary, [layer], args.seconds, args.cpu)[spec(layer)]
        t = weft_and_torch_times(layer, args.seconds, args.train, args.cpu)
        line = "%-22s %3d %9.1f %5.0f%% %9.1f %9.1f %7.2f %10.2f %7.1f %9.2f" % (
            name, count, f / t["weft"] / 1e9, 100 * f / t["weft"] / PEAK, f / d_fwd / 1e9, f / d_plain / 1e9,
            d_fwd / t["weft"], d_plain / t["weft"], f / t["torch"] / 1e9, t["torch"] / t["weft"])
        if args.train:
            line += " %10.1f %9.1f %7.2f" % (2 * f / t["weft_bwd"] / 1e9, 2 * f / (d_bd + d_bw) / 1e9,
                                             (d_bd + d_bw) / t["weft_bwd"])
            tot["bwd"] += count * t["weft_bwd"]
            tot["dbwd"] += count * (d_bd + d_bw)
        print(line, flush=True)
        tot["weft"] += count * t["weft"]
        tot["dnnl"] += count * d_fwd
        tot["plain"] += count * d_plain
        tot["torch"] += count * t["torch"]
        tot["flops"] += count * f
    f = tot["flops"]
    line = "%-22s %3s %9.1f %5.0f%% %9.1f %9.1f %7.2f %10.2f %7.1f %9.2f" % (
        "ResNet-50 weighted", "", f / tot["weft"] / 1e9, 100 * f / tot["weft"] / PEAK, f / tot["dnnl"] / 1e9,
        f / tot["plain"] / 1e9, tot["dnnl"] / tot["weft"], tot["plain"] / tot["weft"], f / tot["torch"] / 1e9,
        tot["torch"] / tot["weft"])
    if args.train:
        line += " %10.1f %9.1f %7.2f" % (2 * f / tot["bwd"] / 1e9, 2 * f / tot["dbwd"] / 1e9, tot["dbwd"] / tot["bwd"])
    print(line)
    print("load average %.1f" % os.getloadavg()[0])


if __name__ == "__main__":
    main()
