//! The original tools' names, busybox-style: `platscope compat NAME ARGS…`, or a link named
//! NAME pointing at the platscope binary. Each takes its arguments exactly as the original did.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use measure::UsageError;
use membench::kit::tools as kit;

/// The compatibility names this binary answers to.
pub const NAMES: &[&str] =
    &["create_sem", "memhammer", "trigger", "cpu_bind", "thread_read", "nicstat", "pstime"];

/// The compat name this process was invoked as, if its `argv[0]` is one.
pub fn invoked_as(argv0: &OsStr) -> Option<&'static str> {
    let name = Path::new(argv0).file_name()?.to_str()?;
    NAMES.iter().copied().find(|n| *n == name)
}

/// Runs the compat tool `name` with `args`.
pub fn run(name: &str, args: &[OsString]) -> anyhow::Result<()> {
    match name {
        "create_sem" => Ok(kit::create_sem(args)?),
        "memhammer" => Ok(kit::memhammer(args)?),
        "trigger" => Ok(kit::trigger(args)?),
        "cpu_bind" => Ok(kit::cpu_bind(args)?),
        "thread_read" => Ok(membench::thread_read::tool(args)?),
        "nicstat" => Ok(nicstat::command::compat(args, crate::cli::VERSION)?),
        "pstime" => Ok(cpuacct::command::pstime_compat(args)?),
        _ => {
            let known = NAMES.join(", ");
            Err(UsageError::Message(format!("unknown compat tool {name:?}; known: {known}")).into())
        }
    }
}
