#!/usr/bin/env bash
# Interop of the RDMA channels with rdma-core's rstream, in the soft-RoCE guest: the Java rstream twin
# (io.rdmachannel.interop.rstream.JavaRstream, on the native provider) against the C rstream, in both directions,
# blocking and non-blocking, several transfer sizes, with data verification (-T v), and with a small buffer
# (-B 4096) to stress credits and grants. Proves RDMA carried the data: rxe0's packet counters grow and no TCP
# socket listens on the port. Writes a report (one line per case, PASS or FAIL, with rstream's and the Java side's
# result lines) into the run's results folder and prints it.
#
# On siw0 (soft-iWARP, 198.51.100.1; the stream in message mode) it runs fewer cases, and proves iWARP carried the
# data differently: the listener's RDMA CM id is on siw0, rxe0's counters stay still, and the only TCP listener on
# the port is the kernel's (iWARP's MPA runs over TCP), none of a process.
#
# usage: interop-tests/guest/rstream-interop.sh [rxe0|siw0]   (after the Maven tier built interop-tests' classes)
set -euo pipefail

GUEST_SCRIPT_NAME=rstream-interop
# shellcheck source=interop-tests/guest/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DEVICE="${1:-rxe0}"
case "$DEVICE" in
    rxe0) ADDR=192.0.2.1 ;;
    siw0) ADDR=198.51.100.1 ;;
    *) guest_die "unknown device $DEVICE (rxe0 or siw0)" ;;
esac
CLASSPATH_FILE="$REPO_ROOT/interop-tests/target/rstream.classpath"

# ---------------------------------------------------------------------------------------------------------------
# On the host: write the test class path, then run this script inside the guest.

if [[ ${RDMACHANNEL_GUEST:-} != 1 ]]; then
    # jar:jar first, so that the other modules resolve to this tree's target/*.jar rather than to the local
    # repository's jars (which any tree's "mvn install" replaces); nothing is compiled.
    (cd "$REPO_ROOT" && mvn -o -q -B -ntp -pl interop-tests -am jar:jar dependency:build-classpath \
        -Dmdep.includeScope=test -Dmdep.outputFile="$CLASSPATH_FILE") ||
        guest_die "cannot write the test class path (build first)"
    status=0
    # The watchdog only catches a hang the cases' own timeouts miss: 12 cases, each starting a Java rstream JVM under
    # emulation, took 4 to 11 minutes in most runs but about 80 s a case (over 15 minutes) in a slow one.
    "$GUEST_DIR/run-in-guest.sh" --timeout "${RDMACHANNEL_INTEROP_TIMEOUT:-2400}" \
        -- "$GUEST_DIR/rstream-interop.sh" "$DEVICE" || status=$?
    echo "rstream interop on $DEVICE: $([[ $status -eq 0 ]] && echo PASS || echo "FAIL (exit status $status)")"
    exit "$status"
fi

# ---------------------------------------------------------------------------------------------------------------
# In the guest.

if [[ $DEVICE == siw0 && $(cat "${RDMACHANNEL_GUEST_RESULTS:-/nonexistent}/siw" 2>/dev/null) != up ]]; then
    guest_die "siw0 is not up in the guest: $(cat "${RDMACHANNEL_GUEST_RESULTS:-/nonexistent}/siw" 2>/dev/null)"
fi
WORK="$(mktemp -d /tmp/interop.XXXXXX)"
REPORT="${RDMACHANNEL_GUEST_RESULTS:-$WORK}/rstream-interop-report-$DEVICE.txt"
CP="$REPO_ROOT/interop-tests/target/test-classes:$(cat "$CLASSPATH_FILE")"
JAVA=("$JAVA_HOME/bin/java" --add-exports java.base/jdk.internal.misc=ALL-UNNAMED --enable-native-access=ALL-UNNAMED
    -Drdmachannel.provider=native -cp "$CP" io.rdmachannel.interop.rstream.JavaRstream)
