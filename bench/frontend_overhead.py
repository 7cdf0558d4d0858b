#!/usr/bin/env python3
"""Front-end overhead: one training step of the MLP 784-512-512-10 (executor forward and
backward, an sgd_mom_update per parameter) timed from Python, Go and, when
bench/frontend_step/r_step.R exists, R, each in its own process on the same graph.

    python3 bench/frontend_overhead.py [--batch 128] [--steps 200] [--warmup 20] [--rounds 3]

Every step program takes --batch N --steps K --warmup W and prints one JSON line
{"lang": ..., "ms_per_step": ...}. The languages run in turn, --rounds times; each keeps its
best round (the median is printed beside it). The overhead of a binding is its time per step over Python's, minus one; the
target is under 5 % at batch 128. The Go program is built against this repository's build/
(PKG_CONFIG_PATH=build/pkgconfig), offline. OMP_NUM_THREADS defaults to 1: what differs
between the languages is host time per step, which OpenMP threads contending on a busy
machine would drown in noise (set it to compare with more threads).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
STEPS = os.path.join(HERE, "frontend_step")


def python_exe():
    venv = os.path.join(REPO, ".venv", "bin", "python")
    return venv if os.path.exists(venv) else sys.executable


def go_env(build):
    gobuild = os.path.join(build, "frontends", "go")
    return dict(os.environ, PKG_CONFIG_PATH=os.path.join(build, "pkgconfig"), GOPROXY="off", GOFLAGS="-mod=mod",
                GOCACHE=os.path.join(gobuild, "gocache"), GOPATH=os.path.join(gobuild, "gopath"), CGO_ENABLED="1")


def build_go(build, outdir):
    exe = os.path.join(outdir, "go_step")
    subprocess.run(["go", "build", "-o", exe, "."], cwd=os.path.join(STEPS, "go"), env=go_env(build), check=True)
    return [exe]


def run(cmd, args):
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    out = subprocess.run(cmd + ["--batch", str(args.batch), "--steps", str(args.steps), "--warmup", str(args.warmup)],
                         check=True, capture_output=True, text=True, env=env).stdout
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if not lines:
        raise SystemExit("frontend_overhead: %s printed no JSON line:\n%s" % (" ".join(cmd), out))
    return json.loads(lines[-1])["ms_per_step"]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--build", default=os.path.join(REPO, "build"), help="the build folder (default build/)")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="weft-frontend-bench-")
    try:
        programs = {"python": [python_exe(), os.path.join(STEPS, "python_step.py")],
                    "go": build_go(args.build, tmp)}
        r_step = os.path.join(STEPS, "r_step.R")
        if os.path.exists(r_step) and shutil.which("Rscript"):
            programs["r"] = ["Rscript", r_step]
        times = {lang: [] for lang in programs}
        for _ in range(args.rounds):
            for lang, cmd in programs.items():
                times[lang].append(run(cmd, args))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print("one training step, MLP 784-512-512-10, batch %d, best of %d rounds of %d steps; %s, OMP_NUM_THREADS=%s"
          % (args.batch, args.rounds, args.steps, cpu_model(), os.environ.get("OMP_NUM_THREADS", "1")))
    best = {lang: min(t) for lang, t in times.items()}
    median = {lang: sorted(t)[len(t) // 2] for lang, t in times.items()}
    print("%-8s %12s %12s %14s" % ("binding", "best ms/step", "vs Python", "median ms/step"))
    base = best["python"]
    for lang, ms in best.items():
        rel = "" if lang == "python" else "%+.1f %%" % (100 * (ms / base - 1))
        print("%-8s %12.3f %12s %14.3f" % (lang, ms, rel, median[lang]))
    worst = max((ms / base - 1 for lang, ms in best.items() if lang != "python"), default=0)
    print("binding overhead target: < 5 %% per step at batch 128: %s" % ("met" if worst < 0.05 else "NOT met"))


if __name__ == "__main__":
    main()
