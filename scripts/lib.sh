# shellcheck shell=bash
#
# Shared shell functions for rlock's scripts (test.sh, demo.sh, torture.sh,
# bench.sh). Source it; do not run it.
#
#   rl_install_deps            install the Debian packages the build and the
#                              tests need, only those that are missing
#   rl_build DIR [ARGS...]     configure (extra cmake ARGS) and build into DIR
#   rl_redis_start [PORT]      start a throwaway redis-server on a free port
#                              (or on PORT, e.g. to restart one after a stop)
#   rl_redis_stop              stop it and remove its directory
#   rl_on_exit CMD...          run CMD when the script exits (last in, first
#                              out; CMD sees the exit status in RL_EXIT_STATUS)
#
# Never touches the ambient redis-server on 6379.

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

# Hooks see the script's exit status in RL_EXIT_STATUS.
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
    exit "$status"
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

RL_DEPS=(build-essential cmake pkg-config libhiredis-dev uuid-dev libcmocka-dev
         redis-server redis-tools clang libclang-rt-14-dev valgrind gnuplot-nox)

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
# Build.

rl_build() {
    local dir=${1:?usage: rl_build DIR [cmake args...]}
    shift
    cmake -S "$RL_ROOT" -B "$dir" "$@"
    cmake --build "$dir" -j "$(nproc)"
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
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
        --daemonize no --dir "$RL_REDIS_DIR" --logfile "$RL_REDIS_DIR/redis.log" \
        </dev/null >/dev/null 2>&1 &
    RL_REDIS_PID=$!
    deadline=$((SECONDS + 10))
    while ((SECONDS < deadline)); do
        if ! kill -0 "$RL_REDIS_PID" 2>/dev/null; then
            wait "$RL_REDIS_PID" 2>/dev/null || true
            RL_REDIS_PID=
            return 1
        fi
        # Ask for the server's pid, not just a PONG: another server that took
        # the port first would answer a ping too.
        if redis-cli -h 127.0.0.1 -p "$port" info server 2>/dev/null |
           tr -d '\r' | grep -x "process_id:$RL_REDIS_PID" >/dev/null; then
            return 0
        fi
        sleep 0.05
    done
    rl_log "redis-server on port $port did not answer within 10 s"
    kill "$RL_REDIS_PID" 2>/dev/null || true
    wait "$RL_REDIS_PID" 2>/dev/null || true
    RL_REDIS_PID=
    return 1
}

# The port argument is optional.
# shellcheck disable=SC2120
rl_redis_start() {
    local want=${1:-} port attempt

    command -v redis-server >/dev/null 2>&1 || rl_die "redis-server not found"
    command -v redis-cli >/dev/null 2>&1 || rl_die "redis-cli not found"
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
        # Below the Linux ephemeral range, so outgoing connections rarely collide.
        port=$((10000 + RANDOM % 20000))
        for ((attempt = 0; attempt < 50; attempt++)); do
            port=$((port + 1 + RANDOM % 97))
            ((port < 30000)) || port=$((10000 + RANDOM % 1000))
            ((port != 6379)) || continue
            rl__port_busy "$port" && continue
            rl__redis_try "$port" && break
            port=
        done
        [[ -n $port ]] ||
            rl_die "could not start redis-server on a free port (log: $RL_REDIS_DIR/redis.log)"
    fi

    RL_TEST_REDIS_PORT=$port
    RL_TEST_URL=redis://127.0.0.1:$port
    RL_REDIS_SERVER=$(command -v redis-server)
    export RL_TEST_URL RL_TEST_REDIS_PORT RL_REDIS_SERVER
    rl_log "redis-server $RL_REDIS_PID listening on $RL_TEST_URL (dir $RL_REDIS_DIR)"
}

# Stops the server and removes its directory. Safe to call more than once.
# After rl_redis_stop, rl_redis_start "$RL_TEST_REDIS_PORT" brings it back.
rl_redis_stop() {
    local deadline
    if [[ -n $RL_REDIS_PID ]]; then
        kill "$RL_REDIS_PID" 2>/dev/null || true
        deadline=$((SECONDS + 10))
        while kill -0 "$RL_REDIS_PID" 2>/dev/null && ((SECONDS < deadline)); do
            sleep 0.05
        done
        kill -9 "$RL_REDIS_PID" 2>/dev/null || true
        wait "$RL_REDIS_PID" 2>/dev/null || true
        RL_REDIS_PID=
    fi
    if [[ -n $RL_REDIS_DIR && -d $RL_REDIS_DIR ]]; then
        rm -rf -- "$RL_REDIS_DIR"
    fi
    RL_REDIS_DIR=
}
