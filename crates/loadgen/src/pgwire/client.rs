//! One connection to PostgreSQL: the socket, startup and authentication, the simple and
//! extended protocols over [`Client`], and opening a connection as libpq would.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use bytes::BytesMut;
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::frontend;

use super::codec::{encode, first_column, format_for, parameter_types, Body, Reader, ServerError};
use crate::conn::{Conn, DbError};
use crate::workload::Value;

/// The socket to the server: a Unix socket or TCP (`TCP_NODELAY` set).
#[derive(Debug)]
pub(crate) enum Socket {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Socket {
    fn set_timeouts(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Socket::Unix(s) => s.set_read_timeout(t).and_then(|()| s.set_write_timeout(t)),
            Socket::Tcp(s) => s.set_read_timeout(t).and_then(|()| s.set_write_timeout(t)),
        }
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Socket::Unix(s) => s.read(buf),
            Socket::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Socket::Unix(s) => s.write(buf),
            Socket::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A prepared statement: its name on the server and its parameters' type OIDs.
#[derive(Debug)]
struct Statement {
    name: String,
    params: Vec<u32>,
}

/// One connection, on any byte stream (a [`Socket`]; tests give canned server bytes).
#[derive(Debug)]
pub(crate) struct Client<S: Read + Write> {
    io: S,
    rd: Reader,
    out: BytesMut,
    stmts: Vec<Statement>,
    /// Why the connection is unusable (I/O error, end of stream, protocol violation): every
    /// later call fails with it, without touching the socket.
    pub(super) broken: Option<String>,
}

impl<S: Read + Write> Client<S> {
    /// A client on a freshly opened stream; [`Client::startup`] makes it ready (tests give a
    /// stream whose startup is done).
    pub(crate) fn new(io: S) -> Self {
        Client {
            io,
            rd: Reader::new(),
            out: BytesMut::with_capacity(1024),
            stmts: Vec::new(),
            broken: None,
        }
    }

    /// The stream (tests read what was written).
    #[cfg(test)]
    pub(crate) fn io(&mut self) -> &mut S {
        &mut self.io
    }

    #[cfg(test)]
    pub(crate) fn reader(&self) -> &Reader {
        &self.rd
    }

    fn fail(&mut self, why: String) -> DbError {
        self.broken = Some(why.clone());
        DbError::Gone(why)
    }

    fn usable(&self) -> Result<(), DbError> {
        match &self.broken {
            Some(why) => Err(DbError::Gone(format!("connection lost earlier: {why}"))),
            None => Ok(()),
        }
    }

    /// Writes the out buffer (one `write` unless the kernel takes it in parts).
    fn send(&mut self) -> Result<(), DbError> {
        match self.io.write_all(&self.out) {
            Ok(()) => Ok(()),
            Err(e) => {
                let closed =
                    matches!(e.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset);
                // A server that closed the connection may have said why first (57P01 at a
                // shutdown): its words over the socket's, as libpq reports them.
                let said = if closed { self.last_words() } else { None };
                let why = said.map_or_else(|| format!("writing to the server: {e}"), |s| s.text());
                Err(self.fail(why))
            }
        }
    }

    /// The first ErrorResponse among what a closed connection left to read (a few messages).
    fn last_words(&mut self) -> Option<ServerError> {
        for _ in 0..8 {
            let tag = self.rd.advance(&mut self.io).ok()?;
            if tag == b'E' {
                return ServerError::parse(self.rd.body()).ok();
            }
        }
        None
    }

