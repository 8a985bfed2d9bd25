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
        "pstime" => super::cpu::run_pstime_compat(args),
        _ => {
            let known = NAMES.join(", ");
            Err(UsageError::Message(format!("unknown compat tool {name:?}; known: {known}")).into())
        }
    }
}

/// A compat tool's clap error as one line, without the usage block; `help` is how to get help
/// (`pstime -h`).
pub fn clap_one_line(err: &clap::Error, help: &str) -> String {
    let rendered = err.render().to_string();
    let lines: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect();
    let text = lines.join(" ");
    format!("{} (see {help})", text.strip_prefix("error: ").unwrap_or(&text))
}
