#!/usr/bin/env bash
# Installs the multi-call links: the original tools' names, each a symlink to the platscope
# binary, which behaves as the tool its link is named after (busybox-style).
#   scripts/install-links.sh DIR [BINARY]
# DIR is created if missing; BINARY defaults to this checkout's target/release/platscope.
# Existing links of these names in DIR are replaced; other files of these names are left alone.
set -euo pipefail

usage="usage: scripts/install-links.sh DIR [BINARY]"
case "${1:-}" in
  -h|--help) echo "$usage"; exit 0 ;;
esac
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "$usage" >&2
  exit 2
fi
dir=$1
root=$(cd "$(dirname "$0")/.." && pwd)
binary=${2:-$root/target/release/platscope}
case "$binary" in
  /*) ;;
  *) binary="$(pwd)/$binary" ;;
esac
if [ ! -x "$binary" ]; then
  echo "install-links: $binary is not an executable; build it first (cargo build --release -p platscope)" >&2
  exit 1
fi

names=(memhammer create_sem trigger cpu_bind nicstat thread_read pstime)
mkdir -p "$dir"
for name in "${names[@]}"; do
  link="$dir/$name"
  if [ -e "$link" ] && [ ! -L "$link" ]; then
    echo "install-links: $link exists and is not a link; left alone" >&2
    continue
  fi
  ln -sfn "$binary" "$link"
done
echo "install-links: linked ${names[*]} in $dir to $binary" >&2
