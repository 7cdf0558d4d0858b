"""One report of Weft against its peers on this machine.

Runs the whole-network, training, operator, IO and key-value store benchmarks of bench/
one after the other (about 15 minutes on 2 cores; each in processes of its own, as each
script already arranges), collects the figures they hand to timing.record, and writes

    bench/results/<cpu-model>/report.md      the CPU, its measured FP32 peak, the load
                                             average, library versions, the peer's set-up,
                                             and a table per benchmark
    bench/results/<cpu-model>/<bench>.png    Weft's speed relative to the peer per case
    bench/results/<cpu-model>/logs/          each benchmark's own output

Usage (after `bash tools/setup_deps.sh --bench` and `tools/build.sh`):

    .venv/bin/python bench/report.py                 # everything
    .venv/bin/python bench/report.py --only dot,nets # the benchmarks whose name contains these
    .venv/bin/python bench/report.py --quick         # shorter timings, for trying it out
    .venv-avx2/bin/python bench/report.py --isa avx2 --build build-avx2
        # as on an AVX2 machine: Weft built with -DWEFT_MARCH=x86-64-v3 into build-avx2 and
        # installed into .venv-avx2; oneDNN (both sides), ATen and OpenBLAS capped at AVX2;
        # written to bench/results/<cpu-model>-avx2/

A benchmark that fails or times out is reported as such with the end of its output; the
others still run. Figures move 20-50 % between runs on a busy machine: the load average at
the start and the end of each benchmark is in the report.
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)

# name, script, arguments (full run), arguments (--quick), timeout in seconds, what it is
BENCHMARKS = [
    ("nets", "nets_bench.py", ["--seconds", "2"], ["--seconds", "0.5", "--only", "infer"], 900,
     "whole networks: inference and training images/s"),
    ("training", "training_bench.py", ["--rounds", "3"],
     ["--rounds", "1", "--steps", "30", "--skip-time-to-accuracy", "--skip-conv-layers"], 900,
     "MLP and LeNet training steps (Gluon, Module) and LeNet's time to accuracy"),
    ("op_overhead", "op_overhead.py", [], [], 300, "per-operator overhead from Python"),
    ("dot", "dot.py", [], [], 300, "matrix products"),
    ("conv", "conv_bench.py", [], [], 600, "convolution and pooling layers of ResNets"),
    ("fc", "fc_bench.py", [], [], 300, "FullyConnected layers"),
    ("norm", "norm_bench.py", [], [], 300, "batch norm, softmax, relu"),
    ("rnn", "rnn_bench.py", ["--rounds", "2"], ["--rounds", "1", "--seconds", "0.3"], 600, "LSTM and GRU layers"),
    ("elemwise", "elemwise_bandwidth.py", [], [], 300, "elementwise bandwidth"),
    ("executor", "executor_overhead.py", [], [], 300, "executor overhead on a graph of tiny nodes"),
    ("fusion", "fusion_bench.py", [], [], 300, "a fused pointwise chain"),
    ("mnist_iter", "mnist_iter_bench.py", [], [], 300, "MNISTIter against a PyTorch DataLoader"),
    ("image_record", "image_record_bench.py", ["--count", "1000"], ["--count", "200"], 600,
     "ImageRecordIter against torchvision's ImageFolder"),
    ("kvstore", "kvstore_bench.py", ["--no-mlp"], ["--no-mlp"], 600, "dist_sync push/pull against raw ZeroMQ"),
    ("memory", "memory_plan.py", [], None, 900, "executor memory planning and ResNet-50's training peak"),
]


def cpu_info():
    info = {"name": "unknown CPU", "family": "?", "model": "?", "flags": set(),
            "cores": len(os.sched_getaffinity(0))}
    keys = {"model name": "name", "cpu family": "family", "model": "model"}
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            key = key.strip()
            if key in keys and info[keys[key]] in ("unknown CPU", "?"):
                info[keys[key]] = value.strip()
            elif key == "flags" and not info["flags"]:
                info["flags"] = set(value.split())
    return info


def isa_summary(flags):
    names = [("avx512f", "AVX-512"), ("avx512_vnni", "VNNI"), ("avx512_bf16", "AVX512-BF16"), ("amx_tile", "AMX"),
             ("avx2", "AVX2"), ("fma", "FMA")]
    return ", ".join(label for flag, label in names if flag in flags)


def slug(text):
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "cpu"


def measured_peak(build):
    """The FP32 peak weft_fma_peak measures (GFLOP/s), building it in `build` when needed
    (with that build's instruction set), or None."""
    binary = os.path.join(build, "weft_fma_peak")
    if not os.path.exists(binary):
        subprocess.run(["cmake", "--build", build, "--target", "weft_fma_peak"], capture_output=True, check=False)
    if not os.path.exists(binary):
        return None, "weft_fma_peak could not be built"
    out = subprocess.run([binary], capture_output=True, text=True, timeout=300).stdout
    numbers = re.findall(r"([0-9.]+)\s*GFLOP/s", out)
    return (float(numbers[-1]), out.strip().splitlines()[-1]) if numbers else (None, out.strip())


def versions():
    code = ("import peer, json, numpy, torch, weft\n"
            "f = weft.runtime.Features()\n"
            "print(json.dumps({'weft': weft.__version__, 'numpy': numpy.__version__, 'torch': torch.__version__,"
            " 'weft features': ', '.join(n for n in ('MKLDNN', 'CUDA', 'CUDNN', 'OPENMP', 'DIST_KVSTORE')"
            " if f.is_enabled(n))}))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=BENCH, timeout=300)
    lines = proc.stdout.strip().splitlines()
    try:
        found = json.loads(lines[-1])
    except (ValueError, IndexError):
        found = {"error": proc.stderr.strip()[-500:]}
    found["peer"] = [l for l in lines[:-1] if l.startswith("peer:")]
    return found


def run_benchmark(name, script, args, timeout, logs, record_path):
    env = dict(os.environ, WEFT_BENCH_RECORD=record_path)
    start_load = os.getloadavg()
    tic = time.time()
    try:
        proc = subprocess.run([sys.executable, os.path.join(BENCH, script)] + args, capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=BENCH)
        status = "ok" if proc.returncode == 0 else "failed (exit %d)" % proc.returncode
        output = proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as e:
        status = "timed out after %d s" % timeout
        output = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
    with open(os.path.join(logs, name + ".txt"), "w") as f:
        f.write(output)
    return {"status": status, "seconds": time.time() - tic, "load": (start_load, os.getloadavg()),
            "tail": "\n".join(output.strip().splitlines()[-15:])}


def read_records(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def fmt(v):
    if v is None:
        return "-"
    return "%.3g" % v if abs(v) < 100 else "%.0f" % v


def chart(name, records, out_dir):
    """A horizontal bar per case: Weft's speed over the peer's (1 = as fast)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for r in records if r.get("speedup")]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(rows) + 1.2))
    values = [r["speedup"] for r in rows]
    ax.barh(range(len(rows)), values, color=["#2a9d8f" if v >= 1 else "#e76f51" for v in values])
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r["case"][:48] for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("Weft speed / peer speed (above 1: Weft faster)")
    ax.set_title(name)
    fig.tight_layout()
    path = os.path.join(out_dir, name + ".png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return os.path.basename(path)


def isa_cap_problem(isa):
    """Why this interpreter's Weft cannot run capped at `isa` (built for a wider one), or None."""
    code = "import weft._build_info as b; print(int('__AVX512F__' in b.ISA_MACROS))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=BENCH)
    if out.returncode != 0:
        return "could not read how its Weft was built: " + out.stderr.strip()[-300:]
    if out.stdout.strip() == "1":
        return ("the Weft of %s was compiled for AVX-512: build one with -DWEFT_MARCH=x86-64-v3 and install it "
                "into another environment (see this script's usage)" % sys.executable)
    return None


def write_report(out_dir, cpu, peak, vers, results, records_by_bench, quick, isa):
    lines = ["# Weft against its peers on %s" % cpu["name"], "",
             "Written by `bench/report.py`%s on %s." % (" --quick" if quick else "",
                                                     datetime.datetime.now().strftime("%Y-%m-%d %H:%M")), "",
             "| | |", "| --- | --- |",
             "| CPU | %s (family %s, model %s), %d cores; %s |" % (cpu["name"], cpu["family"], cpu["model"],
                                                                 cpu["cores"], isa_summary(cpu["flags"])),
             "| FP32 peak (`weft_fma_peak`) | %s |" % ("%.0f GFLOP/s" % peak[0] if peak[0] else peak[1]),
             ]
    if isa:
        lines.append("| instruction set | capped at %s on both sides, as on an %s machine: Weft compiled without "
                     "AVX-512, ONEDNN_MAX_CPU_ISA=%s for its oneDNN and PyTorch's, ATEN_CPU_CAPABILITY=%s, "
                     "OpenBLAS's core from the capped flags (the cores, caches and clocks are this CPU's) |"
                     % (isa.upper(), isa.upper(), isa.upper(), isa))
    lines.append("| versions | Weft %s (%s); PyTorch %s; numpy %s |" % (vers.get("weft"), vers.get("weft features"),
                                                                     vers.get("torch"), vers.get("numpy")))
    for p in vers.get("peer", []):
        lines.append("| peer | %s |" % p[len("peer: "):])
    lines += ["", "Speed is Weft's over the peer's: above 1, Weft is faster (for times and memory, the peer's "
              "value over Weft's). The load average is the 1-minute one at the start and end of each benchmark.",
              ""]
    for name, _, _, _, _, what in BENCHMARKS:
        if name not in results:
            continue
        r = results[name]
        recs = records_by_bench.get(name, [])
        lines += ["## %s: %s" % (name, what), "",
                  "%s in %.0f s; load %.2f -> %.2f." % (r["status"], r["seconds"], r["load"][0][0], r["load"][1][0]),
                  ""]
        if recs:
            notes = any(rec.get("note") for rec in recs)
            lines += ["| case | Weft | peer | unit | Weft speed / peer |%s" % (" note |" if notes else ""),
                      "| --- | ---: | ---: | --- | ---: |%s" % (" --- |" if notes else "")]
            for rec in recs:
                lines.append("| %s | %s | %s | %s | %s |%s" % (rec["case"], fmt(rec["weft"]), fmt(rec["peer"]), rec["unit"],
                                                              "%.2f" % rec["speedup"] if rec["speedup"] else "-",
                                                              (" %s |" % rec.get("note", "")) if notes else ""))
            picture = chart(name, recs, out_dir)
            if picture:
                lines += ["", "![%s](%s)" % (name, picture)]
        if r["status"] != "ok":
            lines += ["", "```", r["tail"], "```"]
        lines.append("")
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma-separated parts of benchmark names to run")
    ap.add_argument("--quick", action="store_true", help="shorter timings and fewer cases, to try the report out")
    ap.add_argument("--out", default="", help="output folder (default bench/results/<cpu-model>[-<isa>])")
    ap.add_argument("--isa", choices=("avx2",), help="cap every framework at this instruction set")
    ap.add_argument("--build", default=os.path.join(REPO, "build"),
                    help="the build folder whose weft_fma_peak measures the peak (default build/)")
    args = ap.parse_args()
    if args.isa:
        problem = isa_cap_problem(args.isa)
        if problem:
            sys.exit("report.py --isa %s: %s" % (args.isa, problem))
        os.environ["WEFT_BENCH_ISA"] = args.isa
        sys.path.insert(0, BENCH)
        import peer_env
        os.environ.update(peer_env.capped_environment())

    cpu = cpu_info()
    model = "%s-family-%s-model-%s" % (cpu["name"], cpu["family"], cpu["model"])
    out_dir = args.out or os.path.join(BENCH, "results", slug(model) + ("-" + args.isa if args.isa else "")
                                       + ("-quick" if args.quick else ""))
    logs = os.path.join(out_dir, "logs")
    os.makedirs(logs, exist_ok=True)
    wanted = [w for w in args.only.split(",") if w]
    peak = measured_peak(os.path.abspath(args.build))
    print("CPU: %s, %d cores; FP32 peak: %s" % (cpu["name"], cpu["cores"],
                                                "%.0f GFLOP/s" % peak[0] if peak[0] else peak[1]), flush=True)
    vers = versions()
    results, records_by_bench = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, script, full, quick, timeout, _ in BENCHMARKS:
            if wanted and not any(w in name for w in wanted):
                continue
            bench_args = quick if args.quick else full
            if bench_args is None:
                continue
            if name == "nets" and peak[0]:
                bench_args = bench_args + ["--peak", str(peak[0])]
            record_path = os.path.join(tmp, name + ".jsonl")
            print("running %s ..." % script, flush=True)
            results[name] = run_benchmark(name, script, bench_args, timeout, logs, record_path)
            records_by_bench[name] = read_records(record_path)
            print("  %s in %.0f s, %d figures" % (results[name]["status"], results[name]["seconds"],
                                                 len(records_by_bench[name])), flush=True)
    write_report(out_dir, cpu, peak, vers, results, records_by_bench, args.quick, args.isa)
    print("wrote %s" % os.path.join(out_dir, "report.md"))


if __name__ == "__main__":
    main()
