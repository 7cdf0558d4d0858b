"""The timing loop the benchmarks share, free of any framework (peer.py re-exports it)."""
import time


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
