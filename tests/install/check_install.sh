#!/usr/bin/env bash
# Checks what `cmake --install` puts on disk, as a user of the installed library sees it.
#
#   check_install.sh tree         <build dir> <prefix> <version>  install into a fresh prefix, check its layout
#   check_install.sh pkg-config   <prefix> <version> <work dir>   build and run consumer.c with pkg-config
#   check_install.sh find-package <prefix> <version> <work dir>   build and run the consumer CMake project
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

fail() { echo "check_install: $*" >&2; exit 1; }

expect_eq() {  # expect_eq <what> <expected> <got>
  [[ "$2" == "$3" ]] || fail "$1: expected '$2', got '$3'"
}

# The installed libdir depends on the platform (lib, lib64, lib/x86_64-linux-gnu): find it
# from the library itself.
installed_libdir() {
  local lib
  lib="$(find "$1" -name 'libweft.so' -print -quit)"
  [[ -n "$lib" ]] || fail "no libweft.so under $1"
  dirname "$lib"
}

check_tree() {
  local build_dir="$1" prefix="$2" version="$3"
  rm -rf "$prefix"
  cmake --install "$build_dir" --prefix "$prefix" >/dev/null
  local libdir
  libdir="$(installed_libdir "$prefix")"
  [[ -f "$prefix/include/weft/c_api.h" ]] || fail "missing $prefix/include/weft/c_api.h"
  [[ -f "$libdir/libweft.so.$version" ]] || fail "missing $libdir/libweft.so.$version"
  local soname
  soname="$(objdump -p "$libdir/libweft.so.$version" | awk '$1 == "SONAME" {print $2}')"
  expect_eq "SONAME" "libweft.so.$(abi_version "$prefix")" "$soname"
  [[ -e "$libdir/$soname" ]] || fail "missing the SONAME link $libdir/$soname"
  # The C ABI is the only interface: nothing but weft_* may be exported.
  local foreign
  foreign="$(nm -D --defined-only "$libdir/libweft.so.$version" | awk '{print $3}' | grep -v '^weft_' | grep -v '^$' || true)"
  [[ -z "$foreign" ]] || fail "libweft.so exports symbols outside the C API: $(echo "$foreign" | head -5 | tr '\n' ' ')"
  [[ -f "$libdir/pkgconfig/weft.pc" ]] || fail "missing $libdir/pkgconfig/weft.pc"
  [[ -f "$libdir/cmake/Weft/WeftConfig.cmake" ]] || fail "missing $libdir/cmake/Weft/WeftConfig.cmake"
  [[ -f "$libdir/cmake/Weft/WeftConfigVersion.cmake" ]] || fail "missing $libdir/cmake/Weft/WeftConfigVersion.cmake"
  # Nothing installed may point back into the build or source tree (the test prefix itself
  # lives in the build tree, so references into it are fine).
  local leaks
  leaks="$(grep -rF "$build_dir" "$libdir/pkgconfig" "$libdir/cmake" | grep -vF "$prefix" || true)"
  [[ -z "$leaks" ]] || fail "installed files refer to the build tree $build_dir: $leaks"
  echo "check_install: $prefix holds Weft $version ($soname)"
}

abi_version() {
  sed -n 's/^#define WEFT_ABI_VERSION \([0-9]*\).*/\1/p' "$1/include/weft/c_api.h"
}

check_pkg_config() {
  local prefix="$1" version="$2" work="$3"
  local libdir
  libdir="$(installed_libdir "$prefix")"
  export PKG_CONFIG_PATH="$libdir/pkgconfig"
  expect_eq "pkg-config --modversion weft" "$version" "$(pkg-config --modversion weft)"
  expect_eq "pkg-config prefix" "$prefix" "$(pkg-config --variable=prefix weft)"
  expect_eq "pkg-config libdir" "$libdir" "$(pkg-config --variable=libdir weft)"
  expect_eq "pkg-config includedir" "$prefix/include" "$(pkg-config --variable=includedir weft)"
  rm -rf "$work" && mkdir -p "$work"
  # shellcheck disable=SC2046  # pkg-config output is a list of flags
  cc -std=c99 -Wall -Werror "$here/consumer/consumer.c" -o "$work/consumer" $(pkg-config --cflags --libs weft)
  local resolved
  resolved="$(LD_LIBRARY_PATH="$libdir" ldd "$work/consumer" | awk '$1 ~ /^libweft\.so/ {print $3}')"
  expect_eq "libweft the consumer loads" "$libdir/libweft.so.$(abi_version "$prefix")" "$resolved"
  LD_LIBRARY_PATH="$libdir" "$work/consumer"
}

check_find_package() {
  local prefix="$1" version="$2" work="$3"
  rm -rf "$work"
  cmake -S "$here/consumer" -B "$work" -DCMAKE_PREFIX_PATH="$prefix" -DEXPECTED_WEFT_VERSION="$version" \
    -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON >"$work.configure.log" 2>&1 ||
    { cat "$work.configure.log"; fail "configuring the consumer project failed"; }
  local weft_dir
  weft_dir="$(sed -n 's/^Weft_DIR:PATH=//p' "$work/CMakeCache.txt")"
  expect_eq "Weft_DIR" "$(installed_libdir "$prefix")/cmake/Weft" "$weft_dir"
  cmake --build "$work" >"$work.build.log" 2>&1 || { cat "$work.build.log"; fail "building the consumer project failed"; }
  "$work/consumer"
}

case "${1:-}" in
  tree) check_tree "$2" "$3" "$4" ;;
  pkg-config) check_pkg_config "$2" "$3" "$4" ;;
  find-package) check_find_package "$2" "$3" "$4" ;;
  *) fail "unknown mode '${1:-}' (expected tree, pkg-config or find-package)" ;;
esac
