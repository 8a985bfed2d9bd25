//! Fuzz-style property tests of what `serve` reads from outside: the HTTP request path
//! (`head_end`, `parse_head`, `body_length`, `read_request` over a client that sends its bytes in
//! arbitrary pieces) and the `--web-config` YAML.
//!
//! Pure tier: [`fuzz::PURE`] cases per target; live tier (`--ignored`): [`fuzz::LIVE`].

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};
use test_tier::live;

use exporter::http::{
    head_end, parse_head, read_request, Conn, Head, ReadError, Status, MAX_BODY, MAX_HEAD,
};
use exporter::WebConfig;
use test_support::fuzz::{self, proptest};

use proptest::prelude::*;

/// A client that hands out its bytes in the given pieces (a read never crosses a piece), then
/// closes.
struct Pieces {
    pieces: std::collections::VecDeque<Vec<u8>>,
    read_total: usize,
}

impl Pieces {
    fn new(bytes: &[u8], cuts: &[usize]) -> Self {
        let mut pieces = std::collections::VecDeque::new();
        let mut at = 0;
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        for c in cuts.into_iter().chain([bytes.len()]) {
            if c > at {
                pieces.push_back(bytes[at..c].to_vec());
                at = c;
            }
        }
        Pieces { pieces, read_total: 0 }
    }
}

impl Read for Pieces {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let Some(piece) = self.pieces.front_mut() else { return Ok(0) };
        let n = piece.len().min(buf.len());
        buf[..n].copy_from_slice(&piece[..n]);
        piece.drain(..n);
        if piece.is_empty() {
            self.pieces.pop_front();
        }
        self.read_total += n;
        Ok(n)
    }
}

