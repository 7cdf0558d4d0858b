"""The timing loop the benchmarks share, free of any framework (peer.py re-exports it),
and `record`, through which each benchmark hands its figures to bench/report.py."""
import json
import os
import sys
import time


def record(case, weft, peer, unit, higher_is_better, note=None):
    """Appends one figure (Weft's and its peer's value of `case`, in `unit`) as a JSON line
    to the file $WEFT_BENCH_RECORD names; does nothing when it is unset. The speed ratio
    (above 1: Weft is faster) is worked out from higher_is_better; `note` is a short remark
    the report prints beside the figure."""
    path = os.environ.get("WEFT_BENCH_RECORD")
    if not path:
        return
    speedup = (weft / peer if higher_is_better else peer / weft) if weft and peer else None
    entry = {"bench": os.path.splitext(os.path.basename(sys.argv[0]))[0], "case": case, "unit": unit,
             "weft": weft, "peer": peer, "higher_is_better": higher_is_better, "speedup": speedup}
    if note:
        entry["note"] = note
    with open(path, "a") as f:
        f.write(json.dumps(entry) + "\n")


def seconds_per_call(run, min_seconds=1.0, min_runs=1, sync=None):
    """Seconds per call of run(): one warm-up call, then calls until both min_seconds and
    min_runs are reached; sync(), when given, runs after each call inside the timing."""
    run()
    if sync:
        sync()
    count, start = 0, time.perf_counter()
    while True:
        run()
        if sync:
            sync()
        count += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds and count >= min_runs:
            return elapsed / count


def peak_flops():
    """This machine's FP32 peak in FLOP/s and how it was reckoned: cores x FMA lanes (16
    floats with AVX-512, 8 with AVX2) x 2 FMA units x 2 FLOP x the clock /proc/cpuinfo
    gives. The 2-core AVX-512 machine the issues were written on comes to about 455 GFLOP/s,
    a 2-core AVX2 one at 2.45 GHz to 157 (where oneDNN's sgemm reaches 155). The clock
    /proc/cpuinfo shows can be below the one the cores run at: the C++ program
    weft_fma_peak (bench/fma_peak.cc) measures what they sustain (175-202 GFLOP/s on that
    AVX2 machine); nets_bench.py --peak takes its figure."""
    import os
    flags, mhz = set(), 0.0
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
            elif line.startswith("cpu MHz") and not mhz:
                mhz = float(line.split(":", 1)[1])
    lanes = 16 if "avx512f" in flags else 8 if "fma" in flags else 4
    cores = len(os.sched_getaffinity(0))
    peak = cores * lanes * 2 * 2 * mhz * 1e6
    return peak, "%d cores x %d lanes x 2 FMA units x 2 x %.0f MHz" % (cores, lanes, mhz)
