//! The HTTP/1.1 request head of `platscope serve`, read from untrusted clients: pure parsing
//! (tested without sockets) and the bounded reader that feeds it.
//!
//! Written here (with [`crate::server`]), not taken from a crate: hyper 1 bounds a head
//! (`max_buf_size`, `header_read_timeout`) but is async only, so `serve` would run a tokio
//! runtime (here tokio is only inside the PostgreSQL client) and add hyper-util, http and
//! http-body to answer one `GET` per connection; tiny_http 0.12 (blocking) reads the request
//! line and each header line with no length bound and sets no read deadline, and its TLS
//! (rustls 0.20) takes no client certificates, which `--web-config`'s `client_auth_type` asks
//! for.
//!
//! Bounds, all enforced before a byte is buffered past them:
//!
//! - the request line and headers together fit in [`MAX_HEAD`] bytes, or the answer is `431`;
//! - a request body (never needed: `serve` only answers `GET`/`HEAD`) is read and discarded up
//!   to [`MAX_BODY`] bytes; a longer one is answered `413`, a chunked one `411`;
//! - the whole head (and body) must arrive within one deadline per connection — not per read —
//!   so a client that sends nothing, or trickles a byte at a time, is dropped.
//!
//! Every connection answers one request and closes (`Connection: close`), which every scraper
//! handles; there is no idle keep-alive connection to hold.
//!
//! ```
//! use exporter::http::{head_end, parse_head};
//! let raw = b"GET /metrics HTTP/1.1\r\nAccept: text/plain\r\n\r\n";
//! let end = head_end(raw).unwrap();
//! let head = parse_head(&raw[..end]).unwrap();
//! assert_eq!(head.path(), "/metrics");
//! assert_eq!(head.header("accept"), Some("text/plain"));
//! ```

use std::io::{IoSlice, Read, Write};
use std::time::{Duration, Instant};

/// Largest request head (request line and headers) accepted, in bytes.
pub const MAX_HEAD: usize = 16 * 1024;
/// Largest request body read (and discarded), in bytes.
pub const MAX_BODY: u64 = 64 * 1024;
/// Time a client has to send its whole request head and body after connecting.
pub const HEAD_DEADLINE: Duration = Duration::from_secs(5);
/// Time a client has to take the answer.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// After an error answer, how long unread bytes are drained so the client sees the answer
/// (closing with unread data makes the kernel send a reset that can discard it).
const LINGER: Duration = Duration::from_secs(2);
/// Most bytes drained while lingering.
const LINGER_BYTES: u64 = 16 * 1024 * 1024;

/// A parsed request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The method, as sent (`GET`).
    pub method: String,
    /// The request target, as sent (`/metrics?x=1`).
    pub target: String,
    /// Header fields in order, names as sent.
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// The target without its query string.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// The first header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// How many body bytes follow the head, or the status that refuses it.
    pub fn body_length(&self) -> Result<u64, Status> {
        if self.header("transfer-encoding").is_some() {
            return Err(Status::LENGTH_REQUIRED);
        }
        let mut length = None;
        for (name, value) in &self.headers {
            if !name.eq_ignore_ascii_case("content-length") {
                continue;
            }
            let value = value.trim();
            if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                return Err(Status::BAD_REQUEST);
            }
            // Too many digits for u64 is certainly too long.
            let n = value.parse::<u64>().unwrap_or(u64::MAX);
            match length {
                Some(seen) if seen != n => return Err(Status::BAD_REQUEST),
                _ => length = Some(n),
            }
        }
        match length.unwrap_or(0) {
            n if n > MAX_BODY => Err(Status::PAYLOAD_TOO_LARGE),
            n => Ok(n),
        }
    }
}

/// An HTTP status this server answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status(pub u16, pub &'static str);

