#!/usr/bin/env bash
# rlock on Debian 13 ("trixie"), from Debian's packages (issue 24): in a
# Debian 13 root made with debootstrap inside the build tree, builds rlock
# with gcc -Werror against hiredis 1.2, runs the unit and integration tests
# against Redis 8.0, then against Valkey 8.1 (valkey-server, valkey-sentinel,
# valkey-cli), then builds the .deb packages there and installs and purges
# them (tests/packaging/deb.sh). Prints one line per leg with its time, and
# last "trixie.sh: N passed, M failed": the ctest tests of the redis and
# valkey legs, one each for the build and deb legs (and one failed for a
# leg or a set-up step that fails without a count).
#
#   scripts/trixie.sh [--fresh] [LEG...]
#
# makes the root (or reuses it; --fresh removes it first) and runs the legs
# named, in this order, or all of them: build, redis, valkey, deb (redis and
# valkey build first).
#
#   RL_TRIXIE_DIR=DIR      the root (DIR/root) and its state (default
#                          build-trixie/ of the source tree)
#   RL_DEBIAN_MIRROR=URL   Debian mirror (default http://deb.debian.org/debian)
#   RL_CTEST_JOBS=N        run N tests at once inside the root (default 1)
#   RL_TRIXIE_TESTS=RE     only the tests whose names match RE (ctest -R)
#
# Needs root (debootstrap, chroot, mount) and installs debootstrap on the host
# when it is missing. Nothing is cached outside DIR. While a leg runs, /proc,
# /dev and /dev/pts are mounted into the root; on every exit path (Ctrl-C
# included) every process still running inside the root is stopped and every
# mount under it undone.
#
# Inside the root the same script runs as `trixie.sh --inside LEG`, LEG one
# of build, redis, valkey, deb; the source is a copy in /rlock, the builds are
# in /build and /build-deb.
set -euo pipefail

RL_LOG_TAG=trixie.sh
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The packages of the root: the build, the tests, the packaging (dpkg-dev,
# file), both servers, and OpenSSL for the TLS transport (issue 24).
TRIXIE_PKGS=(build-essential cmake pkg-config libhiredis-dev uuid-dev libcmocka-dev
             libssl-dev openssl redis-server redis-tools redis-sentinel valkey-server
             valkey-tools valkey-sentinel dpkg-dev file)

# ---------------------------------------------------------------------------
# Inside the root.

inside_build() {
    rl_build /build -DCMAKE_C_COMPILER=gcc -DRLOCK_BUILD_TESTS=ON -DRLOCK_BUILD_EXAMPLES=ON
}

# The unit and integration tests against $1 (redis or valkey): the harness
# (tests/common) and lib.sh start that server, sentinel and client.
inside_ctest() {
    if [[ $1 == valkey ]]; then
        export RL_REDIS_SERVER=/usr/bin/valkey-server RL_REDIS_SENTINEL=/usr/bin/valkey-sentinel
        export RL_REDIS_CLI=/usr/bin/valkey-cli
    fi
    rl_redis_start
    "${RL_REDIS_SERVER}" --version
    # The counts go to the host through the root's /tmp (emptied each run).
    ctest --test-dir /build --output-on-failure --no-tests=error --timeout 600 \
        --output-junit "/tmp/ctest-$1.xml" \
        -j "${RL_CTEST_JOBS:-1}" -L '^(unit|integration)$' ${RL_TRIXIE_TESTS:+-R "$RL_TRIXIE_TESTS"}
}

inside() {
    cd "$RL_ROOT"
    case $1 in
        build) inside_build ;;
        redis | valkey) inside_ctest "$1" ;;
        deb) bash tests/packaging/deb.sh /build-deb ;;
        *) rl_die "--inside: no leg '$1'" ;;
    esac
}

if [[ ${1:-} == --inside ]]; then
    inside "${2:?usage: trixie.sh --inside build|redis|valkey|deb}"
    exit 0
fi

# ---------------------------------------------------------------------------
# On the host.

fresh=0
if [[ ${1:-} == --fresh ]]; then
    fresh=1
    shift
fi
want=" ${*:-build redis valkey deb} "
for arg in $want; do
    [[ " build redis valkey deb " == *" $arg "* ]] ||
        rl_die "usage: scripts/trixie.sh [--fresh] [build|redis|valkey|deb]..."
