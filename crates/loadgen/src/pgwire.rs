//! PostgreSQL's frontend/backend protocol (version 3) on a blocking socket: the connection
//! `platscope load` drives PostgreSQL with.
//!
//! Why not the `postgres` crate: it is a synchronous wrapper over tokio-postgres, with a Tokio
//! runtime per connection and a channel hop per statement, so every transaction cost the driver
//! more CPU than libpq costs pgbench. Here a prepared statement's Bind, Execute and Sync go out
//! in one `write` from a buffer kept across statements, and the answer comes back through one
//! read buffer, also kept: a point select is one write and usually one read, and nothing is
//! allocated per statement.
//!
//! Frontend messages are encoded by `postgres-protocol`, which also does the MD5 and
//! SCRAM-SHA-256 arithmetic. Backend messages are framed and parsed here, as outside input: a
//! message longer than [`MAX_MESSAGE`] is refused, the read buffer grows only as bytes arrive,
//! and a stream that is cut, malformed or closed is [`DbError::Gone`] — the connection is
//! marked broken and the run reconnects. No TLS: `sslmode=require` is refused, not ignored.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::frontend;
use postgres_protocol::IsNull;

use crate::conn::{Conn, DbError};
use crate::workload::Value;

/// The longest backend message read (64 MiB): far above any row the workloads read (the
/// longest is sysbench's 120-character `c`), far below what a corrupt length field can claim
/// (up to 4 GiB). PostgreSQL's own limit for a field is 1 GiB; a run never needs that.
pub const MAX_MESSAGE: usize = 64 << 20;

/// The read buffer's first size; it doubles when a message does not fit, up to what the
/// message needs.
const INITIAL_READ: usize = 16 << 10;

/// Type OIDs bound in binary (`pg_type.oid`, fixed since PostgreSQL 7).
const INT8: u32 = 20;
const INT2: u32 = 21;
const INT4: u32 = 23;
const FLOAT4: u32 = 700;
const FLOAT8: u32 = 701;

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

/// Backend messages off a byte stream: one buffer, kept, that grows only as bytes arrive.
#[derive(Debug)]
pub(crate) struct Reader {
    buf: Vec<u8>,
    /// Unconsumed bytes are `buf[pos..end]`.
    pos: usize,
    end: usize,
    /// The last message's body.
    body: (usize, usize),
}

impl Reader {
    pub(crate) fn new() -> Self {
        Reader { buf: vec![0; INITIAL_READ], pos: 0, end: 0, body: (0, 0) }
    }

    /// The buffer's size (what reading has allocated).
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Reads until `need` unconsumed bytes are buffered.
    fn fill<R: Read>(&mut self, src: &mut R, need: usize) -> Result<(), String> {
        while self.end - self.pos < need {
            if self.pos == self.end {
                self.pos = 0;
                self.end = 0;
            } else if self.buf.len() - self.pos < need {
                self.buf.copy_within(self.pos..self.end, 0);
                self.end -= self.pos;
                self.pos = 0;
            }
            if self.end == self.buf.len() {
                // Full, and the message needs more: double, but never past what it needs, so
                // a length field claiming much is only allocated as its bytes come.
                let to = (self.buf.len() * 2).max(INITIAL_READ).min(self.pos + need);
                self.buf.resize(to, 0);
            }
            match src.read(&mut self.buf[self.end..]) {
                Ok(0) => return Err("the server closed the connection".into()),
                Ok(n) => self.end += n.min(self.buf.len() - self.end),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) =>
                {
                    return Err("timed out waiting for the server".into())
                }
                Err(e) => return Err(format!("reading from the server: {e}")),
            }
        }
        Ok(())
    }

    /// The next message's tag; its body is [`Reader::body`] until the next call.
    pub(crate) fn advance<R: Read>(&mut self, src: &mut R) -> Result<u8, String> {
        self.fill(src, 5)?;
        let h = &self.buf[self.pos..self.pos + 5];
        let tag = h[0];
        let len = u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize;
        if len < 4 {
            return Err(format!("malformed message from the server (length {len})"));
        }
        if len > MAX_MESSAGE {
            return Err(format!(
                "the server sent a {len}-byte message; this client reads messages up to {} MiB",
                MAX_MESSAGE >> 20
            ));
        }
        self.fill(src, 1 + len)?;
        self.body = (self.pos + 5, self.pos + 1 + len);
        self.pos += 1 + len;
        Ok(tag)
    }

    /// The body of the message [`Reader::advance`] returned last.
    pub(crate) fn body(&self) -> &[u8] {
        &self.buf[self.body.0..self.body.1]
    }
}

