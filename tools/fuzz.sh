#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang, ASan and UBSan (into build-asan/,
# the same build CI runs the C++ suite under sanitizers from) and runs each one.
#
#   bash tools/fuzz.sh --smoke          # what CI runs: every target replays its corpus, then
#                                       # makes 3000 inputs of its own from a fixed seed
#   bash tools/fuzz.sh 3600             # every target for an hour
#   bash tools/fuzz.sh 600 fuzz_c_api   # one target for ten minutes
#
# Each target starts from its seeds in tests/fuzz/corpus/<target>/ and grows a working
# corpus in build-asan/fuzz-work/<target>/ (not committed). A crash, a sanitizer report, a
# leak or a timeout stops the target and leaves the input as build-asan/fuzz-work/
# <target>/crash-*: fix the defect, then copy the input into tests/fuzz/corpus/<target>/
# as regression_<what>, so every later run (and CI) replays it. The last line sums up the
# runs of every target; the exit status is non-zero when any target found something.
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$repo/build-asan"
export CCACHE_BASEDIR="$repo"
export CCACHE_NOHASHDIR=1

# The smoke is the same run every time (a seed and a number of inputs, not a time), so that
# CI passes or fails on the code, not on how busy the machine is; long runs are timed and
# random, to find what nobody has seen.
budget=(-seed=1 -runs=3000)
case "${1:-}" in
  --smoke | "") ;;
  *[!0-9]*) echo "fuzz.sh: expected --smoke or a number of seconds, got '$1'" >&2; exit 2 ;;
  *) budget=(-max_total_time="$1") ;;
esac
shift || true
only=("$@")

if [[ ! -f "$build/CMakeCache.txt" ]]; then
  CC=clang CXX=clang++ cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DWEFT_SANITIZE=address,undefined -DWEFT_BUILD_FUZZERS=ON -DWEFT_USE_CUDA=OFF \
    -DWEFT_BUILD_PYTHON=OFF -DWEFT_BUILD_R=OFF -DWEFT_BUILD_GO=OFF >/dev/null || exit 1
fi
cmake --build "$build" -j"$(nproc)" --target weft_fuzzers >/dev/null || exit 1

# Leaks at exit of the process are reported too; oneDNN's JIT kernels and the engine's
# threads live until exit by design, so only leaks of the fuzzed call count.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export OMP_NUM_THREADS=1

targets=()
for src in "$repo"/tests/fuzz/fuzz_*.cc; do
  name="$(basename "$src" .cc)"
  if [[ ${#only[@]} -eq 0 ]] || [[ " ${only[*]} " == *" $name "* ]]; then targets+=("$name"); fi
done

failed=0
summary=()
for t in "${targets[@]}"; do
  work="$build/fuzz-work/$t"
  mkdir -p "$work/corpus"
  log="$work/run.log"
  # -rss_limit_mb matches the 2 GiB a hostile input may never make us reach.
  "$build/tests/fuzz/$t" "$work/corpus" "$repo/tests/fuzz/corpus/$t" "${budget[@]}" \
    -rss_limit_mb=2048 -timeout=30 -max_len=65536 -artifact_prefix="$work/" -print_final_stats=1 \
    >"$log" 2>&1
  rc=$?
  # -a: a target's log may quote the bytes of its inputs (grep would only say "binary file").
  runs="$(grep -aE '^stat::number_of_executed_units' "$log" | awk '{print $2}')"
  if [[ $rc -ne 0 ]]; then
    failed=1
    summary+=("$t FAILED after ${runs:-?} runs: see $log and $work/crash-* (or leak-*, timeout-*, oom-*)")
    tail -30 "$log"
  else
    summary+=("$t ${runs:-?} runs, no crash")
  fi
done
for s in "${summary[@]}"; do echo "  $s"; done
if [[ $failed -eq 0 ]]; then echo "fuzz: ${#targets[@]} passed, 0 failed"; else echo "fuzz: FAILED"; fi
exit $failed
