//! The one output seam: the format is chosen once from the global flags, and a command writes
//! text, JSON or CSV through here. A closed pipe (`platscope … | head`) is not an error; files
//! are written whole or not at all.

use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use chart::Part;
use serde::Serialize;

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
    Csv,
}

/// Set when standard output carries the command's data (`compress -o -`).
static STDOUT_IS_DATA: AtomicBool = AtomicBool::new(false);

/// Standard output carries the command's own data from now on (`compress -o -`, as `lz4 -c`):
/// every result this seam prints, in any format, goes to standard error instead, so it never
/// mixes with the data.
pub fn results_to_stderr() {
    STDOUT_IS_DATA.store(true, Ordering::Relaxed);
}

/// Writes text to stdout. Returns `Ok` when the reader has gone away.
pub fn emit(text: &str) -> io::Result<()> {
    write_out(text).map(drop)
}

/// Writes a whole sample to stdout at once, for monitors that loop: `Ok(false)` when the
/// reader has gone away (`| head`), so the loop ends quietly. Standard error instead after
/// [`results_to_stderr`].
pub fn write_out(text: &str) -> io::Result<bool> {
    let mut out: Box<dyn Write> = if STDOUT_IS_DATA.load(Ordering::Relaxed) {
        Box::new(io::stderr().lock())
    } else {
        Box::new(io::stdout().lock())
    };
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e),
    }
}

/// Writes a value as pretty JSON and a newline.
pub fn emit_json<T: Serialize + ?Sized>(value: &T) -> io::Result<()> {
    let mut text = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
    text.push('\n');
    emit(&text)
}

/// Writes `bytes` to `path` through a temporary file beside it and a rename, so the file is
/// whole or absent.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let partial = path.with_file_name(format!(".{name}.partial-{}", std::process::id()));
    let result = std::fs::write(&partial, bytes).and_then(|()| std::fs::rename(&partial, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    result.map_err(|e| io::Error::new(e.kind(), format!("writing {}: {e}", path.display())))
}

/// Whether a file can be written at `path`: a probe file beside it is created and removed, and
/// `path` itself, if it exists, must not be a directory. Nothing else is touched.
pub fn check_writable(path: &Path) -> io::Result<()> {
    if path.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            format!("{} is a directory; name a file", path.display()),
        ));
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let probe = path.with_file_name(format!(".{name}.probe-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .map_err(|e| io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display())))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// One run's report sections as a self-contained page (`--html-out FILE`).
pub fn write_page(path: &Path, kind: &str, version: &str, parts: &[Part]) -> io::Result<()> {
    let body: String = parts.iter().map(|p| chart::render_part(p, "no data in this run")).collect();
    let page = chart::page(&format!("platscope {kind}"), version, &body);
    write_atomically(path, page.as_bytes())
}
