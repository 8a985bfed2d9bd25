//! The one error type of the crate: every variant names the file (and the offset, for bad input)
//! and says what to do about it.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong in a compress, decompress, corpus or scale run.
#[derive(Debug, thiserror::Error)]
pub enum TampError {
    /// The input file could not be opened or read.
    #[error("cannot read {path}: {source} (check the path and its permissions)")]
    Read {
        /// The input.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// The output (its temporary name in the target directory) could not be created.
    #[error(
        "cannot create the output in {dir}: {source} (choose a writable directory with -o, or --discard)"
    )]
    CreateOutput {
        /// The directory the output was to go in.
        dir: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// Writing, syncing or renaming the output failed (the partial file was removed).
    #[error("cannot write {path}: {source} (nothing was left behind; check free space)")]
    Write {
        /// The output file.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// Writing standard output failed (`-o -`): its reader went away or its device is full.
    #[error(
        "cannot write standard output: {source} (what its reader got is a truncated stream that \
         lz4 -d and zstd -d refuse)"
    )]
    WriteStdout {
        /// What the OS said.
        source: io::Error,
    },
    /// The output file exists and was not to be replaced ([`crate::Output::NewFile`]).
    #[error("{path} exists: not replacing it (pass --force to overwrite, or name another -o)")]
    Exists {
        /// The output file, left as it was.
        path: PathBuf,
    },
    /// The compressed input ends before its frame does.
    #[error(
        "{path} is truncated at byte {offset}: {what} is cut short (the file was not written completely; get an intact copy)"
    )]
    Truncated {
        /// The input.
        path: PathBuf,
        /// Where the input ended.
        offset: u64,
        /// What was being read.
        what: &'static str,
    },
    /// The compressed input is damaged or not in the format.
    #[error("{path} is corrupt at byte {offset}: {detail} (get an intact copy)")]
    Corrupt {
        /// The input.
        path: PathBuf,
        /// Where the bad frame, block or field starts.
        offset: u64,
        /// What is wrong.
        detail: String,
    },
    /// The input is not LZ4 or zstd at all, or is an LZ4/zstd variant this tool does not read.
    #[error("{path} is not a file tamp can decompress: {detail}")]
    UnknownFormat {
        /// The input.
        path: PathBuf,
        /// What was found.
        detail: String,
    },
    /// A compressor could not be set up or failed on a block.
    #[error("the {format} compressor failed: {detail} (try another --level)")]
    Codec {
        /// lz4 or zstd.
        format: &'static str,
        /// What the library said.
        detail: String,
    },
    /// An option is out of range.
    #[error("{0}")]
    Usage(String),
    /// A thread of the pipeline panicked (a bug: please report it).
    #[error("a tamp {0} thread panicked; this is a bug, please report it")]
    Panicked(&'static str),
    /// Ctrl-C or SIGTERM came before the input sent anything to decide its format by.
    #[error("{path}: stopped (Ctrl-C or SIGTERM) before any input arrived; nothing was written")]
    StoppedBeforeInput {
        /// The input.
        path: PathBuf,
    },
    /// /proc/stat could not be read or parsed.
    #[error("cannot use /proc/stat: {0} (is /proc mounted?)")]
    ProcStat(String),
}

impl TampError {
    /// Whether this is a silent input's read giving up on a stop request: the run was
    /// interrupted, not failed.
    pub(crate) fn is_stop(&self) -> bool {
        matches!(self, TampError::Read { source, .. } if crate::input::is_stopped(source))
    }

    /// Whether the command line was at fault (exit code 2): an option out of range, or an input
    /// that does not exist.
    pub fn is_usage(&self) -> bool {
        match self {
            TampError::Usage(_) => true,
            TampError::Read { source, .. } => source.kind() == io::ErrorKind::NotFound,
            _ => false,
        }
    }
}

impl measure::Usage for TampError {
    fn is_usage(&self) -> bool {
        TampError::is_usage(self)
    }
}
