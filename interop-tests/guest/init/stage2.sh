#!/bin/bash
# Stage 2 of the soft-RoCE guest, run by the host's bash inside the overlay of the host root: bring up rxe0 on a
# dummy device (and siw0 on another when the guest has siw.ko), run the job the host wrote into the results share, and write its output and exit status there.
# Stage 1 powers off afterwards.
set -uo pipefail

RESULTS="$1"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8

log() {
    echo "rdmachannel-guest: $*"
}

fail() {
    log "error: $*"
    echo "$*" >"$RESULTS/guest-error"
    exit 1
}

# A name that resolves without a network (the /etc/hosts change stays in the RAM overlay).
hostname rdmachannel-guest 2>/dev/null || true
printf '127.0.1.1\trdmachannel-guest\n' >>/etc/hosts
# Kernel warnings and worse go to the console (and so into console.log).
echo 5 >/proc/sys/kernel/printk 2>/dev/null || true

ip link set lo up || fail "ip link set lo up failed"
ip link add d0 type dummy || fail "cannot create the dummy device d0"
ip addr add 192.0.2.1/24 dev d0 || fail "cannot set 192.0.2.1/24 on d0"
# IPv6 too, for the rdma_cm tests over IPv6 (nodad: usable at once).
ip -6 addr add 2001:db8::1/64 dev d0 nodad || fail "cannot set 2001:db8::1/64 on d0"
ip link set d0 up || fail "cannot bring d0 up"
rdma link add rxe0 type rxe netdev d0 || fail "rdma link add rxe0 type rxe netdev d0 failed"
for _ in $(seq 50); do
    [[ -e /dev/infiniband/uverbs0 && -e /dev/infiniband/rdma_cm ]] && break
    sleep 0.1
done
[[ -e /dev/infiniband/uverbs0 ]] || fail "no /dev/infiniband/uverbs0 after adding rxe0"
[[ -e /dev/infiniband/rdma_cm ]] || fail "no /dev/infiniband/rdma_cm after adding rxe0"
# rxe0's GID table follows d0's addresses (RoCE v2 GIDs ::ffff:192.0.2.1 and 2001:db8::1) through a work queue.
gid6=2001:0db8:0000:0000:0000:0000:0000:0001
for _ in $(seq 50); do
    grep -qx "$gid6" /sys/class/infiniband/rxe0/ports/1/gids/* 2>/dev/null && break
    sleep 0.1
done
grep -qx "$gid6" /sys/class/infiniband/rxe0/ports/1/gids/* 2>/dev/null || fail "rxe0 has no GID for 2001:db8::1"

# Soft-iWARP on a dummy device of its own (on d0 too, rdma_cm would pick one device for the address): siw0 on d1,
# 198.51.100.1. The guest has siw.ko when the build could make it (the reason is kept when not); the tests that need
# siw0 read $RESULTS/siw: "up", or why not.
siw="missing: $(cat /run/rdmachannel-guest/siw-status 2>/dev/null || echo 'no siw status')"
if [[ -d /sys/module/siw ]]; then
    ip link add d1 type dummy || fail "cannot create the dummy device d1"
    ip addr add 198.51.100.1/24 dev d1 || fail "cannot set 198.51.100.1/24 on d1"
    ip link set d1 up || fail "cannot bring d1 up"
    rdma link add siw0 type siw netdev d1 || fail "rdma link add siw0 type siw netdev d1 failed"
    for _ in $(seq 50); do
        [[ -e /sys/class/infiniband/siw0 ]] && break
        sleep 0.1
    done
    [[ -e /sys/class/infiniband/siw0 ]] || fail "no siw0 after rdma link add"
    siw=up
elif [[ $siw == "missing: built from"* ]]; then
    siw="missing: siw.ko did not load (see the console log)"
fi
echo "$siw" >"$RESULTS/siw"

read -r uptime _ </proc/uptime
echo "$uptime" >"$RESULTS/boot-seconds"
log "rxe0 up on d0 (192.0.2.1, 2001:db8::1), siw0 ${siw} after ${uptime}s; running the command"
# The output goes to the results share, not the console: the emulated serial port manages only about 100 KB/s.
status=0
bash "$RESULTS/job.sh" </dev/null >"$RESULTS/output.log" 2>&1 || status=$?
dmesg >"$RESULTS/dmesg.log" 2>&1 || true
echo "$status" >"$RESULTS/exit-status"
read -r uptime _ </proc/uptime
log "command exited with status $status at ${uptime}s"
exit 0
