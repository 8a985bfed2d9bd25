//! Which database server a measurement is about: the one [`ServerKind`] that `load`, `db
//! querystat`, `alloc --server` and the throwaway servers share.
//!
//! ```
//! use measure::database::ServerKind;
//!
//! let kind: ServerKind = "mariadb".parse().unwrap();
//! assert_eq!((kind.name(), kind.title()), ("mariadb", "MariaDB"));
//! assert_eq!(serde_json::to_string(&kind).unwrap(), "\"mariadb\"");
//! ```

use std::path::Path;

use serde::{Deserialize, Serialize, Serializer};

use crate::UsageError;

/// PostgreSQL or MariaDB (MySQL's `mysqld` counts as MariaDB). Serialized by its command-line
/// name (`postgres`, `mariadb`); `maria_db`, the spelling `load` and `alloc` results were
/// stored with, reads back too (and is written by [`ServerKind::serialize_snake`] where a
/// result keeps it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerKind {
    /// PostgreSQL.
    Postgres,
    /// MariaDB (or MySQL).
    #[serde(alias = "maria_db")]
    MariaDb,
}

impl ServerKind {
    /// Its name on the command line and in metric labels: `postgres`, `mariadb`.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Postgres => "postgres",
            ServerKind::MariaDb => "mariadb",
        }
    }

    /// Its name for people: `PostgreSQL`, `MariaDB`.
    pub fn title(self) -> &'static str {
        match self {
            ServerKind::Postgres => "PostgreSQL",
            ServerKind::MariaDb => "MariaDB",
        }
    }

    /// The kind a server binary's file name says, if any.
    pub fn from_binary(path: &Path) -> Option<Self> {
        match path.file_name()?.to_str()? {
            "postgres" | "postmaster" => Some(ServerKind::Postgres),
            "mariadbd" | "mysqld" => Some(ServerKind::MariaDb),
            _ => None,
        }
    }

    /// Writes `postgres` / `maria_db`: the spelling stored results of `load` and `alloc` have
    /// always had (`#[serde(serialize_with = "ServerKind::serialize_snake")]`).
    pub fn serialize_snake<S: Serializer>(kind: &ServerKind, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(match kind {
            ServerKind::Postgres => "postgres",
            ServerKind::MariaDb => "maria_db",
        })
    }
}

impl std::str::FromStr for ServerKind {
    type Err = UsageError;

    /// `postgres` (or `postgresql`), `mariadb` (or `mysql`).
    fn from_str(s: &str) -> Result<Self, UsageError> {
        match s {
            "postgres" | "postgresql" => Ok(ServerKind::Postgres),
            "mariadb" | "mysql" => Ok(ServerKind::MariaDb),
            _ => Err(UsageError::Message(format!("--server '{s}': expected postgres or mariadb"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Snake {
        #[serde(serialize_with = "ServerKind::serialize_snake")]
        server: ServerKind,
    }

    #[test]
    fn both_stored_spellings_read_back() {
        for kind in [ServerKind::Postgres, ServerKind::MariaDb] {
            let plain = serde_json::to_string(&kind).unwrap();
            assert_eq!(serde_json::from_str::<ServerKind>(&plain).unwrap(), kind);
            let snake = serde_json::to_string(&Snake { server: kind }).unwrap();
            assert_eq!(serde_json::from_str::<Snake>(&snake).unwrap(), Snake { server: kind });
            assert_eq!(kind.name().parse::<ServerKind>().unwrap(), kind);
        }
        assert_eq!(serde_json::to_string(&ServerKind::MariaDb).unwrap(), "\"mariadb\"");
        let snake = serde_json::to_string(&Snake { server: ServerKind::MariaDb }).unwrap();
        assert_eq!(snake, r#"{"server":"maria_db"}"#);
        assert!("oracle".parse::<ServerKind>().unwrap_err().to_string().contains("oracle"));
    }

    #[test]
    fn binaries_name_their_kind() {
        assert_eq!(
            ServerKind::from_binary(Path::new("/usr/sbin/mysqld")),
            Some(ServerKind::MariaDb)
        );
        assert_eq!(
            ServerKind::from_binary(Path::new("/usr/lib/postgresql/15/bin/postgres")),
            Some(ServerKind::Postgres)
        );
        assert_eq!(ServerKind::from_binary(Path::new("/usr/bin/redis-server")), None);
    }
}
