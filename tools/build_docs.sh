#!/usr/bin/env bash
# Builds the documentation site (docs/, Sphinx with MyST) into HTML, warnings as errors.
#
#   bash tools/build_docs.sh [output-folder]      # default build/docs-html
#
# Needs Debian's python3-sphinx and python3-myst-parser (tools/setup_deps.sh installs them).
# The operator reference is read from frontends/registry.json, which
# tools/codegen/generate.py keeps current.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$repo/build/docs-html}"
/usr/bin/python3 -m sphinx -W --keep-going -q -b html -d "$out/.doctrees" "$repo/docs" "$out"
echo "build_docs: $out/index.html"
