//! Writing results to stdout: a closed pipe (`platscope topo | head`) is not an error.

use std::io::{self, Write};

use serde::Serialize;

/// Writes text to stdout. Returns `Ok` when the reader has gone away.
pub fn emit(text: &str) -> io::Result<()> {
    write_out(text).map(drop)
}

/// Writes a whole sample to stdout at once, for monitors that loop: `Ok(false)` when the
/// reader has gone away (`| head`), so the loop ends quietly.
pub fn write_out(text: &str) -> io::Result<bool> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e),
    }
}

/// Writes a value as pretty JSON and a newline.
pub fn emit_json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    Ok(emit(&text)?)
}
