//! Connections to PostgreSQL (the crate's own client on a blocking socket, module `pgwire`;
//! `postgres` only parses URLs and conninfo) and MariaDB (`mysql`), one per worker thread,
//! behind one small trait: run simple text, prepare, run prepared with values.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::workload::{Dialect, Value};
use crate::Error;

/// The connection trait and its error, kept at their old path for callers.
pub use crate::conn::{Conn, DbError};

/// Which server (the workspace's one kind).
pub use measure::database::ServerKind;

/// The placeholder dialect of a server's SQL.
pub fn dialect(kind: ServerKind) -> Dialect {
    match kind {
        ServerKind::Postgres => Dialect::Postgres,
        ServerKind::MariaDb => Dialect::MariaDb,
    }
}

/// Where the server is and who to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub kind: ServerKind,
    /// A PostgreSQL URL or `key=value` conninfo; a `mysql://` URL for MariaDB.
    pub url: Option<String>,
    /// A Unix socket: PostgreSQL's socket directory or its `.s.PGSQL.PORT` file; MariaDB's
    /// socket file.
    pub socket: Option<PathBuf>,
    pub port: Option<u16>,
    pub user: Option<String>,
    pub database: Option<String>,
}

impl Target {
    /// The defaults a server kind is found at: PostgreSQL's Debian socket directory
    /// (`/var/run/postgresql`, port 5432, user `$PGUSER` or `postgres`, database `$PGDATABASE`
    /// or `postgres`); MariaDB's `/run/mysqld/mysqld.sock`, user `root`, database `platscope`.
    pub fn new(kind: ServerKind) -> Self {
        Target { kind, url: None, socket: None, port: None, user: None, database: None }
    }

    fn pg_config(&self) -> Result<postgres::Config, Error> {
        let mut cfg = match &self.url {
            Some(url) => url.parse::<postgres::Config>().map_err(|e| {
                Error::Usage(measure::UsageError::Message(format!(
                    "--url {url:?} is not a PostgreSQL URL or conninfo: {e}"
                )))
            })?,
            None => postgres::Config::new(),
        };
        if let Some(sock) = &self.socket {
            let (dir, port) = pg_socket(sock);
            cfg.host_path(dir);
            if let Some(p) = port {
                cfg.port(p);
            }
        } else if self.url.is_none() {
            cfg.host_path("/var/run/postgresql");
        }
        if let Some(p) = self.port {
            cfg.port(p);
        }
        if let Some(u) = &self.user {
            cfg.user(u);
        } else if cfg.get_user().is_none() {
            cfg.user(std::env::var("PGUSER").as_deref().unwrap_or("postgres"));
        }
        if let Some(d) = &self.database {
            cfg.dbname(d);
        } else if cfg.get_dbname().is_none() {
            cfg.dbname(std::env::var("PGDATABASE").as_deref().unwrap_or("postgres"));
        }
        cfg.connect_timeout(Duration::from_secs(10));
        cfg.application_name("platscope load");
        Ok(cfg)
    }

    fn my_opts(&self, with_db: bool) -> Result<mysql::Opts, Error> {
        let base = match &self.url {
            Some(url) => mysql::Opts::from_url(url).map_err(|e| {
                Error::Usage(measure::UsageError::Message(format!(
                    "--url {url:?} is not a mysql:// URL: {e}"
                )))
            })?,
            None => mysql::Opts::default(),
        };
        let mut b = mysql::OptsBuilder::from_opts(base.clone());
        if let Some(sock) = &self.socket {
            b = b.socket(Some(sock.to_string_lossy().into_owned()));
        } else if self.url.is_none() {
            b = b.socket(Some("/run/mysqld/mysqld.sock"));
        }
        if let Some(p) = self.port {
            b = b.tcp_port(p);
        }
        // MYSQL_PWD and ~/.my.cnf, as the client reads them, for what the URL does not say.
        let file = results::credentials::mysql_client_options();
        if base.get_pass().is_none() {
            if let Some(p) = file.password {
                b = b.pass(Some(p));
            }
        }
        if let Some(u) = &self.user {
            b = b.user(Some(u.clone()));
        } else if base.get_user().is_none() {
            b = b.user(Some(file.user.unwrap_or_else(|| "root".into())));
        }
        let db = self.database.clone().or_else(|| base.get_db_name().map(str::to_string));
        b = b.db_name(if with_db { Some(db.unwrap_or_else(|| "platscope".into())) } else { None });
        b = b.tcp_connect_timeout(Some(Duration::from_secs(10))).prefer_socket(false);
        Ok(b.into())
    }