impl Status {
    /// 200.
    pub const OK: Status = Status(200, "OK");
    /// 400: the head does not parse.
    pub const BAD_REQUEST: Status = Status(400, "Bad Request");
    /// 401.
    pub const UNAUTHORIZED: Status = Status(401, "Unauthorized");
    /// 404.
    pub const NOT_FOUND: Status = Status(404, "Not Found");
    /// 405.
    pub const METHOD_NOT_ALLOWED: Status = Status(405, "Method Not Allowed");
    /// 408: the head did not arrive within [`HEAD_DEADLINE`].
    pub const REQUEST_TIMEOUT: Status = Status(408, "Request Timeout");
    /// 411: a chunked request body.
    pub const LENGTH_REQUIRED: Status = Status(411, "Length Required");
    /// 413: a body over [`MAX_BODY`].
    pub const PAYLOAD_TOO_LARGE: Status = Status(413, "Payload Too Large");
    /// 431: a head over [`MAX_HEAD`].
    pub const HEADERS_TOO_LARGE: Status = Status(431, "Request Header Fields Too Large");
    /// 505: not HTTP/1.x.
    pub const VERSION_NOT_SUPPORTED: Status = Status(505, "HTTP Version Not Supported");
}

/// Where the head ends in `buf` (the index just past the empty line), if it is complete.
/// Accepts `\r\n\r\n` and, as RFC 9112 allows, bare `\n\n`.
pub fn head_end(buf: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < buf.len() {
        if buf[i] == b'\n' {
            match buf.get(i + 1) {
                Some(b'\n') => return Some(i + 2),
                Some(b'\r') if buf.get(i + 2) == Some(&b'\n') => return Some(i + 3),
                _ => {}
            }
        }
        i += 1;
    }
    None
}

fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Parses a complete head (as delimited by [`head_end`]). Errors are the status to answer.
pub fn parse_head(bytes: &[u8]) -> Result<Head, Status> {
    if bytes.len() > MAX_HEAD {
        return Err(Status::HEADERS_TOO_LARGE);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| Status::BAD_REQUEST)?;
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let request = lines.next().ok_or(Status::BAD_REQUEST)?;
    let mut parts = request.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Status::BAD_REQUEST);
    };
    if !is_token(method) || target.is_empty() || target.bytes().any(|b| b.is_ascii_control()) {
        return Err(Status::BAD_REQUEST);
    }
    match version {
        "HTTP/1.1" | "HTTP/1.0" => {}
        v if v.starts_with("HTTP/") => return Err(Status::VERSION_NOT_SUPPORTED),
        _ => return Err(Status::BAD_REQUEST),
    }
    let mut headers = Vec::new();
    for line in lines {
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').ok_or(Status::BAD_REQUEST)?;
        // No whitespace before the colon, no obsolete line folding (RFC 9112 5.1, 5.2).
        if !is_token(name) {
            return Err(Status::BAD_REQUEST);
        }
        let value = value.trim_matches([' ', '\t']);
        if value.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
            return Err(Status::BAD_REQUEST);
        }
        headers.push((name.to_string(), value.to_string()));
    }
    Ok(Head { method: method.to_string(), target: target.to_string(), headers })
}

/// A connection to a client: TCP, or the Unix socket behind the TLS front end.
pub trait Conn: Read + Write {
    /// Sets the timeout of the next reads.
    fn read_timeout(&self, timeout: Duration) -> std::io::Result<()>;
}

impl Conn for std::net::TcpStream {
    fn read_timeout(&self, timeout: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(timeout))
    }
}

impl Conn for std::os::unix::net::UnixStream {
    fn read_timeout(&self, timeout: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(timeout))
    }
}

/// Why no request could be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadError {
    /// The client closed, reset, or sent nothing before the deadline: close without answer.
    Gone,
    /// Answer this status and close.
    Refuse(Status),
}

/// Reads one request head (and discards its body) from `conn` before `deadline`, never
/// buffering more than [`MAX_HEAD`] bytes.
pub fn read_request(conn: &mut dyn Conn, deadline: Instant) -> Result<Head, ReadError> {
    let mut buf = vec![0u8; MAX_HEAD];
    let mut filled = 0;
    let end = loop {
        let n = read_before(conn, &mut buf[filled..], deadline).map_err(|timed_out| {
            if timed_out && filled > 0 {
                ReadError::Refuse(Status::REQUEST_TIMEOUT)
            } else {
                ReadError::Gone
            }
        })?;
        // Look for the end only where it could newly be (it may straddle the old edge).
        let from = filled.saturating_sub(3);
        filled += n;
        if let Some(end) = head_end(&buf[from..filled]) {
            break from + end;
        }
        if filled == buf.len() {
            return Err(ReadError::Refuse(Status::HEADERS_TOO_LARGE));
        }
    };
    let head = parse_head(&buf[..end]).map_err(ReadError::Refuse)?;
    let length = head.body_length().map_err(ReadError::Refuse)?;
    let mut left = length.saturating_sub((filled - end) as u64);
    while left > 0 {
        let room = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        let n = read_before(conn, &mut buf[..room], deadline).map_err(|timed_out| {
            if timed_out {
                ReadError::Refuse(Status::REQUEST_TIMEOUT)
            } else {
                ReadError::Gone
            }
        })?;
        left -= n as u64;
    }
    Ok(head)
}

