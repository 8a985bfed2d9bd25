//! Shared by the integration tests (included with `mod common;`).

// Each test file uses a different part of this; helpers unwrap (clippy.toml allows it in
// #[test] fns only).
#![allow(dead_code, clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;

pub static NO_STOP: AtomicBool = AtomicBool::new(false);

/// Runs a stock tool and returns its stdout; fails loudly when the tool is missing (setup.sh
/// installs lz4, zstd and pigz: a missing one is a broken machine, not a reason to skip).
pub fn tool(cmd: &str, args: &[&str]) -> Vec<u8> {
    let out = Command::new(cmd).args(args).output().unwrap_or_else(|e| {
        panic!("cannot run {cmd}: {e}; install it with scripts/setup.sh --deps (apt-get install lz4 zstd)")
    });
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

pub fn corpus(size: usize) -> Vec<u8> {
    tamp::corpus::generate(7, size)
}

/// Names in `dir`, sorted (to check nothing was left behind).
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}