done
[[ $want != *" redis "* && $want != *" valkey "* ]] || want+="build "
((EUID == 0)) || rl_die "needs root (debootstrap, chroot, mount): run it with sudo"

dir=${RL_TRIXIE_DIR:-$RL_ROOT/build-trixie}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd -P)
root=$dir/root
mirror=${RL_DEBIAN_MIRROR:-http://deb.debian.org/debian}
legs=()
leg_t0=0
leg_name=
leg_word=
bg_pid=
passed=0
failed=0

leg_begin() {
    leg_name=$1
    leg_t0=$SECONDS
    rl_log "---- $leg_name"
}

leg_end() {
    legs+=("$(printf '%-44s %5ds  %s' "$leg_name" "$((SECONDS - leg_t0))" "${1:-ok}")")
    rl_log "---- $leg_name: ${1:-ok} ($((SECONDS - leg_t0)) s)"
    leg_name=
}

# count_leg WORD OK: the leg's checks into passed and failed. A ctest leg
# counts its tests (a failed one without them, one failure); the others
# count one.
count_leg() {
    local p=0 f=0
    if [[ $1 == redis || $1 == valkey ]]; then
        read -r p f < <(rl_junit_counts "$root/tmp/ctest-$1.xml")
    fi
    if ((p + f == 0)); then
        if (($2)); then p=1; else f=1; fi
    elif ((!$2 && f == 0)); then
        f=1
    fi
    passed=$((passed + p))
    failed=$((failed + f))
}

report() {
    local line
    if [[ -n $leg_name ]]; then
        if [[ -n $leg_word ]]; then count_leg "$leg_word" 0; else failed=$((failed + 1)); fi
        leg_end "FAILED (exit status $RL_EXIT_STATUS)"
    elif ((RL_EXIT_STATUS != 0)); then
        failed=$((failed + 1))
    fi
    for line in "${legs[@]}"; do
        printf 'trixie.sh: %s\n' "$line"
    done
    printf 'trixie.sh: %d passed, %d failed\n' "$passed" "$failed"
}

# Runs "$@" in the background and waits for it, so that a signal is handled
# at once rather than when the command ends. Its output goes to the file
# to_log names, if set: not by redirecting run itself, which would send the
# exit hooks' output there too when a signal ends the script inside it.
run() {
    local rc=0
    if [[ -n ${to_log:-} ]]; then
        "$@" >>"$to_log" 2>&1 &
    else
        "$@" &
    fi
    bg_pid=$!
    wait "$bg_pid" || rc=$?
    bg_pid=
    return "$rc"
}

# The mount points under the root, deepest first.
mounts_under_root() {
    awk -v r="$root" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo |
        sort -r
}

# The pids of the processes whose root directory is ours.
pids_in_root() {
    local p
    for p in /proc/[0-9]*; do
        [[ $(readlink "$p/root" 2>/dev/null) == "$root" ]] && printf '%s\n' "${p#/proc/}"
    done
    return 0
}

# Exit hook: the command in the background (debootstrap, chroot), every
# process inside the root, then every mount under it.
cleanup_root() {
    local pids m
    # All at once: the shell inside the root, told alone, would wait for its
    # ctest to end before it exits.
    mapfile -t pids < <(pids_in_root)
    [[ -z $bg_pid ]] || pids+=("$bg_pid")
    if ((${#pids[@]} > 0)); then
        rl_log "stopping the background command and the processes left in the root: ${pids[*]}"
        # A test may have stopped a server (SIGSTOP): it must run to die.
        kill -CONT "${pids[@]}" 2>/dev/null || true
        rl__stop_pids "${pids[@]}"
    fi
    for m in $(mounts_under_root); do
        umount "$m" || { rl_log "umount $m failed: detaching it"; umount --lazy "$m"; }
    done
}

# Removes the root, refusing while anything is mounted under it (rm would go
# through a bind mount of /dev into the host's).
remove_root() {
    [[ -z $(mounts_under_root) ]] || rl_die "something is mounted under $root: $(mounts_under_root)"
    rm -rf --one-file-system -- "$root" "$dir/root.ok"
}

install_debootstrap() {
    command -v debootstrap >/dev/null 2>&1 && return 0
    rl_log "installing debootstrap"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap
}

# A minimal Debian 13. root.ok marks a root that debootstrap finished; one
# without it is made again.
make_root() {
    if [[ -f $dir/root.ok && -x $root/usr/bin/apt-get ]]; then
        rl_log "reusing $root"
        return 0
    fi
    remove_root
    install_debootstrap
    : >"$dir/debootstrap.log"
    to_log=$dir/debootstrap.log run debootstrap --variant=minbase trixie "$root" "$mirror" ||
        { tail -n 20 "$dir/debootstrap.log" >&2; rl_die "debootstrap failed (log: $dir/debootstrap.log)"; }
    touch "$dir/root.ok"
}

# What an installed Debian has and debootstrap does not write: /etc/hosts
# (tests reach their servers as localhost too). No daemon may start while
# packages are installed. And /tmp starts empty: an interrupted run leaves
# its servers' directories there.
configure_root() {
    rm -rf --one-file-system -- "$root/tmp"
    mkdir -m 1777 "$root/tmp"
    printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' \
        >"$root/etc/hosts"
    printf '#!/bin/sh\n# No daemon starts while packages are installed (scripts/trixie.sh).\nexit 101\n' \
        >"$root/usr/sbin/policy-rc.d"
    chmod 755 "$root/usr/sbin/policy-rc.d"
}

# "$@" inside the root, with a clean environment: nothing of the host's
# (RL_TEST_URL of a test.sh around us, say) leaks in.
in_root() {
    run chroot "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
        HOME=/root LC_ALL=C.UTF-8 TMPDIR=/tmp DEBIAN_FRONTEND=noninteractive \
        RL_CTEST_JOBS="${RL_CTEST_JOBS:-1}" RL_TRIXIE_TESTS="${RL_TRIXIE_TESTS:-}" \
        RL_TEST_PORTS="${RL_TEST_PORTS:-}" "$@"
}

install_packages() {
    # Quick when they are all there already: apt-get installs nothing.
    local to_log=$dir/apt.log
    : >"$to_log"
    in_root apt-get install -y --no-install-recommends "${TRIXIE_PKGS[@]}" ||
        { in_root apt-get update && in_root apt-get install -y --no-install-recommends "${TRIXIE_PKGS[@]}"; } ||
        { tail -n 20 "$dir/apt.log" >&2; rl_die "apt-get install failed in the root (log: $dir/apt.log)"; }
    to_log=
    # shellcheck disable=SC2016 # dpkg-query's format, not the shell's
    in_root dpkg-query -W -f '  ${Package} ${Version}\n' libhiredis-dev redis-server valkey-server cmake gcc
}

# The source tree, as it is on disk (uncommitted changes included), without
# its build trees and git metadata, into /rlock.
copy_source() {
    rm -rf --one-file-system -- "$root/rlock"
    mkdir -p "$root/rlock"
    tar -C "$RL_ROOT" --exclude='./build*' --exclude=./.git --exclude=./out -cf - . |
        tar -C "$root/rlock" -xf -
}

mount_root() {
    mount -t proc proc "$root/proc"
    mount --bind /dev "$root/dev"
    mount --bind /dev/pts "$root/dev/pts"
}

# One run per root: the next one would stop this one's processes.
exec 9>"$dir/lock"
flock -n 9 || rl_die "another trixie.sh is using $dir"
rl_on_exit report
rl_on_exit cleanup_root
cleanup_root
((fresh == 0)) || remove_root

leg_begin "root (debootstrap trixie)"
make_root
configure_root
leg_end
mount_root
leg_begin "packages (apt-get in the root)"
install_packages
leg_end
copy_source

# leg WORD TITLE: the leg inside the root, if asked for.
leg() {
    [[ $want == *" $1 "* ]] || return 0
    leg_begin "$2"
    leg_word=$1
    in_root bash /rlock/scripts/trixie.sh --inside "$1"
    count_leg "$1" 1
    leg_word=
    leg_end
}

leg build "build (gcc -Werror, hiredis 1.2)"
leg redis "unit + integration, Redis 8.0"
leg valkey "unit + integration, Valkey 8.1"
leg deb ".deb packages: build, install, purge"
