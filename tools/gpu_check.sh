#!/usr/bin/env bash
# Issue 20's one prepared run on a machine with an NVIDIA GPU: everything GPU-related that
# this repository can check, in under 8 minutes, so that a short GPU slot is enough.
#
#   tools/gpu_check.sh [--no-bench] [--no-ctx-rerun]
#
# 1. unpacks .gpu/weft-gpu.tar.xz (made here by tools/gpu_pack.sh from a CUDA build: the GPU
#    machine needs no compiler for the core) or, without it, builds build-cuda/ there;
#    compiles the Python extensions against that machine's python3;
# 2. the C++ GPU tests (weft_cpp_tests --gtest_filter=Fused*:Cuda*:Gpu*);
# 3. every tests/python/test_gpu_*.py (CPU-vs-GPU consistency of each operator with GPU code);
# 4. the operator, Gluon and Module suites again with WEFT_TEST_CTX=gpu(0) (their arrays made
#    on the GPU, as MXNet's GPU suite reruns its CPU tests);
# 5. bench/gpu_train_bench.py (Weft and the machine's PyTorch, each in its own process).
# It prints `N passed, M failed` (steps 2-4) and writes logs, JUnit files and the figures
# (gpu_figures.json) to $OUT (default gpu-out/). Exit status: 0 only when nothing failed.
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-$repo/gpu-out}"
work="${WEFT_GPU_WORK:-/tmp/weft-gpu}"
py="${WEFT_GPU_PYTHON:-python3}"
bench=1 ctx_rerun=1
for arg in "$@"; do
  case "$arg" in
    --no-bench) bench=0 ;;
    --no-ctx-rerun) ctx_rerun=0 ;;
    *) echo "usage: $0 [--no-bench] [--no-ctx-rerun]" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
t0=$SECONDS
say() { echo "[gpu_check +$((SECONDS - t0))s] $*"; }
steps=()
step() { steps+=("$(printf '%-22s %s' "$1" "$2")"); }

say "machine"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt" ||
  { echo "gpu_check.sh: nvidia-smi found no GPU" >&2; exit 1; }
"$py" - <<'PY' 2>&1 | tee -a "$out/gpu.txt"
import platform, sys
print("python", sys.version.split()[0], "on", platform.platform())
try:
    import torch
    print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(),
          torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")
except Exception as e:  # the benchmarks' peer only
    print("torch unavailable:", e)
PY

# ---------------------------------------------------------------- 1. the build
rm -rf "$work" && mkdir -p "$work"
if [[ -f "$repo/.gpu/weft-gpu.tar.xz" ]]; then
  say "unpacking .gpu/weft-gpu.tar.xz (commit $(tar -xJOf "$repo/.gpu/weft-gpu.tar.xz" ./COMMIT))"
  tar -xJf "$repo/.gpu/weft-gpu.tar.xz" -C "$work" || exit 1
else
  say "no .gpu/weft-gpu.tar.xz: building build-cuda/ here"
  cmake -S "$repo" -B "$repo/build-cuda" -G Ninja -DCMAKE_BUILD_TYPE=Release -DWEFT_USE_CUDA=ON \
    -DWEFT_CUDA_ARCHITECTURES=90 -DWEFT_BUILD_R=OFF -DWEFT_BUILD_GO=OFF -DWEFT_BUILD_JULIA=OFF \
    -DPython3_EXECUTABLE="$(command -v "$py")" >"$out/build.log" 2>&1 &&
    cmake --build "$repo/build-cuda" -j"$(nproc)" --target weft weft_cpp_tests weft_python >>"$out/build.log" 2>&1 ||
    { tail -30 "$out/build.log"; echo "gpu_check.sh: the CUDA build failed (see $out/build.log)" >&2; exit 1; }
  mkdir -p "$work/lib" "$work/bin" "$work/src" "$work/python"
  cp -L "$repo/build-cuda/libweft.so.0" "$work/lib/" && cp "$repo/build-cuda/tests/weft_cpp_tests" "$work/bin/"
  cp "$repo/build-cuda/frontends/swig/weftPYTHON_wrap.c" "$repo/frontends/python/src/fast_invoke.c" "$work/src/"
  cp -r "$repo/build-cuda/python/weft" "$work/python/"
fi
# CUDA's libraries: the toolkit's, and those of the NVIDIA wheels beside the machine's PyTorch
# (cuDNN and NCCL usually come only from there).
site="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
nvdirs="$(find "$site/nvidia" -name 'lib*.so*' -printf '%h\n' 2>/dev/null | sort -u | tr '\n' ':')"
export LD_LIBRARY_PATH="$work/lib:${nvdirs}/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
if ldd "$work/lib/libweft.so.0" | grep 'not found'; then
  echo "gpu_check.sh: libweft's libraries above are missing on this machine" >&2
  exit 1