impl Write for Pieces {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Conn for Pieces {
    fn read_timeout(&self, _: Duration) -> std::io::Result<()> {
        Ok(())
    }
}

fn read(bytes: &[u8], cuts: &[usize]) -> (Result<Head, ReadError>, usize) {
    let mut c = Pieces::new(bytes, cuts);
    let r = read_request(&mut c, Instant::now() + Duration::from_secs(60));
    (r, c.read_total)
}

fn request_seeds() -> Vec<Vec<u8>> {
    [
        &b"GET /metrics HTTP/1.1\r\nHost: localhost:9100\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\nUser-Agent: Prometheus/2.45.0\r\n\r\n"[..],
        b"HEAD / HTTP/1.0\n\n",
        b"GET /metrics?collect[]=cpu HTTP/1.1\r\nAuthorization: Basic YWxpY2U6czNjcmV0\r\nContent-Length: 5\r\n\r\nhello",
        b"POST /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    ]
    .iter()
    .map(|s| s.to_vec())
    .collect()
}

/// Arbitrary and mutated requests, fed in arbitrary pieces: an answer, never a panic; what is
/// read stays within the head and body bounds; what parses is well-formed.
fn requests(cases: u32) {
    let input = (
        fuzz::bytes_or_mutated(request_seeds(), 600),
        proptest::collection::vec(any::<usize>(), 0..12),
    );
    let answered = std::cell::Cell::new(0u32);
    fuzz::check(cases, input, |(bytes, cuts)| {
        if let Some(end) = head_end(&bytes) {
            prop_assert!(end <= bytes.len());
            if let Ok(head) = parse_head(&bytes[..end]) {
                prop_assert!(!head.method.is_empty() && !head.target.is_empty());
                if let Ok(n) = head.body_length() {
                    prop_assert!(n <= MAX_BODY);
                }
            }
        }
        let (r, read_total) = read(&bytes, &cuts);
        prop_assert!(read_total <= bytes.len());
        prop_assert!(read_total <= MAX_HEAD + MAX_BODY as usize);
        if let Ok(head) = r {
            answered.set(answered.get() + 1);
            prop_assert!(head.body_length().is_ok());
        }
        Ok(())
    });
    // About 5% parse (most edits break a request); fewer means the mutants no longer reach
    // the header checks.
    assert!(answered.get() > cases / 50, "only {} of {cases} requests parsed", answered.get());
}

/// A head longer than [`MAX_HEAD`] (however it is split, with or without its end in sight) is
/// refused with 431 after reading no more than the bound.
fn long_heads(cases: u32) {
    let input = (
        MAX_HEAD + 1..MAX_HEAD * 3,
        any::<bool>(),
        proptest::collection::vec(any::<usize>(), 0..12),
    );
    fuzz::check(cases, input, |(len, ends, cuts)| {
        let mut bytes = b"GET /metrics HTTP/1.1\r\nHost: x\r\n".to_vec();
        while bytes.len() < len {
            bytes.extend_from_slice(b"X-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
        }
        bytes.truncate(len);
        if ends {
            bytes.extend_from_slice(b"\r\n\r\n");
        }
        let (r, read_total) = read(&bytes, &cuts);
        prop_assert_eq!(r, Err(ReadError::Refuse(Status::HEADERS_TOO_LARGE)));
        prop_assert!(read_total <= MAX_HEAD);
        Ok(())
    });
}

fn token() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[A-Za-z0-9!#$%&'*+.^_`|~-]{1,12}").unwrap()
}

/// A valid request split at any byte boundaries reads as the whole does.
fn splits(cases: u32) {
    let header = (token(), proptest::string::string_regex("[ -~\t]{0,40}").unwrap());
    let input = (
        token(),
        proptest::string::string_regex("/[!-~]{0,60}").unwrap(),
        prop_oneof![Just("HTTP/1.1"), Just("HTTP/1.0")],
        proptest::collection::vec(header, 0..8),
        any::<bool>(),
        proptest::collection::vec(any::<usize>(), 1..20),
    );
    fuzz::check(cases, input, |(method, target, version, headers, bare_lf, cuts)| {
        let eol = if bare_lf { "\n" } else { "\r\n" };
        let mut text = format!("{method} {target} {version}{eol}");
        for (name, value) in &headers {
            // A Content-Length would make the body part of the request; keep to heads.
            let name = if name.eq_ignore_ascii_case("content-length")
                || name.eq_ignore_ascii_case("transfer-encoding")
            {
                "X-Other"
            } else {
                name
            };
            text.push_str(&format!("{name}: {value}{eol}"));
        }
        text.push_str(eol);
        let bytes = text.into_bytes();
        let whole = parse_head(&bytes[..head_end(&bytes).unwrap()]);
        prop_assert!(whole.is_ok(), "a valid head is refused: {:?}", whole);
        let (split, _) = read(&bytes, &cuts);
        prop_assert_eq!(split, whole.map_err(ReadError::Refuse));
        Ok(())
    });
}

fn web_seeds() -> Vec<String> {
    let hash = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";
    vec![
        format!(
            "tls_server_config:\n  cert_file: server.crt\n  key_file: /etc/k.key\n  \
             client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n  \
             min_version: TLS13\nbasic_auth_users:\n  alice: '{hash}'\n  bob: {hash}\n"
        ),
        "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: c\n".into(),
        "http_server_config:\n  http2: false\n".into(),
        format!("{{basic_auth_users: {{alice: \"{hash}\"}}, tls_server_config: {{cert_file: x, key_file: y}}}}\n"),
        "# only a comment\n".into(),
        "a: &x [*x, *x]\n".into(),
    ]
}

/// Arbitrary text and mutated configs: `Ok` or a one-line error, never a panic; a parsed TLS
/// configuration names absolute files.
fn web_configs(cases: u32) {
    let parsed = std::cell::Cell::new(0u32);
    fuzz::check(cases, fuzz::text_or_mutated(web_seeds(), 400), |text| {
        match WebConfig::parse(&text, Path::new("/etc/platscope")) {
            Ok(config) => {
                parsed.set(parsed.get() + 1);
                let _ = config.auth();
            }
            Err(e) => prop_assert!(!e.contains('\n') && !e.is_empty(), "not one line: {e:?}"),
        }
        Ok(())
    });
    // The mutants must get past the YAML to the checks behind it, or the target tests little.
    assert!(parsed.get() > cases / 50, "only {} of {cases} configs parsed", parsed.get());
}

#[test]
fn arbitrary_and_mutated_requests_in_any_pieces_are_answered_within_bounds() {
    requests(fuzz::PURE);
}

#[live("50 000 arbitrary and mutated requests")]
fn arbitrary_and_mutated_requests_in_any_pieces_are_answered_within_bounds_long() {
    requests(fuzz::LIVE);
}

#[test]
fn heads_over_the_limit_are_431_after_reading_only_the_bound() {
    long_heads(fuzz::PURE / 4);
}

#[live("10 000 long heads")]
fn heads_over_the_limit_are_431_after_reading_only_the_bound_long() {
    long_heads(fuzz::LIVE / 5);
}

#[test]
fn a_valid_request_split_anywhere_reads_as_whole() {
    splits(fuzz::PURE);
}

#[live("50 000 split requests")]
fn a_valid_request_split_anywhere_reads_as_whole_long() {
    splits(fuzz::LIVE);
}

#[test]
fn arbitrary_and_mutated_web_configs_are_ok_or_one_line_errors() {
    web_configs(fuzz::PURE);
}

#[live("50 000 web configs")]
fn arbitrary_and_mutated_web_configs_are_ok_or_one_line_errors_long() {
    web_configs(fuzz::LIVE);
}
