# shellcheck shell=bash
#
# Shared shell functions for rlock's scripts (test.sh, demo.sh, torture.sh,
# bench.sh). Source it; do not run it.
#
#   rl_install_deps            install the Debian packages the build and the
#                              tests need, only those that are missing
#   rl_build DIR [ARGS...]     configure (extra cmake ARGS) and build into DIR,
#                              warnings as errors (-DRLOCK_WERROR=ON; ARGS
#                              may turn it off)
#   rl_redis_start [PORT]      start a throwaway redis-server on a free port
#                              (or on PORT, e.g. to restart one after a stop)
#   rl_redis_stop              stop it and remove its directory
#   rl_cluster_start [N]       start a throwaway Redis Cluster of N masters
#                              (default 3, no replicas) on free ports
#   rl_cluster_stop            stop its nodes and remove their directories
#   rl_redlock_start [N]       start N (odd, 3..9; default 5) independent
#                              redis-servers on free ports, for Redlock mode
#   rl_redlock_stop            stop them and remove their directories
#   rl_on_exit CMD...          run CMD when the script exits (last in, first
#                              out; CMD sees the exit status in RL_EXIT_STATUS,
#                              and may change it there)
#   rl_junit_counts FILE       "P F": the tests passed and failed in a ctest
#                              --output-junit FILE
#
# Every server takes its port from RL_TEST_PORTS=LO-HI (default 20000-29999,
# below the kernel's range for outgoing connections, 32768-60999), drawn at
# random; a port found busy is skipped, and a server that dies because its
# port was taken a moment later is started again on another. The harness of
# the C tests (tests/common, rt_free_port) reads the same variable.
#
# Never touches the ambient redis-server on 6379. The servers are
# redis-server, or the program RL_REDIS_SERVER names (valkey-server), and
# they are asked with redis-cli, or RL_REDIS_CLI (valkey-cli): the variables
# the test harness (tests/common) reads too.

if [[ -n ${RL__LIB_SOURCED:-} ]]; then
    return 0
fi
RL__LIB_SOURCED=1

# Repository root, wherever the caller runs from.
RL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export RL_ROOT

rl_log() {
    printf '%s: %s\n' "${RL_LOG_TAG:-rlock}" "$*" >&2
}

rl_die() {
    rl_log "error: $*"
    exit 1
}

# ---------------------------------------------------------------------------
# Exit hooks. One EXIT trap for everything, so that sourcing scripts and this
# library do not overwrite each other's traps. Hooks run last in, first out.

RL__EXIT_HOOKS=()

# Hooks see the script's exit status in RL_EXIT_STATUS; one may set it
# (test.sh's summary: non-zero when a check failed).
RL_EXIT_STATUS=0

