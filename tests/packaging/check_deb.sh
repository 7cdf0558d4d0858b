#!/usr/bin/env bash
# Builds the Debian package with CPack from a full build folder and checks it without
# installing it (dpkg -i needs root and changes the machine): its dependencies, its files,
# and a C program built with `pkg-config --cflags --libs weft` against the extracted tree.
# On a machine where the package is installed (`dpkg -i libweft-dev_*.deb`), the same
# `pkg-config --libs weft` needs no PKG_CONFIG_PATH or sysroot.
#
#   tests/packaging/check_deb.sh <build-dir> <work-dir>
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build_dir="$(cd "$1" && pwd)"
work="$2"
fail() { echo "check_deb: $*" >&2; exit 1; }

rm -rf "$work" && mkdir -p "$work"
(cd "$build_dir" && cpack -G DEB -B "$work/out" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; fail "cpack failed"; }
deb="$(ls "$work"/out/libweft-dev_*.deb)"

depends="$(dpkg-deb -f "$deb" Depends)"
for dep in libdnnl libzmq5 libgomp1 libstdc++6; do
  grep -q "$dep" <<<"$depends" || fail "Depends lacks $dep: $depends"
done

files="$(dpkg-deb -c "$deb" | awk '{print $6}')"
for want in ./usr/include/weft/c_api.h ./usr/include/weft/c_predict_api.h ./usr/lib/pkgconfig/weft.pc \
  ./usr/lib/cmake/Weft/WeftConfig.cmake; do
  grep -qxF "$want" <<<"$files" || fail "the package lacks $want"
done
grep -qE '^\./usr/lib/libweft\.so\.[0-9.]+$' <<<"$files" || fail "the package lacks usr/lib/libweft.so.<version>"
# Only the C library: no front end, test or build-tree file.
stray="$(grep -vE '^\./usr/(include/weft/|lib/(libweft\.so|pkgconfig/weft\.pc|cmake/Weft/)|share/doc/)|/$' <<<"$files" || true)"
[[ -z "$stray" ]] || fail "the package holds files beyond the C library: $(head -5 <<<"$stray" | tr '\n' ' ')"

root="$work/root"
dpkg-deb -x "$deb" "$root"
export PKG_CONFIG_PATH="$root/usr/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root"
libs="$(pkg-config --libs weft)"
[[ "$libs" == *"-L$root/usr/lib"* ]] || fail "pkg-config --libs weft gave '$libs'"
# shellcheck disable=SC2046  # pkg-config output is a list of flags
cc -std=c99 -Wall -Werror "$repo/tests/install/consumer/consumer.c" -o "$work/consumer" $(pkg-config --cflags --libs weft)
LD_LIBRARY_PATH="$root/usr/lib" "$work/consumer"
echo "check_deb: $(basename "$deb") (Depends: $depends) builds and runs a consumer"
