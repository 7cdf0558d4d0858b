#!/usr/bin/env bash
# Builds a Python wheel of Weft from a CMake build folder, offline.
#
#   tools/build_wheel.sh [build-dir] [out-dir]     (defaults: build, dist)
#
# The wheel holds the package CMake assembled in <build-dir>/python: the Python modules, the
# SWIG and fast-path extensions and libweft.so.<abi> (stripped), which the extensions find
# through their $ORIGIN run path. Nothing the system provides is bundled (oneDNN, ZeroMQ,
# libgomp, libstdc++, libjpeg, libpng, zlib, numpy come from Debian's packages); the wheel's
# description (tools/packaging/wheel_README.md) lists them. Uses Debian's python3-setuptools
# and python3-wheel (tools/setup_deps.sh installs them), offline.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="$(cd "${1:-$repo/build}" && pwd)"
out_dir="${2:-$repo/dist}"
src="$build_dir/python"
if [[ ! -f "$src/setup.py" || ! -f "$src/weft/__init__.py" ]]; then
  echo "build_wheel.sh: expected a built package in $src; build with CMake first" >&2
  exit 1
fi
mkdir -p "$out_dir"
out_dir="$(cd "$out_dir" && pwd)"

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
cp -r "$src/setup.py" "$src/weft" "$stage/"
find "$stage" -name '__pycache__' -prune -exec rm -rf {} +
# Debug symbols are most of the library's size and no use to a pip user.
for lib in "$stage"/weft/*.so "$stage"/weft/libweft.so.*; do
  strip --strip-unneeded "$lib"
done
cp "$repo/tools/packaging/wheel_README.md" "$stage/README.md"
cat >"$stage/setup.cfg" <<'CFG'
[metadata]
long_description = file: README.md
long_description_content_type = text/markdown
CFG

# setuptools' own bdist_wheel (python3-wheel), not pip: nothing is fetched or resolved.
(cd "$stage" && /usr/bin/python3 setup.py --quiet bdist_wheel --dist-dir "$out_dir" >/dev/null)
ls "$out_dir"/weft-*.whl
