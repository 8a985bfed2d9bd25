//! Why a transaction failed while its connection was lost, and why a reconnection attempt
//! failed, in the words the run counts failures by.

/// Why a transaction failed while its connection was lost.
pub const CONNECTION_LOST: &str = "connection lost";
pub const CONNECTION_REFUSED: &str = "connection refused";

/// The cause of a failed connection attempt, from its message: the SQLSTATE the server
/// answered with, or what the socket said.
pub fn connect_cause(message: &str) -> String {
    if let Some(at) = message.find("SQLSTATE ") {
        let code: String =
            message[at + 9..].chars().take_while(char::is_ascii_alphanumeric).collect();
        if code.len() == 5 {
            return code;
        }
    }
    let m = message.to_ascii_lowercase();
    if m.contains("refused") || m.contains("no such file") {
        CONNECTION_REFUSED.to_string()
    } else if m.contains("timed out") || m.contains("timeout") {
        "connect timeout".to_string()
    } else {
        "connect failed".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_failures_are_named_by_cause() {
        let pg_starting = "error connecting to PostgreSQL at /tmp port 5: the database system is \
                           starting up (SQLSTATE 57P03)";
        assert_eq!(connect_cause(pg_starting), "57P03");
        assert_eq!(
            connect_cause("error connecting to server: Connection refused (os error 111)"),
            CONNECTION_REFUSED
        );
        assert_eq!(
            connect_cause("error connecting: No such file or directory (os error 2)"),
            CONNECTION_REFUSED
        );
        assert_eq!(connect_cause("connect timed out"), "connect timeout");
        assert_eq!(connect_cause("(SQLSTATE 5)"), "connect failed", "a SQLSTATE is 5 characters");
        assert_eq!(connect_cause("MySqlError { ERROR 1040 (HY000): Too many connections } (error 1040, SQLSTATE HY000)"), "HY000");
    }
}
