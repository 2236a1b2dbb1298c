#!/usr/bin/env bash
# Smoke test of the soft-RoCE tier: boots the guest and checks, inside it, that rxe0 exists, that rping and
# rstream (with data verification) work over 192.0.2.1, and that the JDK 25 runs. Prints PASS/FAIL per check, the
# figures rstream printed and the timings; exits 0 only if every check passed.
#
# usage: interop-tests/guest/smoke.sh
#
# Environment: RDMACHANNEL_SMOKE_TIMEOUT (guest timeout in seconds, default 600), RDMACHANNEL_SMOKE_SIZE (rstream
# -S, default 4096), RDMACHANNEL_SMOKE_COUNT (rstream -C, default 100), and those of run-in-guest.sh.
set -euo pipefail

GUEST_SCRIPT_NAME=smoke
# shellcheck source=interop-tests/guest/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ADDR=192.0.2.1
SIZE="${RDMACHANNEL_SMOKE_SIZE:-4096}"
COUNT="${RDMACHANNEL_SMOKE_COUNT:-100}"

# ---------------------------------------------------------------------------------------------------------------
# On the host: run this script inside the guest.

if [[ ${RDMACHANNEL_GUEST:-} != 1 ]]; then
    start=$SECONDS
    status=0
    "$GUEST_DIR/run-in-guest.sh" --timeout "${RDMACHANNEL_SMOKE_TIMEOUT:-600}" \
        --env "RDMACHANNEL_SMOKE_SIZE=$SIZE" --env "RDMACHANNEL_SMOKE_COUNT=$COUNT" \
        -- "$GUEST_DIR/smoke.sh" || status=$?
    if [[ $status -eq 0 ]]; then
        echo "soft-RoCE smoke test: PASS (total ${SECONDS}s wall time including build check and boot)"
    else
        echo "soft-RoCE smoke test: FAIL (exit status $status after $((SECONDS - start))s)"
    fi
    exit "$status"
fi

# ---------------------------------------------------------------------------------------------------------------
# In the guest.

WORK="$(mktemp -d /tmp/smoke.XXXXXX)"
results=()
failures=0

pass() {
    results+=("PASS  $1")
    echo "--- PASS: $1"
}

fail() {
    results+=("FAIL  $1${2:+: $2}")
    failures=$((failures + 1))
    echo "--- FAIL: $1${2:+: $2}"
}

