#!/usr/bin/env bash
# The project's test command: formatting, lints, docs, then every test tier: pure tests, then
# the live (this machine, as root), guest (multi-node QEMU) and browser (headless Chromium) tiers.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --deps
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
# Incremental caches double target/ and a one-shot run never reuses them.
export CARGO_INCREMENTAL=0

echo "== cargo fmt --check ($(date -u +%T))"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings ($(date -u +%T))"
cargo clippy --locked --workspace --all-targets -- -D warnings
echo "== cargo doc -D warnings ($(date -u +%T))"
RUSTDOCFLAGS="-D warnings" cargo doc --locked --workspace --no-deps --quiet
echo "== cargo test: pure tier (what plain \`cargo test\` runs) ($(date -u +%T))"
cargo test --locked --workspace
echo "== cargo test: live, guest and browser tiers (marked #[ignore] with their tier) ($(date -u +%T))"
cargo test --locked --workspace -- --ignored
echo "== done ($(date -u +%T))"
