#!/usr/bin/env bash
# The project's test command: formatting, lints, docs, then every test tier: pure tests, then
# the live (this machine, as root), guest (multi-node QEMU) and browser (headless Chromium) tiers.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --deps
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
# Incremental caches double target/ and a one-shot run never reuses them.
export CARGO_INCREMENTAL=0
# Each step's start time goes to the log: CI's time is near its budget.
step() { echo "== $1 ($(date -u +%T))"; }

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo machete"
# A dependency the crate's code never names fails here (exit 1). It cannot tell a test-only
# dependency listed under [dependencies]: keep those under [dev-dependencies].
cargo machete
step "cargo clippy -D warnings"
cargo clippy --locked --workspace --all-targets -- -D warnings
step "cargo doc -D warnings"
RUSTDOCFLAGS="-D warnings" cargo doc --locked --workspace --no-deps --quiet
step "cargo test: pure tier (what plain \`cargo test\` runs)"
cargo test --locked --workspace
step "cargo test: live, guest and browser tiers (marked #[ignore] with their tier)"
cargo test --locked --workspace -- --ignored
step "done"
