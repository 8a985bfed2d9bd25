#!/usr/bin/env bash
# Kernel modules for numa-vm guests, from the same Debian package as the guest kernel that
# prepare.sh cached (only /boot is kept there). The guest kernel has block devices and disk
# filesystems (brd, loop, virtio_blk, ext4, …) as modules only, so a test that needs a real
# page cache — pages that can be dropped, unlike tmpfs — puts the modules it needs into the
# guest (numa_vm::run_in_guest_with) and insmods them there.
#
#   modules.sh CACHE_DIR KERNEL_PACKAGE MODULE...
#
# CACHE_DIR and KERNEL_PACKAGE are what prepare.sh printed (numa_vm::prepare() returns them);
# each MODULE is a path under lib/modules/<version>/kernel/, e.g. drivers/block/brd.ko.
# Downloads the package once (~70 MB, apt-get download), keeps only the named modules under
# CACHE_DIR/modules/KERNEL_PACKAGE/, and prints one NUMA_VM_MODULE=<path> line per module, in
# the order given. Progress goes to stderr.
set -euo pipefail

log() { printf 'numa-vm modules: %s\n' "$*" >&2; }
die() { printf 'numa-vm modules: error: %s\n' "$*" >&2; exit 1; }

[ $# -ge 3 ] || die "usage: $0 CACHE_DIR KERNEL_PACKAGE MODULE..."
cache_dir=$1
pkg=$2
shift 2
case $pkg in linux-image-*) ;; *) die "$pkg is not a linux-image package" ;; esac
dir=$cache_dir/modules/$pkg
mkdir -p "$dir"

lock=$cache_dir/.modules.lock
if command -v flock >/dev/null && { [ -e "$lock" ] || : >"$lock"; } 2>/dev/null; then
    exec 9<"$lock"
    flock 9
fi

missing=()
for m in "$@"; do
    case $m in /* | *..*) die "module path $m must be relative to lib/modules/<version>/kernel" ;; esac
    [ -s "$dir/$m" ] || missing+=("$m")
done

if [ "${#missing[@]}" -gt 0 ]; then
    work=$(mktemp -d "$cache_dir/modules-download.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    apt_opts=()
    [ "$(id -u)" -eq 0 ] && apt_opts+=(-o APT::Sandbox::User=root)
    log "downloading $pkg for ${missing[*]}"
    (cd "$work" && apt-get download -q "${apt_opts[@]}" "$pkg" >&2) ||
        die "could not download $pkg (as root, apt-get update refreshes stale package lists)"
    patterns=()
    for m in "${missing[@]}"; do patterns+=("./lib/modules/*/kernel/$m"); done
    mkdir "$work/root"
    dpkg-deb --fsys-tarfile "$work"/*.deb | tar -x -C "$work/root" --wildcards "${patterns[@]}" ||
        die "$pkg lacks one of: ${missing[*]}"
    for m in "${missing[@]}"; do
        src=$(ls "$work"/root/lib/modules/*/kernel/"$m" 2>/dev/null | head -n 1)
        [ -n "$src" ] || die "$pkg has no module $m"
        mkdir -p "$(dirname "$dir/$m")"
        cp "$src" "$dir/$m.tmp"
        mv "$dir/$m.tmp" "$dir/$m"
    done
    rm -rf "$work"
    trap - EXIT
    log "kept ${missing[*]} in $dir"
fi

for m in "$@"; do echo "NUMA_VM_MODULE=$dir/$m"; done
