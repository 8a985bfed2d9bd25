//! The original tools' names, busybox-style: `platscope compat NAME ARGS…`, or a link named
//! NAME pointing at the platscope binary. Each takes its arguments exactly as the original did.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use measure::Classified;
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
pub fn run(name: &str, args: &[OsString]) -> Result<(), Classified> {
    match name {
        "create_sem" => kit::create_sem(args),
        "memhammer" => kit::memhammer(args),
        "trigger" => kit::trigger(args),
        "cpu_bind" => kit::cpu_bind(args),
        "thread_read" => kit::thread_read(args),
        "nicstat" => nicstat::command::compat(args, crate::cli::VERSION),
        "pstime" => cpuacct::command::pstime_compat(args),
        _ => Err(Classified::usage(format!(
            "unknown compat tool {name:?}; known: {}",
            NAMES.join(", ")
        ))),
    }
}
