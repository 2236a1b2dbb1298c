#!/usr/bin/env bash
# Build the soft-RoCE test guest: a Debian kernel plus a small busybox initramfs holding the modules for rdma_rxe,
# 9p and overlay, soft-iWARP's siw.ko built out of the tree (Debian's kernels lack it), and the guest's /init. Idempotent: rebuilds only when an input changed.
#
# usage: interop-tests/guest/build-guest.sh [--force]
#
# Environment:
#   RDMACHANNEL_GUEST_CACHE       cache folder (default: <repo>/.cache/guest)
#   RDMACHANNEL_GUEST_KERNEL_PKG  kernel package to use instead of the pinned one
#                                 (e.g. linux-image-6.1.0-28-amd64-unsigned); re-pins it
#   RDMACHANNEL_GUEST_KEEP_KERNEL_TREE=1  keep the unpacked kernel package (about 400 MB) after the build
set -euo pipefail

GUEST_SCRIPT_NAME=build-guest
# shellcheck source=interop-tests/guest/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FORCE=0
case "${1:-}" in
    '') ;;
    --force) FORCE=1 ;;
    -h | --help)
        sed -n '2,12s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
        exit 0
        ;;
    *) guest_die "unknown argument: $1 (try --help)" ;;
esac

PIN_FILE="$GUEST_CACHE/kernel.pin"
KERNEL_OUT="$GUEST_CACHE/vmlinuz"
INITRD_OUT="$GUEST_CACHE/initramfs.gz"
STAMP_FILE="$GUEST_CACHE/build.stamp"

mkdir -p "$GUEST_CACHE"
exec 9>"$GUEST_CACHE/build.lock"
if ! flock -n 9; then
    guest_log "another build of the guest is running; waiting for it"
    flock 9
fi

guest_ensure_packages "${GUEST_HOST_PACKAGES[@]}"

# ---------------------------------------------------------------------------------------------------------------
# Kernel package: pick the newest linux-image-6.1.0-<N>-amd64-unsigned once and pin it, so reruns stay stable.

newest_kernel_package() {
    apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$' 2>/dev/null |
        awk '{ print $1 }' | sort -V | tail -n 1
}

candidate_version() {
    apt-cache show --no-all-versions "$1" 2>/dev/null | sed -n 's/^Version: //p' | head -n 1
}

KERNEL_PKG=""
KERNEL_VERSION=""
if [[ -f $PIN_FILE ]]; then
    KERNEL_PKG="$(sed -n 's/^package=//p' "$PIN_FILE")"
    KERNEL_VERSION="$(sed -n 's/^version=//p' "$PIN_FILE")"
fi
if [[ -n ${RDMACHANNEL_GUEST_KERNEL_PKG:-} && ${RDMACHANNEL_GUEST_KERNEL_PKG} != "$KERNEL_PKG" ]]; then
    KERNEL_PKG="$RDMACHANNEL_GUEST_KERNEL_PKG"
    KERNEL_VERSION=""
fi
if [[ -z $KERNEL_PKG || -z $KERNEL_VERSION ]]; then
    if [[ -z $KERNEL_PKG ]]; then
        KERNEL_PKG="$(newest_kernel_package)"
    fi
    if [[ -z $KERNEL_PKG || -z $(candidate_version "$KERNEL_PKG") ]] && [[ $(id -u) -eq 0 ]]; then
        guest_log "no kernel package known to apt yet; running apt-get update"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        [[ -n $KERNEL_PKG ]] || KERNEL_PKG="$(newest_kernel_package)"
    fi
    [[ -n $KERNEL_PKG ]] ||
        guest_die "apt-cache knows no linux-image-6.1.0-*-amd64-unsigned package (run apt-get update as root)"
    KERNEL_VERSION="$(candidate_version "$KERNEL_PKG")"
    [[ -n $KERNEL_VERSION ]] || guest_die "apt-cache has no version of $KERNEL_PKG"
    printf 'package=%s\nversion=%s\n' "$KERNEL_PKG" "$KERNEL_VERSION" >"$PIN_FILE"
    guest_log "pinned the guest kernel to $KERNEL_PKG $KERNEL_VERSION in $PIN_FILE"
