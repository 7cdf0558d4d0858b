#!/usr/bin/env bash
# Runs every test of a tree built by tools/build.sh:
#   1. CTest in build/: the C++ GoogleTest binary, the C embedding test, the R and Go smoke
#      tests and the install checks;
#   2. pytest on tests/python with the venv's interpreter;
#   3. the layer check (tools/check_layers.py: no include or import runs up the layer tables
#      of docs/architecture.md) and the generated-code check (tools/codegen/generate.py
#      --check: the committed registry dump and every front end's generated files are what
#      this build's registry and c_api.h give);
#   4. when CI=true or WEFT_CI_SANITIZE=1: a clang build with ASan and UBSan in build-asan/
#      (tools/fuzz.sh's), the C++ suite under it, then every fuzz target for a few seconds
#      on its corpus (tools/fuzz.sh --smoke);
#   5. when CI=true or WEFT_CI_CUDA=1: a CUDA build (sm_90) in build-cuda/, then the tests
#      of its C++ binary that need no GPU (the CUDA ones skip themselves without one; the
#      fusion kernels compile with NVRTC, which needs no GPU either). CI machines have none.
#   6. when CI=true or WEFT_CI_PREDICT=1: the predict-only library in build-predict/
#      (-DWEFT_PREDICT_ONLY=ON, its objects from ccache: about a minute on 2 cores) and its
#      test, the C example against the Python path (docs/design/deployment.md).
# Exits non-zero when any step fails and ends with one summary line.
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${WEFT_BUILD_DIR:-$repo/build}"
cuda_build_dir="$repo/build-cuda"
venv_python="$repo/.venv/bin/python"
export CCACHE_BASEDIR="$repo"
export CCACHE_NOHASHDIR=1

results=()
failed=0

record() {  # record <step> <status: PASS|FAIL|SKIP> [detail]
  results+=("$1 $2${3:+ ($3)}")
  if [[ "$2" == FAIL ]]; then failed=1; fi
}

run_ctest() {
  if [[ ! -f "$build_dir/CTestTestfile.cmake" ]]; then
    record ctest FAIL "no tests in $build_dir: run tools/build.sh first"
    return
  fi
  local log="$build_dir/ctest.log"
  ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local summary
  summary="$(grep -E '^[0-9]+% tests passed' "$log" | tail -1)"
  if [[ $rc -ne 0 ]]; then
    record ctest FAIL "${summary:-exit $rc}"
  elif grep -q '^No tests were found' "$log"; then
    record ctest FAIL "no tests were found"
  else
    record ctest PASS "$summary"
  fi
}

run_pytest() {
  if [[ ! -x "$venv_python" ]]; then
    record pytest FAIL "$venv_python missing: run tools/build.sh first"
    return
  fi
  local log="$build_dir/pytest.log"
  (cd "$repo" && "$venv_python" -m pytest -q tests/python) 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local summary
  summary="$(tail -1 "$log" | tr -d '=' | sed 's/^ *//; s/ *$//')"
  # Exit 5 means nothing was collected. Tests deselected by a marker are a legitimate
  # reason for that; an empty or broken test folder is not.
  if [[ $rc -eq 0 ]]; then
    record pytest PASS "$summary"
  elif [[ $rc -eq 5 ]] && grep -qE '[0-9]+ deselected' "$log"; then
    record pytest PASS "$summary"
  elif [[ $rc -eq 5 ]]; then
    record pytest FAIL "pytest ran no tests"
  else
    record pytest FAIL "$summary"
  fi
}

run_checks() {
  if /usr/bin/python3 "$repo/tools/check_layers.py"; then
    record layers PASS
  else
    record layers FAIL "an include or import runs up docs/architecture.md's layer tables"
  fi
  if [[ ! -f "$build_dir/libweft.so" ]]; then
    record codegen FAIL "no $build_dir/libweft.so: run tools/build.sh first"
  elif /usr/bin/python3 "$repo/tools/codegen/generate.py" --lib "$build_dir/libweft.so" --check; then
    record codegen PASS
  else
    record codegen FAIL "generated front-end files are stale: run tools/codegen/generate.py"
  fi
}

