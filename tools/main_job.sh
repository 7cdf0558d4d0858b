#!/usr/bin/env bash
# The main job: trains a classifier on Fashion-MNIST through Weft's Python API (see
# tools/train_fashion_mnist.py for the model and its options). Needs tools/build.sh first.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="$repo/.venv/bin/python"
if [[ ! -x "$python" ]]; then
  echo "main_job.sh: $python is missing: run tools/build.sh first" >&2
  exit 1
fi
exec "$python" "$repo/tools/train_fashion_mnist.py" "$@"