fi

# ---------------------------------------------------------------------------------------------------------------
# Soft-iWARP: Debian's kernels are built without CONFIG_RDMA_SIW, so siw.ko is built out of the tree from Debian's
# linux-source package against the guest kernel's headers, once per kernel, and kept in the cache. Optional: when it
# cannot be built (not root and no headers, a version gone from apt) the guest runs without siw0 and says why.

KVER_PKG="${KERNEL_PKG#linux-image-}"
KVER_PKG="${KVER_PKG%-unsigned}"
SIW_DIR="$GUEST_CACHE/siw/$KVER_PKG"
SIW_KO="$SIW_DIR/siw.ko"

build_siw() {
    local headers="/usr/src/linux-headers-$KVER_PKG" source_deb work makefile
    if [[ ! -f $headers/Makefile ]]; then
        if [[ $(id -u) -ne 0 ]]; then
            echo "the kernel headers $headers are missing (apt-get install linux-headers-$KVER_PKG=$KERNEL_VERSION)"
            return 1
        fi
        guest_log "installing linux-headers-$KVER_PKG $KERNEL_VERSION to build siw"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "linux-headers-$KVER_PKG=$KERNEL_VERSION" >&2 ||
            { echo "apt-get install linux-headers-$KVER_PKG=$KERNEL_VERSION failed"; return 1; }
    fi
    source_deb="$GUEST_CACHE/debs/linux-source-6.1_${KERNEL_VERSION//:/%3a}_all.deb"
    if [[ ! -s $source_deb ]]; then
        mkdir -p "$GUEST_CACHE/debs"
        guest_log "downloading linux-source-6.1 $KERNEL_VERSION (siw's source)"
        if ! (cd "$GUEST_CACHE/debs" && apt-get download -q "linux-source-6.1=$KERNEL_VERSION" >&2); then
            # another 6.1 stable release: siw's source rarely changes within one, and the module's version magic
            # comes from the headers
            guest_log "linux-source-6.1 $KERNEL_VERSION is not offered; trying apt's current one"
            (cd "$GUEST_CACHE/debs" && apt-get download -q linux-source-6.1 >&2) ||
                { echo "apt-get download linux-source-6.1 failed"; return 1; }
            source_deb="$(find "$GUEST_CACHE/debs" -name 'linux-source-6.1_*_all.deb' | sort -V | tail -n 1)"
        fi
    fi
    work="$(mktemp -d "$GUEST_CACHE/siw-build.XXXXXX")"
    guest_log "unpacking drivers/infiniband/sw/siw from $(basename "$source_deb")"
    if ! dpkg-deb --fsys-tarfile "$source_deb" | tar -xO ./usr/src/linux-source-6.1.tar.xz |
        tar -xJ -C "$work" --wildcards 'linux-source-6.1/drivers/infiniband/sw/siw/*'; then
        rm -rf "$work"
        echo "cannot unpack siw's source from $source_deb"
        return 1
    fi
    makefile="$work/linux-source-6.1/drivers/infiniband/sw/siw/Makefile"
    # the in-tree Makefile builds siw.o when CONFIG_RDMA_SIW is set: out of the tree, always
    sed -i 's/^obj-\$(CONFIG_RDMA_SIW)/obj-m/' "$makefile"
    guest_log "building siw.ko against $headers"
    if ! make -s -C "$headers" M="$(dirname "$makefile")" -j "$(nproc)" modules >&2; then
        rm -rf "$work"
        echo "make modules of siw failed against $headers"
        return 1
    fi
    mkdir -p "$SIW_DIR"
    # without its debug sections: a fifth of the size in the initramfs
    strip --strip-debug -o "$SIW_KO.tmp" "$(dirname "$makefile")/siw.ko" && mv "$SIW_KO.tmp" "$SIW_KO"
    rm -rf "$work"
}