run_sanitized() {
  if [[ "${CI:-}" != true && "${WEFT_CI_SANITIZE:-0}" != 1 ]]; then
    record sanitizers SKIP "set CI=true or WEFT_CI_SANITIZE=1 to run it"
    return
  fi
  local asan_dir="$repo/build-asan" log="$repo/build-asan.log"
  {
    if [[ ! -f "$asan_dir/CMakeCache.txt" ]]; then
      CC=clang CXX=clang++ cmake -S "$repo" -B "$asan_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DWEFT_SANITIZE=address,undefined -DWEFT_BUILD_FUZZERS=ON -DWEFT_USE_CUDA=OFF \
        -DWEFT_BUILD_PYTHON=OFF -DWEFT_BUILD_R=OFF -DWEFT_BUILD_GO=OFF
    fi &&
      cmake --build "$asan_dir" -j"$(nproc)" --target weft_cpp_tests weft_fuzzers
  } >"$log" 2>&1
  if [[ $? -ne 0 ]]; then
    tail -40 "$log"
    record sanitizers FAIL "the ASan/UBSan build failed, see $log"
    return
  fi
  local test_log="$asan_dir/asan-tests.log"
  # The engine stress tests run a tenth of their operations under the sanitizers' cost.
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 WEFT_STRESS_OPS=100000 \
    "$asan_dir/tests/weft_cpp_tests" --gtest_filter='-Cuda*:Gpu*:Fused*Gpu*' >"$test_log" 2>&1
  local rc=$?
  if [[ $rc -eq 0 ]]; then
    record sanitizers PASS "$(grep -E '^\[  PASSED  \]' "$test_log" | tail -1) under ASan+UBSan"
  else
    grep -E 'ERROR: AddressSanitizer|runtime error|FAILED' "$test_log" | head -20
    record sanitizers FAIL "see $test_log"
  fi
  if bash "$repo/tools/fuzz.sh" --smoke; then
    record fuzz PASS "every target replays its corpus and runs 3000 inputs from a fixed seed"
  else
    record fuzz FAIL "a fuzz target found a defect, see build-asan/fuzz-work/"
  fi
}

build_cuda() {
  if [[ "${CI:-}" != true && "${WEFT_CI_CUDA:-0}" != 1 ]]; then
    record cuda-build SKIP "set CI=true or WEFT_CI_CUDA=1 to run it"
    return
  fi
  local log="$cuda_build_dir.log"
  {
    cmake -S "$repo" -B "$cuda_build_dir" -DCMAKE_BUILD_TYPE=Release \
      -DWEFT_USE_CUDA=ON -DWEFT_CUDA_ARCHITECTURES=90 -DPython3_EXECUTABLE=/usr/bin/python3 &&
      cmake --build "$cuda_build_dir" -j"$(nproc)"
  } >"$log" 2>&1
  local rc=$?
  if [[ $rc -eq 0 ]]; then
    record cuda-build PASS "compiled and linked for sm_90"
  else
    tail -40 "$log"
    record cuda-build FAIL "see $log"
    return
  fi
  local filter="${WEFT_CUDA_TEST_FILTER:-Fused*:Cuda*:Gpu*}"
  local test_log="$cuda_build_dir/cuda-tests.log"
  "$cuda_build_dir/tests/weft_cpp_tests" --gtest_filter="$filter" >"$test_log" 2>&1
  rc=$?
  local summary
  summary="$(grep -E '^\[  PASSED  \]' "$test_log" | tail -1)"
  if [[ $rc -eq 0 ]]; then
    record cuda-tests PASS "${summary:-passed} ($filter)"
  else
    tail -40 "$test_log"
    record cuda-tests FAIL "see $test_log"
  fi
}

build_predict() {
  if [[ "${CI:-}" != true && "${WEFT_CI_PREDICT:-0}" != 1 ]]; then
    record predict-build SKIP "set CI=true or WEFT_CI_PREDICT=1 to run it"
    return
  fi
  local predict_dir="$repo/build-predict" log="$repo/build-predict.log"
  {
    cmake -S "$repo" -B "$predict_dir" -DCMAKE_BUILD_TYPE=Release -DWEFT_USE_CUDA=OFF -DWEFT_PREDICT_ONLY=ON \
      -DWEFT_PREDICT_TEST_PYTHON="$venv_python" &&
      cmake --build "$predict_dir" -j"$(nproc)" &&
      ctest --test-dir "$predict_dir" --output-on-failure
  } >"$log" 2>&1
  if [[ $? -eq 0 ]]; then
    record predict-build PASS "libweft_predict.so built; its C example matches Python"
  else
    tail -40 "$log"
    record predict-build FAIL "see $log"
  fi
}

start=$SECONDS
run_ctest
run_pytest
run_checks
run_sanitized
build_cuda
build_predict

echo
for r in "${results[@]}"; do echo "  $r"; done
if [[ $failed -eq 0 ]]; then
  echo "run_tests: ALL PASSED in $((SECONDS - start)) s"
else
  echo "run_tests: FAILED in $((SECONDS - start)) s"
fi
exit $failed
