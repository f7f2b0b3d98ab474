#!/usr/bin/env bash
# Installs an rlock build tree into a throwaway prefix and builds a consumer
# against it: with find_package(rlock) (again with no pkg-config and no
# hiredis.pc, and again for the shared library alone with hiredis's and
# libuuid's libraries out of sight) and with pkg-config. Runs them. Then
# builds a parent project with rlock as its subproject (add_subdirectory),
# default options: no tests, no examples, no -Werror.
#
#   tests/packaging/check.sh BUILD_DIR
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:?usage: check.sh BUILD_DIR}
[[ -d $build ]] || { echo "check.sh: no build directory $build" >&2; exit 1; }
build=$(cd "$build" && pwd)

work=$(mktemp -d "${TMPDIR:-/tmp}/rlock-packaging.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
prefix=$work/prefix

say() { printf 'check.sh: %s\n' "$*"; }
fail() { printf 'check.sh: FAIL: %s\n' "$*" >&2; exit 1; }

say "installing $build into $prefix"
cmake --install "$build" --prefix "$prefix"

for f in include/rlock.h include/rlock/version.h; do
    [[ -f $prefix/$f ]] || fail "$f was not installed"
done
pc=$(find "$prefix" -name rlock.pc -path '*/pkgconfig/*' -print -quit)
config=$(find "$prefix" -name rlockConfig.cmake -print -quit)
so=$(find "$prefix" -name 'librlock.so' -print -quit)
[[ -n $pc ]] || fail "rlock.pc was not installed"
[[ -n $config ]] || fail "rlockConfig.cmake was not installed"
[[ -n $so ]] || fail "librlock.so was not installed"
[[ -n $(find "$prefix" -name 'librlock.a' -print -quit) ]] || fail "librlock.a was not installed"
[[ -f $(dirname "$config")/rlockConfigVersion.cmake ]] || fail "rlockConfigVersion.cmake was not installed"
libdir=$(dirname "$so")

version=$(sed -n 's/^#define RL_VERSION_STRING "\(.*\)"$/\1/p' "$prefix/include/rlock/version.h")
[[ -n $version ]] || fail "no RL_VERSION_STRING in the installed version.h"

# The rlock command links the shared library like any program, and finds the
# installed one by itself ($ORIGIN/../lib), with no LD_LIBRARY_PATH.
if [[ -x $prefix/bin/rlock ]]; then
    say "running the installed rlock command"
    [[ $(env -u LD_LIBRARY_PATH "$prefix/bin/rlock" --version) == "rlock $version" ]] ||
        fail "the installed rlock does not run, or is not version $version"
    # The path after "=>", whole: the prefix may hold spaces.
    used=$(env -u LD_LIBRARY_PATH ldd "$prefix/bin/rlock" |
        sed -n 's/^[[:space:]]*librlock\.so[^ ]* => \(.*\) (0x[0-9a-f]*)$/\1/p')
    [[ -n $used && $(realpath "$(dirname "$used")") == $(realpath "$libdir") ]] ||
        fail "the installed rlock uses '${used}', not the librlock.so of $libdir"
fi

# --- find_package(rlock) ---------------------------------------------------
say "building the CMake consumer"
cmake -S "$here" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release
found=$(sed -n 's/^rlock_DIR:[A-Z]*=//p' "$work/cmake/CMakeCache.txt")
[[ $found == "$prefix"/* ]] || fail "find_package(rlock) found $found, not the package in $prefix"
cmake --build "$work/cmake"

say "running the CMake consumers (shared, static)"
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$work/cmake/app"
"$work/cmake/app_static"
if ldd "$work/cmake/app_static" | grep 'librlock\.so' >/dev/null; then
    fail "app_static is linked against librlock.so, not librlock.a"
fi

# --- find_package(rlock) without pkg-config ---------------------------------
# Neither rlock::rlock nor rlock::rlock_static may need pkg-config or
# hiredis.pc at the consumer: no pkg-config program, no .pc file in reach.
say "building the CMake consumer with no pkg-config and no hiredis.pc"
mkdir -p "$work/no-pc"
PKG_CONFIG_LIBDIR=$work/no-pc PKG_CONFIG_PATH='' \
    cmake -S "$here" -B "$work/cmake-nopc" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release -DPKG_CONFIG_EXECUTABLE="$work/no-pc/pkg-config"
PKG_CONFIG_LIBDIR=$work/no-pc PKG_CONFIG_PATH='' cmake --build "$work/cmake-nopc"
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$work/cmake-nopc/app"
"$work/cmake-nopc/app_static"

# The shared library alone, where find_library sees neither hiredis nor
# libuuid: find_package(rlock COMPONENTS shared) still succeeds.
say "building the shared-only CMake consumer with hiredis and libuuid out of sight"
multiarch=$("${CC:-cc}" -print-multiarch 2>/dev/null || true)
ignore="/usr/local/lib;/usr/lib;/lib;/usr/lib64;/lib64"
[[ -z $multiarch ]] || ignore="/usr/lib/$multiarch;/lib/$multiarch;$ignore"
cmake -S "$here" -B "$work/cmake-shared" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_TYPE=Release -DRLOCK_CONSUMER_STATIC=OFF "-DCMAKE_IGNORE_PATH=$ignore"
grep '^RLOCK_HIREDIS_LIBRARY:FILEPATH=.*NOTFOUND$' "$work/cmake-shared/CMakeCache.txt" >/dev/null ||
    fail "the shared-only consumer still found hiredis: the test hid nothing"
cmake --build "$work/cmake-shared"
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$work/cmake-shared/app"

# --- pkg-config --------------------------------------------------------------
say "building the pkg-config consumer"
PKG_CONFIG_PATH=$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export PKG_CONFIG_PATH
pcver=$(pkg-config --modversion rlock)
[[ $pcver == "$version" ]] || fail "rlock.pc says version $pcver, version.h says $version"
pcinc=$(pkg-config --variable=includedir rlock)
[[ $(cd "$pcinc" && pwd -P) == $(cd "$prefix/include" && pwd -P) ]] ||
    fail "rlock.pc includedir $pcinc is not $prefix/include"
# Word splitting of the pkg-config output is intended.
# shellcheck disable=SC2046
"${CC:-cc}" -Wall -Wextra -Werror -o "$work/app-pc" "$here/app.c" \
    $(pkg-config --cflags --libs rlock)

say "running the pkg-config consumer"
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$work/app-pc"

# --- rlock as a subproject ---------------------------------------------------
say "building a parent project with rlock as a subproject (default options)"
cmake -S "$here/subproject" -B "$work/sub" -DRLOCK_SOURCE_DIR="$root"
[[ ! -e $work/sub/CTestTestfile.cmake ]] || fail "rlock enabled testing in its parent project"
[[ ! -e $work/sub/CPackConfig.cmake ]] || fail "rlock set up CPack in its parent project"
if grep -r -e '-Werror' --include=flags.make "$work/sub" >/dev/null; then
    fail "rlock builds with -Werror in a parent project"
fi
cmake --build "$work/sub" -j "$(nproc)"
"$work/sub/app"
"$work/sub/app_static"

say "ok"