SIW_STATUS="built"
if [[ ! -s $SIW_KO ]]; then
    if ! siw_failure="$(build_siw)"; then
        SIW_STATUS="not built: $siw_failure"
        guest_log "WARNING: soft-iWARP (siw0) will be missing from the guest: $siw_failure"
    fi
fi

# ---------------------------------------------------------------------------------------------------------------
# Up to date?

BUSYBOX=/bin/busybox
[[ -x $BUSYBOX ]] || guest_die "$BUSYBOX is missing (package busybox-static)"
stamp="$(
    {
        printf 'kernel %s %s\n' "$KERNEL_PKG" "$KERNEL_VERSION"
        printf 'module %s\n' "${GUEST_MODULES[@]}"
        printf 'busybox %s\n' "$(dpkg-query -W -f='${Version}' busybox-static)"
        printf 'siw %s\n' "$([[ -s $SIW_KO ]] && sha256sum <"$SIW_KO" || echo none)"
        cat "$GUEST_DIR/build-guest.sh" "$GUEST_DIR/lib.sh" "$GUEST_DIR/init/init" "$GUEST_DIR/init/stage2.sh"
    } | sha256sum | cut -d' ' -f1
)"
if [[ $FORCE -eq 0 && -s $KERNEL_OUT && -s $INITRD_OUT && -f $STAMP_FILE && $(cat "$STAMP_FILE") == "$stamp" ]]; then
    guest_log "guest is up to date ($KERNEL_PKG $KERNEL_VERSION): $INITRD_OUT"
    exit 0
fi

# ---------------------------------------------------------------------------------------------------------------
# Download and unpack the kernel package.

DEB_DIR="$GUEST_CACHE/debs"
DEB_FILE="$DEB_DIR/${KERNEL_PKG}_${KERNEL_VERSION//:/%3a}_amd64.deb"
if [[ ! -s $DEB_FILE ]]; then
    mkdir -p "$DEB_DIR"
    guest_log "downloading $KERNEL_PKG $KERNEL_VERSION"
    if ! (cd "$DEB_DIR" && apt-get download -q "$KERNEL_PKG=$KERNEL_VERSION" >&2); then
        guest_die "apt-get download $KERNEL_PKG=$KERNEL_VERSION failed. If apt no longer offers that version,
delete $PIN_FILE to pin the current kernel package (or set RDMACHANNEL_GUEST_KERNEL_PKG)"
    fi
    [[ -s $DEB_FILE ]] || guest_die "apt-get download did not produce $DEB_FILE"
fi

KERNEL_ROOT="$GUEST_CACHE/kernel/${KERNEL_PKG}_${KERNEL_VERSION}"
if [[ ! -f $KERNEL_ROOT/.unpacked ]]; then
    guest_log "unpacking $(basename "$DEB_FILE")"
    rm -rf "$KERNEL_ROOT"
    mkdir -p "$KERNEL_ROOT"
    dpkg -x "$DEB_FILE" "$KERNEL_ROOT"
    touch "$KERNEL_ROOT/.unpacked"
fi
KVER="$(find "$KERNEL_ROOT/lib/modules" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | head -n 1)"
[[ -n $KVER && -f $KERNEL_ROOT/boot/vmlinuz-$KVER ]] || guest_die "no kernel found in $KERNEL_ROOT"
if [[ ! -f $KERNEL_ROOT/lib/modules/$KVER/modules.dep ]]; then
    /sbin/depmod -b "$KERNEL_ROOT" "$KVER"
fi

# ---------------------------------------------------------------------------------------------------------------
# Initramfs: static busybox, the module closure in load order, /init and the stage run after chroot.

