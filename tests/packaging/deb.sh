#!/usr/bin/env bash
# Builds rlock's Debian packages (cpack -G DEB) and proves them:
#   1. their metadata and contents (dpkg-deb): names, version from
#      include/rlock/version.h, sections, Depends, the copyright file, every
#      file under /usr, in one package only, and every file of a full
#      `cmake --install` in some package;
#   2. unpacked alone into an empty tree (a clean root): a consumer built and
#      run against that tree only, with pkg-config and with find_package;
#   3. installed on this system (apt-get install ./*.deb): a consumer built
#      against /usr with pkg-config and with find_package(rlock) (shared,
#      static, and with no pkg-config at all), run; `rlock --help` when the
#      tree builds the rlock command (package rlock-tools);
#   4. purged: the packages gone, and every file and new directory with them.
# The system's package set is left as it was found, on every exit path:
# whatever this script installed (the packages, any dependency pulled in) is
# purged. It refuses to start if a package of that name is installed, or a
# file the packages ship is already on disk.
#
#   tests/packaging/deb.sh BUILD_DIR
#
# BUILD_DIR is configured here (-DCMAKE_INSTALL_PREFIX=/usr, tests and
# examples off) and built; give it a directory of its own (test.sh uses
# build-deb/). Needs root or sudo, dpkg-deb, apt-get and dpkg-shlibdeps.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:?usage: deb.sh BUILD_DIR}

say() { printf 'deb.sh: %s\n' "$*"; }
fail() { printf 'deb.sh: FAIL: %s\n' "$*" >&2; exit 1; }

for tool in cmake cpack dpkg dpkg-deb dpkg-query dpkg-shlibdeps dpkg-architecture apt-get; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool not found (Debian, with dpkg-dev)"
done
sudo=()
if ((EUID != 0)); then
    command -v sudo >/dev/null 2>&1 || fail "not root, and no sudo"
    sudo=(sudo)
fi
apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -y -o DPkg::Lock::Timeout=300)

work=$(mktemp -d "${TMPDIR:-/tmp}/rlock-deb.XXXXXX")
installed=0      # 1 once apt-get install may have run
pkgs_before=$work/pkgs-before

