#!/usr/bin/env bash
# Installs the Python package built in <build-dir>/python into the environment of
# <python> (e.g. .venv/bin/python), replacing any earlier install.
#
#   frontends/python/install.sh <python> <build-dir>
#
# pip runs offline and without build isolation: the package is already built by CMake,
# and setuptools comes from the system site packages.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 <python> <build-dir>" >&2
  exit 2
fi
python="$1"
src="$2/python"
if [[ ! -f "$src/setup.py" || ! -f "$src/weft/__init__.py" ]]; then
  echo "install.sh: expected a built package in $src (setup.py and weft/__init__.py); build with CMake first" >&2
  exit 1
fi
# pip builds from a copy, so the build folder is left as CMake made it.
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
cp -r "$src/setup.py" "$src/weft" "$stage/"
"$python" -m pip install --quiet --no-index --no-build-isolation --no-deps --disable-pip-version-check \
  --force-reinstall "$stage"