fi
pkg="$work/python/weft"
# A link, not a copy: the extensions find libweft through LD_LIBRARY_PATH (their RUNPATH comes
# after it) and ctypes opens the package's; two copies of one library would each need static TLS.
ln -sf "$work/lib/libweft.so.0" "$pkg/libweft.so.0"
inc="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
say "compiling the Python extensions for $("$py" -V 2>&1)"
cc -shared -fPIC -O1 -w -I"$inc" -I"$repo/c_api/include" "$work/src/weftPYTHON_wrap.c" -L"$pkg" -l:libweft.so.0 \
  -Wl,-rpath,'$ORIGIN' -o "$pkg/_weft_swig.so" &
cc -shared -fPIC -O2 -I"$inc" -I"$repo/c_api/include" "$work/src/fast_invoke.c" -L"$pkg" -l:libweft.so.0 \
  -Wl,-rpath,'$ORIGIN' -o "$pkg/_fast.so" &
wait
export PYTHONPATH="$work/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
"$py" -c "
import weft as mx
n = mx.context.num_gpus()
print('weft sees', n, 'GPU(s)')
a = mx.nd.array([[0, 1, 2], [3, 4, 5]], ctx=mx.gpu(0)) if n else None
print('gpu(0) smoke:', (a * 2 + 1).asnumpy().tolist() if n else 'skipped')
" 2>&1 | tee "$out/smoke.log"
if ! grep -q 'weft sees [1-9]' "$out/smoke.log"; then
  echo "gpu_check.sh: weft does not see the GPU" >&2
  exit 1
fi

# ---------------------------------------------------------------- 2-4. the tests
junit_counts() {  # junit_counts <xml>: prints "passed failed"
  "$py" - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    print(0, 1); sys.exit()
suites = [root] if root.tag == "testsuite" else root.iter("testsuite")
t = f = s = 0
for su in suites:
    t += int(su.get("tests", 0)); f += int(su.get("failures", 0)) + int(su.get("errors", 0))
    s += int(su.get("skipped", 0)) + int(su.get("disabled", 0))
print(t - f - s, f)
PY
}
total_pass=0 total_fail=0
count() {  # count <name> <xml> <exit status>
  local p f
  read -r p f < <(junit_counts "$2")
  [[ "$3" -ne 0 && "$f" -eq 0 ]] && f=1  # a crash or a timeout leaves no failing case behind
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
  step "$1" "$p passed, $f failed (exit $3)"
}

say "C++ GPU tests"
timeout 240 "$work/bin/weft_cpp_tests" --gtest_filter="${WEFT_CUDA_TEST_FILTER:-Fused*:Cuda*:Gpu*}" \
  --gtest_output="xml:$out/cpp_gpu.xml" >"$out/cpp_gpu.log" 2>&1
rc=$?
grep -E '^\[  (FAILED|PASSED) |^\[  FAILED  \]' "$out/cpp_gpu.log" | tail -25
count "c++ gpu tests" "$out/cpp_gpu.xml" $rc

xdist=()
"$py" -c 'import xdist' 2>/dev/null && xdist=(-n 8)
say "Python GPU consistency tests"
timeout 240 "$py" -m pytest -q -p no:cacheprovider "${xdist[@]}" tests/python/test_gpu_*.py \
  --junitxml="$out/py_gpu.xml" >"$out/py_gpu.log" 2>&1
rc=$?
grep -E '^(FAILED|ERROR)|passed|failed' "$out/py_gpu.log" | tail -30
count "python gpu tests" "$out/py_gpu.xml" $rc

if [[ $ctx_rerun == 1 ]]; then
  say "operator, Gluon and Module tests with WEFT_TEST_CTX=gpu(0)"
  # TF32 off: these suites compare float32 results with float32 tolerances.
  WEFT_TEST_CTX='gpu(0)' WEFT_CUDNN_ALLOW_TF32=0 timeout 150 "$py" -m pytest -q -p no:cacheprovider "${xdist[@]}" \
    tests/python/test_ops.py tests/python/test_nn_*.py tests/python/test_gluon.py tests/python/test_module.py \
    --junitxml="$out/py_ctx.xml" >"$out/py_ctx.log" 2>&1
  rc=$?
  tail -3 "$out/py_ctx.log"
  read -r p f < <(junit_counts "$out/py_ctx.xml")
  # Reported beside the total: these suites were written for the CPU and some operators they
  # use have no GPU code yet (test_gpu_registry.py lists them).
  step "ctx=gpu(0) rerun" "$p passed, $f failed (exit $rc; not in the total)"
fi

# ---------------------------------------------------------------- 5. the figures
if [[ $bench == 1 && -f "$repo/bench/gpu_train_bench.py" ]]; then
  say "benchmarks"
  mkdir -p "$out/profile"  # each Weft case's profiler table (where the time goes)
  WEFT_GPU_BENCH_PROFILE="$out/profile" timeout 290 "$py" "$repo/bench/gpu_train_bench.py" --json "$out/gpu_figures.json" --seconds 1.5 --timeout 100 --budget 270 2>&1 | tee "$out/bench.log" | tail -20
  step "benchmarks" "exit ${PIPESTATUS[0]} (figures in gpu_figures.json)"
fi

say "done"
printf '%s\n' "${steps[@]}"
echo "$total_pass passed, $total_fail failed"
[[ $total_fail -eq 0 ]]
