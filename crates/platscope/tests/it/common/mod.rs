//! Shared by the guest test files: boot a QEMU NUMA guest with platscope (and extra host
//! binaries) inside, print what every command did, and read JSON answers.

use std::path::Path;

use numa_vm::{run_in_guest_with, CommandResult, GuestRun, GuestSpec};
use serde_json::Value;

/// Boots `spec` with the platscope binary and `extra` binaries, runs `commands`, prints each
/// command with its exit code and output; a failed boot fails the test with the console tail.
pub fn boot(spec: &GuestSpec, extra: &[&Path], commands: &[&str]) -> GuestRun {
    let mut binaries: Vec<&Path> = vec![Path::new(env!("CARGO_BIN_EXE_platscope"))];
    binaries.extend_from_slice(extra);
    match run_in_guest_with(spec, &binaries, commands) {
        Ok(run) => {
            println!("guest booted in {:.1} s, done in {:.1} s", run.boot_secs, run.total_secs);
            for r in &run.results {
                println!("$ {}\n[exit {}]\n{}{}", r.command, r.exit_code, r.stdout, r.stderr);
            }
            run
        }
        Err(err) => panic!("guest run failed: {err}\n{}", err.console_tail().unwrap_or("")),
    }
}

/// A command's stdout as JSON; the command must have succeeded.
pub fn json(result: &CommandResult) -> Value {
    assert_eq!(result.exit_code, 0, "{}: {}", result.command, result.stderr);
    serde_json::from_str(&result.stdout).unwrap_or_else(|e| panic!("{}: {e}", result.command))
}
