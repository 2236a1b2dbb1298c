# shellcheck shell=bash disable=SC2034 # the settings are used by the scripts that source this file
# Shared settings and helpers of the soft-RoCE guest scripts. Sourced, not run.

GUEST_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$GUEST_DIR/../.." && pwd)"
# Everything built or downloaded for the guest lives here (git-ignored .cache/ by default).
GUEST_CACHE="${RDMACHANNEL_GUEST_CACHE:-$REPO_ROOT/.cache/guest}"

# Host packages: QEMU and the initramfs tools, plus the RDMA user space the guest sees through the shared root.
GUEST_HOST_PACKAGES=(
    qemu-system-x86 busybox-static cpio kmod
    rdma-core ibverbs-providers libibverbs1 librdmacm1 ibverbs-utils rdmacm-utils perftest iproute2
    libibverbs-dev librdmacm-dev
)

# Kernel modules the guest loads, in this order, with everything they depend on.
# "?" marks a module that may be missing from the kernel package (then it is skipped).
GUEST_MODULES=(
    virtio_pci 9pnet_virtio 9p overlay
    crc32_generic '?crc32-pclmul'
    dummy veth
    rdma_rxe ib_uverbs rdma_ucm
)

guest_log() {
    printf '%s: %s\n' "${GUEST_SCRIPT_NAME:-guest}" "$*" >&2
}

guest_die() {
    guest_log "error: $*"
    exit 1
}

# guest_missing_packages pkg...: print the packages that are not installed, one a line.
guest_missing_packages() {
    local pkg status
    for pkg in "$@"; do
        status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
        if [[ $status != installed ]]; then
            printf '%s\n' "$pkg"
        fi
    done
}

# guest_ensure_packages pkg...: install missing packages with apt-get when root, else say what to install, exit 1.
guest_ensure_packages() {
    local missing
    command -v dpkg-query >/dev/null 2>&1 ||
        guest_die "no dpkg-query here: install these Debian packages by hand: $*"
    mapfile -t missing < <(guest_missing_packages "$@")
    [[ ${#missing[@]} -eq 0 ]] && return 0
    if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
        guest_log "missing host packages: ${missing[*]}"
        guest_log "install them with: sudo apt-get install --no-install-recommends ${missing[*]}"
        exit 1
    fi
    guest_log "installing ${missing[*]} with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
    mapfile -t missing < <(guest_missing_packages "$@")
    [[ ${#missing[@]} -eq 0 ]] || guest_die "apt-get did not install: ${missing[*]}"
}

# guest_slots: how many guests may run at once. RDMACHANNEL_GUEST_SLOTS when set; otherwise one per host core (a
# guest under single-threaded TCG keeps one core busy) and no more than fit in the available memory with 512 MiB
# to spare for each QEMU.
guest_slots() {
    local slots mem available
    if [[ -n ${RDMACHANNEL_GUEST_SLOTS:-} ]]; then
        [[ $RDMACHANNEL_GUEST_SLOTS =~ ^[1-9][0-9]*$ ]] ||
            guest_die "RDMACHANNEL_GUEST_SLOTS must be a positive number, not '$RDMACHANNEL_GUEST_SLOTS'"
        printf '%s\n' "$RDMACHANNEL_GUEST_SLOTS"
        return 0
    fi
    slots="$(nproc 2>/dev/null || echo 1)"
    mem="${RDMACHANNEL_GUEST_MEM:-3072}"
    available="$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo 2>/dev/null || true)"
    if [[ $available =~ ^[0-9]+$ && $mem =~ ^[0-9]+$ ]] && ((available / (mem + 512) < slots)); then
        slots=$((available / (mem + 512)))
    fi
    printf '%s\n' "$((slots < 1 ? 1 : slots))"
}
