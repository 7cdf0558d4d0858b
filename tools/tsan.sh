#!/usr/bin/env bash
# ThreadSanitizer runs of a clang build with -DWEFT_SANITIZE=thread in build-tsan/
# (configured here when missing; its objects come from ccache after the first build):
#
#   tools/tsan.sh          the C++ suite (weft_cpp_tests), the engine's stress tests and the
#                          key-value store's included, in one instrumented process;
#   tools/tsan.sh --dist   the distributed store's multi-process tests
#                          (tests/python/test_kvstore_dist.py): every scheduler, server and
#                          worker process, the launcher and pytest itself load the TSan build's
#                          libweft with a TSan runtime preloaded (Python is not instrumented;
#                          the runtime must be in the process before libweft). The runtime is
#                          gcc's libtsan.so.2: clang 14's shared one (libclang_rt.tsan-x86_64.so)
#                          crashes at start-up on this glibc even under /bin/true, and the
#                          instrumentation calls (__tsan_read4, __tsan_atomic*, ...) are the same.
#
# Each process writes its reports to build-tsan/tsan-reports/ (not to its output, which the
# tests read); the run fails when a test fails or any report was written. Suppressions:
# tools/tsan.supp (uninstrumented libraries only). Extra arguments go to pytest (--dist) or
# to the test binary, e.g. `tools/tsan.sh --dist -k sync`. Environment: WEFT_TSAN_BUILD_DIR
# (build-tsan), WEFT_TSAN_JOBS (build jobs, nproc), WEFT_TSAN_NO_BUILD=1 (use the build as it
# is), WEFT_TSAN_PYTHON (the interpreter, .venv/bin/python), WEFT_TSAN_PYTHONPATH (the
# package folder to test, build-tsan/python).
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${WEFT_TSAN_BUILD_DIR:-$repo/build-tsan}"
export CCACHE_BASEDIR="$repo"
export CCACHE_NOHASHDIR=1

mode=cpp
if [[ "${1:-}" == --dist ]]; then
  mode=dist
  shift
fi

runtime="$(gcc -print-file-name=libtsan.so.2)"
if [[ $mode == dist && ! -f "$runtime" ]]; then
  echo "tsan.sh: gcc's TSan runtime libtsan.so.2 is missing (Debian: libtsan2)" >&2
  exit 1
fi

if [[ ! -f "$dir/CMakeCache.txt" ]]; then
  CC=clang CXX=clang++ cmake -S "$repo" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_SANITIZE=thread \
    -DWEFT_USE_CUDA=OFF -DWEFT_BUILD_R=OFF -DWEFT_BUILD_GO=OFF -DWEFT_BUILD_JULIA=OFF -DWEFT_BUILD_PYTHON=ON \
    >/dev/null || exit 1
fi
target=weft_cpp_tests
[[ $mode == dist ]] && target=weft_python
[[ "${WEFT_TSAN_NO_BUILD:-0}" == 1 ]] ||
  cmake --build "$dir" -j"${WEFT_TSAN_JOBS:-$(nproc)}" --target "$target" >"$dir/build.log" 2>&1 || {
  tail -40 "$dir/build.log"
  echo "tsan.sh: the TSan build failed, see $dir/build.log" >&2
  exit 1
}

reports="$dir/tsan-reports"
rm -rf "$reports"
mkdir -p "$reports"
export TSAN_OPTIONS="suppressions=$repo/tools/tsan.supp log_path=$reports/tsan second_deadlock_stack=1 ${TSAN_OPTIONS:-}"

start=$SECONDS
if [[ $mode == dist ]]; then
  python="${WEFT_TSAN_PYTHON:-$repo/.venv/bin/python}"
  # Only Python processes get the runtime: with it preloaded, sh and bash crash at start and
  # pgrep hangs, and the tests run both. The interpreter runs through a wrapper that preloads
  # it; sitecustomize takes the preload out of the environment again and makes the wrapper
  # sys.executable, through which the tests and launch.py start every node.
  shims="$dir/tsan-python"
  mkdir -p "$shims"
  printf '#!/bin/sh\nLD_PRELOAD=%s exec %s "$@"\n' "$runtime" "$python" >"$shims/python"
  chmod +x "$shims/python"
  printf 'import os\nimport sys\nos.environ.pop("LD_PRELOAD", None)\nsys.executable = %s\n' \
    "'$shims/python'" >"$shims/sitecustomize.py"
  # PYTHONPATH puts the TSan build's package before any installed weft.
  (cd "$repo" && PYTHONPATH="$shims:${WEFT_TSAN_PYTHONPATH:-$dir/python}" OMP_NUM_THREADS=1 \
    "$shims/python" -m pytest -q -p no:cacheprovider tests/python/test_kvstore_dist.py "$@")
  rc=$?
else
  WEFT_STRESS_OPS="${WEFT_STRESS_OPS:-100000}" "$dir/tests/weft_cpp_tests" --gtest_filter='-Cuda*:Gpu*:Fused*Gpu*' "$@"
  rc=$?
fi
took=$((SECONDS - start))

shopt -s nullglob
files=("$reports"/tsan.*)
if ((${#files[@]})); then
  for f in "${files[@]}"; do
    echo "---- $f"
    grep -E '^(WARNING: ThreadSanitizer|SUMMARY: ThreadSanitizer)' "$f"
  done
  echo "tsan.sh: ThreadSanitizer reports in ${#files[@]} process(es), see $reports/" >&2
  exit 1
fi
if [[ $rc -ne 0 ]]; then
  echo "tsan.sh: the tests failed (exit $rc) under TSan, without a TSan report" >&2
  exit "$rc"
fi
echo "tsan.sh: $mode run clean under ThreadSanitizer in ${took} s"
