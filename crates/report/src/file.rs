//! Writing the page: the output directory is checked before anything is measured, and the file
//! is written next to its final name and renamed over it, so a crash or a full disk never leaves
//! a half-written report.

use std::io;
use std::path::{Path, PathBuf};

/// Creates `dir` if needed and proves it writable; returns it absolute.
pub fn prepare_out(dir: &Path) -> io::Result<PathBuf> {
    let context = |what: &str, e: io::Error| {
        io::Error::new(e.kind(), format!("cannot {what} --out {}: {e}", dir.display()))
    };
    std::fs::create_dir_all(dir).map_err(|e| context("create", e))?;
    let probe = dir.join(format!(".platscope-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| context("write to", e))?;
    std::fs::remove_file(&probe).ok();
    Ok(dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()))
}

/// Writes a rendered page to `dir/report.html` atomically; returns the path.
pub fn write_html(dir: &Path, html: &str) -> io::Result<PathBuf> {
    let path = dir.join("report.html");
    let tmp = path.with_extension(format!("html.tmp-{}", std::process::id()));
    let result = std::fs::write(&tmp, html).and_then(|()| std::fs::rename(&tmp, &path));
    if let Err(e) = result {
        std::fs::remove_file(&tmp).ok();
        return Err(io::Error::new(e.kind(), format!("writing {}: {e}", path.display())));
    }
    Ok(path)
}
