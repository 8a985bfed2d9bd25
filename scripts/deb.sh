#!/usr/bin/env bash
# Builds platscope's .deb with cargo-deb: the binary, the original tools' names as links
# (/usr/lib/platscope/kit), man pages and shell completions generated from the command line,
# the serve unit (installed, not enabled), the docs and deploy/ as examples.
#   scripts/deb.sh [--out DIR]                 release build, then package it
#   scripts/deb.sh --binary PATH [--out DIR]   package that binary as it is (no build): the
#                                              tests package the binary they were built with
# Prints the .deb's path on stdout. cargo-deb comes from scripts/setup.sh --deps.
set -euo pipefail
usage="usage: scripts/deb.sh [--binary PATH] [--out DIR]"
root=$(cd "$(dirname "$0")/.." && pwd)
binary=""
out="$root/target/debian"
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary=${2:?$usage}; shift 2 ;;
    --out) out=${2:?$usage}; shift 2 ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
if ! cargo deb --version >/dev/null 2>&1; then
  echo "deb: cargo-deb is not installed; run scripts/setup.sh --deps" >&2
  exit 1
fi
cd "$root"
if [ -z "$binary" ]; then
  cargo build --release --locked -p platscope >&2
  target_dir=${CARGO_TARGET_DIR:-$root/target}
  binary="$target_dir/release/platscope"
else
  case "$binary" in /*) ;; *) binary="$PWD/$binary" ;; esac
  if [ ! -x "$binary" ]; then
    echo "deb: $binary is not an executable" >&2
    exit 1
  fi
  # cargo-deb takes built files from <target dir>/release/: stage this binary in a scratch one.
  target_dir=$(mktemp -d "${TMPDIR:-/tmp}/platscope-deb.XXXXXX")
  trap 'rm -rf "$target_dir"' EXIT
  mkdir -p "$target_dir/release"
  cp "$binary" "$target_dir/release/platscope"
  binary="$target_dir/release/platscope"
fi

# What cargo-deb packages from target/release/assets (see [package.metadata.deb]).
assets="$target_dir/release/assets"
rm -rf "$assets"
mkdir -p "$assets/man" "$assets/completions"
"$binary" man --out "$assets/man" 2>/dev/null
gzip -9n "$assets"/man/*.1
"$binary" completions bash >"$assets/completions/platscope"
"$binary" completions zsh >"$assets/completions/_platscope"
"$binary" completions fish >"$assets/completions/platscope.fish"
# The unit as packaged: the binary and docs live under /usr, not /usr/local.
sed -e 's|/usr/local/bin/platscope|/usr/bin/platscope|g' \
    -e 's|/usr/local/share/doc/platscope|/usr/share/doc/platscope|g' \
    -e 's|^# Install: .*|# Installed by the platscope package (not enabled); start it with:|' \
    -e 's|^#  *systemctl daemon-reload; systemctl enable --now platscope-serve|#   systemctl enable --now platscope-serve|' \
    deploy/systemd/platscope-serve.service >"$assets/platscope-serve.service"

mkdir -p "$out"
CARGO_TARGET_DIR="$target_dir" cargo deb -p platscope --no-build --strip --output "$out" >&2
ls -t "$out"/platscope_*.deb | head -n 1
