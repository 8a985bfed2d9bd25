//! The protocol's bytes: backend messages framed off a byte stream and parsed as outside input
//! (every length checked), and values encoded for a prepared statement's parameters.

use std::io::{self, Read};

use bytes::{BufMut, BytesMut};
use postgres_protocol::IsNull;

use crate::conn::DbError;
use crate::workload::Value;

/// The longest backend message read (64 MiB): far above any row the workloads read (the
/// longest is sysbench's 120-character `c`), far below what a corrupt length field can claim
/// (up to 4 GiB). PostgreSQL's own limit for a field is 1 GiB; a run never needs that.
pub const MAX_MESSAGE: usize = 64 << 20;

/// The read buffer's first size; it doubles when a message does not fit, up to what the
/// message needs.
pub(super) const INITIAL_READ: usize = 16 << 10;

/// Type OIDs bound in binary (`pg_type.oid`, fixed since PostgreSQL 7).
pub(super) const INT8: u32 = 20;
pub(super) const INT2: u32 = 21;
pub(super) const INT4: u32 = 23;
pub(super) const FLOAT4: u32 = 700;
pub(super) const FLOAT8: u32 = 701;

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
pub(super) struct Body<'a>(pub(super) &'a [u8]);

impl<'a> Body<'a> {
    pub(super) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }

    pub(super) fn i16(&mut self) -> Option<i16> {
        self.take(2).map(|b| i16::from_be_bytes([b[0], b[1]]))
    }

    pub(super) fn i32(&mut self) -> Option<i32> {
        self.take(4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(super) fn cstr(&mut self) -> Option<&'a [u8]> {
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
    pub(super) fn parse(body: &[u8]) -> Result<Self, String> {
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
pub(super) fn first_column(body: &[u8]) -> Option<Option<String>> {
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
pub(super) fn parameter_types(body: &[u8]) -> Option<Vec<u32>> {
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
