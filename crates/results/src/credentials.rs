//! Passwords from where the database ecosystem keeps them, so none need be typed on a command
//! line (where `ps` and the shell history see it): for PostgreSQL `PGPASSWORD`, then the
//! password file (`PGPASSFILE`, else `~/.pgpass`), as libpq looks them up; for MariaDB
//! `MYSQL_PWD`, then `~/.my.cnf` (its `[client]`, `[client-server]`, `[client-mariadb]` groups),
//! as its client does. A password given in the URL or conninfo wins over all of them.
//!
//! ```
//! use results::credentials::pgpass_lookup;
//!
//! let file = "# comment\ndb1:5432:*:app:s3cr\\:et\n*:*:*:*:fallback\n";
//! assert_eq!(pgpass_lookup(file, "db1", 5432, "orders", "app").as_deref(), Some("s3cr:et"));
//! assert_eq!(pgpass_lookup(file, "db2", 5432, "orders", "app").as_deref(), Some("fallback"));
//! ```

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Why a password could not be taken from where it was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    /// libpq ignores a password file others can read; so do we, but say so when it held the
    /// password this connection would have used.
    #[error(
        "{path} holds the password but group or others can read it: run `chmod 0600 {path}` \
         (libpq ignores such a file too)"
    )]
    ReadableByOthers { path: String },
}

/// The fields of one `.pgpass` line (`host:port:database:user:password`, `\` escaping `:` and
/// `\`); `None` for a comment, a blank line or one with fewer than five fields.
fn pgpass_fields(line: &str) -> Option<[String; 5]> {
    if line.trim_start().starts_with('#') || line.trim().is_empty() {
        return None;
    }
    let mut fields: Vec<String> = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let (Some(next), Some(f)) = (chars.next(), fields.last_mut()) {
                    f.push(next);
                }
            }
            // The password is the rest of the line: a fifth `:` is part of it.
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => {
                if let Some(f) = fields.last_mut() {
                    f.push(c);
                }
            }
        }
    }
    let fields: [String; 5] = fields.try_into().ok()?;
    Some(fields)
}

/// The password of the first line of a `.pgpass` text that matches (`*` matches anything in
/// the first four fields). `host` is a host name, or a Unix socket directory (a line for
/// `localhost` matches the default socket directories as well, as libpq's does).
pub fn pgpass_lookup(
    text: &str,
    host: &str,
    port: u16,
    database: &str,
    user: &str,
) -> Option<String> {
    let default_socket = matches!(host, "/var/run/postgresql" | "/run/postgresql" | "/tmp");
    let port = port.to_string();
    text.lines().filter_map(pgpass_fields).find_map(|[h, p, d, u, password]| {
        let host_ok = h == "*" || h == host || (h == "localhost" && default_socket);
        let rest_ok =
            (p == "*" || p == port) && (d == "*" || d == database) && (u == "*" || u == user);
        (host_ok && rest_ok).then_some(password)
    })
}

/// The PostgreSQL password file: `$PGPASSFILE`, else `~/.pgpass`.
fn pgpass_path() -> Option<PathBuf> {
    match std::env::var_os("PGPASSFILE") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => std::env::var_os("HOME").map(|h| Path::new(&h).join(".pgpass")),
    }
}

/// The password for a PostgreSQL connection that names none: `PGPASSWORD`, then the password
/// file. `Ok(None)`: there is none (the server may not ask for one).
pub fn pg_password(
    host: &str,
    port: u16,
    database: &str,
    user: &str,
) -> Result<Option<String>, CredentialError> {
    if let Some(p) = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()) {
        return Ok(Some(p));
    }
    let Some(path) = pgpass_path() else { return Ok(None) };
    let Ok(meta) = std::fs::metadata(&path) else { return Ok(None) };
    if !meta.is_file() {
        return Ok(None);
    }
    let Ok(text) = std::fs::read_to_string(&path) else { return Ok(None) };
    let found = pgpass_lookup(&text, host, port, database, user);
    if found.is_some() && meta.permissions().mode() & 0o077 != 0 {
        return Err(CredentialError::ReadableByOthers { path: path.display().to_string() });
    }
    Ok(found)
}

