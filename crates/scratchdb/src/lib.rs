//! scratchdb: throwaway database servers — a PostgreSQL 15 or MariaDB instance in its own temp
//! dir, on a private socket (and port), started in a few seconds and gone again when the handle
//! is dropped. The product starts them at run time (`platscope alloc --server` starts one per
//! allocator, with the allocator in its environment); tests and benches start them too (through
//! `testdb`, which adds Prometheus and node_exporter).
//!
//! Each server is started as a direct child of this process, so its PID is known exactly;
//! [`Drop`] stops it **by that PID** (SIGINT or SIGTERM, a bounded wait, then SIGKILL), never by
//! name, and removes the temp dir. Every wait is bounded: a server that is not ready in time is
//! an error carrying the tail of its log.
//!
//! Both need root: PostgreSQL's `initdb` refuses root, so its files belong to the `postgres`
//! user and its processes run as that user; MariaDB runs as root (`--user=root`). The Debian
//! packages `postgresql-15` and `mariadb-server` provide the binaries (see
//! `scripts/setup.sh`); no system service is used.
//!
//! ```no_run
//! use scratchdb::{Postgres, PgOptions};
//!
//! let pg = Postgres::start(&PgOptions::default().setting("autovacuum", "off"))?;
//! assert_eq!(pg.sql("SELECT 1 + 1")?, "2");
//! let status = pg.command("pgbench").args(["-i", "-s", "1"]).status();
//! println!("postmaster {} on port {}, data in {}", pg.pid(), pg.port(), pg.data_dir().display());
//! # Ok::<(), scratchdb::Error>(())
//! ```

mod mariadb;
mod postgres;
pub mod process;

use std::path::PathBuf;

pub use mariadb::{MariaDb, MariaDbOptions};
pub use postgres::{PgOptions, Postgres};

/// What can go wrong starting, using or stopping a throwaway server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A binary the server needs is not installed.
    #[error("{0} is not installed (apt-get install {1}, or run scripts/setup.sh --deps)")]
    NotInstalled(PathBuf, &'static str),
    /// Starting servers needs root here (for the `postgres` user switch and MariaDB's files).
    #[error("starting a throwaway {0} server needs root (run as root)")]
    NotRoot(&'static str),
    /// The system user a server runs as does not exist.
    #[error("there is no {0:?} user (it comes with the postgresql-15 package)")]
    NoUser(&'static str),
    /// A file-system or process operation failed.
    #[error("{what}: {reason}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        reason: std::io::Error,
    },
    /// A setup command (initdb, mariadb-install-db) failed.
    #[error("{command} failed ({status}):\n{output}")]
    Setup {
        /// The command run.
        command: String,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// The last lines it printed.
        output: String,
    },
    /// The server exited or was not ready in time; the tail of its log says why.
    #[error("the {server} server {what}; the end of its log ({log}):\n{tail}")]
    NotReady {
        /// "PostgreSQL" or "MariaDB".
        server: &'static str,
        /// "exited during start-up (exit status 1)", "was not ready within 30 s", ...
        what: String,
        /// The log file.
        log: PathBuf,
        /// Its last lines.
        tail: String,
    },
    /// A statement run through the client failed.
    #[error("SQL failed ({status}): {sql}\n{stderr}")]
    Sql {
        /// The statement.
        sql: String,
        /// The client's exit status.
        status: std::process::ExitStatus,
        /// What the client printed on stderr.
        stderr: String,
    },
}

/// This crate's result type.
pub type Result<T> = std::result::Result<T, Error>;

/// An [`Error::Io`] saying what was being done.
pub fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |reason| Error::Io { what, reason }
}

/// Whether this process runs as root.
pub(crate) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}
