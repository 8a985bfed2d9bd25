#!/usr/bin/env bash
# The project's test command: formatting, lints, docs, then every test tier
# (pure, live on this machine, and the multi-node QEMU guest suite).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --deps
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --locked --workspace --all-targets -- -D warnings
echo "== cargo doc -D warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --locked --workspace --no-deps --quiet
echo "== cargo test"
cargo test --locked --workspace
