#!/usr/bin/env bash
# Prepares everything the numa-vm guest harness needs (see README.md next to this file):
#   * Debian packages: qemu-system-x86 busybox-static cpio xz-utils
#   * a Debian 6.1 kernel, downloaded once with `apt-get download`, its /boot unpacked from the
#     .deb and the bzImage's xz payload turned into an uncompressed ELF vmlinux that QEMU boots
#     directly (PVH entry point: no decompression under TCG).
# Idempotent: later runs only check and print. Machine-readable results go to stdout as
# NUMA_VM_<KEY>=<value> lines; progress messages go to stderr.
#
# Environment:
#   NUMA_VM_CACHE_DIR   cache directory (default: ${CARGO_TARGET_DIR:-<repo>/target}/numa-vm)
#   NUMA_VM_KERNEL_PKG  pin the kernel package (default: newest linux-image-6.1.*-amd64[-unsigned])
set -euo pipefail

log() { printf 'numa-vm prepare: %s\n' "$*" >&2; }
die() { printf 'numa-vm prepare: error: %s\n' "$*" >&2; exit 1; }

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/../.." && pwd)
cache_dir=${NUMA_VM_CACHE_DIR:-${CARGO_TARGET_DIR:-$repo_root/target}/numa-vm}
case $cache_dir in /*) ;; *) cache_dir=$repo_root/$cache_dir ;; esac

export DEBIAN_FRONTEND=noninteractive
is_root() { [ "$(id -u)" -eq 0 ]; }

# ---------------------------------------------------------------- Debian packages
packages=(qemu-system-x86 busybox-static cpio xz-utils)
pkg_installed() {
    [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}
apt_updated=0
apt_update_once() {
    if [ "$apt_updated" -eq 0 ]; then
        log "running apt-get update"
        apt-get update -q >&2
        apt_updated=1
    fi
}

missing=()
for p in "${packages[@]}"; do pkg_installed "$p" || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
    is_root || die "missing Debian packages: ${missing[*]}; run this script as root, or: sudo apt-get install -y ${missing[*]}"
    log "installing ${missing[*]}"
    if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >&2; then
        apt_update_once
        apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
    fi
fi

qemu=$(command -v qemu-system-x86_64) || die "qemu-system-x86_64 not on PATH after installing qemu-system-x86"
busybox=$(dpkg-query -L busybox-static | grep -E '/s?bin/busybox$' | head -n 1 || true)
[ -n "$busybox" ] && [ -x "$busybox" ] || die "busybox-static is installed but its busybox binary was not found"
if ldd "$busybox" >/dev/null 2>&1; then
    die "$busybox is dynamically linked; the guest needs the static one from busybox-static"
fi
command -v xz >/dev/null || die "xz not on PATH after installing xz-utils"

# ---------------------------------------------------------------- kernel
mkdir -p "$cache_dir"
# One download at a time when several tests or jobs share the cache. Opened read-only so that
# an unprivileged user can still take the lock in a cache that root prepared.
lock=$cache_dir/.prepare.lock
if command -v flock >/dev/null && { [ -e "$lock" ] || : >"$lock"; } 2>/dev/null; then
    exec 9<"$lock"
    flock 9
fi

vmlinux=$cache_dir/vmlinux
pkg_file=$cache_dir/kernel-package

is_elf() { [ -s "$1" ] && [ "$(head -c 4 "$1" | od -An -tx1 | tr -d ' \n')" = "7f454c46" ]; }

# Candidate packages, newest ABI first; at the same ABI the unsigned package (no Secure Boot
# signature, identical kernel) before the signed one.
kernel_candidates() {
    if [ -n "${NUMA_VM_KERNEL_PKG:-}" ]; then
        echo "$NUMA_VM_KERNEL_PKG"
        return
    fi
    apt-cache pkgnames linux-image-6.1. 2>/dev/null |
        grep -E '^linux-image-6\.1\.[0-9]+-[0-9]+-amd64(-unsigned)?$' |
        awk -F- '{ print $3 "-" $4, (NF == 6 ? 0 : 1), $0 }' |
        sort -k1,1Vr -k2,2n | awk '{ print $3 }' || true
}

# Finds each xz stream start in a bzImage and decompresses from there until one yields an ELF.
extract_vmlinux() {
    local image=$1 out=$2 off
    for off in $(LC_ALL=C grep -obUaP '\xFD\x37\x7A\x58\x5A\x00' "$image" | cut -d: -f1); do
        # xz stops with an error at the bytes that follow the stream; the output is complete.
        tail -c "+$((off + 1))" "$image" | xz -dc >"$out.tmp" 2>/dev/null || true
        if is_elf "$out.tmp"; then
            mv "$out.tmp" "$out"
            return 0
        fi
    done
    rm -f "$out.tmp"
    return 1
}

check_kernel_config() {
    local config=$1 opt
    for opt in CONFIG_NUMA CONFIG_ACPI_NUMA CONFIG_PVH CONFIG_BLK_DEV_INITRD CONFIG_DEVTMPFS \
        CONFIG_TMPFS CONFIG_SERIAL_8250 CONFIG_SERIAL_8250_CONSOLE CONFIG_BINFMT_SCRIPT; do
        grep -qx "$opt=y" "$config" || die "kernel config $config lacks $opt=y; pick another kernel with NUMA_VM_KERNEL_PKG"
    done
}

if is_elf "$vmlinux" && [ -s "$pkg_file" ]; then
    log "cached kernel $(cat "$pkg_file") in $cache_dir"
else
    work=$(mktemp -d "$cache_dir/download.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    apt_opts=()
    is_root && apt_opts+=(-o APT::Sandbox::User=root)
    got=""
    for attempt in 1 2; do
        mapfile -t candidates < <(kernel_candidates)
        for pkg in "${candidates[@]}"; do
            log "downloading $pkg"
            if (cd "$work" && apt-get download -q "${apt_opts[@]}" "$pkg" >&2); then
                got=$pkg
                break
            fi
        done
        [ -n "$got" ] && break
        # Empty or stale package lists: refresh once (needs root) and try again.
        if [ "$attempt" -eq 1 ] && is_root; then apt_update_once; else break; fi
    done
    [ -n "$got" ] || die "could not download a linux-image-6.1.*-amd64 package (run as root so apt-get update can refresh the package lists, or set NUMA_VM_KERNEL_PKG)"

    deb=$(ls "$work"/*.deb)
    log "unpacking $(basename "$deb")"
    # Only /boot is needed: like `dpkg -x`, but without writing the ~400 MB of modules.
    mkdir "$work/root"
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work/root" --wildcards './boot/*'
    image=$(ls "$work"/root/boot/vmlinuz-* | head -n 1)
    config=$(ls "$work"/root/boot/config-* | head -n 1)
    [ -f "$image" ] && [ -f "$config" ] || die "$got has no /boot/vmlinuz-* and config"
    check_kernel_config "$config"
    extract_vmlinux "$image" "$work/vmlinux" || die "no xz stream in $image decompressed to an ELF vmlinux"
    cp "$config" "$cache_dir/kernel-config"
    cp "$image" "$cache_dir/vmlinuz"
    mv "$work/vmlinux" "$vmlinux"
    echo "$got" >"$pkg_file"
    rm -rf "$work"
    trap - EXIT
    log "kernel $got extracted to $vmlinux"
fi

echo "NUMA_VM_CACHE_DIR=$cache_dir"
echo "NUMA_VM_KERNEL=$vmlinux"
echo "NUMA_VM_KERNEL_PACKAGE=$(cat "$pkg_file")"
echo "NUMA_VM_QEMU=$qemu"
echo "NUMA_VM_BUSYBOX=$busybox"
