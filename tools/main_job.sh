#!/usr/bin/env bash
# The main job: trains LeNet on Fashion-MNIST through Weft's Gluon API, hybridized (see
# examples/fashion_mnist_gluon.py for the model and its options), then reloads the exported
# model through SymbolBlock.imports and the Module API. Needs tools/build.sh first.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="$repo/.venv/bin/python"
if [[ ! -x "$python" ]]; then
  echo "main_job.sh: $python is missing: run tools/build.sh first" >&2
  exit 1
fi
exec "$python" "$repo/examples/fashion_mnist_gluon.py" "$@"
