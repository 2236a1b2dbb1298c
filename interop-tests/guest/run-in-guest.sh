#!/usr/bin/env bash
# Run one command inside the soft-RoCE guest: a QEMU (TCG) guest whose root is the host's root seen read-only
# through 9p with a RAM overlay, with rdma_rxe loaded and rxe0 on the dummy device d0 (192.0.2.1/24).
#
# usage: interop-tests/guest/run-in-guest.sh [options] -- command [args...]
#
# options:
#   --timeout SECONDS  guest watchdog: power off after this long (default $RDMACHANNEL_GUEST_TIMEOUT or 1200);
#                      the host kills QEMU 120 s later if the guest has not stopped by then
#   --cwd DIR          working directory of the command (default: the repository root)
#   --env NAME=VALUE   set an environment variable for the command (repeatable)
#   --results DIR      results folder (default: a new folder under <cache>/runs; the newest
#                      $RDMACHANNEL_GUEST_KEEP_RUNS (20) of those are kept)
#
# The command runs as root with JAVA_HOME set to a JDK 25 and sees the host's files at their host paths (writes go
# to RAM and are lost, except under $RDMACHANNEL_GUEST_RESULTS, the results folder, which is shared writable).
# Its output (stdout and stderr together) is streamed to stdout and kept in output.log in the results folder; the
# guest's progress lines go to stderr; the whole guest console goes to console.log there.
#
# Exit status: the command's own, or 124 if the guest watchdog or the host timeout stopped it, or 125 if the
# guest never reported a status (it failed to boot, to set up rxe0, or QEMU failed).
#
# Environment: RDMACHANNEL_GUEST_CACHE, RDMACHANNEL_GUEST_TIMEOUT, RDMACHANNEL_GUEST_JAVA_HOME (default: a JDK 25
# under /usr/lib/jvm), RDMACHANNEL_GUEST_SMP (2), RDMACHANNEL_GUEST_MEM (3072, MiB), RDMACHANNEL_GUEST_NICE (15),
# RDMACHANNEL_GUEST_CPU (max: QEMU's -cpu model), RDMACHANNEL_GUEST_TCG_THREAD (single: QEMU's -accel tcg,thread=...),
# RDMACHANNEL_GUEST_JAVA_OPTIONS (JVM options added to JAVA_TOOL_OPTIONS of every JVM in the guest),
# RDMACHANNEL_GUEST_SLOTS (guests at once; default one per host core, fewer if memory is short),
# RDMACHANNEL_GUEST_RUN_RECORD (a file this appends the run's results folder to).
set -euo pipefail

GUEST_SCRIPT_NAME=run-in-guest
# shellcheck source=interop-tests/guest/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

readonly STATUS_TIMEOUT=124 STATUS_NO_STATUS=125
HOST_GRACE=120

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
}

timeout_s="${RDMACHANNEL_GUEST_TIMEOUT:-1200}"
cwd="$REPO_ROOT"
results=""
envs=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --timeout)
            [[ $# -ge 2 ]] || guest_die "--timeout needs a value"
            timeout_s="$2"
            shift 2
            ;;
        --timeout=*) timeout_s="${1#*=}"; shift ;;
        --cwd)
            [[ $# -ge 2 ]] || guest_die "--cwd needs a value"
            cwd="$2"
            shift 2
            ;;
        --cwd=*) cwd="${1#*=}"; shift ;;
        --env)
            [[ $# -ge 2 && $2 == [A-Za-z_]*=* ]] || guest_die "--env needs NAME=VALUE"
            envs+=("$2")
            shift 2
            ;;
        --results)
            [[ $# -ge 2 ]] || guest_die "--results needs a value"
            results="$2"
            shift 2
            ;;
        -h | --help) usage; exit 0 ;;
        --) shift; break ;;
        *) guest_die "unknown option $1 (the command goes after --; try --help)" ;;
    esac
