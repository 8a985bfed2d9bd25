//! What can go wrong starting or running `platscope serve`: its own module because both the
//! server (binding, accepting) and the web configuration (TLS and basic auth) report it.

use std::net::SocketAddr;

/// What can go wrong starting or running the server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listening address is in use, not on this host, or not permitted.
    #[error("cannot listen on {addr}: {error}{hint}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The OS error (not a `source`: the message already says it once).
        error: std::io::Error,
        /// A hint naming the fix.
        hint: &'static str,
    },
    /// The web configuration file is wrong (a usage error naming the field).
    #[error("{0}")]
    WebConfig(String),
    /// The HTTP server failed.
    #[error("HTTP server: {0}")]
    Http(String),
}

impl ServeError {
    /// True when the user can fix it by changing the command line or the config file.
    pub fn is_usage(&self) -> bool {
        match self {
            ServeError::Bind { error, .. } => error.kind() == std::io::ErrorKind::AddrNotAvailable,
            ServeError::WebConfig(_) => true,
            ServeError::Http(_) => false,
        }
    }
}

impl measure::Usage for ServeError {
    fn is_usage(&self) -> bool {
        ServeError::is_usage(self)
    }
}
