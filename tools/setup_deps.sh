#!/usr/bin/env bash
# Installs every Debian package that building Weft, its tests and the main job need.
# Run as root on Debian 12 (bookworm). Safe to run again: when everything is already
# installed it touches nothing and does not even refresh the package lists.
#
#   bash tools/setup_deps.sh           # build, tests, main job
#   bash tools/setup_deps.sh --bench   # also torchvision and OpenBLAS, which only bench/ uses
set -euo pipefail

packages=(
  build-essential cmake ccache pkg-config
  libdnnl-dev nlohmann-json3-dev libzmq3-dev cppzmq-dev libgtest-dev
  swig golang-go r-base-dev
  python3-dev python3-numpy python3-pytest python3-venv python3-setuptools
  # tools/build_wheel.sh packs the Python package offline with Debian's wheel.
  python3-wheel
  zlib1g-dev libpng-dev libjpeg62-turbo-dev
  dataset-fashion-mnist
  # The Julia package's checks (tests/julia) run under node; npm installs their parser.
  nodejs
  # The R package imports jsonlite; its tests use testthat.
  r-cran-jsonlite r-cran-testthat
  # The neural-network operator tests compare with PyTorch's functions and autograd.
  python3-torch
  # The image tests compare resizing with OpenCV's, whose arithmetic MXNet's image
  # functions and iterators use.
  python3-opencv
  # mx.viz draws graphs through graphviz (the Python package and the dot program).
  python3-graphviz graphviz
  # The documentation site (docs/, built by tools/build_docs.sh and its test) is Sphinx
  # reading the Markdown pages through MyST.
  python3-sphinx python3-myst-parser
  # mx.contrib.onnx reads and writes ONNX models through the onnx package.
  python3-onnx
  # The sanitizer run of the C++ suite and the libFuzzer targets (tools/fuzz.sh) build
  # with clang, its sanitizer and fuzzer runtimes and its OpenMP.
  clang libclang-rt-14-dev libomp-14-dev
)

# Debian ships npm as its own package; a node from elsewhere (NodeSource) bundles it, and
# Debian's npm would then conflict with that node.
if ! command -v npm >/dev/null; then
  packages+=(npm)
fi

case "${1:-}" in
  "") ;;
  # Debian's PyTorch calls the system BLAS, which is the slow reference one unless OpenBLAS
  # is installed (it then takes over the libblas.so.3 alternative): without it the peer of
  # every GEMM benchmark would run far below its best.
  --bench) packages+=(python3-torchvision libopenblas0-pthread python3-matplotlib) ;;
  *) echo "setup_deps.sh: unknown argument '$1' (expected nothing or --bench)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup_deps: all ${#packages[@]} packages already installed"
  exit 0
fi

if [[ $EUID -ne 0 ]]; then
  echo "setup_deps: installing ${missing[*]} needs root; run this script as root (or with sudo)" >&2
  exit 1
fi

echo "setup_deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup_deps: done"
