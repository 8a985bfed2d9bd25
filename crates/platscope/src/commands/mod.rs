//! One module per command: each turns parsed arguments into library calls and output.

pub mod compat;
pub mod cpu;
pub mod io;
pub mod net;
pub mod pagecache;
pub mod record;

/// A command that finished and passes on another program's exit status (`cpu util -- CMD`
/// exits as CMD did, like time(1)): `main` exits with it and prints nothing more.
#[derive(Debug, thiserror::Error)]
#[error("the command exited with status {0}")]
pub struct ExitWith(pub u8);

/// The status a wrapper passes on for a child's end: its exit code, or 128 + the signal that
/// killed it (as shells report it).
pub fn passed_on_status(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => (code & 0xff) as u8,
        (None, Some(sig)) => (128 + sig).clamp(0, 255) as u8,
        _ => 1,
    }
}