/// A cursor over a message body; every read checks the length (`None`: malformed).
struct Body<'a>(&'a [u8]);

impl<'a> Body<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }

    fn i16(&mut self) -> Option<i16> {
        self.take(2).map(|b| i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Option<i32> {
        self.take(4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn cstr(&mut self) -> Option<&'a [u8]> {
        let at = self.0.iter().position(|&b| b == 0)?;
        let s = &self.0[..at];
        self.0 = &self.0[at + 1..];
        Some(s)
    }
}

/// An ErrorResponse's fields that matter here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerError {
    pub code: String,
    pub message: String,
}

impl ServerError {
    fn parse(body: &[u8]) -> Result<Self, String> {
        let mut b = Body(body);
        let (mut code, mut message) = (String::new(), String::new());
        loop {
            let field = b.take(1).ok_or("malformed error message from the server")?[0];
            if field == 0 {
                break;
            }
            let value = b.cstr().ok_or("malformed error message from the server")?;
            match field {
                b'C' => code = String::from_utf8_lossy(value).into_owned(),
                b'M' => message = String::from_utf8_lossy(value).into_owned(),
                _ => {}
            }
        }
        Ok(ServerError { code, message })
    }

    /// "MESSAGE (SQLSTATE CODE)", as the run reports it.
    pub(crate) fn text(&self) -> String {
        format!("{} (SQLSTATE {})", self.message, self.code)
    }

    /// A statement's failure: the server is going away (57P01..03: shutdown, crash; 08:
    /// connection trouble) or it refused this statement.
    pub(crate) fn into_db_error(self) -> DbError {
        if self.code.starts_with("57P") || self.code.starts_with("08") {
            DbError::Gone(self.text())
        } else {
            DbError::Sql { sqlstate: self.code, message: self.message }
        }
    }
}

/// The first column of a DataRow as text (`None`: NULL).
fn first_column(body: &[u8]) -> Option<Option<String>> {
    let mut b = Body(body);
    if b.i16()? < 1 {
        return Some(None);
    }
    let len = b.i32()?;
    if len < 0 {
        return Some(None);
    }
    let v = b.take(usize::try_from(len).ok()?)?;
    Some(Some(String::from_utf8_lossy(v).into_owned()))
}

/// A ParameterDescription's type OIDs.
fn parameter_types(body: &[u8]) -> Option<Vec<u32>> {
    let mut b = Body(body);
    let n = usize::try_from(b.i16()?).ok()?;
    (0..n).map(|_| b.i32().map(|o| o as u32)).collect()
}

/// A value out of its parameter's integer range (bound in binary, it cannot be sent).
#[derive(Debug)]
struct OutOfRange {
    value: i64,
    ty: &'static str,
}

impl std::fmt::Display for OutOfRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "value {} is out of range for type {}", self.value, self.ty)
    }
}

impl std::error::Error for OutOfRange {}

/// The format a value is bound in for a parameter of type `oid`: binary (1) for an integer to
/// an integer or float parameter, text (0) otherwise — PostgreSQL parses text for any type.
pub(crate) fn format_for(value: &Value, oid: u32) -> i16 {
    match (value, oid) {
        (Value::Int(_), INT2 | INT4 | INT8 | FLOAT4 | FLOAT8) => 1,
        _ => 0,
    }
}

