#!/bin/sh
# R CMD check --no-manual of the package tarball; passes only when the check ends in
# "Status: OK" (a NOTE or WARNING fails it, so that they are fixed rather than piled up).
# Usage: check.sh <R> <tarball> <output folder>
set -e
r="$1"; tarball="$2"; out="$3"
rm -rf "$out" && mkdir -p "$out"
cd "$out"
status=0
"$r" CMD check --no-manual --no-build-vignettes "$tarball" > check.log 2>&1 || status=$?
cat check.log
if [ "$status" -ne 0 ] || ! tail -n 3 check.log | grep -q "^Status: OK"; then
  for f in weft.Rcheck/00install.out weft.Rcheck/tests/testthat.Rout.fail; do
    [ -f "$f" ] && { echo "---- $f"; tail -n 60 "$f"; }
  done
  echo "r.check: R CMD check did not end in Status: OK" >&2
  exit 1
fi