# the Java side in SRQ mode: its receives from the device's shared receive queue, plain rsockets on the wire
JAVA_SRQ=("${JAVA[@]:0:3}" -Drdmachannel.stream.sharedReceiveQueue=true "${JAVA[@]:3}")
COUNTERS=/sys/class/infiniband/rxe0/ports/1/hw_counters
failures=0
port=7500

rxe_packets() {
    cat "$COUNTERS/sent_pkts" 2>/dev/null || echo 0
}

# result_line FILE: the first rstream result line (name bytes xfers iters total time Gb/sec usec/xfer) of an output.
result_line() {
    grep -E '^(custom|[0-9]+[kmg]?_(lat|bw)) ' "$1" | head -n 1 | tr -s ' \t' ' ' || true
}

# wait_for_listener: until an RDMA CM listener exists (the C server) or the Java twin printed its header.
wait_for_listener() {
    # a Java server's JVM has taken over 60 s to start listening in a slow emulated guest
    local output=$1 deadline=$((SECONDS + 240))
    while ((SECONDS < deadline)); do
        if grep -q '^name' "$output" 2>/dev/null \
            || rdma res show cm_id 2>/dev/null | grep -Eq "state LISTEN .*src-addr [^ ]*:$port( |$)"; then
            return 0
        fi
        sleep 0.2
    done
    return 1
}

# listener_device: the device of the RDMA CM id listening on the port ("siw0", "rxe0"), or nothing.
listener_device() {
    local _
    for _ in $(seq 50); do
        if rdma res show cm_id 2>/dev/null | grep -E "state LISTEN .*src-addr [^ ]*:$port( |$)" |
            grep -oE 'link [a-z0-9]+/' | sed 's/link //; s,/,,' | head -n 1 | grep .; then
            return 0
        fi
        sleep 0.1
    done
}

# run_case NAME SERVER CLIENT ARGS...: SERVER and CLIENT are "c", "java" or "java-srq" (Java in SRQ mode).
run_case() {
    local name=$1 server=$2 client=$3
    shift 3
    local sout="$WORK/$name.server" cout="$WORK/$name.client" spid sstatus=0 cstatus=0 before after tcp on
    port=$((port + 1))
    before=$(rxe_packets)
    # rstream line-buffered: what it printed before a timeout killed it stays in its output
    if [[ $server == c ]]; then
        stdbuf -oL rstream -b "$ADDR" -p "$port" "$@" >"$sout" 2>&1 &
    elif [[ $server == java-srq ]]; then
        "${JAVA_SRQ[@]}" -b "$ADDR" -p "$port" "$@" >"$sout" 2>&1 &
    else
        "${JAVA[@]}" -b "$ADDR" -p "$port" "$@" >"$sout" 2>&1 &
    fi
    spid=$!
    if ! wait_for_listener "$sout"; then
        kill "$spid" 2>/dev/null || true
        echo "FAIL  $name: the $server server did not listen: $(tail -n 3 "$sout" | tr '\n' ' ')" | tee -a "$REPORT"
        failures=$((failures + 1))
        return
    fi
    on="$(listener_device || true)"
    if [[ $DEVICE == siw0 ]]; then
        # iWARP's listener is a kernel TCP socket: only one of a process would be a TCP path
        tcp="$(ss -Htlnp "sport = :$port" 2>/dev/null | grep -c 'users:' || true)"
    else
        tcp="$(ss -Htln "sport = :$port" 2>/dev/null | wc -l)"
    fi
    if [[ $client == c ]]; then
        timeout 300 stdbuf -oL rstream -s "$ADDR" -p "$port" "$@" >"$cout" 2>&1 || cstatus=$?
        if [[ $cstatus -ne 0 && $server != c ]] && grep -q 'rconnect: Connection timed out' "$cout" \
            && kill -0 "$spid" 2>/dev/null; then
            # the C client gave up before the Java listener answered (siw's active side waits 10 s for the MPA
            # reply): a listener's first accept in a cold JVM (linking, class loading, in the emulated guest next to
            # another guest) has taken longer. The listener drops the attempt and keeps listening, so the client
            # tries once more against it, whose accept path is warm now; data or a second timeout fails
            echo "RETRY $name: the C client's connect timed out before the Java listener answered; once more" \
                "against the same listener" >>"$REPORT"
            cp "$cout" "$cout.first"
            cstatus=0
            timeout 300 stdbuf -oL rstream -s "$ADDR" -p "$port" "$@" >"$cout" 2>&1 || cstatus=$?
        fi
    elif [[ $client == java-srq ]]; then
        timeout 300 "${JAVA_SRQ[@]}" -s "$ADDR" -p "$port" "$@" >"$cout" 2>&1 || cstatus=$?
    else
        timeout 300 "${JAVA[@]}" -s "$ADDR" -p "$port" "$@" >"$cout" 2>&1 || cstatus=$?
    fi
    timeout 60 tail --pid="$spid" -f /dev/null || kill "$spid" 2>/dev/null || true
    wait "$spid" || sstatus=$?
    after=$(rxe_packets)
    local carried=0
    if [[ $DEVICE == siw0 ]]; then
        [[ $on == siw0 && $after -eq $before ]] && carried=1
    else
        [[ $on == rxe0 && $after -gt $before ]] && carried=1
    fi
    if [[ $sstatus -eq 0 && $cstatus -eq 0 && -n "$(result_line "$cout")" && $tcp -eq 0 && $carried -eq 1 ]] \
        && ! grep -q 'verification failed' "$sout" "$cout"; then
        echo "PASS  $name  listener on $on, rxe0 packets +$((after - before))" >>"$REPORT"
    else
        echo "FAIL  $name  server=$sstatus client=$cstatus process-tcp-listeners=$tcp listener on ${on:-?}" \
            "rxe0 packets +$((after - before))" >>"$REPORT"
        sed 's/^/      server| /' "$sout" | tail -n 12 >>"$REPORT"
        sed 's/^/      client| /' "$cout" | tail -n 12 >>"$REPORT"
        failures=$((failures + 1))
    fi
    echo "      $server server: $(result_line "$sout")" >>"$REPORT"
    echo "      $client client: $(result_line "$cout")" >>"$REPORT"
}

