#!/usr/bin/env bash
# Builds the wheel from a build folder, installs it into a fresh venv (Debian's Python, with
# its site packages for numpy) and runs an operator from outside the source tree; checks
# that the wheel bundles libweft and nothing the system provides.
#
#   tests/packaging/check_wheel.sh <build-dir> <work-dir>
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build_dir="$1"
work="$2"
fail() { echo "check_wheel: $*" >&2; exit 1; }

rm -rf "$work" && mkdir -p "$work"
bash "$repo/tools/build_wheel.sh" "$build_dir" "$work/dist" >/dev/null
wheel="$(ls "$work"/dist/weft-*.whl)"

contents="$(/usr/bin/python3 -m zipfile -l "$wheel" | awk 'NR > 1 {print $1}')"
grep -q '^weft/libweft\.so\.[0-9]*$' <<<"$contents" || fail "the wheel lacks weft/libweft.so.<abi>"
bundled="$(grep -E '\.so(\.|$)' <<<"$contents" | grep -vE '^weft/(libweft\.so\.[0-9]+|_weft_swig\.so|_fast\.so)$' || true)"
[[ -z "$bundled" ]] || fail "the wheel bundles libraries the system provides: $bundled"
/usr/bin/python3 -m zipfile -e "$wheel" "$work/unpacked"
grep -q 'libdnnl' "$work"/unpacked/weft-*.dist-info/METADATA || fail "the wheel's description does not name its system dependencies"
runpath="$(readelf -d "$work/unpacked/weft/_weft_swig.so" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')"
[[ "$runpath" == '$ORIGIN' ]] || fail "_weft_swig.so's run path is '$runpath', expected \$ORIGIN"

/usr/bin/python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --no-index --no-deps --disable-pip-version-check "$wheel"
# From an empty folder, so that only the installed package can be imported.
mkdir -p "$work/run" && cd "$work/run"
"$work/venv/bin/python" - "$work/venv" <<'PY'
import os
import sys

import numpy as np
import weft as mx

venv = os.path.realpath(sys.argv[1])
where = os.path.realpath(mx.__file__)
assert where.startswith(venv), f"weft imported from {where}, not from the venv {venv}"
a = mx.nd.array([[1.0, -2.0], [3.5, 0.25]])
got = mx.nd.dot(a, a.T).asnumpy()
want = np.array([[1.0, -2.0], [3.5, 0.25]], dtype=np.float32)
np.testing.assert_allclose(got, want @ want.T, rtol=1e-6)
print("check_wheel: weft", mx.__version__, "from", os.path.dirname(where), "computes dot")
PY
