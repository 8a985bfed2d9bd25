#!/usr/bin/env bash
# Installs what platscope needs to build and test on Debian 12, then builds it.
#   scripts/setup.sh          packages + release build (+ multi-call links)
#   scripts/setup.sh --deps   packages only
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  # build: hwloc bindings (hwlocality links libhwloc and libudev)
  build-essential pkg-config libhwloc-dev libudev-dev
  # eBPF programs (libbpf-rs): clang for BPF C, libelf and zlib for libbpf, bpftool for
  # the kernel's vmlinux.h
  clang libelf-dev zlib1g-dev bpftool
  # io pattern tests: an ext4 image on a loop device
  e2fsprogs mount
  # reference tools the tests compare with, and netns/veth for network tests
  numactl hwloc iproute2
  # tamp: stock compressors its round-trip tests and bench/compress_tools.sh compare with
  # (pzstd ships in zstd)
  lz4 zstd pigz
  # the HTML report checked as a person sees it (headless Chromium), with a fixed font
  chromium fonts-dejavu-core
  # the multi-node NUMA guest (tests/numa-vm)
  qemu-system-x86 busybox-static cpio xz-utils
  # db querystat tests and bench: throwaway servers (crates/testdb), load drivers (pgbench
  # ships with postgresql-15), and bpftrace for the overhead comparison
  postgresql-15 postgresql-contrib mariadb-server mariadb-client sysbench bpftrace
  # alloc: the preloadable allocators Debian ships, and jq and GNU time for
  # bench/alloc_bakeoff.sh
  libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0 libtbbmalloc2 jq time
  # the fleet: serve is scraped by a real Prometheus (promtool checks the metrics and the
  # deploy/ rules), textfiles are read by a real node_exporter
  prometheus prometheus-node-exporter
  # serve's TLS test: a test CA and certificates (openssl) and a TLS client (curl)
  openssl curl
  # cpu util --from: mpstat, to capture the logs its fixtures came from (and to compare by hand)
  sysstat
  # the .deb's test reads an installed man page; the Ansible role's venv (ansible-core from PyPI)
  man-db python3-venv python3-pip
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install Rust 1.89 or newer (https://rustup.rs) and run again" >&2
  exit 1
fi

# The test tools beyond Debian's packages, for `--deps` (scripts/test.sh) only: the main job
# (`report`) needs neither.
if [ "${1:-}" = "--deps" ]; then
  # cargo-deb builds the .deb (scripts/deb.sh); Debian 12 does not package it. 3.7 is the first
  # that writes symlinks listed in the manifest (the kit links).
  cargo_deb_version=3.8.0
  if ! cargo deb --version 2>/dev/null | grep -F "$cargo_deb_version" >/dev/null; then
    echo "setup: installing cargo-deb $cargo_deb_version (cargo install)" >&2
    cargo install --locked --quiet cargo-deb --version "$cargo_deb_version"
  fi

  # cargo-machete finds dependencies no code of the crate names (scripts/test.sh); not in Debian
  # 12 either.
  cargo_machete_version=0.9.2
  if ! cargo machete --version 2>/dev/null | grep -Fx "$cargo_machete_version" >/dev/null; then
    echo "setup: installing cargo-machete $cargo_machete_version (cargo install)" >&2
    cargo install --locked --quiet cargo-machete --version "$cargo_machete_version"
  fi

  # ansible-core from PyPI, pinned, in its own venv (Debian's python3, not the system site):
  # deploy/ansible's role and its test run ansible-playbook from there.
  ansible_core_version=2.18.19
  ansible_venv=${PLATSCOPE_ANSIBLE_VENV:-$HOME/.local/share/platscope/ansible}
  if ! "$ansible_venv/bin/ansible-playbook" --version 2>/dev/null | grep -F "core $ansible_core_version]" >/dev/null; then
    echo "setup: installing ansible-core $ansible_core_version in $ansible_venv" >&2
    /usr/bin/python3 -m venv "$ansible_venv"
    "$ansible_venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      "ansible-core==$ansible_core_version"
  fi
  exit 0
fi

cargo build --release --locked -p platscope
# Multi-call links for the original tools' names (memhammer, create_sem, trigger, cpu_bind,
# thread_read, nicstat): scripts written for the originals run from this directory unchanged.
scripts/install-links.sh "${PLATSCOPE_LINK_DIR:-$PWD/target/release/kit}" >/dev/null
echo "setup: built target/release/platscope (tool links in ${PLATSCOPE_LINK_DIR:-target/release/kit})" >&2
