//! What can go wrong, each with the fix in its message.

use std::path::PathBuf;

/// Errors of `platscope db querystat`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Tracing needs root.
    #[error(
        "db querystat needs root (or CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE) to attach \
         uprobes and tracepoints: run it with sudo"
    )]
    NotRoot,
    /// The kernel has no BTF.
    #[error(
        "this kernel has no BTF (/sys/kernel/btf/vmlinux is missing): the BPF programs need a \
         kernel built with CONFIG_DEBUG_INFO_BTF=y"
    )]
    NoBtf,
    /// A scheduler tracepoint the programs need is missing from the kernel.
    #[error("this kernel lacks the tracepoint(s) {0}: db querystat needs Linux 5.18 or later")]
    MissingTracepoints(String),
    /// No database server is running.
    #[error(
        "no {0} server is running (looked in /proc for a postmaster or mariadbd); start one, or \
         name it with --pid or --exe"
    )]
    NoServer(&'static str),
    /// Several servers run; the user must choose.
    #[error("{count} database servers are running, choose one with --pid:\n{list}")]
    SeveralServers {
        /// How many.
        count: usize,
        /// One line per server: PID, kind, binary, version.
        list: String,
    },
    /// `--pid` names no process.
    #[error("no process with PID {0}")]
    NoProcess(u32),
    /// `--pid` names a process that is not a database server.
    #[error(
        "PID {pid} ({exe}) is not a PostgreSQL or MariaDB server (expected a postgres, \
         postmaster, mariadbd or mysqld binary)"
    )]
    NotAServer {
        /// The PID given.
        pid: u32,
        /// What it runs.
        exe: String,
    },
    /// `--exe` names a binary no running server uses.
    #[error("no running database server uses {0}")]
    ExeNotRunning(PathBuf),
    /// The server binary lacks the USDT probes or symbols needed.
    #[error("{exe} ({version}) cannot be traced: {why}")]
    Untraceable {
        /// The server binary.
        exe: PathBuf,
        /// Its version line.
        version: String,
        /// What is missing and why.
        why: String,
    },
    /// `--by transaction` on MariaDB.
    #[error("--by transaction needs PostgreSQL's transaction probes; MariaDB has none")]
    ByTransactionOnMariaDb,
    /// Reading /proc or the binary failed.
    #[error("{what}: {reason}")]
    Io {
        /// What was being read.
        what: String,
        /// Why it failed.
        reason: std::io::Error,
    },
    /// Loading, attaching or reading a BPF program or map failed.
    #[error("{what}: {reason}")]
    Bpf {
        /// What was being done.
        what: String,
        /// libbpf's error.
        reason: libbpf_rs::Error,
    },
    /// Writing the output failed.
    #[error("writing the output: {0}")]
    Output(std::io::Error),
}

impl Error {
    /// Errors in what the user asked for (exit code 2) rather than in running it (1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Error::NoProcess(_)
                | Error::NotAServer { .. }
                | Error::ExeNotRunning(_)
                | Error::SeveralServers { .. }
                | Error::ByTransactionOnMariaDb
        )
    }

    pub(crate) fn bpf(what: impl Into<String>) -> impl FnOnce(libbpf_rs::Error) -> Error {
        let what = what.into();
        // Root was checked before anything was loaded: a refusal now is something else
        // (lockdown, a seccomp filter, a verifier limit), so libbpf's words are kept.
        move |reason| Error::Bpf { what, reason }
    }

    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let what = what.into();
        move |reason| Error::Io { what, reason }
    }
}

impl measure::Usage for Error {
    fn is_usage(&self) -> bool {
        Error::is_usage(self)
    }
}

/// This crate's result type.
pub type Result<T> = std::result::Result<T, Error>;