: >"$REPORT"
for direction in "java c" "c java"; do
    read -r server client <<<"$direction"
    if [[ $DEVICE == siw0 ]]; then
        # message mode on iWARP: a small and a large transfer, and credits under a 4 KiB buffer, blocking only
        run_case "${server}-server_${client}-client_Tb_4k_siw" "$server" "$client" -S 4096 -C 50 -I 1 -T v -T b
        run_case "${server}-server_${client}-client_Tb_64k_B4096_siw" "$server" "$client" -S 65536 -C 10 -I 1 \
            -B 4096 -T v -T b
        continue
    fi
    for mode in b n; do
        run_case "${server}-server_${client}-client_T${mode}_4k" "$server" "$client" -S 4096 -C 100 -I 2 -T v -T "$mode"
        run_case "${server}-server_${client}-client_T${mode}_64k" "$server" "$client" -S 65536 -C 20 -I 2 -T v \
            -T "$mode"
        run_case "${server}-server_${client}-client_T${mode}_64k_B4096" "$server" "$client" -S 65536 -C 10 -I 1 \
            -B 4096 -T v -T "$mode"
    done
done

if [[ $DEVICE != siw0 ]]; then
    # SRQ mode on the Java side (8 credits to start with, more granted as they run out): rstream ignores the credit
    # window the connection data declares and adopts every grant
    run_case "java-srq-server_c-client_Tb_4k" java-srq c -S 4096 -C 100 -I 2 -T v -T b
    run_case "c-server_java-srq-client_Tb_4k" c java-srq -S 4096 -C 100 -I 2 -T v -T b
    run_case "java-srq-server_c-client_Tn_64k" java-srq c -S 65536 -C 20 -I 2 -T v -T n
fi

echo "=== rstream interop report ($REPORT)"
cat "$REPORT"
echo "=== $failures failed"
rm -rf "$WORK"
[[ $failures -eq 0 ]]