/// One read that ends by `deadline`; `Err(true)` on timeout, `Err(false)` on EOF or error.
fn read_before(conn: &mut dyn Conn, buf: &mut [u8], deadline: Instant) -> Result<usize, bool> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(true);
        }
        conn.read_timeout(left).map_err(|_| false)?;
        match conn.read(buf) {
            Ok(0) => return Err(false),
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(true)
            }
            Err(_) => return Err(false),
        }
    }
}

/// Writes one complete answer with `Content-Length` and `Connection: close`; `head_only`
/// leaves the body out (a `HEAD` request).
pub fn respond(
    conn: &mut dyn Write,
    status: Status,
    headers: &[(&str, &str)],
    body: &[u8],
    head_only: bool,
) -> std::io::Result<()> {
    let mut out = format!("HTTP/1.1 {} {}\r\n", status.0, status.1);
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n", body.len()));
    let body = if head_only { &[][..] } else { body };
    write_both(conn, out.as_bytes(), body)?;
    conn.flush()
}

/// Writes `head` then `body` with vectored writes, so a large body (a scrape: hundreds of KiB)
/// is not copied behind the head first, and the head does not go out as a segment of its own.
fn write_both(conn: &mut dyn Write, mut head: &[u8], mut body: &[u8]) -> std::io::Result<()> {
    while !head.is_empty() || !body.is_empty() {
        let written = match conn.write_vectored(&[IoSlice::new(head), IoSlice::new(body)]) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let from_head = written.min(head.len());
        head = &head[from_head..];
        body = &body[written - from_head..];
    }
    Ok(())
}

/// The plain-text answer to a refused request.
pub fn refuse(conn: &mut dyn Write, status: Status) -> std::io::Result<()> {
    let body = format!("{} {}\n", status.0, status.1);
    respond(conn, status, &[("Content-Type", "text/plain; charset=utf-8")], body.as_bytes(), false)
}

