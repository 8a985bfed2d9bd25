//! Where the output goes: a temporary file in the target directory, renamed into place only when
//! the whole run succeeded (so a failure or a stop never leaves a half-written file), standard
//! output as it is produced, or nowhere.
//! A [`Output::NewFile`] never replaces a file: one already there is refused before the run
//! starts, and one that appears during it is refused at the rename (which cannot clobber).

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::fd::AsFd;
use std::path::PathBuf;

use crate::TampError;

/// Where a run writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// This file: written under a temporary name beside it, renamed at the end, replacing
    /// whatever had the name (`compress --force`).
    File(PathBuf),
    /// This file, which must not exist: as [`Output::File`], but a file of that name (there at
    /// the start, or made by someone else during the run) is an error
    /// ([`TampError::Exists`]) and is left as it was.
    NewFile(PathBuf),
    /// Nowhere: the output is produced and counted, then dropped (as the original Tamp tests
    /// discarded it).
    Discard,
    /// Standard output (`-o -`, as `lz4 -c`): written as it is produced, so an interrupted or
    /// failed run leaves the reader a truncated stream (a frame without its end, which `lz4 -d`
    /// and `zstd -d` refuse), not a file to remove.
    Stdout,
}

/// The output buffer's size. Kept well under a block (256 KiB by default; an LZ4 block
/// compresses to at most that plus 8 bytes, a zstd frame decodes to 256 KiB): `BufWriter` passes
/// writes of at least its capacity straight to the file instead of copying them into the buffer.
const BUFFER: usize = 32 << 10;

/// The open output of one run. Dropping it without [`Target::commit`] removes the temporary file.
#[derive(Debug)]
pub(crate) struct Target {
    sink: Sink,
    pub written: u64,
}

/// Where a [`Target`]'s bytes go.
#[derive(Debug)]
enum Sink {
    Discard,
    /// A temporary file beside `path`, renamed to it at commit; `replace`: whether that rename
    /// may replace a file of that name.
    File {
        w: BufWriter<File>,
        tmp: PathBuf,
        path: PathBuf,
        replace: bool,
    },
    /// Standard output's descriptor, duplicated.
    Stdout(BufWriter<File>),
}