guest_log "building the initramfs for $KVER"
STAGING="$GUEST_CACHE/initramfs.staging"
rm -rf "$STAGING"
mkdir -p "$STAGING"/{bin,dev,proc,sys,etc,newroot,results,lower,upper}
cp "$BUSYBOX" "$STAGING/bin/busybox"
cp "$GUEST_DIR/init/init" "$STAGING/init"
cp "$GUEST_DIR/init/stage2.sh" "$STAGING/stage2.sh"
chmod 755 "$STAGING/init" "$STAGING/stage2.sh"

MOD_SRC="$KERNEL_ROOT/lib/modules/$KVER"
LOAD_LIST="$STAGING/etc/modules.load"
: >"$LOAD_LIST"
declare -A seen=()
modules=("${GUEST_MODULES[@]}")
if [[ -s $SIW_KO ]]; then
    # siw's own dependencies beyond ib_core: libcrc32c (a module in Debian's 6.1) and the crc32c it asks crypto for
    modules+=(libcrc32c crc32c_generic)
fi
for spec in "${modules[@]}"; do
    optional=0
    module="$spec"
    if [[ $spec == \?* ]]; then
        optional=1
        module="${spec#\?}"
    fi
    if ! deps="$(/sbin/modprobe -d "$KERNEL_ROOT" -S "$KVER" --show-depends "$module" 2>&1)"; then
        if [[ $optional -eq 1 ]]; then
            guest_log "optional module $module is not in $KVER; skipping it"
            continue
        fi
        guest_die "module $module: $deps"
    fi
    while read -r kind path _; do
        [[ $kind == insmod ]] || continue # "builtin <name>": nothing to load
        rel="${path#"$MOD_SRC"/}"
        [[ $rel != "$path" ]] || guest_die "unexpected module path $path"
        [[ -z ${seen[$rel]:-} ]] || continue
        seen[$rel]=1
        target="$STAGING/lib/modules/$KVER/${rel%.xz}"
        target="${target%.zst}"
        mkdir -p "$(dirname "$target")"
        case "$rel" in
            *.ko.xz) xz -dc "$path" >"$target" ;;
            *.ko.zst) zstd -qdc "$path" >"$target" ;;
            *) cp "$path" "$target" ;;
        esac
        # Optional modules (and their own dependencies) may fail to load, e.g. for want of a CPU feature.
        printf '%s %s\n' "$([[ $optional -eq 1 ]] && echo opt || echo req)" "${target#"$STAGING"}" >>"$LOAD_LIST"
    done <<<"$deps"
done
if [[ -s $SIW_KO ]]; then
    # after its dependencies (ib_core, iw_cm: loaded above for rdma_ucm; libcrc32c and crc32c_generic)
    mkdir -p "$STAGING/lib/modules/$KVER/extra"
    cp "$SIW_KO" "$STAGING/lib/modules/$KVER/extra/siw.ko"
    printf 'opt %s\n' "/lib/modules/$KVER/extra/siw.ko" >>"$LOAD_LIST"
    printf 'built from linux-source-6.1 %s\n' "$KERNEL_VERSION" >"$STAGING/etc/siw-status"
else
    printf '%s\n' "$SIW_STATUS" >"$STAGING/etc/siw-status"
fi
printf '%s\n' "$KVER" >"$STAGING/etc/kernel-release"
guest_log "$(wc -l <"$LOAD_LIST") modules in the initramfs"

(cd "$STAGING" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -9 >"$INITRD_OUT.tmp"
mv "$INITRD_OUT.tmp" "$INITRD_OUT"
cp "$KERNEL_ROOT/boot/vmlinuz-$KVER" "$KERNEL_OUT"
rm -rf "$STAGING"
if [[ ${RDMACHANNEL_GUEST_KEEP_KERNEL_TREE:-0} != 1 ]]; then
    rm -rf "$KERNEL_ROOT" # about 400 MB; unpacked again from the cached .deb when a rebuild needs it
fi
printf '%s\n' "$stamp" >"$STAMP_FILE"
guest_log "built $INITRD_OUT ($(du -h "$INITRD_OUT" | cut -f1)) and $KERNEL_OUT ($KVER)"
