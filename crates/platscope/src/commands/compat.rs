//! The original tools' names, busybox-style: `platscope compat NAME ARGS…`, or a link named
//! NAME pointing at the platscope binary. Each takes its arguments exactly as the original did.

use std::ffi::{OsStr, OsString};
use std::path::Path;

/// The compatibility names this binary answers to.
pub const NAMES: &[&str] =
    &["create_sem", "memhammer", "trigger", "cpu_bind", "thread_read", "nicstat"];

/// A compat tool's command line was wrong: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Names of the original tools that have no compat tool yet: a link by one of these names
/// (scripts/install-links.sh makes them) says so instead of parsing platscope's command line.
const PLANNED: &[&str] = &["pstime"];

/// The compat name this process was invoked as, if its `argv[0]` is one.
pub fn invoked_as(argv0: &OsStr) -> Option<&'static str> {
    let name = Path::new(argv0).file_name()?.to_str()?;
    NAMES.iter().chain(PLANNED).copied().find(|n| *n == name)
}

/// Runs the compat tool `name` with `args`.
pub fn run(name: &str, args: &[OsString]) -> anyhow::Result<()> {
    match name {
        "create_sem" => super::kit::create_sem(args),
        "memhammer" => super::kit::memhammer(args),
        "trigger" => super::kit::trigger(args),
        "cpu_bind" => super::kit::cpu_bind(args),
        "thread_read" => super::bandwidth::run_thread_read(args),
        "nicstat" => super::net::run_nicstat(args),
        _ => {
            let known = NAMES.join(", ");
            Err(UsageError(format!("unknown compat tool {name:?}; known: {known}")).into())
        }
    }
}