impl Target {
    pub fn open(output: &Output) -> Result<Self, TampError> {
        let sink = match output {
            Output::Discard => Sink::Discard,
            Output::Stdout => {
                let fd = std::io::stdout()
                    .as_fd()
                    .try_clone_to_owned()
                    .map_err(|source| TampError::WriteStdout { source })?;
                Sink::Stdout(BufWriter::with_capacity(BUFFER, File::from(fd)))
            }
            Output::File(path) | Output::NewFile(path) => {
                let replace = matches!(output, Output::File(_));
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
                if !replace && path.symlink_metadata().is_ok() {
                    return Err(TampError::Exists { path: path.clone() });
                }
                let tmp = dir.join(format!(".{name}.tamp-{}.tmp", std::process::id()));
                let f = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&tmp)
                    .map_err(|source| TampError::CreateOutput { dir: dir.clone(), source })?;
                // The buffer only gathers small writes (frame headers and trailers, tiny blocks):
                // a write at least its size goes straight to the file from the caller's slot,
                // so a compressed or decoded block is not copied once more on the way out.
                let w = BufWriter::with_capacity(BUFFER, f);
                Sink::File { w, tmp, path: path.clone(), replace }
            }
        };
        Ok(Self { sink, written: 0 })
    }

    pub fn write(&mut self, data: &[u8]) -> Result<(), TampError> {
        match &mut self.sink {
            Sink::Discard => {}
            Sink::File { w, path, .. } => w
                .write_all(data)
                .map_err(|source| TampError::Write { path: path.clone(), source })?,
            Sink::Stdout(w) => {
                w.write_all(data).map_err(|source| TampError::WriteStdout { source })?
            }
        }
        self.written += data.len() as u64;
        Ok(())
    }

    /// Flushes, and renames the temporary file into place; without `replace`, the rename fails
    /// (atomically: `renameat2(RENAME_NOREPLACE)`, or link and unlink) if the name is taken.
    pub fn commit(&mut self) -> Result<(), TampError> {
        match std::mem::replace(&mut self.sink, Sink::Discard) {
            Sink::Discard => Ok(()),
            Sink::Stdout(mut w) => w.flush().map_err(|source| TampError::WriteStdout { source }),
            Sink::File { mut w, tmp, path, replace } => {
                let flushed = w.flush();
                drop(w);
                let r = match flushed {
                    Err(source) => Err(TampError::Write { path: path.clone(), source }),
                    Ok(()) if replace => std::fs::rename(&tmp, &path)
                        .map_err(|source| TampError::Write { path: path.clone(), source }),
                    Ok(()) => tempfile::TempPath::try_from_path(&tmp)
                        .and_then(|t| t.persist_noclobber(&path).map_err(|e| e.error))
                        .map_err(|source| match source.kind() {
                            std::io::ErrorKind::AlreadyExists => {
                                TampError::Exists { path: path.clone() }
                            }
                            _ => TampError::Write { path: path.clone(), source },
                        }),
                };
                if r.is_err() {
                    let _ = std::fs::remove_file(&tmp);
                }
                r
            }
        }
    }

    /// Where the output goes, for the result: the final path, or "standard output"; `None`
    /// when discarded.
    pub fn name(&self) -> Option<String> {
        match &self.sink {
            Sink::Discard => None,
            Sink::File { path, .. } => Some(path.display().to_string()),
            Sink::Stdout(_) => Some("standard output".to_string()),
        }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Sink::File { w, tmp, .. } = std::mem::replace(&mut self.sink, Sink::Discard) {
            drop(w);
            let _ = std::fs::remove_file(tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_new_file_already_there_is_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.lz4");
        std::fs::write(&out, b"precious").unwrap();
        let e = Target::open(&Output::NewFile(out.clone())).unwrap_err();
        assert!(matches!(&e, TampError::Exists { path } if path == &out), "{e}");
        assert!(e.to_string().contains("--force"), "{e}");
        assert_eq!(std::fs::read(&out).unwrap(), b"precious");
        assert_eq!(leftovers(dir.path()), ["out.lz4"]);
    }

    #[test]
    fn a_new_file_made_by_someone_else_during_the_run_is_kept_and_the_run_fails() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.lz4");
        let mut t = Target::open(&Output::NewFile(out.clone())).unwrap();
        t.write(b"ours").unwrap();
        std::fs::write(&out, b"theirs").unwrap();
        let e = t.commit().unwrap_err();
        assert!(matches!(&e, TampError::Exists { path } if path == &out), "{e}");
        assert_eq!(std::fs::read(&out).unwrap(), b"theirs");
        assert_eq!(leftovers(dir.path()), ["out.lz4"], "no temporary left");
    }

    #[test]
    fn a_new_file_is_written_when_the_name_is_free_and_a_file_output_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.lz4");
        let mut t = Target::open(&Output::NewFile(out.clone())).unwrap();
        t.write(b"new").unwrap();
        t.commit().unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"new");
        let mut t = Target::open(&Output::File(out.clone())).unwrap();
        t.write(b"newer").unwrap();
        t.commit().unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"newer");
        assert_eq!(leftovers(dir.path()), ["out.lz4"]);
    }

    #[test]
    fn small_and_large_writes_mixed_keep_their_order_and_count() {
        // Writes below the buffer's size are gathered, the others go straight to the file: a
        // mix of both, around the boundary, must come out as the concatenation of the writes.
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.bin");
        let mut t = Target::open(&Output::File(out.clone())).unwrap();
        let sizes = [
            0,
            1,
            7,
            BUFFER - 1,
            BUFFER,
            3,
            BUFFER + 1,
            BUFFER - 2,
            2,
            5 * BUFFER,
            11,
            BUFFER / 2,
            BUFFER / 2 + 1,
            256 << 10,
            0,
            4,
        ];
        let mut want = Vec::new();
        for (i, &n) in sizes.iter().enumerate() {
            let chunk: Vec<u8> = (0..n).map(|k| (k * 31 + i * 7) as u8).collect();
            t.write(&chunk).unwrap();
            want.extend_from_slice(&chunk);
        }
        assert_eq!(t.written, want.len() as u64);
        t.commit().unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), want);
    }

    #[test]
    fn a_dangling_symlink_counts_as_taken() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.lz4");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &out).unwrap();
        let e = Target::open(&Output::NewFile(out.clone())).unwrap_err();
        assert!(matches!(e, TampError::Exists { .. }), "{e}");
        assert!(!dir.path().join("nowhere").exists());
    }
}
