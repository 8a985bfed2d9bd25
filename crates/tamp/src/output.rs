//! Where the output goes: a temporary file in the target directory, renamed into place only when
//! the whole run succeeded (so a failure or a stop never leaves a half-written file), or nowhere.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::TampError;

/// Where a run writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// This file: written under a temporary name beside it, renamed at the end.
    File(PathBuf),
    /// Nowhere: the output is produced and counted, then dropped (the seed's "output discarded").
    Discard,
}

/// The open output of one run. Dropping it without [`Target::commit`] removes the temporary file.
#[derive(Debug)]
pub(crate) struct Target {
    file: Option<(BufWriter<File>, PathBuf, PathBuf)>,
    pub written: u64,
}

impl Target {
    pub fn open(output: &Output) -> Result<Self, TampError> {
        let file = match output {
            Output::Discard => None,
            Output::File(path) => {
                let dir = match path.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
                let Some(name) = name else {
                    return Err(TampError::Usage(format!(
                        "output {} names no file; give a file name with -o",
                        path.display()
                    )));
                };
                let tmp = dir.join(format!(".{name}.tamp-{}.tmp", std::process::id()));
                let f = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&tmp)
                    .map_err(|source| TampError::CreateOutput { dir: dir.clone(), source })?;
                // Large blocks bypass the buffer; it only gathers the small frame and block headers.
                Some((BufWriter::with_capacity(1 << 20, f), tmp, path.clone()))
            }
        };
        Ok(Self { file, written: 0 })
    }

    pub fn write(&mut self, data: &[u8]) -> Result<(), TampError> {
        if let Some((w, tmp, path)) = self.file.as_mut() {
            w.write_all(data).map_err(|source| write_err(path, tmp, source))?;
        }
        self.written += data.len() as u64;
        Ok(())
    }

    /// Flushes and renames the temporary file into place.
    pub fn commit(&mut self) -> Result<(), TampError> {
        if let Some((mut w, tmp, path)) = self.file.take() {
            let r = w.flush().and_then(|()| std::fs::rename(&tmp, &path));
            if let Err(source) = r {
                let _ = std::fs::remove_file(&tmp);
                return Err(TampError::Write { path, source });
            }
        }
        Ok(())
    }

    /// The final path, when writing to a file.
    pub fn path(&self) -> Option<&Path> {
        self.file.as_ref().map(|(_, _, p)| p.as_path())
    }
}

fn write_err(path: &Path, _tmp: &Path, source: std::io::Error) -> TampError {
    TampError::Write { path: path.to_path_buf(), source }
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Some((w, tmp, _)) = self.file.take() {
            drop(w);
            let _ = std::fs::remove_file(tmp);
        }
    }
}
