#!/usr/bin/env bash
# The benchmark CLI of the demo (io.rdmachannel.demo.bench.BenchMain, native provider) against rdma-core's rstream,
# in the soft-RoCE guest: latency and bandwidth for the same message sizes and counts, blocking and polling, and a
# report with both side by side and the ratios Java/rstream. Everything in the guest is emulated (TCG): the
# absolute figures mean little, only the ratios measured in the same run do.
#
# What each side measures (rstream: rdma-core's librdmacm/examples/rstream.c, custom mode):
#   latency    rstream -S SIZE -C 1 -I N: N ping-pongs of SIZE bytes, timed as a whole; it prints usec/xfer, the
#              time per one-way transfer, so twice that is the mean round trip. Java: --test latency, N timed
#              round trips of SIZE bytes after W untimed ones (JIT warm-up); mean and p50 round trip.
#   bandwidth  rstream -S SIZE -C N -I 1: N messages of SIZE bytes to the server, then N back, timed as a whole;
#              its usec/xfer is the time per message, so SIZE / usec/xfer is MB/s (it also prints Gb/sec, with two
#              decimals only). Java: --test bandwidth, N messages of SIZE bytes one way after min(W, N) untimed ones,
#              timed from the first write to the server's acknowledgement; MB/s.
#   modes      blocking: rstream -T b against Java --mode blocking (rsockets spins 10 us before it sleeps, Java up
#              to its default RDMA_BUSY_POLL, 50 us, less while spins do not catch the event); polling:
#              rstream -T n (non-blocking calls in a spinning loop) against Java --mode busy-poll (RDMA_BUSY_POLL).
#   rings      rstream sets SO_SNDBUF and SO_RCVBUF to 512 KiB, which rsockets doubles: 1 MiB rings; the Java side
#              gets the same with rdmachannel.stream.sendBufferLength and receiveBufferLength.
#
# usage: interop-tests/guest/bench-vs-rstream.sh   (after a build: needs demo/target/demo.jar and demo/target/lib)
#
# Environment: RDMACHANNEL_BENCH_SIZES (default "64 4096 65536"), RDMACHANNEL_BENCH_ITERATIONS (round trips per
# latency measurement, default 1000), RDMACHANNEL_BENCH_WARMUP (the Java side's untimed round trips or messages,
# W, default 5000), RDMACHANNEL_BENCH_JAVA_OPTIONS (more options for both Java JVMs, through JDK_JAVA_OPTIONS: a
# setting such as -Drdmachannel.stream.pollingTimeMicros=10, or a JFR recording into the results folder, whose path
# the guest sees as on the host), RDMACHANNEL_BENCH_BYTES (bytes per bandwidth measurement, default 16777216;
# at most 20000 messages), RDMACHANNEL_BENCH_MODES (default "blocking polling"), RDMACHANNEL_BENCH_TIMEOUT (guest
# timeout in seconds, default 2400), and those of run-in-guest.sh. The report is bench-vs-rstream-report.txt in the
# run's results folder.
set -euo pipefail

GUEST_SCRIPT_NAME=bench-vs-rstream
# shellcheck source=interop-tests/guest/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ADDR=192.0.2.1
DEMO_JAR="$REPO_ROOT/demo/target/demo.jar"
SIZES="${RDMACHANNEL_BENCH_SIZES:-64 4096 65536}"
ITERATIONS="${RDMACHANNEL_BENCH_ITERATIONS:-1000}"
WARMUP="${RDMACHANNEL_BENCH_WARMUP:-5000}"
BYTES="${RDMACHANNEL_BENCH_BYTES:-16777216}"
MODES="${RDMACHANNEL_BENCH_MODES:-blocking polling}"
MAX_MESSAGES=20000
RING=1048576

# ---------------------------------------------------------------------------------------------------------------
# On the host: check the build, then run this script inside the guest.

if [[ ${RDMACHANNEL_GUEST:-} != 1 ]]; then
    [[ -f $DEMO_JAR && -d $REPO_ROOT/demo/target/lib ]] ||
        guest_die "no $DEMO_JAR or demo/target/lib: build first (./rdmachannel test, or mvn -DskipTests verify)"
    status=0
    "$GUEST_DIR/run-in-guest.sh" --timeout "${RDMACHANNEL_BENCH_TIMEOUT:-2400}" \
        --env "RDMACHANNEL_BENCH_SIZES=$SIZES" --env "RDMACHANNEL_BENCH_ITERATIONS=$ITERATIONS" \
        --env "RDMACHANNEL_BENCH_WARMUP=$WARMUP" \
        --env "RDMACHANNEL_BENCH_BYTES=$BYTES" --env "RDMACHANNEL_BENCH_MODES=$MODES" \
        --env "RDMACHANNEL_BENCH_JAVA_OPTIONS=${RDMACHANNEL_BENCH_JAVA_OPTIONS:-}" \
        -- "$GUEST_DIR/bench-vs-rstream.sh" || status=$?
    echo "bench vs rstream: $([[ $status -eq 0 ]] && echo DONE || echo "FAILED (exit status $status)")"
    exit "$status"