/// Appends `value` encoded for a parameter of type `oid` in [`format_for`]'s format.
pub(crate) fn encode(
    value: &Value,
    oid: u32,
    buf: &mut BytesMut,
) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
    use postgres_protocol::types;
    match (value, oid) {
        (Value::Int(v), INT2) => types::int2_to_sql(
            i16::try_from(*v).map_err(|_| OutOfRange { value: *v, ty: "smallint" })?,
            buf,
        ),
        (Value::Int(v), INT4) => types::int4_to_sql(
            i32::try_from(*v).map_err(|_| OutOfRange { value: *v, ty: "integer" })?,
            buf,
        ),
        (Value::Int(v), INT8) => types::int8_to_sql(*v, buf),
        (Value::Int(v), FLOAT8) => types::float8_to_sql(*v as f64, buf),
        (Value::Int(v), FLOAT4) => types::float4_to_sql(*v as f32, buf),
        (Value::Int(v), _) => std::fmt::Write::write_fmt(buf, format_args!("{v}"))?,
        (Value::Text(s), _) => buf.put_slice(s.as_bytes()),
    }
    Ok(IsNull::No)
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
    broken: Option<String>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;
    use test_support::fuzz::{self, proptest};
    use test_tier::live;

    use proptest::prelude::*;

    thread_local! {
        static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    }

    /// Counts this thread's allocations, so a test can see the hot path makes none.
    struct Counting;

    // SAFETY: every call forwards to `System` with the caller's arguments; counting touches
    // only a thread-local `Cell` that has no destructor.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
            // SAFETY: the caller keeps `alloc`'s contract, which is `System`'s.
            unsafe { System.alloc(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: `ptr` came from `System` with this layout (all allocations go there).
            unsafe { System.dealloc(ptr, layout) }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
            // SAFETY: as for `dealloc`; `new_size` is the caller's, under its contract.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    #[global_allocator]
    static COUNTING: Counting = Counting;

    /// A server that said `input` in advance: each read returns at most `chunk` bytes; writes
    /// are kept (`keep`) or only counted.
    #[derive(Debug)]
    struct Fake {
        input: Vec<u8>,
        at: usize,
        chunk: usize,
        output: Vec<u8>,
        keep: bool,
        /// Writes fail as on a socket the server closed.
        closed: bool,
        reads: usize,
        writes: usize,
    }

    impl Fake {
        fn new(input: Vec<u8>, chunk: usize) -> Self {
            let output = Vec::new();
            Fake { input, at: 0, chunk, output, keep: true, closed: false, reads: 0, writes: 0 }
        }
    }

    impl Read for Fake {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.reads += 1;
            let n = buf.len().min(self.chunk).min(self.input.len() - self.at);
            buf[..n].copy_from_slice(&self.input[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    impl Write for Fake {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.writes += 1;
            if self.closed {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            if self.keep {
                self.output.extend_from_slice(buf);
            }
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![tag];
        m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    fn ready() -> Vec<u8> {
        msg(b'Z', b"I")
    }

    fn error(severity: &str, code: &str, message: &str) -> Vec<u8> {
        let body = format!("S{severity}\0V{severity}\0C{code}\0M{message}\0\0");
        msg(b'E', body.as_bytes())
    }

    fn row(cols: &[Option<&str>]) -> Vec<u8> {
        let mut b = (cols.len() as i16).to_be_bytes().to_vec();
        for c in cols {
            match c {
                Some(s) => {
                    b.extend_from_slice(&(s.len() as i32).to_be_bytes());
                    b.extend_from_slice(s.as_bytes());
                }
                None => b.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        msg(b'D', &b)
    }

    fn prepared(oids: &[u32]) -> Vec<u8> {
        let mut t = (oids.len() as i16).to_be_bytes().to_vec();
        for o in oids {
            t.extend_from_slice(&o.to_be_bytes());
        }
        [msg(b'1', b""), msg(b't', &t), msg(b'n', b""), ready()].concat()
    }

    fn executed() -> Vec<u8> {
        [msg(b'2', b""), row(&[Some("x")]), msg(b'C', b"SELECT 1\0"), ready()].concat()
    }

    fn notice() -> Vec<u8> {
        msg(b'N', b"SNOTICE\0C00000\0Mhello\0\0")
    }

    fn client(input: Vec<u8>) -> Client<Fake> {
        Client::new(Fake::new(input, usize::MAX))
    }

    fn encoded(v: &Value, oid: u32) -> Result<Vec<u8>, String> {
        let mut b = BytesMut::new();
        encode(v, oid, &mut b).map_err(|e| e.to_string())?;
        Ok(b.to_vec())
    }

    #[test]
    fn values_are_encoded_per_parameter_type() {
        let i = |v| Value::Int(v);
        assert_eq!(encoded(&i(-2), INT2).unwrap(), (-2i16).to_be_bytes());
        assert_eq!(encoded(&i(70_000), INT4).unwrap(), 70_000i32.to_be_bytes());
        assert_eq!(encoded(&i(i64::MIN), INT8).unwrap(), i64::MIN.to_be_bytes());
        assert_eq!(encoded(&i(3), FLOAT8).unwrap(), 3.0f64.to_be_bytes());
        assert_eq!(encoded(&i(3), FLOAT4).unwrap(), 3.0f32.to_be_bytes());
        // text, varchar, unknown and a type this client does not know: text format.
        for oid in [25, 1043, 705, 1700] {
            assert_eq!(encoded(&i(-12), oid).unwrap(), b"-12", "{oid}");
            assert_eq!(format_for(&i(-12), oid), 0, "{oid}");
        }
        for oid in [INT2, INT4, INT8, FLOAT4, FLOAT8] {
            assert_eq!(format_for(&i(1), oid), 1, "{oid}");
            // Text for an integer parameter goes as text: the server parses it.
            assert_eq!(format_for(&Value::Text("7".into()), oid), 0, "{oid}");
            assert_eq!(encoded(&Value::Text("7".into()), oid).unwrap(), b"7", "{oid}");
        }
        let e = encoded(&i(40_000), INT2).unwrap_err();
        assert!(e.contains("40000") && e.contains("smallint"), "{e}");
        assert!(encoded(&i(i64::from(i16::MIN) - 1), INT2).is_err());
        let e = encoded(&i(1 << 40), INT4).unwrap_err();
        assert!(e.contains("integer"), "{e}");
        assert!(encoded(&i(i64::from(i32::MIN)), INT4).is_ok());
    }

    #[test]
    fn exec_is_one_write_of_bind_execute_sync() {
        let mut c = client([prepared(&[INT4, 25]), executed()].concat());
        assert_eq!(c.prepare("SELECT $1::int, $2").unwrap(), 0);
        let sent = std::mem::take(&mut c.io().output);
        let mut want = msg(b'P', b"s0\0SELECT $1::int, $2\0\0\0");
        want.extend(msg(b'D', b"Ss0\0"));
        want.extend(msg(b'S', b""));
        assert_eq!(sent, want);
        let writes = c.io().writes;
        c.exec(0, &[&Value::Int(5), &Value::Text("xy".into())]).unwrap();
        assert_eq!(c.io().writes, writes + 1);
        let mut bind = b"\0s0\0".to_vec();
        bind.extend([0, 2, 0, 1, 0, 0]); // two format codes: binary, text
        bind.extend([0, 2, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 2, b'x', b'y']);
        bind.extend([0, 1, 0, 0]); // results in text
        let want = [msg(b'B', &bind), msg(b'E', b"\0\0\0\0\0"), msg(b'S', b"")].concat();
        assert_eq!(c.io().output, want);
    }

    #[test]
    fn a_statement_error_is_sql_and_the_connection_stays_usable() {
        let failed = [msg(b'2', b""), error("ERROR", "22012", "division by zero"), ready()];
        let mut c = client([prepared(&[INT4]), failed.concat(), executed()].concat());
        c.prepare("SELECT 1 / $1").unwrap();
        let e = c.exec(0, &[&Value::Int(0)]).unwrap_err();
        assert_eq!(
            e,
            DbError::Sql { sqlstate: "22012".into(), message: "division by zero".into() }
        );
        assert_eq!(e.to_string(), "division by zero (SQLSTATE 22012)");
        c.exec(0, &[&Value::Int(1)]).unwrap();
    }

    #[test]
    fn an_out_of_range_value_is_refused_before_anything_is_sent() {
        let mut c = client([prepared(&[INT2]), executed()].concat());
        c.prepare("SELECT $1::int2").unwrap();
        let writes = c.io().writes;
        let e = c.exec(0, &[&Value::Int(1 << 20)]).unwrap_err();
        assert!(matches!(&e, DbError::Sql { sqlstate, .. } if sqlstate == "22003"), "{e:?}");
        assert_eq!(c.io().writes, writes);
        c.exec(0, &[&Value::Int(7)]).unwrap();
        assert!(c.exec(0, &[]).is_err(), "a parameter missing");
    }

    #[test]
    fn shutdown_and_connection_codes_are_gone_and_later_calls_fail_without_io() {
        for code in ["57P01", "57P02", "57P03", "08006"] {
            let reply = error("FATAL", code, "terminating connection");
            let mut c = client([prepared(&[]), reply].concat());
            c.prepare("SELECT 1").unwrap();
            let e = c.exec(0, &[]).unwrap_err();
            assert_eq!(e, DbError::Gone(format!("terminating connection (SQLSTATE {code})")));
            let writes = c.io().writes;
            assert!(matches!(c.simple("SELECT 1"), Err(DbError::Gone(_))));
            assert!(matches!(c.exec(0, &[]), Err(DbError::Gone(_))));
            assert_eq!(c.io().writes, writes, "{code}: a broken connection is not written to");
        }
        // Another FATAL (idle session timeout) is the statement's error, and the end of the
        // connection with it.
        let mut c = client(error("FATAL", "57P05", "idle timeout"));
        assert!(matches!(c.simple("SELECT 1"), Err(DbError::Gone(_))), "57P05");
        let mut c = client(error("FATAL", "25P03", "idle in transaction"));
        assert!(matches!(c.simple("SELECT 1"), Err(DbError::Sql { .. })));
        assert!(matches!(c.simple("SELECT 1"), Err(DbError::Gone(_))));
    }

    #[test]
    fn a_write_to_a_closed_connection_reports_what_the_server_said() {
        let bye = error("FATAL", "57P01", "terminating connection due to administrator command");
        let mut c = client([notice(), bye].concat());
        c.io().closed = true;
        let e = c.simple("SELECT 1").unwrap_err();
        let want = "terminating connection due to administrator command (SQLSTATE 57P01)";
        assert_eq!(e, DbError::Gone(want.into()));
        let mut c = client(Vec::new());
        c.io().closed = true;
        let e = c.simple("SELECT 1").unwrap_err();
        assert!(matches!(&e, DbError::Gone(m) if m.starts_with("writing to the server")), "{e:?}");
    }

    #[test]
    fn end_of_stream_anywhere_in_a_reply_is_gone() {
        let reply = executed();
        for cut in 0..reply.len() {
            let mut c = client([prepared(&[]), reply[..cut].to_vec()].concat());
            c.prepare("SELECT 1").unwrap();
            assert!(matches!(c.exec(0, &[]), Err(DbError::Gone(_))), "cut at {cut}");
        }
    }

    #[test]
    fn query_text_is_the_first_column_of_the_first_row() {
        let rows = |rs: &[Vec<u8>]| {
            let mut v =
                vec![notice(), msg(b'T', b"\0\x01a\0\0\0\0\0\0\0\0\0\0\x19\xff\xff\0\0\0\0\0\0")];
            v.extend_from_slice(rs);
            v.extend([msg(b'S', b"a\0b\0"), msg(b'C', b"SELECT 2\0"), ready()]);
            v.concat()
        };
        let mut c = client(rows(&[row(&[Some("42"), Some("x")]), row(&[Some("43")])]));
        assert_eq!(c.query_text("SELECT 42").unwrap().as_deref(), Some("42"));
        let mut c = client(rows(&[row(&[None])]));
        assert_eq!(c.query_text("SELECT NULL").unwrap(), None);
        let mut c = client(rows(&[]));
        assert_eq!(c.query_text("SELECT 1 WHERE false").unwrap(), None);
        assert_eq!(c.query_i64("SELECT 1 WHERE false").ok(), None, "nothing left: gone");
        // An empty query, and a COPY FROM STDIN the client refuses.
        let copy = [msg(b'G', b"\0\0\0"), error("ERROR", "57014", "COPY from stdin failed")];
        let mut c = client([msg(b'I', b""), ready(), copy.concat(), ready()].concat());
        c.simple("").unwrap();
        let e = c.simple("COPY t FROM STDIN").unwrap_err();
        assert!(matches!(&e, DbError::Sql { sqlstate, .. } if sqlstate == "57014"), "{e:?}");
        let fail = msg(b'f', b"platscope load sends no COPY data\0");
        assert!(c.io().output.windows(fail.len()).any(|w| w == fail), "CopyFail sent");
    }

    /// A conversation: prepare, two execs (one failing), a query, with notices between.
    fn conversation() -> Vec<u8> {
        [
            prepared(&[INT4]),
            notice(),
            executed(),
            [msg(b'2', b""), error("ERROR", "23505", "duplicate key"), notice(), ready()].concat(),
            [row(&[Some("7")]), msg(b'C', b"SELECT 1\0"), ready()].concat(),
        ]
        .concat()
    }

    type Outcome = Vec<Result<Option<String>, DbError>>;

    fn converse(c: &mut Client<Fake>) -> Outcome {
        vec![
            c.prepare("SELECT $1").map(|h| Some(h.to_string())),
            c.exec(0, &[&Value::Int(1)]).map(|()| None),
            c.exec(0, &[&Value::Int(2)]).map(|()| None),
            c.query_text("SELECT 7"),
        ]
    }

    #[test]
    fn messages_split_across_reads_read_the_same() {
        let whole = converse(&mut client(conversation()));
        assert_eq!(whole[0], Ok(Some("0".into())));
        assert!(matches!(&whole[2], Err(DbError::Sql { sqlstate, .. }) if sqlstate == "23505"));
        assert_eq!(whole[3], Ok(Some("7".into())));
        fuzz::check(200, 1usize..=40, |chunk| {
            let mut c = Client::new(Fake::new(conversation(), chunk));
            prop_assert_eq!(converse(&mut c), whole.clone());
            Ok(())
        });
    }

    #[test]
    fn the_hot_path_allocates_nothing_and_reads_once() {
        let n = 200;
        let mut input = prepared(&[INT4, 25, 20]);
        for _ in 0..n {
            input.extend(executed());
        }
        let mut fake = Fake::new(input, 0);
        fake.keep = false;
        let mut c = Client::new(fake);
        c.io().chunk = usize::MAX;
        c.prepare("SELECT $1, $2, $3").unwrap();
        let (a, b, t) = (Value::Int(1), Value::Int(-9), Value::Text("some text".into()));
        let values = [&a, &t, &b];
        c.exec(0, &values).unwrap(); // the buffers take their size
                                     // One reply per read, as a socket gives them.
        let one = executed().len();
        c.io().chunk = one;
        let reads = c.io().reads;
        let before = ALLOCATIONS.with(Cell::get);
        for _ in 1..n {
            c.exec(0, &values).unwrap();
        }
        assert_eq!(ALLOCATIONS.with(Cell::get) - before, 0, "allocations per statement");
        assert!(c.io().reads - reads <= n, "{} reads for {n} statements", c.io().reads - reads);
    }

    #[test]
    fn a_length_above_the_cap_is_refused_and_a_large_one_allocated_only_as_it_arrives() {
        let mut huge = b"D".to_vec();
        huge.extend_from_slice(&(1u32 << 30).to_be_bytes());
        huge.extend_from_slice(&[0; 100]);
        let mut c = client(huge);
        let e = c.simple("SELECT 1").unwrap_err();
        assert!(matches!(&e, DbError::Gone(m) if m.contains("64 MiB")), "{e:?}");
        assert_eq!(c.reader().capacity(), INITIAL_READ);
        let mut big = b"D".to_vec();
        big.extend_from_slice(&((MAX_MESSAGE - 1) as u32).to_be_bytes());
        big.extend_from_slice(&[0; 100_000]);
        let mut c = Client::new(Fake::new(big, 4096));
        assert!(matches!(c.simple("SELECT 1"), Err(DbError::Gone(_))));
        assert!(c.reader().capacity() <= 2 * 100_005, "{}", c.reader().capacity());
    }

    #[test]
    fn sslmode_require_is_refused_and_every_host_is_tried_in_order() {
        let cfg = |s: &str| s.parse::<postgres::Config>().unwrap();
        let e = connect(&cfg("host=/nonexistent sslmode=require user=u")).unwrap_err();
        assert!(e.contains("sslmode=require") && e.contains("TLS"), "{e}");
        let e = connect(&cfg("host=/nonexistent/a,/nonexistent/b port=5433 user=u")).unwrap_err();
        let (a, b) = (e.find("/nonexistent/a/.s.PGSQL.5433"), e.find("/nonexistent/b/.s.PGSQL"));
        assert!(a.is_some_and(|a| b.is_some_and(|b| a < b)), "{e}");
        assert!(e.to_ascii_lowercase().contains("no such file"), "{e}");
        // A closed TCP port (bound, not listening) is refused.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let e = connect(&cfg(&format!("host=127.0.0.1 port={port} user=u connect_timeout=2")))
            .unwrap_err();
        assert!(e.to_ascii_lowercase().contains("refused"), "{e}");
    }

    fn auth(code: i32, extra: &[u8]) -> Vec<u8> {
        let mut b = code.to_be_bytes().to_vec();
        b.extend_from_slice(extra);
        msg(b'R', &b)
    }

    fn started() -> Vec<u8> {
        [auth(0, b""), msg(b'S', b"server_version\x0015\0"), msg(b'K', &[0; 8]), ready()].concat()
    }

    const PARAMS: &[(&str, &str)] = &[("user", "u"), ("database", "d")];

    #[test]
    fn startup_trust_cleartext_and_md5() {
        let mut c = client(started());
        c.startup(PARAMS, "u", None).unwrap();
        let mut want = vec![0, 0, 0, 0, 0, 3, 0, 0]; // length (set below), version 3.0
        want.extend(b"user\0u\0database\0d\0\0");
        let len = want.len() as u32;
        want[..4].copy_from_slice(&len.to_be_bytes());
        assert_eq!(c.io().output, want);

        let mut c = client([auth(3, b""), started()].concat());
        c.startup(PARAMS, "u", Some(b"pw")).unwrap();
        assert!(c.io().output.ends_with(&msg(b'p', b"pw\0")));

        let mut c = client([auth(5, b"salt"), started()].concat());
        c.startup(PARAMS, "u", Some(b"pw")).unwrap();
        let hash = md5_hash(b"u", b"pw", *b"salt");
        assert!(hash.starts_with("md5"));
        assert!(c.io().output.ends_with(&msg(b'p', format!("{hash}\0").as_bytes())));
    }

    #[test]
    fn startup_failures_say_why() {
        for code in [3, 5, 10] {
            let extra: &[u8] = if code == 10 { b"SCRAM-SHA-256\0\0" } else { b"salt" };
            let e = client(auth(code, extra)).startup(PARAMS, "u", None).unwrap_err();
            assert!(e.contains("PGPASSWORD") && e.contains(".pgpass") && e.contains('u'), "{e}");
        }
        let e = client(error("FATAL", "57P03", "the database system is starting up"))
            .startup(PARAMS, "u", None)
            .unwrap_err();
        assert_eq!(e, "the database system is starting up (SQLSTATE 57P03)");
        let e = client(auth(7, b"")).startup(PARAMS, "u", None).unwrap_err();
        assert!(e.contains("GSSAPI"), "{e}");
        let e = client(auth(10, b"SCRAM-SHA-256-PLUS\0\0")).startup(PARAMS, "u", Some(b"p"));
        assert!(e.unwrap_err().contains("SCRAM-SHA-256"));
        let e = client(auth(0, b"")).startup(PARAMS, "u", None).unwrap_err();
        assert!(e.contains("closed"), "{e}");
        let e = client(auth(11, b"r=x")).startup(PARAMS, "u", Some(b"p")).unwrap_err();
        assert!(e.contains("SASL"), "{e}");
    }

    fn startup_seeds() -> Vec<Vec<u8>> {
        vec![
            started(),
            [auth(5, b"salt"), started()].concat(),
            [auth(10, b"SCRAM-SHA-256\0\0"), auth(11, b"r=abc,s=c2FsdA==,i=4096"), started()]
                .concat(),
            error("FATAL", "28P01", "password authentication failed"),
        ]
    }

    /// Arbitrary and mutated server bytes: every call returns (no panic), a connection found
    /// broken stays broken, and the read buffer stays within twice what arrived.
    fn backend_streams(cases: u32) {
        let seeds = vec![conversation(), executed(), prepared(&[INT2, INT8])];
        fuzz::check(cases, (fuzz::bytes_or_mutated(seeds, 4000), 1usize..64), |(bytes, chunk)| {
            let n = bytes.len();
            let mut c = Client::new(Fake::new(bytes, chunk));
            let out = converse(&mut c);
            // A connection found broken stays broken: later calls are Gone.
            if c.broken.is_some() {
                let again = c.simple("SELECT 1");
                prop_assert!(matches!(again, Err(DbError::Gone(_))), "{:?} {:?}", out, again);
            }
            prop_assert!(c.reader().capacity() <= INITIAL_READ.max(2 * n));
            Ok(())
        });
        fuzz::check(cases, fuzz::bytes_or_mutated(startup_seeds(), 2000), |bytes| {
            let n = bytes.len();
            let mut c = client(bytes);
            let _ = c.startup(PARAMS, "u", Some(b"pw"));
            prop_assert!(c.reader().capacity() <= INITIAL_READ.max(2 * n));
            Ok(())
        });
    }

    #[test]
    fn backend_streams_pure() {
        backend_streams(fuzz::PURE);
    }

    #[live]
    fn backend_streams_live() {
        backend_streams(fuzz::LIVE);
    }

    #[test]
    fn a_truncated_conversation_ends_in_gone() {
        let whole = conversation();
        for cut in 0..whole.len() {
            let mut c = client(whole[..cut].to_vec());
            let out = converse(&mut c);
            assert!(matches!(out.last(), Some(Err(DbError::Gone(_)))), "cut at {cut}: {out:?}");
        }
    }
}
