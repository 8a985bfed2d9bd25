//! node_exporter textfiles: families rendered in text format 0.0.4 (the textfile collector
//! rejects OpenMetrics `info`) and put in place atomically, because node_exporter may read the
//! directory at any moment and must never see half a file.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::{render, Family, Format};

/// The file name node_exporter reads (it only reads `*.prom`).
pub const FILE_NAME: &str = "platscope.prom";

/// Why a textfile could not be written.
#[derive(Debug, thiserror::Error)]
pub enum TextfileError {
    /// The directory is missing or not a directory.
    #[error("{0} is not a directory: give --dir the node_exporter textfile directory (--collector.textfile.directory)")]
    NoDir(PathBuf),
    /// Writing the temp file or renaming it failed (e.g. the directory is not writable).
    #[error("cannot write {path}: {reason}")]
    Write {
        /// The file being written.
        path: PathBuf,
        /// Why.
        reason: std::io::Error,
    },
}

/// Renders `families` as text 0.0.4 into `dir/platscope.prom`: written to
/// `dir/platscope.prom.<pid>.tmp` (node_exporter ignores it), synced, then renamed over the
/// old file. Returns the file's path. On failure the temp file is removed and any previous
/// `platscope.prom` is left as it was.
pub fn write(dir: &Path, families: &[Family]) -> Result<PathBuf, TextfileError> {
    if !dir.is_dir() {
        return Err(TextfileError::NoDir(dir.to_path_buf()));
    }
    let target = dir.join(FILE_NAME);
    let temp = dir.join(format!("{FILE_NAME}.{}.tmp", std::process::id()));
    let text = render(families, Format::Text004);
    let result = (|| {
        let mut file = std::fs::File::create(&temp)
            .map_err(|reason| TextfileError::Write { path: temp.clone(), reason })?;
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|reason| TextfileError::Write { path: temp.clone(), reason })?;
        // Readable by node_exporter, which usually runs as its own user.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(0o644))
            .map_err(|reason| TextfileError::Write { path: temp.clone(), reason })?;
        std::fs::rename(&temp, &target)
            .map_err(|reason| TextfileError::Write { path: target.clone(), reason })
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result.map(|()| target)
}

impl measure::Usage for TextfileError {
    /// Exit status 1, as before: the directory is the system's state.
    fn is_usage(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Kind, Unit};

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("exporter-textfile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn writes_text_004_and_leaves_no_temp_file() {
        let dir = temp_dir("ok");
        let mut fam = Family::new("platscope_x_seconds", Kind::Gauge, Some(Unit::Seconds), "X.");
        fam.push(&[("a", "b")], 1.5);
        let path = write(&dir, &[fam]).unwrap();
        assert_eq!(path, dir.join("platscope.prom"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("# TYPE platscope_x_seconds gauge"), "{text}");
        assert!(text.contains("platscope_x_seconds{a=\"b\"} 1.5"), "{text}");
        assert!(!text.contains("# EOF"), "0.0.4 has no EOF marker: {text}");
        let names: Vec<_> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("platscope.prom")]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn missing_dir_is_an_error_naming_the_flag() {
        let err = write(Path::new("/nonexistent/textfile-dir"), &[]).unwrap_err();
        assert!(err.to_string().contains("--dir"), "{err}");
    }
}