fi

# ---------------------------------------------------------------------------------------------------------------
# In the guest.

WORK="$(mktemp -d /tmp/bench.XXXXXX)"
RESULTS="${RDMACHANNEL_GUEST_RESULTS:-$WORK}"
REPORT="$RESULTS/bench-vs-rstream-report.txt"
if [[ -n ${RDMACHANNEL_BENCH_JAVA_OPTIONS:-} ]]; then
    # the java launcher reads it, in the bench's JVM and in the server JVM the bench starts
    export JDK_JAVA_OPTIONS="$RDMACHANNEL_BENCH_JAVA_OPTIONS"
fi
JAVA=("$JAVA_HOME/bin/java" --add-exports java.base/jdk.internal.misc=ALL-UNNAMED --enable-native-access=ALL-UNNAMED
    "-Drdmachannel.stream.sendBufferLength=$RING" "-Drdmachannel.stream.receiveBufferLength=$RING"
    -cp "$DEMO_JAR:$REPO_ROOT/demo/target/lib/*" io.rdmachannel.demo.bench.BenchMain)
failures=0
port=7600
ROWS=()

# messages SIZE: messages per bandwidth measurement.
messages() {
    local n=$((BYTES / $1))
    ((n < 1)) && n=1
    ((n > MAX_MESSAGES)) && n=$MAX_MESSAGES
    echo "$n"
}

# wait_listen PID: until rstream's server listens on $port (as long as PID lives, at most 60 s).
wait_listen() {
    local deadline=$((SECONDS + 60))
    while ((SECONDS < deadline)); do
        rdma res show cm_id 2>/dev/null | grep -Eq "state LISTEN .*comm rstream .*src-addr [^ ]*:$port( |$)" && return 0
        kill -0 "$1" 2>/dev/null || return 1
        sleep 0.2
    done
    return 1
}

# rstream_run NAME ARGS...: run an rstream server and client with ARGS; print the client's result line
# (name bytes xfers iters total time Gb/sec usec/xfer), or nothing on failure.
rstream_run() {
    local name=$1 spid cstatus=0 sstatus=0
    shift
    port=$((port + 1))
    rstream -b "$ADDR" -p "$port" "$@" >"$WORK/$name.server" 2>&1 &
    spid=$!
    if ! wait_listen "$spid"; then
        echo "rstream $name: the server did not listen: $(tail -n 3 "$WORK/$name.server" | tr '\n' ' ')" >&2
        kill "$spid" 2>/dev/null || true
        wait "$spid" 2>/dev/null || true
        return 0
    fi
    timeout 600 rstream -s "$ADDR" -p "$port" "$@" >"$WORK/$name.client" 2>&1 || cstatus=$?
    timeout 60 tail --pid="$spid" -f /dev/null || kill "$spid" 2>/dev/null || true
    wait "$spid" || sstatus=$?
    if [[ $cstatus -ne 0 || $sstatus -ne 0 ]]; then
        echo "rstream $name: client exit $cstatus, server exit $sstatus" >&2
        sed 's/^/  client| /' "$WORK/$name.client" | tail -n 5 >&2
        sed 's/^/  server| /' "$WORK/$name.server" | tail -n 5 >&2
        return 0
    fi
    awk 'NF == 8 && $1 == "custom" && $6 ~ /s$/ { print; exit }' "$WORK/$name.client"
}

# json_field LINE NAME: a number (or null) of a one-line JSON object.
json_field() {
    sed -n "s/.*\"$2\":\([-0-9.eE+]*\|null\)[,}].*/\1/p" <<<"$1"
}

# ratio A B: A/B with two decimals, or "-".
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a == "" || b == "" || a == "null" || b + 0 == 0) print "-"; else printf "%.2f", a / b
    }'
}

fmt() {
    awk -v v="$1" 'BEGIN { if (v == "" || v == "null") print "-"; else printf "%.1f", v }'
}

row() {
    ROWS+=("$(printf '%-9s %-6s %-10s %9s %11s %10s %10s %11s %9s %s' "$@")")
}