/// After an error answer and a write shutdown: reads and drops what the client still sends,
/// for a bounded time and number of bytes, so the answer is not lost to a reset.
pub fn linger(conn: &mut dyn Conn) {
    let deadline = Instant::now() + LINGER;
    let mut buf = [0u8; 8192];
    let mut drained = 0u64;
    while drained < LINGER_BYTES {
        match read_before(conn, &mut buf, deadline) {
            Ok(n) => drained += n as u64,
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection that takes at most `limit` bytes per write, and an interruption every
    /// third call; vectored writes only from the first non-empty slice when `plain` (what
    /// `Write`'s default does, as TLS streams may).
    struct Trickle {
        got: Vec<u8>,
        limit: usize,
        plain: bool,
        calls: usize,
    }
    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.calls += 1;
            if self.calls.is_multiple_of(3) {
                return Err(std::io::ErrorKind::Interrupted.into());
            }
            let n = buf.len().min(self.limit);
            self.got.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
            if self.plain {
                let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &**b);
                return self.write(first);
            }
            let joined: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            self.write(&joined)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn head_and_body_arrive_whole_however_the_connection_splits_writes() {
        use test_support::fuzz::{self, proptest::prelude::*};
        let case = (
            prop::collection::vec(any::<u8>(), 0..300),
            prop::collection::vec(any::<u8>(), 0..3000),
            1usize..700,
            any::<bool>(),
        );
        fuzz::check(fuzz::PURE, case, |(head, body, limit, plain)| {
            let mut conn = Trickle { got: Vec::new(), limit, plain, calls: 0 };
            write_both(&mut conn, &head, &body).unwrap();
            prop_assert_eq!(conn.got, [head, body].concat());
            Ok(())
        });
    }

    /// A client that hands out its bytes in the given pieces, then EOF (or a timeout).
    struct Scripted {
        pieces: Vec<Vec<u8>>,
        then_timeout: bool,
        read_total: usize,
    }
    impl Read for Scripted {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.pieces.is_empty() {
                return if self.then_timeout {
                    Err(std::io::ErrorKind::WouldBlock.into())
                } else {
                    Ok(0)
                };
            }
            let piece = &mut self.pieces[0];
            let n = piece.len().min(buf.len());
            buf[..n].copy_from_slice(&piece[..n]);
            piece.drain(..n);
            if piece.is_empty() {
                self.pieces.remove(0);
            }
            self.read_total += n;
            Ok(n)
        }
    }
    impl Write for Scripted {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    impl Conn for Scripted {
        fn read_timeout(&self, _: Duration) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn client(pieces: Vec<Vec<u8>>) -> Scripted {
        Scripted { pieces, then_timeout: false, read_total: 0 }
    }

    fn read(c: &mut Scripted) -> Result<Head, ReadError> {
        read_request(c, Instant::now() + Duration::from_secs(60))
    }

    #[test]
    fn parses_a_scrape() {
        let raw = b"GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept:  text/plain;q=0.5 \r\n\r\n";
        let head = parse_head(&raw[..head_end(raw).unwrap()]).unwrap();
        assert_eq!(head.method, "GET");
        assert_eq!(head.path(), "/metrics");
        assert_eq!(head.header("ACCEPT"), Some("text/plain;q=0.5"));
        assert_eq!(head.header("x-missing"), None);
        assert_eq!(head.body_length(), Ok(0));
        let bare = b"HEAD / HTTP/1.0\nA: b\n\n";
        assert_eq!(head_end(bare), Some(bare.len()));
        assert_eq!(parse_head(bare).unwrap().method, "HEAD");
    }

    #[test]
    fn malformed_heads_are_refused_with_the_right_status() {
        let cases: &[(&[u8], Status)] = &[
            (b"GET /metrics\r\n\r\n", Status::BAD_REQUEST),
            (b"GET  /metrics HTTP/1.1\r\n\r\n", Status::BAD_REQUEST),
            (b"GET /metrics HTTP/2.0\r\n\r\n", Status::VERSION_NOT_SUPPORTED),
            (b"GET /metrics FTP/1.0\r\n\r\n", Status::BAD_REQUEST),
            (b"G(T /metrics HTTP/1.1\r\n\r\n", Status::BAD_REQUEST),
            (b"GET /metrics HTTP/1.1\r\nNo colon\r\n\r\n", Status::BAD_REQUEST),
            (b"GET /metrics HTTP/1.1\r\nName : v\r\n\r\n", Status::BAD_REQUEST),
            (b"GET /metrics HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", Status::BAD_REQUEST),
            (b"GET /\xff HTTP/1.1\r\n\r\n", Status::BAD_REQUEST),
            (b"GET /metrics HTTP/1.1\r\nA: b\x01c\r\n\r\n", Status::BAD_REQUEST),
        ];
        for (raw, status) in cases {
            assert_eq!(parse_head(raw), Err(*status), "{:?}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn body_lengths() {
        let head = |h: &str| parse_head(format!("GET / HTTP/1.1\r\n{h}\r\n\r\n").as_bytes());
        assert_eq!(head("Content-Length: 10").unwrap().body_length(), Ok(10));
        assert_eq!(head("Content-Length: 10\r\ncontent-length: 10").unwrap().body_length(), Ok(10));
        let refused = [
            ("Content-Length: 10\r\nContent-Length: 11", Status::BAD_REQUEST),
            ("Content-Length: -1", Status::BAD_REQUEST),
            ("Content-Length: +1", Status::BAD_REQUEST),
            ("Content-Length: 65537", Status::PAYLOAD_TOO_LARGE),
            ("Content-Length: 99999999999999999999999999", Status::PAYLOAD_TOO_LARGE),
            ("Transfer-Encoding: chunked", Status::LENGTH_REQUIRED),
        ];
        for (h, status) in refused {
            assert_eq!(head(h).unwrap().body_length(), Err(status), "{h}");
        }
        assert_eq!(
            head(&format!("Content-Length: {MAX_BODY}")).unwrap().body_length(),
            Ok(MAX_BODY)
        );
    }

    #[test]
    fn a_head_split_anywhere_is_read_whole() {
        let raw = b"GET /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello".to_vec();
        for cut in 0..raw.len() {
            for cut2 in cut..raw.len() {
                let pieces =
                    vec![raw[..cut].to_vec(), raw[cut..cut2].to_vec(), raw[cut2..].to_vec()];
                let pieces = pieces.into_iter().filter(|p| !p.is_empty()).collect();
                let mut c = client(pieces);
                let head = read(&mut c).unwrap();
                assert_eq!(head.path(), "/metrics");
                assert_eq!(c.read_total, raw.len(), "the body is read to its end");
            }
        }
    }

    #[test]
    fn a_huge_head_is_refused_after_reading_only_the_bound() {
        let mut raw = b"GET /metrics HTTP/1.1\r\nX-Big: ".to_vec();
        raw.extend(vec![b'a'; 2 * 1024 * 1024]);
        raw.extend_from_slice(b"\r\n\r\n");
        let mut c = client(raw.chunks(1000).map(<[u8]>::to_vec).collect());
        assert_eq!(read(&mut c), Err(ReadError::Refuse(Status::HEADERS_TOO_LARGE)));
        assert_eq!(c.read_total, MAX_HEAD, "no more than the bound is read");
        // Just under the bound is fine.
        let mut raw = b"GET / HTTP/1.1\r\nX: ".to_vec();
        raw.extend(vec![b'a'; MAX_HEAD - raw.len() - 4]);
        raw.extend_from_slice(b"\r\n\r\n");
        assert_eq!(raw.len(), MAX_HEAD);
        assert!(read(&mut client(vec![raw])).is_ok());
    }

    #[test]
    fn silence_and_trickles_end_at_the_deadline() {
        let mut silent = Scripted { pieces: vec![], then_timeout: true, read_total: 0 };
        assert_eq!(read(&mut silent), Err(ReadError::Gone));
        let mut partial =
            Scripted { pieces: vec![b"GET /me".to_vec()], then_timeout: true, read_total: 0 };
        assert_eq!(read(&mut partial), Err(ReadError::Refuse(Status::REQUEST_TIMEOUT)));
        // A deadline already past: nothing more is read, however willing the client.
        let mut willing = client(vec![b"GET / HTTP/1.1\r\n\r\n".to_vec()]);
        assert_eq!(read_request(&mut willing, Instant::now()), Err(ReadError::Gone));
        let mut closed = client(vec![b"GET / HT".to_vec()]);
        assert_eq!(read(&mut closed), Err(ReadError::Gone));
        let mut body_short =
            client(vec![b"GET / HTTP/1.1\r\nContent-Length: 9\r\n\r\nab".to_vec()]);
        body_short.then_timeout = true;
        assert_eq!(read(&mut body_short), Err(ReadError::Refuse(Status::REQUEST_TIMEOUT)));
    }

    #[test]
    fn arbitrary_and_mutated_bytes_never_panic_and_stay_bounded() {
        let seed =
            b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nAccept: */*\r\n\r\nabc";
        let mut rng = measure::rng::SplitMix64::new(0x9e37_79b9_7f4a_7c15);
        for case in 0..5000 {
            let mut bytes = if case % 2 == 0 {
                seed.to_vec()
            } else {
                let len = (rng.next_u64() % 300) as usize;
                (0..len).map(|_| rng.next_u64() as u8).collect()
            };
            for _ in 0..(rng.next_u64() % 8) {
                if bytes.is_empty() {
                    break;
                }
                let at = (rng.next_u64() as usize) % bytes.len();
                match rng.next_u64() % 3 {
                    0 => bytes[at] = rng.next_u64() as u8,
                    1 => {
                        bytes.remove(at);
                    }
                    _ => bytes.insert(at, b"\r\n:  \x00"[(rng.next_u64() % 6) as usize]),
                }
            }
            if let Some(end) = head_end(&bytes) {
                assert!(end <= bytes.len());
                if let Ok(head) = parse_head(&bytes[..end]) {
                    assert!(is_token(&head.method));
                    let _ = head.body_length();
                }
            }
            let pieces = bytes.chunks(1 + (case % 7)).map(<[u8]>::to_vec).collect();
            let mut c = client(pieces);
            let _ = read(&mut c);
            assert!(c.read_total <= bytes.len());
        }
    }
}