    /// The MariaDB database the run uses.
    pub fn mariadb_database(&self) -> String {
        self.database
            .clone()
            .or_else(|| {
                self.url
                    .as_deref()
                    .and_then(|u| mysql::Opts::from_url(u).ok())
                    .and_then(|o| o.get_db_name().map(str::to_string))
            })
            .unwrap_or_else(|| "platscope".into())
    }

    /// Where it connects, for messages (no password).
    pub fn describe(&self) -> String {
        match self.kind {
            ServerKind::Postgres => match self.pg_config() {
                Ok(c) => {
                    let host = c
                        .get_hosts()
                        .first()
                        .map(|h| match h {
                            postgres::config::Host::Tcp(t) => t.clone(),
                            postgres::config::Host::Unix(p) => p.display().to_string(),
                        })
                        .unwrap_or_else(|| "localhost".into());
                    let port = c.get_ports().first().copied().unwrap_or(5432);
                    format!(
                        "PostgreSQL at {host} port {port} as {} (database {})",
                        c.get_user().unwrap_or("?"),
                        c.get_dbname().unwrap_or("?")
                    )
                }
                Err(_) => "PostgreSQL".into(),
            },
            ServerKind::MariaDb => match self.my_opts(true) {
                Ok(o) => {
                    let at = o.get_socket().map(str::to_string).unwrap_or_else(|| {
                        format!("{}:{}", o.get_ip_or_hostname(), o.get_tcp_port())
                    });
                    format!(
                        "MariaDB at {at} as {} (database {})",
                        o.get_user().unwrap_or("?"),
                        o.get_db_name().unwrap_or("?")
                    )
                }
                Err(_) => "MariaDB".into(),
            },
        }
    }

    /// Opens one connection (MariaDB: to its database, or to none with `with_db` false).
    pub fn connect_with(&self, with_db: bool) -> Result<Box<dyn Conn>, Error> {
        let fail = |message: String| Error::Connect { target: self.describe(), message };
        match self.kind {
            ServerKind::Postgres => {
                let mut cfg = self.pg_config()?;
                results::credentials::fill_pg_password(&mut cfg)
                    .map_err(|e| fail(e.to_string()))?;
                Ok(Box::new(crate::pgwire::connect(&cfg).map_err(fail)?))
            }
            ServerKind::MariaDb => {
                let opts = self.my_opts(with_db)?;
                let conn = mysql::Conn::new(opts).map_err(|e| fail(my_message(&e)))?;
                Ok(Box::new(MyConn { conn, stmts: Vec::new() }))
            }
        }
    }

    /// Opens one connection to the run's database.
    pub fn connect(&self) -> Result<Box<dyn Conn>, Error> {
        self.connect_with(true)
    }

    /// The server's main process (the postmaster, or mariadbd) as seen from this machine, for
    /// CPU accounting; `None` when the server is not a local process (another host or PID
    /// namespace).
    pub fn server_pid(&self, conn: &mut dyn Conn) -> Option<u32> {
        match self.kind {
            ServerKind::Postgres => {
                let backend =
                    u32::try_from(conn.query_i64("SELECT pg_backend_pid()").ok()??).ok()?;
                let (comm, ppid) = proc_comm_ppid(backend)?;
                (comm.starts_with("postgres")).then_some(ppid)
            }
            ServerKind::MariaDb => {
                let file = conn.query_text("SELECT @@pid_file").ok()??;
                let path = if Path::new(&file).is_absolute() {
                    PathBuf::from(file)
                } else {
                    PathBuf::from(conn.query_text("SELECT @@datadir").ok()??).join(file)
                };
                let pid: u32 = std::fs::read_to_string(path).ok()?.trim().parse().ok()?;
                let (comm, _) = proc_comm_ppid(pid)?;
                (comm.starts_with("mariadbd") || comm.starts_with("mysqld")).then_some(pid)
            }
        }
    }
}