done
[[ $# -gt 0 ]] || guest_die "no command given (usage: run-in-guest.sh [options] -- command [args...])"
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || guest_die "--timeout must be a positive number of seconds, not '$timeout_s'"
cwd="$(cd "$cwd" && pwd)" || guest_die "no such directory: $cwd"
tcg_thread="${RDMACHANNEL_GUEST_TCG_THREAD:-single}"
[[ $tcg_thread == single || $tcg_thread == multi ]] ||
    guest_die "RDMACHANNEL_GUEST_TCG_THREAD must be single or multi, not '$tcg_thread'"

# A JDK 25 for the guest's JAVA_HOME.
find_java_home() {
    local dir
    for dir in "${RDMACHANNEL_GUEST_JAVA_HOME:-}" "${JAVA_HOME:-}" /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/*; do
        [[ -n $dir && -x $dir/bin/java && -f $dir/release ]] || continue
        if grep -Eq '^JAVA_VERSION="(2[5-9]|[3-9][0-9])' "$dir/release"; then
            printf '%s\n' "$dir"
            return 0
        fi
        if [[ $dir == "${RDMACHANNEL_GUEST_JAVA_HOME:-}" ]]; then
            guest_die "RDMACHANNEL_GUEST_JAVA_HOME=$dir is not a JDK 25 or newer"
        fi
    done
    return 1
}
java_home="$(find_java_home)" || { java_home=""; guest_log "warning: no JDK 25 found; JAVA_HOME stays unset"; }

"$GUEST_DIR/build-guest.sh"

# At most guest_slots guests at once (one per host core by default): each takes a free slot lock in the cache.
slots="$(guest_slots)"
waiting=0
while :; do
    for ((slot = 0; slot < slots; slot++)); do
        exec 8>"$GUEST_CACHE/run.lock.$slot"
        if flock -n 8; then
            break 2
        fi
        exec 8>&-
    done
    if [[ $waiting -eq 0 ]]; then
        guest_log "$slots guest(s) already running; waiting for one to finish"
        waiting=1
    fi
    sleep 1
done

if [[ -z $results ]]; then
    # Keep the newest runs only.
    keep="${RDMACHANNEL_GUEST_KEEP_RUNS:-20}"
    if [[ -d $GUEST_CACHE/runs && $keep =~ ^[0-9]+$ ]]; then
        find "$GUEST_CACHE/runs" -mindepth 1 -maxdepth 1 -type d -name '[0-9]*-*' -printf '%f\n' | sort -r |
            tail -n +"$((keep + 1))" | while read -r old; do rm -rf "${GUEST_CACHE:?}/runs/$old"; done
    fi
    results="$GUEST_CACHE/runs/$(date +%Y%m%d-%H%M%S)-$$"
fi
mkdir -p "$results"
results="$(cd "$results" && pwd)"
# A caller that needs to know which runs it caused (to look for crash logs) names a file to list them in.
if [[ -n ${RDMACHANNEL_GUEST_RUN_RECORD:-} ]]; then
    printf '%s\n' "$results" >>"$RDMACHANNEL_GUEST_RUN_RECORD"
fi
rm -f "$results"/{exit-status,guest-error,watchdog-expired,boot-seconds,output.log,console.log,dmesg.log,job.sh,results-path,qemu-command}
console_log="$results/console.log"

printf '%s\n' "$results" >"$results/results-path"
{
    echo '# written by run-in-guest.sh'
    printf 'cd -- %q || exit 125\n' "$cwd"
    if [[ -n $java_home ]]; then
        printf 'export JAVA_HOME=%q\n' "$java_home"
        # shellcheck disable=SC2016 # $PATH is expanded in the guest
        printf 'export PATH=%q:"$PATH"\n' "$java_home/bin"
    fi
    printf 'export RDMACHANNEL_GUEST=1 RDMACHANNEL_GUEST_RESULTS=%q\n' "$results"
    # A JVM that crashes in the guest writes its error log where the host can read it (JVMs have aborted under
    # emulation, Maven's own included).
    printf 'export JAVA_TOOL_OPTIONS=%q\n' \
        "-XX:ErrorFile=$results/hs_err_pid%p.log${RDMACHANNEL_GUEST_JAVA_OPTIONS:+ $RDMACHANNEL_GUEST_JAVA_OPTIONS}"
    for kv in "${envs[@]}"; do
        printf 'export %s=%q\n' "${kv%%=*}" "${kv#*=}"
    done
    printf 'exec'
    printf ' %q' "$@"
    printf '\n'
} >"$results/job.sh"

qemu_path() { printf '%s' "${1//,/,,}"; } # commas are doubled in QEMU option values
# shellcheck disable=SC2054 # commas separate QEMU sub-options
qemu=(
    nice -n "${RDMACHANNEL_GUEST_NICE:-15}"
    qemu-system-x86_64
    -accel "tcg,thread=$tcg_thread" -cpu "${RDMACHANNEL_GUEST_CPU:-max}"
    -smp "${RDMACHANNEL_GUEST_SMP:-2}" -m "${RDMACHANNEL_GUEST_MEM:-3072}"
    -nographic -no-reboot -nic none
    -kernel "$GUEST_CACHE/vmlinuz" -initrd "$GUEST_CACHE/initramfs.gz"
    -append "console=ttyS0 quiet loglevel=3 panic=-1 rdmachannel.timeout=$timeout_s"
    -fsdev "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap"
    -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot
    -fsdev "local,id=results,path=$(qemu_path "$results"),security_model=none,multidevs=remap"
    -device virtio-9p-pci,fsdev=results,mount_tag=results
)

guest_log "console log: $console_log"
printf '%q ' "${qemu[@]}" >"$results/qemu-command"
guest_log "booting the guest (tcg thread=$tcg_thread, timeout ${timeout_s}s): $*"
start=$SECONDS
"${qemu[@]}" </dev/null >"$console_log" 2>&1 &
qemu_pid=$!

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
    if kill -0 "$qemu_pid" 2>/dev/null; then
        kill "$qemu_pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Follow the command's output (written by the guest into the results share) to stdout, and the guest's progress
# lines (and panics) on the console to stderr.
tail -n +1 -F --pid="$qemu_pid" "$results/output.log" 2>/dev/null &
output_follower=$!
follow_console() {
    local line
    while IFS= read -r line; do
        line="${line%$'\r'}"
        case "$line" in
            *rdmachannel-guest:\ *) printf 'guest: %s\n' "${line#*rdmachannel-guest: }" ;;
            *'Kernel panic'* | qemu-system*) printf 'guest: %s\n' "$line" ;;
        esac
    done
}
tail -n +1 -F --pid="$qemu_pid" "$console_log" 2>/dev/null | follow_console >&2 &
console_follower=$!

host_limit=$((timeout_s + HOST_GRACE))
killed=0
while kill -0 "$qemu_pid" 2>/dev/null; do
    if ((SECONDS - start > host_limit)); then
        guest_log "error: the guest did not stop within ${host_limit}s; killing QEMU"
        kill "$qemu_pid" 2>/dev/null || true
        sleep 2
        kill -9 "$qemu_pid" 2>/dev/null || true
        killed=1
        break
    fi
    sleep 1
done
qemu_status=0
wait "$qemu_pid" || qemu_status=$?
wait "$output_follower" "$console_follower" 2>/dev/null || true
trap - EXIT
elapsed=$((SECONDS - start))

boot=""
[[ -s $results/boot-seconds ]] && boot="; rxe0 was up $(cat "$results/boot-seconds")s after the kernel started"
if [[ -s $results/exit-status ]]; then
    status="$(cat "$results/exit-status")"
    guest_log "command exited with status $status; guest ran ${elapsed}s$boot"
    guest_log "output: $results/output.log, console log: $console_log"
    exit "$status"
fi
if [[ -f $results/watchdog-expired ]]; then
    guest_log "error: the guest watchdog stopped the command after ${timeout_s}s (console log: $console_log)"
    exit $STATUS_TIMEOUT
fi
if [[ $killed -eq 1 ]]; then
    guest_log "error: QEMU was killed after ${elapsed}s (console log: $console_log)"
    exit $STATUS_TIMEOUT
fi
if [[ -s $results/guest-error ]]; then
    guest_log "error: guest setup failed: $(cat "$results/guest-error")"
else
    guest_log "error: the guest never reported an exit status (QEMU exited with $qemu_status after ${elapsed}s)"
fi
guest_log "console log: $console_log"
tail -n 20 "$console_log" | sed 's/\r$//; s/\x1b\[[?0-9;]*[A-Za-z]//g; s/\x1bc//g; s/^/  | /' >&2
exit $STATUS_NO_STATUS