    /// Reads to ReadyForQuery, handing every message but the ones handled here to `on`
    /// (`Err`: malformed). The first ErrorResponse is the result; notices, parameter changes
    /// and notifications are skipped; a COPY the server starts is refused.
    fn finish(
        &mut self,
        mut on: impl FnMut(u8, &[u8]) -> Result<(), String>,
    ) -> Result<(), DbError> {
        let mut error: Option<ServerError> = None;
        loop {
            let tag = match self.rd.advance(&mut self.io) {
                Ok(t) => t,
                Err(why) => {
                    // A FATAL error comes before the server closes: it is the cause.
                    return Err(match error {
                        Some(e) => {
                            self.broken = Some(e.text());
                            e.into_db_error()
                        }
                        None => self.fail(why),
                    });
                }
            };
            let body = self.rd.body();
            let handled = match tag {
                b'Z' => break,
                b'E' => match ServerError::parse(body) {
                    Ok(e) => {
                        error.get_or_insert(e);
                        Ok(())
                    }
                    Err(why) => Err(why.to_string()),
                },
                b'N' | b'S' | b'A' | b'd' | b'c' => Ok(()),
                b'G' => {
                    // COPY FROM STDIN: nothing to send; the server answers with an error.
                    self.out.clear();
                    let _ = frontend::copy_fail("platscope load sends no COPY data", &mut self.out);
                    self.send()?;
                    Ok(())
                }
                _ => on(tag, body),
            };
            if let Err(why) = handled {
                return Err(self.fail(why));
            }
        }
        match error {
            Some(e) => Err(e.into_db_error()),
            None => Ok(()),
        }
    }

    /// Runs `sql` on the simple protocol; the first column of the first row when `want`.
    fn query(&mut self, sql: &str, want: bool) -> Result<Option<String>, DbError> {
        self.usable()?;
        self.out.clear();
        frontend::query(sql, &mut self.out)
            .map_err(|e| DbError::Gone(format!("statement not sent: {e}")))?;
        self.send()?;
        let mut first: Option<Option<String>> = None;
        self.finish(|tag, body| {
            if want && tag == b'D' && first.is_none() {
                first = Some(first_column(body).ok_or("malformed row from the server")?);
            }
            Ok(())
        })?;
        Ok(first.flatten())
    }

    /// Runs the Startup message and authentication; ready for statements after it.
    pub(crate) fn startup(
        &mut self,
        params: &[(&str, &str)],
        user: &str,
        password: Option<&[u8]>,
    ) -> Result<(), String> {
        self.out.clear();
        frontend::startup_message(params.iter().copied(), &mut self.out)
            .map_err(|e| format!("startup message: {e}"))?;
        self.io.write_all(&self.out).map_err(|e| format!("writing to the server: {e}"))?;
        let no_password = || {
            format!(
                "the server asks for a password for user {user} and none was given: set \
                 PGPASSWORD, or add it to ~/.pgpass (or the file PGPASSFILE names, mode 0600)"
            )
        };
        let mut scram: Option<sasl::ScramSha256> = None;
        loop {
            let tag = self.rd.advance(&mut self.io)?;
            let mut b = Body(self.rd.body());
            self.out.clear();
            match tag {
                b'R' => {
                    let malformed = || "malformed authentication request from the server";
                    match b.i32().ok_or_else(malformed)? {
                        0 => continue,
                        3 => {
                            let pw = password.ok_or_else(no_password)?;
                            frontend::password_message(pw, &mut self.out)
                        }
                        5 => {
                            let pw = password.ok_or_else(no_password)?;
                            let s = b.take(4).ok_or_else(malformed)?;
                            let hash = md5_hash(user.as_bytes(), pw, [s[0], s[1], s[2], s[3]]);
                            frontend::password_message(hash.as_bytes(), &mut self.out)
                        }
                        10 => {
                            let mut offered = Vec::new();
                            while let Some(m) = b.cstr().filter(|m| !m.is_empty()) {
                                offered.push(String::from_utf8_lossy(m).into_owned());
                            }
                            if !offered.iter().any(|m| m == sasl::SCRAM_SHA_256) {
                                return Err(format!(
                                    "the server offers SASL {offered:?}; this client speaks \
                                     SCRAM-SHA-256 without channel binding"
                                ));
                            }
                            let pw = password.ok_or_else(no_password)?;
                            let s = sasl::ScramSha256::new(pw, sasl::ChannelBinding::unsupported());
                            let r = frontend::sasl_initial_response(
                                sasl::SCRAM_SHA_256,
                                s.message(),
                                &mut self.out,
                            );
                            scram = Some(s);
                            r
                        }
                        11 => {
                            let s = scram.as_mut().ok_or("SASL continue without SASL")?;
                            s.update(b.0).map_err(|e| format!("SCRAM-SHA-256: {e}"))?;
                            frontend::sasl_response(s.message(), &mut self.out)
                        }
                        12 => {
                            let s = scram.as_mut().ok_or("SASL final without SASL")?;
                            s.finish(b.0).map_err(|e| format!("SCRAM-SHA-256: {e}"))?;
                            continue;
                        }
                        other => {
                            return Err(format!(
                                "the server asks for authentication method {other} (Kerberos, \
                                 GSSAPI or SSPI); this client speaks trust, password, md5 and \
                                 scram-sha-256"
                            ))
                        }
                    }
                    .map_err(|e| format!("authentication message: {e}"))?;
                    self.io
                        .write_all(&self.out)
                        .map_err(|e| format!("writing to the server: {e}"))?;
                }
                b'E' => return Err(ServerError::parse(b.0)?.text()),
                b'S' | b'K' | b'N' | b'A' => {}
                b'Z' => return Ok(()),
                other => {
                    return Err(format!(
                        "unexpected message {:?} from the server during startup",
                        char::from(other)
                    ))
                }
            }
        }
    }
}

impl<S: Read + Write> Drop for Client<S> {
    fn drop(&mut self) {
        // Terminate, so the server logs no "unexpected EOF"; a gone server cannot be told.
        if self.broken.is_none() {
            self.out.clear();
            frontend::terminate(&mut self.out);
            let _ = self.io.write_all(&self.out);
        }
    }
}

impl<S: Read + Write + Send> Conn for Client<S> {
    fn simple(&mut self, sql: &str) -> Result<(), DbError> {
        self.query(sql, false).map(drop)
    }