/// `(comm, ppid)` of a process from `/proc/PID/stat`.
pub fn proc_comm_ppid(pid: u32) -> Option<(String, u32)> {
    let text = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    let stat = measure::procstat::parse_stat(&text).ok()?;
    Some((stat.comm_lossy(), stat.ppid))
}

/// PostgreSQL's socket: a directory, or a `.s.PGSQL.PORT` file in one.
fn pg_socket(path: &Path) -> (PathBuf, Option<u16>) {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if let Some(port) = name.strip_prefix(".s.PGSQL.").and_then(|p| p.parse().ok()) {
        (path.parent().map_or_else(|| PathBuf::from("/"), Path::to_path_buf), Some(port))
    } else {
        (path.to_path_buf(), None)
    }
}

fn my_message(e: &mysql::Error) -> String {
    match e {
        mysql::Error::MySqlError(me) => {
            format!("{} (error {}, SQLSTATE {})", me.message, me.code, me.state)
        }
        other => other.to_string(),
    }
}

fn my_error(e: mysql::Error) -> DbError {
    match &e {
        // 1053 server shutdown, 1927 connection killed; 08S01 communication failure.
        mysql::Error::MySqlError(me)
            if !(me.code == 1053 || me.code == 1927 || me.state == "08S01") =>
        {
            DbError::Sql { sqlstate: me.state.clone(), message: me.message.clone() }
        }
        _ => DbError::Gone(my_message(&e)),
    }
}

struct MyConn {
    conn: mysql::Conn,
    stmts: Vec<mysql::Statement>,
}

impl Conn for MyConn {
    fn simple(&mut self, sql: &str) -> Result<(), DbError> {
        use mysql::prelude::Queryable;
        self.conn.query_drop(sql).map_err(my_error)
    }

    fn prepare(&mut self, sql: &str) -> Result<usize, DbError> {
        use mysql::prelude::Queryable;
        let st = self.conn.prep(sql).map_err(my_error)?;
        self.stmts.push(st);
        Ok(self.stmts.len() - 1)
    }

    fn exec(&mut self, handle: usize, values: &[&Value]) -> Result<(), DbError> {
        use mysql::prelude::Queryable;
        let Some(st) = self.stmts.get(handle) else {
            return Err(DbError::Gone(format!("no prepared statement {handle}")));
        };
        let params: Vec<mysql::Value> = values
            .iter()
            .map(|v| match v {
                Value::Int(i) => mysql::Value::Int(*i),
                Value::Text(s) => mysql::Value::Bytes(s.as_bytes().to_vec()),
            })
            .collect();
        let params = if params.is_empty() {
            mysql::Params::Empty
        } else {
            mysql::Params::Positional(params)
        };
        self.conn.exec_drop(st, params).map_err(my_error)
    }

    fn query_text(&mut self, sql: &str) -> Result<Option<String>, DbError> {
        use mysql::prelude::Queryable;
        let v: Option<Option<String>> = self.conn.query_first(sql).map_err(my_error)?;
        Ok(v.flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pg_socket_forms() {
        assert_eq!(pg_socket(Path::new("/tmp/x")), (PathBuf::from("/tmp/x"), None));
        assert_eq!(
            pg_socket(Path::new("/tmp/x/.s.PGSQL.5433")),
            (PathBuf::from("/tmp/x"), Some(5433))
        );
    }

    #[test]
    fn stat_line_with_spaces_in_comm() {
        assert!(proc_comm_ppid(std::process::id()).is_some_and(|(_, ppid)| ppid > 0));
    }
}
