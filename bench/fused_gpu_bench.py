"""Pointwise fusion on a GPU, Weft beside PyTorch in one run: the chain
tanh(exp(sin(x) * 2 - y) + z) over N float32 elements (six operators).

Weft runs it through its executor (build target weft_fused_gpu_bench of a CUDA build) with
fusion on, one NVRTC-compiled kernel, and off, one kernel per operator. PyTorch runs it
eagerly (one kernel per operator) and through torch.compile (Inductor fuses it into one
Triton kernel), when it can. Each figure is milliseconds per forward, the mean over
REPEATS forwards queued back to back and waited for once. 'GB/s' counts the bytes a fused
kernel must move, 16 per element (three inputs read, one output written), so it reads as
a share of the card's memory bandwidth.

Usage: python3 bench/fused_gpu_bench.py BINARY [--n N] [--repeats R]
Needs a GPU and a PyTorch built with CUDA (Debian's is not; the device machines' is)."""
import argparse
import subprocess
import sys
import time


def torch_ms(fn, args, repeats, torch):
    for _ in range(3):
        fn(*args)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        fn(*args)
    torch.cuda.synchronize()
    return 1e3 * (time.perf_counter() - start) / repeats


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("binary", help="path to weft_fused_gpu_bench")
    p.add_argument("--n", type=int, default=1 << 26)
    p.add_argument("--repeats", type=int, default=200)
    a = p.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("fused_gpu_bench: PyTorch is not installed")
    if not torch.cuda.is_available():
        sys.exit("fused_gpu_bench: PyTorch sees no GPU")

    out = subprocess.run([a.binary, str(a.n), str(a.repeats)], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("fused_gpu_bench: %s failed:\n%s%s" % (a.binary, out.stdout, out.stderr))
    rows = {}
    for line in out.stdout.splitlines():
        name, ms = line.split()
        rows["Weft " + name] = float(ms)

    def chain(x, y, z):
        return torch.tanh(torch.exp(torch.sin(x) * 2 - y) + z)

    gen = torch.Generator(device="cuda").manual_seed(0)
    xs = [torch.rand(a.n, device="cuda", generator=gen) for _ in range(3)]
    with torch.no_grad():
        rows["PyTorch eager"] = torch_ms(chain, xs, a.repeats, torch)
        try:
            rows["PyTorch compiled"] = torch_ms(torch.compile(chain), xs, a.repeats, torch)
        except Exception as e:  # Inductor needs a working Triton; eager stands on its own
            print("torch.compile failed (%s); compiled row left out" % type(e).__name__)

    print("%s, N = %d float32, torch %s" % (torch.cuda.get_device_name(), a.n, torch.__version__))
    print("%-18s %10s %8s %16s" % ("run", "ms", "GB/s", "Weft fused / it"))
    fused = rows["Weft fused"]
    for name, ms in rows.items():
        print("%-18s %10.4f %8.0f %16.2f" % (name, ms, 16.0 * a.n / ms / 1e6, ms / fused))


if __name__ == "__main__":
    main()