/// Gives `config` the password `PGPASSWORD` or the password file holds for it, when it has none
/// of its own (a password in the URL or conninfo wins).
pub fn fill_pg_password(config: &mut postgres::Config) -> Result<(), CredentialError> {
    if config.get_password().is_some() {
        return Ok(());
    }
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        Some(postgres::config::Host::Unix(p)) => p.display().to_string(),
        None => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or_default().to_string();
    let database = config.get_dbname().map_or_else(|| user.clone(), str::to_string);
    if let Some(p) = pg_password(&host, port, &database, &user)? {
        config.password(p);
    }
    Ok(())
}

/// What a MariaDB/MySQL option file gives a client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientOptions {
    pub user: Option<String>,
    pub password: Option<String>,
}

/// The `user` and `password` of an option file's client groups (`[client]`, `[client-server]`,
/// `[client-mariadb]`; a later value wins, as in the client). Values may be quoted; `#` and
/// `;` start comments; `!include` lines are not followed.
pub fn option_file_client(text: &str) -> ClientOptions {
    let mut out = ClientOptions::default();
    let mut in_client = false;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';', '!']) {
            continue;
        }
        if let Some(group) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_client = matches!(group.trim(), "client" | "client-server" | "client-mariadb");
            continue;
        }
        if !in_client {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        let key = key.trim().replace('_', "-");
        let value = unquote(value.trim());
        match key.as_str() {
            "password" => out.password = Some(value),
            "user" => out.user = Some(value),
            _ => {}
        }
    }
    out
}

/// A value without its quotes (and with `\` escapes read inside them), or up to a comment.
fn unquote(value: &str) -> String {
    let mut chars = value.chars();
    match chars.next() {
        Some(q @ ('"' | '\'')) => {
            let mut out = String::new();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => match chars.next() {
                        Some('n') => out.push('\n'),
                        Some('t') => out.push('\t'),
                        Some(other) => out.push(other),
                        None => {}
                    },
                    c if c == q => break,
                    c => out.push(c),
                }
            }
            out
        }
        _ => value.split(" #").next().unwrap_or(value).trim_end().to_string(),
    }
}

/// The password for a MariaDB connection that names none: `MYSQL_PWD`, then `~/.my.cnf`;
/// and the user `~/.my.cnf` names, for one that names none either.
pub fn mysql_client_options() -> ClientOptions {
    let file = std::env::var_os("HOME")
        .and_then(|h| std::fs::read_to_string(Path::new(&h).join(".my.cnf")).ok())
        .map(|t| option_file_client(&t))
        .unwrap_or_default();
    match std::env::var("MYSQL_PWD").ok().filter(|p| !p.is_empty()) {
        Some(p) => ClientOptions { password: Some(p), ..file },
        None => file,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgpass_lines_match_as_libpq_reads_them() {
        let file = "\
# host:port:db:user:password
*:5433:*:*:other-port
db1:5432:orders:app:first
db1:5432:*:app:second
localhost:*:*:*:local\\\\pw
/srv/pg:*:*:*:a:b:c
";
        assert_eq!(pgpass_lookup(file, "db1", 5432, "orders", "app").as_deref(), Some("first"));
        assert_eq!(pgpass_lookup(file, "db1", 5432, "stock", "app").as_deref(), Some("second"));
        assert_eq!(pgpass_lookup(file, "db9", 5433, "x", "y").as_deref(), Some("other-port"));
        // localhost covers the default socket directory, not any directory.
        assert_eq!(
            pgpass_lookup(file, "/run/postgresql", 5432, "x", "y").as_deref(),
            Some("local\\pw")
        );
        assert_eq!(pgpass_lookup(file, "/srv/pg", 5432, "x", "y").as_deref(), Some("a:b:c"));
        assert_eq!(pgpass_lookup(file, "/elsewhere", 5432, "x", "y"), None);
        assert_eq!(pgpass_lookup("db1:5432:orders:app", "db1", 5432, "orders", "app"), None);
        assert_eq!(pgpass_lookup("", "db1", 5432, "orders", "app"), None);
    }

    #[test]
    fn option_files_give_the_client_groups_user_and_password() {
        let text = "\
[mysqld]
password = not-the-client
[client]
user = app
password = \"se#cr\\\"et\"  # quoted
[mysql]
password = cli-only
[client-mariadb]
! include /etc/x
";
        let got = option_file_client(text);
        assert_eq!(got.user.as_deref(), Some("app"));
        assert_eq!(got.password.as_deref(), Some("se#cr\"et"));
        let plain = option_file_client("[client-server]\npassword=abc # note\n");
        assert_eq!(plain.password.as_deref(), Some("abc"));
        assert_eq!(option_file_client("password=top-level\n"), ClientOptions::default());
    }
}
