//! The client against canned server bytes: encoding, one write per statement, errors and
//! broken connections, split and truncated replies, no allocation on the hot path, startup,
//! and arbitrary or mutated backend streams.

use super::client::{connect, Client};
use super::codec::{
    encode, format_for, FLOAT4, FLOAT8, INITIAL_READ, INT2, INT4, INT8, MAX_MESSAGE,
};
use crate::conn::{Conn, DbError};
use crate::workload::Value;
use bytes::BytesMut;
use postgres_protocol::authentication::md5_hash;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{self, Read, Write};
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
    assert_eq!(e, DbError::Sql { sqlstate: "22012".into(), message: "division by zero".into() });
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
    let e =
        connect(&cfg(&format!("host=127.0.0.1 port={port} user=u connect_timeout=2"))).unwrap_err();
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
        [auth(10, b"SCRAM-SHA-256\0\0"), auth(11, b"r=abc,s=c2FsdA==,i=4096"), started()].concat(),
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