# Purges whatever this script installed: our packages, then any package that
# was not there before (dependencies apt-get pulled in). Runs on every exit.
cleanup() {
    local status=$? new=()
    trap - EXIT
    set +e
    if ((installed)); then
        mapfile -t new < <(dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' 2>/dev/null |
            awk '$1 ~ /^.[^n]/ { print $2 }' | sort | comm -13 "$pkgs_before" -)
        if ((${#new[@]} > 0)); then
            say "cleanup: purging ${new[*]}"
            "${apt[@]}" remove --purge "${new[@]}" >"$work/cleanup.log" 2>&1 ||
                { cat "$work/cleanup.log" >&2; say "cleanup: apt-get remove failed"; status=1; }
        fi
    fi
    rm -rf -- "$work"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

version=$(sed -n 's/^#define RL_VERSION_STRING "\(.*\)"$/\1/p' "$root/include/rlock/version.h")
major=$(sed -n 's/^#define RL_VERSION_MAJOR \([0-9]*\)$/\1/p' "$root/include/rlock/version.h")
[[ -n $version && -n $major ]] || fail "no version in include/rlock/version.h"
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
lib=librlock$major
libdir=usr/lib/$multiarch

# --- build and package -------------------------------------------------------
say "configuring and building $build (prefix /usr)"
cmake -S "$root" -B "$build" -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DRLOCK_BUILD_TESTS=OFF -DRLOCK_BUILD_EXAMPLES=OFF -DRLOCK_WERROR=ON
build=$(cd "$build" && pwd)
cached_libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:[A-Z]*=//p' "$build/CMakeCache.txt")
[[ $cached_libdir == "lib/$multiarch" ]] ||
    fail "$build installs libraries into '$cached_libdir', not lib/$multiarch: give deb.sh a fresh build directory"
cmake --build "$build" -j "$(nproc)"

say "cpack -G DEB"
rm -f "$build"/*.deb
(cd "$build" && cpack -G DEB)
pkgs=("$lib" librlock-dev)
if grep -E '^set\(CPACK_COMPONENTS_ALL "[^"]*tools' "$build/CPackConfig.cmake" >/dev/null; then
    pkgs+=(rlock-tools)
fi
debs=()
for p in "${pkgs[@]}"; do
    deb=$build/${p}_${version}_${arch}.deb
    [[ -f $deb ]] || fail "cpack made no $(basename "$deb")"
    debs+=("$deb")
done
extra=$(find "$build" -maxdepth 1 -name '*.deb' | grep -v -F -x "${debs[@]/#/-e}" || true)
[[ -z $extra ]] || fail "cpack made packages nobody expects: $extra"
say "packages: ${pkgs[*]}"

# --- metadata and contents ---------------------------------------------------
field() { dpkg-deb -f "$1" "$2"; }
# The files (not directories) of a package, one per line, without the leading ./
files_of() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\./||' | sort; }

for i in "${!pkgs[@]}"; do
    p=${pkgs[i]} deb=${debs[i]}
    [[ $(field "$deb" Package) == "$p" ]] || fail "$deb: Package is not $p"
    [[ $(field "$deb" Version) == "$version" ]] || fail "$p: Version $(field "$deb" Version), version.h says $version"
    [[ $(field "$deb" Architecture) == "$arch" ]] || fail "$p: Architecture is not $arch"
    [[ -n $(field "$deb" Maintainer) ]] || fail "$p: no Maintainer"
    [[ $(field "$deb" Description | wc -l) -ge 3 ]] || fail "$p: no long Description"
    files_of "$deb" >"$work/$p.files"
    bad=$(grep -v '^usr/' "$work/$p.files" || true)
    [[ -z $bad ]] || fail "$p ships files outside /usr: $bad"
    grep -x "usr/share/doc/$p/copyright" "$work/$p.files" >/dev/null || fail "$p has no copyright file"
    dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/share/doc/$p/copyright" >"$work/$p.copyright"
    grep -x 'License: BSD-3-Clause' "$work/$p.copyright" >/dev/null || fail "$p: copyright names no BSD-3-Clause"
    grep -F 'Redistribution and use in source and binary forms' "$work/$p.copyright" >/dev/null ||
        fail "$p: copyright lacks the license text"
    # No path of the build tree (the staging directory) in a text file:
    # rlock.pc, the CMake files. (Debug information in librlock.a may name
    # the build directory.)
    mkdir -p "$work/x/$p"
    dpkg-deb -x "$deb" "$work/x/$p"
    if grep -r -l -I -F -e "$build" -e _CPack_Packages "$work/x/$p" >/dev/null; then
        fail "$p carries a path of the build tree: $(grep -r -l -I -F -e "$build" -e _CPack_Packages "$work/x/$p")"
    fi
done

expect_files() {
    local p=$1
    shift
    printf '%s\n' "$@" "usr/share/doc/$p/copyright" | sort >"$work/$p.expected"
    diff -u "$work/$p.expected" "$work/$p.files" >&2 || fail "$p: unexpected contents (diff above: - expected, + shipped)"
}
expect_files "$lib" "$libdir/librlock.so.$major" "$libdir/librlock.so.$version"
expect_files librlock-dev usr/include/rlock.h usr/include/rlock/version.h \
    "$libdir/librlock.so" "$libdir/librlock.a" "$libdir/pkgconfig/rlock.pc" \
    "$libdir/cmake/rlock/rlockConfig.cmake" "$libdir/cmake/rlock/rlockConfigVersion.cmake" \
    "$libdir/cmake/rlock/rlockTargets.cmake" "$libdir/cmake/rlock/rlockTargets-relwithdebinfo.cmake" \
    "$libdir/cmake/rlock/rlockStaticTargets.cmake" "$libdir/cmake/rlock/rlockStaticTargets-relwithdebinfo.cmake"
if [[ " ${pkgs[*]} " == *" rlock-tools "* ]]; then
    grep -x usr/bin/rlock "$work/rlock-tools.files" >/dev/null || fail "rlock-tools has no usr/bin/rlock"
    grep -E '^usr/share/man/man1/rlock\.1(\.gz)?$' "$work/rlock-tools.files" >/dev/null ||
        fail "rlock-tools has no man page rlock.1"
fi

# Sections and dependencies.
[[ $(field "${debs[0]}" Section) == libs ]] || fail "$lib: Section is not libs"
[[ $(field "${debs[1]}" Section) == libdevel ]] || fail "librlock-dev: Section is not libdevel"
# hiredis's runtime package is the one libhiredis-dev depends on:
# libhiredis0.14 on Debian 12, libhiredis1.1.0 on Debian 13.
hiredis=$(dpkg-query -W -f '${Depends}' libhiredis-dev | tr ',' '\n' |
    sed -n 's/^ *\(libhiredis[^ ]*\).*/\1/p' | head -n 1)
[[ -n $hiredis ]] || fail "libhiredis-dev depends on no libhiredis runtime package"
for dep in "$hiredis" libuuid1 libc6; do
    field "${debs[0]}" Depends | tr ',' '\n' | grep -E "^ *$dep( |$)" >/dev/null ||
        fail "$lib does not depend on $dep: $(field "${debs[0]}" Depends)"
done
for dep in "$lib (= $version)" libhiredis-dev uuid-dev; do
    field "${debs[1]}" Depends | tr ',' '\n' | sed 's/^ *//' | grep -x -F "$dep" >/dev/null ||
        fail "librlock-dev does not depend on '$dep': $(field "${debs[1]}" Depends)"
done
if ((${#pkgs[@]} == 3)); then
    [[ $(field "${debs[2]}" Section) == utils ]] || fail "rlock-tools: Section is not utils"
    field "${debs[2]}" Depends | tr ',' '\n' | sed 's/^ *//' | grep -x -F "$lib (= $version)" >/dev/null ||
        fail "rlock-tools does not depend on $lib (= $version): $(field "${debs[2]}" Depends)"
fi
dpkg-deb -I "${debs[0]}" shlibs | grep -x "librlock $major $lib (>= $version)" >/dev/null ||
    fail "$lib has no shlibs entry for librlock.so.$major"

# One package per file; every installed file in a package.
dups=$(for p in "${pkgs[@]}"; do cat "$work/$p.files"; done | sort | uniq -d)
[[ -z $dups ]] || fail "files in two packages: $dups"
DESTDIR=$work/full cmake --install "$build" >/dev/null
(cd "$work/full" && find . ! -type d | sed 's|^\./||' | sort) >"$work/full.files"
for p in "${pkgs[@]}"; do cat "$work/$p.files"; done | sort >"$work/all.files"
missing=$(comm -23 "$work/full.files" "$work/all.files")
[[ -z $missing ]] || fail "installed by cmake --install but in no package: $missing"
say "metadata and contents: ok"
for deb in "${debs[@]}"; do
    printf -- '-- %s\n' "$(basename "$deb")"
    dpkg-deb -f "$deb" Package Version Section Depends | sed 's/^/   /'
    sed 's/^/   \//' "$work/$(dpkg-deb -f "$deb" Package).files"
done

# --- a clean root ---------------------------------------------------------------
# The packages alone, unpacked into an empty directory tree (dpkg-deb -x: no
# maintainer script runs, nothing of the system is there): a program must
# build and run against that tree only (its headers, its rlock.pc, its CMake
# package, its libraries), with the system giving nothing of rlock's.
say "clean root: unpacking ${pkgs[*]} into an empty tree"
croot=$work/root
mkdir -p "$croot"
for deb in "${debs[@]}"; do
    dpkg-deb -x "$deb" "$croot"
done
[[ -z $(find "$croot" -mindepth 1 -maxdepth 1 ! -name usr) ]] ||
    fail "the packages put something outside /usr"
# rlock.pc from the tree, its prefix moved there; hiredis.pc and uuid.pc
# (its private requirements) from the system.
rpc=(pkg-config --define-variable=prefix="$croot/usr")
(export PKG_CONFIG_PATH=$croot/$libdir/pkgconfig
 [[ $("${rpc[@]}" --variable=pcfiledir rlock) == "$croot/$libdir/pkgconfig" ]] ||
     fail "pkg-config did not take the clean root's rlock.pc"
 [[ $("${rpc[@]}" --modversion rlock) == "$version" ]] ||
     fail "the clean root's rlock.pc says $("${rpc[@]}" --modversion rlock)"
 # Word splitting of the pkg-config output is intended.
 # shellcheck disable=SC2046
 "${CC:-cc}" -Wall -Wextra -Werror -o "$work/app-root" "$here/app.c" \
     $("${rpc[@]}" --cflags --libs rlock))
loaded=$(LD_LIBRARY_PATH=$croot/$libdir ldd "$work/app-root" |
    awk -v so="librlock.so.$major" '$1 == so { print $3 }')
[[ $loaded == "$croot/$libdir/librlock.so.$major" ]] ||
    fail "app-root loads '$loaded', not the clean root's librlock.so.$major"
LD_LIBRARY_PATH=$croot/$libdir "$work/app-root"
cmake -S "$here" -B "$work/cmake-root" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$croot/usr" -DCMAKE_FIND_ROOT_PATH="$croot"
found=$(sed -n 's/^rlock_DIR:[A-Z]*=//p' "$work/cmake-root/CMakeCache.txt")
[[ $found == "$croot/$libdir/cmake/rlock" ]] ||
    fail "find_package(rlock) found $found, not the clean root's package"
cmake --build "$work/cmake-root"
LD_LIBRARY_PATH=$croot/$libdir "$work/cmake-root/app"
"$work/cmake-root/app_static"
if ((${#pkgs[@]} == 3)); then
    LD_LIBRARY_PATH=$croot/$libdir "$croot/usr/bin/rlock" --version >/dev/null ||
        fail "the clean root's rlock --version failed"
fi
say "clean root: ok"

# --- install -----------------------------------------------------------------
for p in "${pkgs[@]}"; do
    if dpkg-query -W -f '${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^.[^n]'; then
        fail "$p is already installed here; deb.sh will not replace it"
    fi
    while read -r f; do
        [[ ! -e /$f && ! -L /$f ]] || fail "/$f already exists (not from a package of ours); deb.sh will not overwrite it"
    done <"$work/$p.files"
done
# Directories the packages would create, to check they go with them.
for deb in "${debs[@]}"; do
    dpkg-deb -c "$deb" | awk '$1 ~ /^d/ { print $6 }' | sed 's|^\./||; s|/$||' | grep -v '^$'
done | sort -u | while read -r d; do
    [[ -e /$d ]] || printf '%s\n' "$d"
done >"$work/new.dirs"

dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' | awk '$1 ~ /^.[^n]/ { print $2 }' |
    sort >"$pkgs_before"
say "installing ${pkgs[*]} (apt-get)"
installed=1
"${apt[@]}" install --no-install-recommends "${debs[@]}"

for p in "${pkgs[@]}"; do
    dpkg-query -W -f '${db:Status-Abbrev}' "$p" | grep -q '^ii' || fail "$p is not installed"
    while read -r f; do
        [[ -e /$f ]] || fail "/$f, of $p, is not on disk"
    done <"$work/$p.files"
done

# --- use ---------------------------------------------------------------------
say "pkg-config consumer against /usr"
(unset PKG_CONFIG_PATH PKG_CONFIG_LIBDIR
 [[ $(pkg-config --modversion rlock) == "$version" ]] || fail "pkg-config says rlock $(pkg-config --modversion rlock)"
 # Word splitting of the pkg-config output is intended.
 # shellcheck disable=SC2046
 "${CC:-cc}" -Wall -Wextra -Werror -o "$work/app-pc" "$here/app.c" $(pkg-config --cflags --libs rlock))
(unset LD_LIBRARY_PATH; "$work/app-pc")
# /lib may be /usr/lib (merged /usr): compare the files, not the names.
loaded=$(unset LD_LIBRARY_PATH; ldd "$work/app-pc" | awk -v so="librlock.so.$major" '$1 == so { print $3 }')
[[ -n $loaded && $(readlink -f "$loaded") == $(readlink -f "/$libdir/librlock.so.$major") ]] ||
    fail "app-pc loads '$loaded', not /$libdir/librlock.so.$major"

say "find_package(rlock) consumer against /usr (shared and static)"
cmake -S "$here" -B "$work/cmake" -DCMAKE_BUILD_TYPE=Release
found=$(sed -n 's/^rlock_DIR:[A-Z]*=//p' "$work/cmake/CMakeCache.txt")
[[ $found == "/$libdir/cmake/rlock" ]] || fail "find_package(rlock) found $found, not /$libdir/cmake/rlock"
cmake --build "$work/cmake"
(unset LD_LIBRARY_PATH; "$work/cmake/app" && "$work/cmake/app_static")
if ldd "$work/cmake/app_static" | grep 'librlock\.so' >/dev/null; then
    fail "app_static is linked against librlock.so, not librlock.a"
fi

say "find_package(rlock) consumer with no pkg-config and no .pc file"
mkdir -p "$work/no-pc"
PKG_CONFIG_LIBDIR=$work/no-pc PKG_CONFIG_PATH='' \
    cmake -S "$here" -B "$work/cmake-nopc" -DCMAKE_BUILD_TYPE=Release \
    -DPKG_CONFIG_EXECUTABLE="$work/no-pc/pkg-config"
cmake --build "$work/cmake-nopc"
(unset LD_LIBRARY_PATH; "$work/cmake-nopc/app" && "$work/cmake-nopc/app_static")

if ((${#pkgs[@]} == 3)); then
    say "rlock --help"
    command -v rlock >/dev/null || fail "no rlock command on PATH"
    [[ $(command -v rlock) == /usr/bin/rlock ]] || fail "rlock on PATH is $(command -v rlock), not /usr/bin/rlock"
    (unset LD_LIBRARY_PATH; rlock --help) >"$work/help.out" || fail "rlock --help failed"
    [[ -s $work/help.out ]] || fail "rlock --help printed nothing"
    sed 's/^/   /' "$work/help.out"
fi

# --- purge ---------------------------------------------------------------------
say "purging ${pkgs[*]}"
"${apt[@]}" remove --purge "${pkgs[@]}"
for p in "${pkgs[@]}"; do
    if dpkg-query -W -f '${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^.[^n]'; then
        fail "$p is still known to dpkg after the purge"
    fi
    while read -r f; do
        [[ ! -e /$f && ! -L /$f ]] || fail "/$f, of $p, is left after the purge"
    done <"$work/$p.files"
done
while read -r d; do
    [[ ! -e /$d ]] || fail "/$d, made by the packages, is left after the purge"
done <"$work/new.dirs"
say "ok"
