//! What a connection is, apart from how one is made: the [`Conn`] trait every client implements
//! (the crate's own PostgreSQL client and the MariaDB one in [`crate::driver`]) and the
//! [`DbError`] its statements fail with. Its own module so that the PostgreSQL client does not
//! reach back into the dispatcher that picks it.

use crate::workload::Value;

/// A statement's failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbError {
    /// The server refused this statement (counted by SQLSTATE; the run goes on).
    Sql { sqlstate: String, message: String },
    /// The connection is gone (server stopped, killed, network): the run stops.
    Gone(String),
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DbError::Sql { sqlstate, message } => write!(f, "{message} (SQLSTATE {sqlstate})"),
            DbError::Gone(m) => write!(f, "{m}"),
        }
    }
}

/// One connection.
pub trait Conn: Send {
    /// Runs text on the simple protocol, results discarded.
    fn simple(&mut self, sql: &str) -> Result<(), DbError>;
    /// Prepares a statement; returns its handle.
    fn prepare(&mut self, sql: &str) -> Result<usize, DbError>;
    /// Runs a prepared statement with values, results discarded.
    fn exec(&mut self, handle: usize, values: &[&Value]) -> Result<(), DbError>;
    /// The first column of the first row as text (`None`: no row or NULL).
    fn query_text(&mut self, sql: &str) -> Result<Option<String>, DbError>;

    /// The first column of the first row as an integer.
    fn query_i64(&mut self, sql: &str) -> Result<Option<i64>, DbError> {
        Ok(self.query_text(sql)?.and_then(|s| s.trim().parse().ok()))
    }
}