rl__run_exit_hooks() {
    local status=$? i
    trap - EXIT
    set +e
    # shellcheck disable=SC2034 # read by the hooks
    RL_EXIT_STATUS=$status
    for ((i = ${#RL__EXIT_HOOKS[@]} - 1; i >= 0; i--)); do
        eval "${RL__EXIT_HOOKS[i]}"
    done
    exit "$RL_EXIT_STATUS"
}

rl_on_exit() {
    RL__EXIT_HOOKS+=("$*")
}

trap rl__run_exit_hooks EXIT
# An interrupted run still cleans up: turn signals into an ordinary exit.
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------
# Dependencies.

# dpkg-dev and file: cpack -G DEB (dpkg-shlibdeps, tests/packaging/deb.sh).
# lua-check: luacheck, over the Lua scripts (scripts/test.sh, src/lua/).
# universal-ctags: the names each module defines (scripts/layers.sh).
# libssl-dev: the TLS transport (src/tls.c); openssl: the tests' certificates.
RL_DEPS=(build-essential cmake pkg-config libhiredis-dev uuid-dev libcmocka-dev libssl-dev openssl
         redis-server redis-tools redis-sentinel clang libclang-rt-14-dev valgrind gnuplot-nox
         dpkg-dev file lua-check universal-ctags)

rl__pkg_installed() {
    dpkg -s "$1" 2>/dev/null | grep '^Status: install ok installed$' >/dev/null
}

rl_install_deps() {
    local missing=() pkg sudo=()

    command -v dpkg >/dev/null 2>&1 || rl_die "dpkg not found: rl_install_deps needs Debian or Ubuntu"
    for pkg in "${RL_DEPS[@]}"; do
        if [[ $pkg == gnuplot-nox ]]; then
            # Any gnuplot flavour will do; do not pull in a second one.
            if rl__pkg_installed gnuplot-nox || rl__pkg_installed gnuplot-qt ||
               rl__pkg_installed gnuplot-x11; then
                continue
            fi
        fi
        rl__pkg_installed "$pkg" || missing+=("$pkg")
    done
    if ((${#missing[@]} == 0)); then
        rl_log "dependencies: all installed"
        return 0
    fi

    if ((EUID != 0)); then
        command -v sudo >/dev/null 2>&1 ||
            rl_die "missing packages (${missing[*]}) and not root, no sudo"
        sudo=(sudo)
    fi
    rl_log "dependencies: installing ${missing[*]}"
    "${sudo[@]}" apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends "${missing[@]}"
}

# ---------------------------------------------------------------------------
# Counting tests: ctest --output-junit FILE writes one <testcase ...
# status="run|fail|notrun|disabled"> line per test. Not run (a program
# missing, say) is a failure; disabled is neither. Prints "0 0" when FILE
# is missing or empty.

rl_junit_counts() {
    local file=$1
    [[ -s $file ]] || { printf '0 0\n'; return 0; }
    awk '/^[[:space:]]*<testcase / {
             if ($0 ~ /status="run"/) p++
             else if ($0 ~ /status="(fail|notrun)"/) f++
         }
         END { printf "%d %d\n", p, f }' "$file"
}

# ---------------------------------------------------------------------------
# Build.

rl_build() {
    local dir=${1:?usage: rl_build DIR [cmake args...]}
    shift
    # The project's own builds treat warnings as errors; packagers' do not.
    # "|| return": a caller testing the status (test.sh's check) turns set -e
    # off in here.
    cmake -S "$RL_ROOT" -B "$dir" -DRLOCK_WERROR=ON "$@" || return
    cmake --build "$dir" -j "$(nproc)"
}

# ---------------------------------------------------------------------------
# The server program and its client.

rl__cli() {
    "${RL_REDIS_CLI:-redis-cli}" "$@"
}

rl__need_server() {
    command -v "${RL_REDIS_SERVER:-redis-server}" >/dev/null 2>&1 ||
        rl_die "${RL_REDIS_SERVER:-redis-server} not found"
    command -v "${RL_REDIS_CLI:-redis-cli}" >/dev/null 2>&1 ||
        rl_die "${RL_REDIS_CLI:-redis-cli} not found"
}

# ---------------------------------------------------------------------------
# Throwaway redis-server.

RL_REDIS_PID=
RL_REDIS_DIR=

# True when something accepts connections on 127.0.0.1:$1.
rl__port_busy() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Starts redis-server on $1 in $RL_REDIS_DIR and waits until it answers.
# Returns non-zero if it died (port taken) or did not answer within 10 s.
rl__redis_try() {
    local port=$1 deadline
    "${RL_REDIS_SERVER:-redis-server}" --port "$port" --bind 127.0.0.1 --save '' \
        --appendonly no --daemonize no --dir "$RL_REDIS_DIR" --logfile "$RL_REDIS_DIR/redis.log" \
        </dev/null >/dev/null 2>&1 &
    RL_REDIS_PID=$!
    if ! rl__redis_answers "$port" "$RL_REDIS_PID"; then
        RL_REDIS_PID=
        return 1
    fi
}

# Waits until the redis-server of pid $2 answers on 127.0.0.1:$1. Returns
# non-zero, the process reaped, if it died (port taken) or did not answer
# within 10 s.
rl__redis_answers() {
    local port=$1 pid=$2 deadline
    deadline=$((SECONDS + 10))
    while ((SECONDS < deadline)); do
        if ! kill -0 "$pid" 2>/dev/null; then
            wait "$pid" 2>/dev/null || true
            return 1
        fi
        # Ask for the server's pid, not just a PONG: another server that took
        # the port first would answer a ping too.
        if rl__cli -h 127.0.0.1 -p "$port" info server 2>/dev/null |
           tr -d '\r' | grep -x "process_id:$pid" >/dev/null; then
            return 0
        fi
        sleep 0.05
    done
    rl_log "redis-server on port $port did not answer within 10 s"
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    return 1
}

# The port argument is optional.
# shellcheck disable=SC2120
rl_redis_start() {
    local want=${1:-} port attempt

    rl__need_server
    [[ -z $RL_REDIS_PID ]] || rl_die "rl_redis_start: a redis-server is already running (pid $RL_REDIS_PID)"

    if [[ -z $RL_REDIS_DIR ]]; then
        RL_REDIS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/rlock-redis.XXXXXX")
        rl_on_exit rl_redis_stop
    fi

    if [[ -n $want ]]; then
        [[ $want != 6379 ]] || rl_die "rl_redis_start: refusing the ambient port 6379"
        rl__redis_try "$want" ||
            rl_die "redis-server failed to start on port $want (log: $RL_REDIS_DIR/redis.log)"
        port=$want
    else
        # A port of RL_TEST_PORTS; one taken between the check and the
        # server's bind makes the server die: then another.
        port=
        for ((attempt = 0; attempt < 20; attempt++)); do
            port=$(rl__free_port) || rl_die "rl_redis_start: no free port in RL_TEST_PORTS"
            rl__redis_try "$port" && break
            port=
        done
        [[ -n $port ]] ||
            rl_die "could not start redis-server on a free port (log: $RL_REDIS_DIR/redis.log)"
    fi

    RL_TEST_REDIS_PORT=$port
    RL_TEST_URL=redis://127.0.0.1:$port
    RL_REDIS_SERVER=$(command -v "${RL_REDIS_SERVER:-redis-server}")
    export RL_TEST_URL RL_TEST_REDIS_PORT RL_REDIS_SERVER
    rl_log "${RL_REDIS_SERVER##*/} $RL_REDIS_PID listening on $RL_TEST_URL (dir $RL_REDIS_DIR)"
}

# SIGTERM to every pid given, SIGKILL to those still there after 10 s, each
# reaped.
rl__stop_pids() {
    local pid deadline
    for pid in "$@"; do
        kill "$pid" 2>/dev/null || true
    done
    deadline=$((SECONDS + 10))
    for pid in "$@"; do
        while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
            sleep 0.05
        done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
}

# Stops the server and removes its directory. Safe to call more than once.
# After rl_redis_stop, rl_redis_start "$RL_TEST_REDIS_PORT" brings it back.
rl_redis_stop() {
    if [[ -n $RL_REDIS_PID ]]; then
        rl__stop_pids "$RL_REDIS_PID"
        RL_REDIS_PID=
    fi
    if [[ -n $RL_REDIS_DIR && -d $RL_REDIS_DIR ]]; then
        rm -rf -- "$RL_REDIS_DIR"
    fi
    RL_REDIS_DIR=
}

# ---------------------------------------------------------------------------
# Throwaway Redis Cluster: masters only, every node on loopback.

RL_CLUSTER_PIDS=()
RL_CLUSTER_DIR=
RL__CLUSTER_HOOKED=

# The range of RL_TEST_PORTS into the caller's lo and hi; dies on a
# malformed value.
rl__port_range() {
    local v=${RL_TEST_PORTS:-20000-29999}
    if [[ $v =~ ^([0-9]{4,5})-([0-9]{4,5})$ ]] &&
       ((10#${BASH_REMATCH[1]} >= 1024 && 10#${BASH_REMATCH[1]} <= 10#${BASH_REMATCH[2]} &&
         10#${BASH_REMATCH[2]} <= 65535)); then
        lo=$((10#${BASH_REMATCH[1]}))
        hi=$((10#${BASH_REMATCH[2]}))
        return 0
    fi
    rl_die "RL_TEST_PORTS=$v: want LO-HI with 1024 <= LO <= HI <= 65535"
}

# Prints a port of RL_TEST_PORTS that nothing listens on, neither 6379 nor
# one of "$@": random draws, then every port of the range from a random
# start, so that a crowded range still yields its last free port. Returns
# non-zero when none is free.
rl__free_port() {
    local lo hi span start port k p
    rl__port_range
    span=$((hi - lo + 1))
    start=$(((RANDOM << 15 | RANDOM) % span))
    for ((k = 0; k < 64 + span; k++)); do
        if ((k < 64)); then
            port=$((lo + (RANDOM << 15 | RANDOM) % span))
        else
            port=$((lo + (start + k) % span))
        fi
        ((port != 6379)) || continue
        for p in "$@"; do
            [[ $p != "$port" ]] || continue 2
        done
        rl__port_busy "$port" && continue
        printf '%s\n' "$port"
        return 0
    done
    return 1
}

# Starts cluster node $1 on port $2, its cluster bus on port $3 (given
# explicitly: the default, port + 10000, could be anyone's), in a directory
# of its own, and waits until it answers as itself.
rl__cluster_node_try() {
    local i=$1 port=$2 bus=$3 dir=$RL_CLUSTER_DIR/node-$1 pid
    rm -rf -- "$dir"
    mkdir -p "$dir"
    "${RL_REDIS_SERVER:-redis-server}" --port "$port" --cluster-port "$bus" --cluster-enabled yes \
        --cluster-config-file "$dir/nodes-$i.conf" --cluster-node-timeout 1000 \
        --save '' --appendonly no --bind 127.0.0.1 --daemonize no \
        --dir "$dir" --logfile "$dir/redis.log" </dev/null >/dev/null 2>&1 &
    pid=$!
    rl__redis_answers "$port" "$pid" || return 1
    RL_CLUSTER_PIDS+=("$pid")
}

# True when every node on the ports "$@" says cluster_state:ok and its
# CLUSTER SLOTS gives all 16384 slots to exactly those nodes.
rl__cluster_ok() {
    local port
    for port in "$@"; do
        rl__cli -h 127.0.0.1 -p "$port" cluster info 2>/dev/null | tr -d '\r' |
            grep -x 'cluster_state:ok' >/dev/null || return 1
        # Each range reads [start,end,["ip",port,...]...] in JSON.
        rl__cli -2 --json -h 127.0.0.1 -p "$port" cluster slots 2>/dev/null |
            grep -oE '\[[0-9]+,[0-9]+,\["[^"]*",[0-9]+' | tr -d '["' |
            awk -F, -v ours=" $* " '
                index(ours, " " $4 " ") == 0 { stranger = 1 }
                !($4 in owner) { owner[$4] = 1; masters++ }
                { slots += $2 - $1 + 1 }
                END { exit !(slots == 16384 && !stranger && masters == split(ours, x, " ")) }' ||
            return 1
    done
}

# Starts N masters (default 3, no replicas) and joins them with
# `redis-cli --cluster create`. Exports RL_CLUSTER_URL (the seed list
# redis://127.0.0.1:p0,127.0.0.1:p1,...) and RL_CLUSTER_PORTS ("p0 p1 ...").
# shellcheck disable=SC2120 # the argument is optional
rl_cluster_start() {
    local nmasters=${1:-3} i port bus attempt deadline ports=() used=() addrs=()

    rl__need_server
    if ! [[ $nmasters =~ ^[0-9]+$ ]] || ((nmasters < 3)); then
        rl_die "rl_cluster_start: a cluster needs 3 masters or more, not '$nmasters'"
    fi
    ((${#RL_CLUSTER_PIDS[@]} == 0)) ||
        rl_die "rl_cluster_start: a cluster is already running (pids ${RL_CLUSTER_PIDS[*]})"

    RL_CLUSTER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/rlock-cluster.XXXXXX")
    if [[ -z $RL__CLUSTER_HOOKED ]]; then
        rl_on_exit rl_cluster_stop
        RL__CLUSTER_HOOKED=1
    fi

    for ((i = 0; i < nmasters; i++)); do
        # Another program can take a port between the check and the start:
        # then the node dies, and we try other ports.
        for ((attempt = 0; attempt < 20; attempt++)); do
            port=$(rl__free_port "${used[@]}") || rl_die "rl_cluster_start: no free port found"
            bus=$(rl__free_port "${used[@]}" "$port") || rl_die "rl_cluster_start: no free port found"
            if rl__cluster_node_try "$i" "$port" "$bus"; then
                ports+=("$port")
                used+=("$port" "$bus")
                break
            fi
        done
        ((${#ports[@]} == i + 1)) ||
            rl_die "could not start cluster node $i on a free port (log: $RL_CLUSTER_DIR/node-$i/redis.log)"
        addrs+=("127.0.0.1:$port")
    done

    if ! rl__cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes \
            </dev/null >"$RL_CLUSTER_DIR/create.log" 2>&1; then
        tail -n 20 "$RL_CLUSTER_DIR/create.log" >&2
        rl_die "redis-cli --cluster create failed (log: $RL_CLUSTER_DIR/create.log)"
    fi
    deadline=$((SECONDS + 30))
    until rl__cluster_ok "${ports[@]}"; do
        ((SECONDS < deadline)) ||
            rl_die "the cluster on ports ${ports[*]} was not ok within 30 s (logs: $RL_CLUSTER_DIR)"
        sleep 0.05
    done

    RL_CLUSTER_PORTS="${ports[*]}"
    RL_CLUSTER_URL="redis://$(IFS=,; echo "${addrs[*]}")"
    export RL_CLUSTER_URL RL_CLUSTER_PORTS
    rl_log "redis cluster of $nmasters masters (pids ${RL_CLUSTER_PIDS[*]}) at $RL_CLUSTER_URL (dir $RL_CLUSTER_DIR)"
}

# Stops every node and removes their directories. Safe to call more than once.
rl_cluster_stop() {
    rl__stop_pids "${RL_CLUSTER_PIDS[@]}"
    RL_CLUSTER_PIDS=()
    if [[ -n $RL_CLUSTER_DIR && -d $RL_CLUSTER_DIR ]]; then
        rm -rf -- "$RL_CLUSTER_DIR"
    fi
    RL_CLUSTER_DIR=
}

# ---------------------------------------------------------------------------
# Throwaway Redlock masters: independent redis-servers (no cluster, no
# replication), every one on loopback.

RL_REDLOCK_PIDS=()
RL_REDLOCK_DIR=
RL__REDLOCK_HOOKED=

# Starts Redlock master $1 on port $2 in a directory of its own and waits
# until it answers as itself.
rl__redlock_node_try() {
    local i=$1 port=$2 dir=$RL_REDLOCK_DIR/node-$1 pid
    rm -rf -- "$dir"
    mkdir -p "$dir"
    "${RL_REDIS_SERVER:-redis-server}" --port "$port" --bind 127.0.0.1 --save '' \
        --appendonly no --daemonize no --dir "$dir" --logfile "$dir/redis.log" \
        </dev/null >/dev/null 2>&1 &
    pid=$!
    rl__redis_answers "$port" "$pid" || return 1
    RL_REDLOCK_PIDS+=("$pid")
}

# Starts N masters (default 5; odd, 3..9, as redlock:// wants). Exports
# RL_REDLOCK_URL (redlock://127.0.0.1:p0,127.0.0.1:p1,...) and
# RL_REDLOCK_PORTS ("p0 p1 ..."). The first k ports make a smaller Redlock.
# shellcheck disable=SC2120 # the argument is optional
rl_redlock_start() {
    local nmasters=${1:-5} i port attempt ports=() addrs=()

    rl__need_server
    if ! [[ $nmasters =~ ^[0-9]+$ ]] || ((nmasters < 3 || nmasters > 9 || nmasters % 2 == 0)); then
        rl_die "rl_redlock_start: Redlock takes an odd number of masters, 3 to 9, not '$nmasters'"
    fi
    ((${#RL_REDLOCK_PIDS[@]} == 0)) ||
        rl_die "rl_redlock_start: Redlock masters are already running (pids ${RL_REDLOCK_PIDS[*]})"

    RL_REDLOCK_DIR=$(mktemp -d "${TMPDIR:-/tmp}/rlock-redlock.XXXXXX")
    # Hooked before the first start: a run that dies half-way still stops
    # the masters it started.
    if [[ -z $RL__REDLOCK_HOOKED ]]; then
        rl_on_exit rl_redlock_stop
        RL__REDLOCK_HOOKED=1
    fi

    for ((i = 0; i < nmasters; i++)); do
        # Another program can take a port between the check and the start:
        # then the server dies, and we try another port.
        for ((attempt = 0; attempt < 20; attempt++)); do
            port=$(rl__free_port "${ports[@]}") || rl_die "rl_redlock_start: no free port found"
            if rl__redlock_node_try "$i" "$port"; then
                ports+=("$port")
                break
            fi
        done
        ((${#ports[@]} == i + 1)) ||
            rl_die "could not start Redlock master $i on a free port (log: $RL_REDLOCK_DIR/node-$i/redis.log)"
        addrs+=("127.0.0.1:$port")
    done

    RL_REDLOCK_PORTS="${ports[*]}"
    RL_REDLOCK_URL="redlock://$(IFS=,; echo "${addrs[*]}")"
    export RL_REDLOCK_URL RL_REDLOCK_PORTS
    rl_log "$nmasters Redlock masters (pids ${RL_REDLOCK_PIDS[*]}) at $RL_REDLOCK_URL (dir $RL_REDLOCK_DIR)"
}

# Stops every master and removes their directories. Safe to call more than
# once.
rl_redlock_stop() {
    rl__stop_pids "${RL_REDLOCK_PIDS[@]}"
    RL_REDLOCK_PIDS=()
    if [[ -n $RL_REDLOCK_DIR && -d $RL_REDLOCK_DIR ]]; then
        rm -rf -- "$RL_REDLOCK_DIR"
    fi
    RL_REDLOCK_DIR=
}