started=$SECONDS
for size in $SIZES; do
    n=$(messages "$size")
    for mode in $MODES; do
        case "$mode" in
            blocking) topt=b jmode=blocking ;;
            polling) topt=n jmode=busy-poll ;;
            *) guest_die "unknown mode $mode (blocking or polling)" ;;
        esac
        echo "=== size $size, $mode: rstream latency (-C 1 -I $ITERATIONS) and bandwidth (-C $n -I 1)"
        lat_line="$(rstream_run "lat-$size-$mode" -S "$size" -C 1 -I "$ITERATIONS" -T "$topt")"
        bw_line="$(rstream_run "bw-$size-$mode" -S "$size" -C "$n" -I 1 -T "$topt")"
        echo "  rstream latency:   ${lat_line:-FAILED}"
        echo "  rstream bandwidth: ${bw_line:-FAILED}"
        echo "=== size $size, $mode: Java bench (--mode $jmode, $ITERATIONS round trips, $n messages, warm-up $WARMUP)"
        jout="$WORK/java-$size-$mode.json"
        jstatus=0
        timeout 900 "${JAVA[@]}" --transport rdma --provider native --address "$ADDR" --mode "$jmode" \
            --test latency,bandwidth --sizes "$size" --iterations "$ITERATIONS" --warmup "$WARMUP" \
            --bytes $((n * size)) --timeout 600 --json --stats >"$jout" 2>"$WORK/java-$size-$mode.err" || jstatus=$?
        sed 's/^/  | /' "$jout"
        # the client connection's counters after each measurement (stalls, spins caught, waits)
        grep -a 'client connection' "$WORK/java-$size-$mode.err" | sed 's/^/  stats| /' || true
        if [[ $jstatus -ne 0 ]]; then
            echo "  Java bench: exit status $jstatus"
            sed 's/^/  err| /' "$WORK/java-$size-$mode.err" | tail -n 20
        fi
        jlat="$(grep '"test":"latency"' "$jout" | head -n 1 || true)"
        jbw="$(grep '"test":"bandwidth"' "$jout" | head -n 1 || true)"
        [[ -n $lat_line && -n $bw_line && -n $jlat && -n $jbw ]] || failures=$((failures + 1))

        # rstream: usec/xfer (field 8) is the time per one-way transfer: twice that is a round trip, and SIZE bytes
        # per usec/xfer are MB/s.
        r_rtt="$(awk '$8 > 0 { printf "%.3f", $8 * 2 }' <<<"$lat_line")"
        r_mbs="$(awk -v size="$size" '$8 > 0 { printf "%.3f", size / $8 }' <<<"$bw_line")"
        j_mean="$(json_field "$jlat" mean_us)"
        j_p50="$(json_field "$jlat" p50_us)"
        j_mbs="$(json_field "$jbw" mb_per_s)"
        row "$mode" "$size" latency "$(fmt "$r_rtt")" "$(fmt "$j_mean")" "$(fmt "$j_p50")" \
            "$(ratio "$j_mean" "$r_rtt")" "$(ratio "$j_p50" "$r_rtt")" "$ITERATIONS" "us round trip"
        row "$mode" "$size" bandwidth "$(fmt "$r_mbs")" "$(fmt "$j_mbs")" "-" "$(ratio "$j_mbs" "$r_mbs")" "-" "$n" \
            "MB/s"
    done
done

{
    echo "bench vs rstream in the soft-RoCE guest (rxe0 on $ADDR; TCG-emulated: only the ratios mean anything)"
    echo "rstream: rdmacm-utils $(dpkg-query -W -f='${Version}' rdmacm-utils 2>/dev/null || echo '?');" \
        "Java: $("$JAVA_HOME/bin/java" -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p;T;q'), rdmachannel" \
        "bench on the native provider; 1 MiB rings on both sides"
    echo "latency: round trip in us; rstream = 2 x usec/xfer of a -C 1 -I N ping-pong (a mean over the run);"
    echo "  Java = mean and p50 of N timed round trips after $WARMUP untimed ones; ratio > 1: Java slower"
    echo "bandwidth: MB/s (10^6 bytes); rstream = SIZE / usec/xfer of -C N -I 1 (N messages each way, in turn);"
    echo "  Java = N messages one way after min($WARMUP, N) untimed ones; ratio < 1: Java slower"
    echo "modes: blocking = rstream -T b / Java blocking;" \
        "polling = rstream -T n (spinning non-blocking) / Java busy-poll"
    echo
    printf '%-9s %-6s %-10s %9s %11s %10s %10s %11s %9s %s\n' mode size test rstream "java(mean)" "java(p50)" \
        "ratio(mean)" "ratio(p50)" "N" unit
    printf '%s\n' "${ROWS[@]}"
    echo
    echo "guest time for all measurements: $((SECONDS - started)) s; $failures of $(($(wc -w <<<"$SIZES") \
        * $(wc -w <<<"$MODES"))) size/mode pairs incomplete"
} >"$REPORT"

echo
echo "=== report ($REPORT)"
cat "$REPORT"
rm -rf "$WORK"
[[ $failures -eq 0 ]]
