//! The original tools' names, busybox-style: `platscope compat NAME ARGS…`, or a link named
//! NAME pointing at the platscope binary. Each takes its arguments exactly as the original did.

use std::ffi::{OsStr, OsString};
use std::path::Path;

/// The compatibility names this binary answers to.
pub const NAMES: &[&str] = &[];

/// A compat tool's command line was wrong: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// The compat name this process was invoked as, if its `argv[0]` is one.
pub fn invoked_as(argv0: &OsStr) -> Option<&'static str> {
    let name = Path::new(argv0).file_name()?.to_str()?;
    NAMES.iter().copied().find(|n| *n == name)
}

/// Runs the compat tool `name` with `args`.
pub fn run(name: &str, _args: &[OsString]) -> anyhow::Result<()> {
    Err(UsageError(format!(
        "unknown compat tool {name:?}; known: {}",
        if NAMES.is_empty() { "none yet".to_string() } else { NAMES.join(", ") }
    ))
    .into())
}