# now_ms: milliseconds since boot.
now_ms() {
    local up
    read -r up _ </proc/uptime
    # /proc/uptime has two decimals: hundredths of a second without the dot.
    echo $((10#${up/./} * 10))
}

# wait_listen PID COMM PORT: wait until a process named COMM has an RDMA CM id listening on PORT, as long as PID
# (its "timeout" wrapper) lives, for at most 30 s.
wait_listen() {
    local pid="$1" comm="$2" port="$3" deadline=$((SECONDS + 30))
    while ((SECONDS < deadline)); do
        if rdma res show cm_id 2>/dev/null | grep -Eq "state LISTEN .*comm $comm .*src-addr [^ ]*:$port( |$)"; then
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.2
    done
    return 1
}

# show FILE: print a server's or client's output, indented.
show() {
    sed 's/^/    | /' "$1"
}

echo "=== ibv_devices"
if ibv_devices >"$WORK/devices" 2>&1 && grep -qw rxe0 "$WORK/devices"; then
    show "$WORK/devices"
    ibv_devinfo -d rxe0 2>&1 | grep -E 'transport|state|active_mtu|link_layer' | sed 's/^[[:space:]]*/    | /'
    pass "ibv_devices lists rxe0"
else
    show "$WORK/devices"
    fail "ibv_devices lists rxe0"
fi

echo "=== java -version"
java="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java"
t0=$(now_ms)
if "$java" -version >"$WORK/java" 2>&1; then
    show "$WORK/java"
    pass "$java -version ($(($(now_ms) - t0)) ms)"
else
    show "$WORK/java"
    fail "$java -version"
fi

echo "=== rping (3 pings)"
timeout 60 rping -s -a "$ADDR" -C 3 -v >"$WORK/rping-server" 2>&1 &
server=$!
if ! wait_listen "$server" rping 7174; then
    show "$WORK/rping-server"
    fail "rping" "the server did not listen on port 7174"
    kill "$server" 2>/dev/null || true
    wait "$server" || true
else
    t0=$(now_ms)
    client_status=0
    timeout 60 rping -c -a "$ADDR" -C 3 -v >"$WORK/rping-client" 2>&1 || client_status=$?
    server_status=0
    wait "$server" || server_status=$?
    elapsed=$(($(now_ms) - t0))
    echo "  server (exit $server_status):"
    show "$WORK/rping-server"
    echo "  client (exit $client_status):"
    show "$WORK/rping-client"
    pings="$(grep -c '^ping data: rdma-ping-' "$WORK/rping-client" || true)"
    if [[ $client_status -eq 0 && $server_status -eq 0 && $pings -eq 3 ]]; then
        pass "rping: 3 pings ($elapsed ms)"
    else
        fail "rping" "client exit $client_status, server exit $server_status, $pings of 3 pings"
    fi
fi

# rstream_check NAME OPTION...: rstream server and client over $ADDR with the given -T options.
RSTREAM_LINES=()
rstream_check() {
    local name="$1" server client_status server_status elapsed line
    shift
    echo "=== rstream $* (-S $SIZE -C $COUNT)"
    timeout 180 rstream -b "$ADDR" -S "$SIZE" -C "$COUNT" "$@" >"$WORK/rstream-server" 2>&1 &
    server=$!
    if ! wait_listen "$server" rstream 7471; then
        show "$WORK/rstream-server"
        fail "$name" "the server did not listen on port 7471"
        kill "$server" 2>/dev/null || true
        wait "$server" || true
        return
    fi
    t0=$(now_ms)
    client_status=0
    timeout 180 rstream -s "$ADDR" -S "$SIZE" -C "$COUNT" "$@" >"$WORK/rstream-client" 2>&1 || client_status=$?
    server_status=0
    wait "$server" || server_status=$?
    elapsed=$(($(now_ms) - t0))
    echo "  server (exit $server_status):"
    show "$WORK/rstream-server"
    echo "  client (exit $client_status):"
    show "$WORK/rstream-client"
    # The result line: name bytes xfers iters total time Gb/sec usec/xfer, e.g. "custom 4k 100 1 800k 0.12s ...".
    line="$(awk 'NF == 8 && $1 == "custom" && $6 ~ /s$/' "$WORK/rstream-client" | head -n 1)"
    if grep -q 'verification failed' "$WORK/rstream-client" "$WORK/rstream-server"; then
        fail "$name" "data verification failed"
    elif [[ $client_status -ne 0 || $server_status -ne 0 || -z $line ]]; then
        fail "$name" "client exit $client_status, server exit $server_status, result line: ${line:-none}"
    else
        RSTREAM_LINES+=("$name: $line")
        pass "$name: ${SIZE}-byte transfers x $COUNT each way, data verified ($elapsed ms)"
    fi
}
rstream_check "rstream -T v" -T v
rstream_check "rstream -T v -T b" -T v -T b

rm -rf "$WORK"
echo
echo "=== soft-RoCE smoke test summary"
printf '  %s\n' "${results[@]}"
if [[ ${#RSTREAM_LINES[@]} -gt 0 ]]; then
    echo "  rstream figures (name bytes xfers iters total time Gb/sec usec/xfer; TCG-emulated, compare only as ratios):"
    printf '    %s\n' "${RSTREAM_LINES[@]}"
fi
read -r up _ </proc/uptime
echo "  guest uptime at the end: ${up}s"
if [[ $failures -eq 0 ]]; then
    echo "  result: PASS"
    exit 0
fi
echo "  result: FAIL ($failures failed)"
exit 1