    fn prepare(&mut self, sql: &str) -> Result<usize, DbError> {
        self.usable()?;
        let name = format!("s{}", self.stmts.len());
        self.out.clear();
        frontend::parse(&name, sql, std::iter::empty(), &mut self.out)
            .and_then(|()| frontend::describe(b'S', &name, &mut self.out))
            .map_err(|e| DbError::Gone(format!("statement not sent: {e}")))?;
        frontend::sync(&mut self.out);
        self.send()?;
        let mut params = None;
        self.finish(|tag, body| {
            if tag == b't' {
                params = Some(parameter_types(body).ok_or("malformed parameter description")?);
            }
            Ok(())
        })?;
        let params = params.ok_or_else(|| self.fail("no parameter description".into()))?;
        self.stmts.push(Statement { name, params });
        Ok(self.stmts.len() - 1)
    }

    fn exec(&mut self, handle: usize, values: &[&Value]) -> Result<(), DbError> {
        self.usable()?;
        let Some(st) = self.stmts.get(handle) else {
            return Err(DbError::Gone(format!("no prepared statement {handle}")));
        };
        if st.params.len() != values.len() {
            return Err(DbError::Gone(format!(
                "statement {} takes {} parameters, {} given",
                st.name,
                st.params.len(),
                values.len()
            )));
        }
        self.out.clear();
        let formats = values.iter().zip(&st.params).map(|(v, &oid)| format_for(v, oid));
        let bound = frontend::bind(
            "",
            &st.name,
            formats,
            values.iter().zip(&st.params),
            |(v, &oid), buf| encode(v, oid, buf),
            std::iter::once(0),
            &mut self.out,
        );
        match bound {
            Ok(()) => {}
            Err(frontend::BindError::Conversion(e)) => {
                // Nothing was sent: the connection stays as it was.
                return Err(DbError::Sql { sqlstate: "22003".into(), message: e.to_string() });
            }
            Err(frontend::BindError::Serialization(e)) => {
                return Err(DbError::Gone(format!("statement not sent: {e}")))
            }
        }
        frontend::execute("", 0, &mut self.out)
            .map_err(|e| DbError::Gone(format!("statement not sent: {e}")))?;
        frontend::sync(&mut self.out);
        self.send()?;
        self.finish(|_, _| Ok(()))
    }

