//! Why a store could not be used. Every message names the file, the cause in words, and a fix;
//! SQLite's own words ("disk I/O error", "unable to open database file") never reach the user
//! alone.

use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open results database {path}: {reason}; choose another with --db or skip storing with --no-store")]
    Open { path: PathBuf, reason: String },
    #[error("{0} is not a platscope results database (it holds other data or is corrupt); nothing was written — give another file")]
    Foreign(PathBuf),
    #[error("{path} was written by a newer platscope (schema {found}, this one knows up to {supported}); nothing was written — upgrade platscope or give another file")]
    NewerSchema { path: PathBuf, found: i64, supported: i64 },
    #[error("no run {0} in the results database (see `platscope results list`)")]
    NoSuchRun(i64),
    #[error("results database {path}: {cause}")]
    Sql { path: PathBuf, cause: String },
    #[error("results database {location}: {cause}; nothing local was changed — check that the server is up and reachable, then try again")]
    Remote { location: String, cause: String },
    #[error("{location:?} is not a PostgreSQL connection string ({reason}); use postgresql://USER@HOST:PORT/DB or host=… dbname=…")]
    BadLocation { location: String, reason: String },
    #[error(
        "results database {path} holds invalid JSON ({reason}); it may have been edited by hand"
    )]
    Json { path: PathBuf, reason: serde_json::Error },
}

impl StoreError {
    /// Whether the user asked for something that does not exist (exit code 2).
    pub fn is_usage(&self) -> bool {
        matches!(self, StoreError::NoSuchRun(_) | StoreError::BadLocation { .. })
    }

    /// A SQLite failure on `path`, in words with the fix.
    pub fn sql(path: &Path, error: &rusqlite::Error) -> Self {
        let cause = match error.sqlite_error_code() {
            Some(ErrorCode::DiskFull) => {
                "the disk is full; free space on its file system, or record elsewhere with --db"
                    .to_string()
            }
            Some(ErrorCode::ReadOnly) => "it is read-only (a read-only file or mount); record \
                 elsewhere with --db, or skip storing with --no-store"
                .to_string(),
            Some(ErrorCode::CannotOpen) => "the file or its directory cannot be opened; check \
                 that the directory exists and is writable, or use --db"
                .to_string(),
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
                "another process held it locked for more than 10 s; try again, or use another \
                 --db"
                    .to_string()
            }
            Some(ErrorCode::SystemIoFailure) => "the operating system refused a read or write \
                 (often a full disk or a file system that went away; check `df`), or use --db"
                .to_string(),
            Some(ErrorCode::PermissionDenied) => {
                "permission denied; use a database you can write with --db".to_string()
            }
            // SQLite quotes a schema's SQL in some messages: kept on one line.
            _ => error.to_string().split_whitespace().collect::<Vec<_>>().join(" "),
        };
        StoreError::Sql { path: path.to_path_buf(), cause }
    }
}

impl measure::Usage for StoreError {
    fn is_usage(&self) -> bool {
        StoreError::is_usage(self)
    }
}

/// Names the database file on SQLite and JSON errors.
pub(crate) trait At<T> {
    fn at(self, path: &Path) -> Result<T, StoreError>;
}

impl<T> At<T> for Result<T, rusqlite::Error> {
    fn at(self, path: &Path) -> Result<T, StoreError> {
        self.map_err(|e| StoreError::sql(path, &e))
    }
}

impl<T> At<T> for Result<T, serde_json::Error> {
    fn at(self, path: &Path) -> Result<T, StoreError> {
        self.map_err(|reason| StoreError::Json { path: path.to_path_buf(), reason })
    }
}
