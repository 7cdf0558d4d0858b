#!/usr/bin/env bash
# Packs a CUDA build made on this machine for tools/gpu_check.sh on a machine with a GPU,
# so that a short GPU slot runs tests instead of compiling (docs/design/gpu.md):
#
#   tools/gpu_pack.sh [cuda-build-dir]      # default build-cuda/, writes .gpu/weft-gpu.tar.xz
#
# The archive holds libweft and the C++ test binary (stripped), the shared libraries they
# need that a CUDA machine may lack (oneDNN, ZeroMQ and theirs; never glibc, libstdc++ or
# the CUDA libraries, which the GPU machine's own driver and toolkit provide), the pure-Python
# package and the C sources of its two extensions, which gpu_check.sh compiles against
# whatever Python that machine has.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$repo/build-cuda}"
out="$repo/.gpu"
for f in "$build/libweft.so.0" "$build/tests/weft_cpp_tests" "$build/frontends/swig/weftPYTHON_wrap.c" \
         "$build/python/weft/__init__.py"; do
  [[ -e "$f" ]] || { echo "gpu_pack.sh: $f is missing: build $build with -DWEFT_USE_CUDA=ON first" >&2; exit 1; }
done
grep -q 'WEFT_USE_CUDA' "$build/python/weft/_build_info.py" ||
  { echo "gpu_pack.sh: $build is not a CUDA build (no WEFT_USE_CUDA in its _build_info.py)" >&2; exit 1; }

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib" "$stage/bin" "$stage/src" "$stage/python"
cp -L "$build/libweft.so.0" "$stage/lib/libweft.so.0"
cp "$build/tests/weft_cpp_tests" "$stage/bin/"
for b in "$build"/bench/weft_*; do [[ -x "$b" && -f "$b" ]] && cp "$b" "$stage/bin/"; done
strip --strip-unneeded "$stage/lib/libweft.so.0" "$stage/bin/"*

# Everything the binaries load except the C runtime and CUDA's own libraries.
system='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libresolv\.|libstdc\+\+|libgcc_s)'
cuda='^(libcuda\.|libcudart|libcublas|libcublasLt|libnvrtc|libnccl|libcudnn|libnvJitLink|libcufft|libcurand)'
ldd "$build/libweft.so.0" "$build/tests/weft_cpp_tests" | awk '/=>/ {print $1, $3}' | sort -u |
  while read -r name path; do
    [[ "$name" =~ $system || "$name" =~ $cuda || "$name" == libweft.so.0 ]] && continue
    cp -L "$path" "$stage/lib/$name"
  done

cp "$build/frontends/swig/weftPYTHON_wrap.c" "$repo/frontends/python/src/fast_invoke.c" "$stage/src/"
cp -r "$build/python/weft" "$stage/python/"
find "$stage/python" \( -name '*.so' -o -name '*.so.*' -o -name __pycache__ \) -prune -exec rm -rf {} +
git -C "$repo" rev-parse HEAD >"$stage/COMMIT" 2>/dev/null || echo unknown >"$stage/COMMIT"

mkdir -p "$out"
tar -C "$stage" -cf - . | xz -6 -T2 >"$out/weft-gpu.tar.xz"
echo "gpu_pack.sh: wrote $out/weft-gpu.tar.xz ($(du -h "$out/weft-gpu.tar.xz" | cut -f1)) from $build at $(cat "$stage/COMMIT")"