    fn query_text(&mut self, sql: &str) -> Result<Option<String>, DbError> {
        self.query(sql, true)
    }
}

/// Opens a connection as `cfg` says (hosts in order, as libpq does: the first that answers
/// and accepts us); the error names each host tried.
pub(crate) fn connect(cfg: &postgres::Config) -> Result<Client<Socket>, String> {
    if cfg.get_ssl_mode() == postgres::config::SslMode::Require {
        return Err("sslmode=require: this client speaks PostgreSQL without TLS; use a Unix \
                    socket, or sslmode=disable on a network you trust"
            .into());
    }
    let user = cfg.get_user().unwrap_or("postgres");
    let mut params: Vec<(&str, &str)> = vec![("user", user), ("client_encoding", "UTF8")];
    if let Some(db) = cfg.get_dbname() {
        params.push(("database", db));
    }
    if let Some(app) = cfg.get_application_name() {
        params.push(("application_name", app));
    }
    if let Some(opts) = cfg.get_options() {
        params.push(("options", opts));
    }
    let timeout = cfg.get_connect_timeout().copied();
    let hosts = cfg.get_hosts();
    let addrs = cfg.get_hostaddrs();
    let ports = cfg.get_ports();
    let mut errors = Vec::new();
    let n = hosts.len().max(addrs.len()).max(1);
    for i in 0..n {
        let port = match ports {
            [] => 5432,
            [one] => *one,
            many => many.get(i).copied().unwrap_or(5432),
        };
        let (what, opened) = match (hosts.get(i), addrs.get(i)) {
            (_, Some(ip)) => {
                let at = SocketAddr::new(*ip, port);
                (at.to_string(), tcp(&[at], timeout))
            }
            (Some(postgres::config::Host::Tcp(h)), None) => {
                let at = format!("{h}:{port}");
                let opened = (h.as_str(), port)
                    .to_socket_addrs()
                    .map_err(|e| format!("resolving {h}: {e}"))
                    .and_then(|a| tcp(&a.collect::<Vec<_>>(), timeout));
                (at, opened)
            }
            (Some(postgres::config::Host::Unix(dir)), None) => unix(dir.clone(), port),
            (None, None) => unix(PathBuf::from("/var/run/postgresql"), port),
        };
        let started = opened.and_then(|s| {
            s.set_timeouts(timeout).map_err(|e| e.to_string())?;
            let mut c = Client::new(s);
            c.startup(&params, user, cfg.get_password())?;
            c.io.set_timeouts(None).map_err(|e| e.to_string())?;
            Ok(c)
        });
        match started {
            Ok(c) => return Ok(c),
            Err(e) => errors.push(format!("{what}: {e}")),
        }
    }
    Err(errors.join("; "))
}

fn unix(dir: PathBuf, port: u16) -> (String, Result<Socket, String>) {
    let path = dir.join(format!(".s.PGSQL.{port}"));
    let opened = UnixStream::connect(&path).map(Socket::Unix).map_err(|e| e.to_string());
    (path.display().to_string(), opened)
}

fn tcp(addrs: &[SocketAddr], timeout: Option<Duration>) -> Result<Socket, String> {
    let mut last = "no address".to_string();
    for a in addrs {
        let s = match timeout {
            Some(t) => TcpStream::connect_timeout(a, t),
            None => TcpStream::connect(a),
        };
        match s.and_then(|s| s.set_nodelay(true).map(|()| s)) {
            Ok(s) => return Ok(Socket::Tcp(s)),
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}
