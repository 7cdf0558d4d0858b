#!/usr/bin/env bash
# Configures and builds Weft into build/ and installs the Python package into .venv/.
# Run from anywhere; paths are taken from this script's location.
#
# Environment:
#   WEFT_USE_CUDA=ON   also build the CUDA backend (default OFF: the CPU build is what the
#                      tests and the main job use, and it builds much faster)
#   WEFT_BUILD_DIR     build folder (default <repo>/build)
#   WEFT_BUILD_TYPE    CMake build type (default Release)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${WEFT_BUILD_DIR:-$repo/build}"
venv="$repo/.venv"

# Paths under the repo are hashed relative to it, so a clone elsewhere reuses the cache.
export CCACHE_BASEDIR="$repo"
export CCACHE_NOHASHDIR=1

configure_and_build() {
  cmake -S "$repo" -B "$build_dir" \
    -DCMAKE_BUILD_TYPE="${WEFT_BUILD_TYPE:-Release}" \
    -DWEFT_USE_CUDA="${WEFT_USE_CUDA:-OFF}" \
    -DPython3_EXECUTABLE=/usr/bin/python3
  cmake --build "$build_dir" -j"$(nproc)"
}

# Debian's interpreter carries numpy and pytest; the venv sees them through
# --system-site-packages and holds only weft itself.
make_venv() {
  if [[ ! -x "$venv/bin/python" ]]; then
    /usr/bin/python3 -m venv --system-site-packages "$venv"
  fi
}

# The Python front end owns how its package is installed; this runs its installer with the
# venv's interpreter and the build folder.
install_python_package() {
  local installer="$repo/frontends/python/install.sh"
  if [[ ! -f "$installer" ]]; then
    echo "build.sh: $installer is missing: the Python front end provides it" >&2
    exit 1
  fi
  bash "$installer" "$venv/bin/python" "$build_dir"
  "$venv/bin/python" -c "import weft, sys; print('build.sh: weft', weft.__version__, 'installed in', sys.prefix)"
}

configure_and_build
make_venv
install_python_package
