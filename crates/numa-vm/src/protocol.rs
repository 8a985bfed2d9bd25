//! The result channel: what `/init` writes to the guest's second serial port and how the host
//! reads it back.
//!
//! ```text
//! @@NUMAVM:<nonce>:BOOTED@@
//! @@NUMAVM:<nonce>:OUT:<i>@@     followed by command i's stdout, base64
//! @@NUMAVM:<nonce>:ERR:<i>@@     followed by command i's stderr, base64
//! @@NUMAVM:<nonce>:EXIT:<i>:<status>@@
//! ...
//! @@NUMAVM:<nonce>:DONE@@
//! ```
//! The nonce is fresh per run, so nothing but this run's init can produce a marker.

/// Marker strings for one run.
#[derive(Debug, Clone)]
pub(crate) struct Markers {
    prefix: String,
}

impl Markers {
    pub(crate) fn new(nonce: &str) -> Self {
        Markers { prefix: format!("@@NUMAVM:{nonce}:") }
    }
    pub(crate) fn booted(&self) -> String {
        format!("{}BOOTED@@", self.prefix)
    }
    pub(crate) fn stdout(&self, i: usize) -> String {
        format!("{}OUT:{i}@@", self.prefix)
    }
    pub(crate) fn stderr(&self, i: usize) -> String {
        format!("{}ERR:{i}@@", self.prefix)
    }
    /// The exit marker up to the status, which the shell appends followed by `@@`.
    pub(crate) fn exit_prefix(&self, i: usize) -> String {
        format!("{}EXIT:{i}:", self.prefix)
    }
    pub(crate) fn done(&self) -> String {
        format!("{}DONE@@", self.prefix)
    }
}

/// One command's raw result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawResult {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: i32,
}

/// Everything read from the result channel so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub booted: bool,
    pub results: Vec<RawResult>,
    pub done: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    None,
    Out,
    Err,
}

/// Parses the result channel. Lines outside the markers are ignored; a marker out of order or
/// base64 that does not decode is an error naming the line.
pub(crate) fn parse(text: &str, markers: &Markers) -> Result<Parsed, String> {
    let mut parsed = Parsed::default();
    let mut section = Section::None;
    let mut out = String::new();
    let mut err = String::new();
    for (lineno, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        let at = |what: &str| format!("result line {}: {what}: {line:?}", lineno + 1);
        let Some(rest) = line.trim().strip_prefix(markers.prefix.as_str()) else {
            match section {
                Section::Out => out.push_str(line),
                Section::Err => err.push_str(line),
                Section::None => {}
            }
            continue;
        };
        let Some(body) = rest.strip_suffix("@@") else {
            return Err(at("unterminated marker"));
        };
        let next = parsed.results.len();
        let expect_index = |idx: &str| -> Result<(), String> {
            match idx.parse::<usize>() {
                Ok(i) if i == next => Ok(()),
                _ => Err(at(&format!("expected command {next}"))),
            }
        };
        let mut parts = body.split(':');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some("BOOTED"), None, None, None) => parsed.booted = true,
            (Some("OUT"), Some(i), None, None) => {
                expect_index(i)?;
                section = Section::Out;
                out.clear();
                err.clear();
            }
            (Some("ERR"), Some(i), None, None) => {
                expect_index(i)?;
                if section != Section::Out {
                    return Err(at("stderr marker without stdout marker"));
                }
                section = Section::Err;
            }
            (Some("EXIT"), Some(i), Some(status), None) => {
                expect_index(i)?;
                if section != Section::Err {
                    return Err(at("exit marker without stderr marker"));
                }
                let exit_code = status.trim().parse().map_err(|_| at("bad exit status"))?;
                let stdout = decode_base64(&out).map_err(|e| at(&format!("stdout: {e}")))?;
                let stderr = decode_base64(&err).map_err(|e| at(&format!("stderr: {e}")))?;
                parsed.results.push(RawResult { stdout, stderr, exit_code });
                section = Section::None;
            }
            (Some("DONE"), None, None, None) => {
                parsed.done = true;
                break;
            }
            _ => return Err(at("unknown marker")),
        }
    }
    Ok(parsed)
}

/// Decodes standard base64 (RFC 4648 alphabet, `=` padding), ignoring whitespace.
pub(crate) fn decode_base64(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut acc: u32 = 0;
    let mut bits = 0;
    let mut padding = 0;
    for c in text.bytes().filter(|c| !c.is_ascii_whitespace()) {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => {
                padding += 1;
                continue;
            }
            _ => return Err(format!("invalid base64 character {:?}", c as char)),
        };
        if padding > 0 {
            return Err("base64 data after padding".into());
        }
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if padding > 2 || bits >= 6 {
        return Err("truncated base64 data".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes() {
        assert_eq!(decode_base64("").unwrap(), b"");
        assert_eq!(decode_base64("aGVsbG8K").unwrap(), b"hello\n");
        assert_eq!(decode_base64("YQ==").unwrap(), b"a");
        assert_eq!(decode_base64("YWI=").unwrap(), b"ab");
        assert_eq!(decode_base64("AP8A\n/w==\n").unwrap(), [0, 255, 0, 255]);
        let all: Vec<u8> = (0..=255).collect();
        let b64 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4\n\
                   OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3Bx\n\
                   cnN0dXZ3eHl6e3x9fn+AgYKDhIWGh4iJiouMjY6PkJGSk5SVlpeYmZqbnJ2en6ChoqOkpaanqKmq\n\
                   q6ytrq+wsbKztLW2t7i5uru8vb6/wMHCw8TFxsfIycrLzM3Oz9DR0tPU1dbX2Nna29zd3t/g4eLj\n\
                   5OXm5+jp6uvs7e7v8PHy8/T19vf4+fr7/P3+/w==\n";
        assert_eq!(decode_base64(b64).unwrap(), all);
        assert!(decode_base64("a$==").is_err());
        assert!(decode_base64("YQ==YQ==").is_err());
        assert!(decode_base64("Y").is_err());
    }

    fn channel(m: &Markers) -> String {
        // As written by the guest: console noise, \r\n line ends, an empty stderr.
        format!(
            "garbage before boot\r\n{}\r\n{}\r\naGVsbG8K\r\n{}\r\n{}0@@\r\n{}\r\n\r\n{}\r\nb29wcwo=\r\n{}3@@\r\n{}\r\n",
            m.booted(),
            m.stdout(0),
            m.stderr(0),
            m.exit_prefix(0),
            m.stdout(1),
            m.stderr(1),
            m.exit_prefix(1),
            m.done()
        )
    }

    #[test]
    fn parses_complete_channel() {
        let m = Markers::new("n1");
        let p = parse(&channel(&m), &m).unwrap();
        assert!(p.booted && p.done);
        assert_eq!(
            p.results,
            [
                RawResult { stdout: b"hello\n".to_vec(), stderr: vec![], exit_code: 0 },
                RawResult { stdout: vec![], stderr: b"oops\n".to_vec(), exit_code: 3 },
            ]
        );
    }

    #[test]
    fn partial_channel_is_not_done() {
        let m = Markers::new("n1");
        let text = channel(&m);
        let cut = text.find(&m.stdout(1)).unwrap();
        let p = parse(&text[..cut], &m).unwrap();
        assert!(p.booted && !p.done);
        assert_eq!(p.results.len(), 1);
        assert_eq!(parse("", &m).unwrap(), Parsed::default());
    }

    #[test]
    fn other_nonces_are_ignored() {
        let ours = Markers::new("ours");
        let theirs = Markers::new("theirs");
        let p = parse(&channel(&theirs), &ours).unwrap();
        assert_eq!(p, Parsed::default());
    }

    #[test]
    fn malformed_channels_are_errors() {
        let m = Markers::new("n");
        let bad = |text: String, needle: &str| {
            let err = parse(&text, &m).unwrap_err();
            assert!(err.contains(needle), "{err:?} should mention {needle:?}");
        };
        bad(format!("{}\n", m.stdout(1)), "expected command 0");
        bad(format!("{}\n{}0@@\n", m.stdout(0), m.exit_prefix(0)), "without stderr");
        bad(format!("{}\n{}\n{}x@@\n", m.stdout(0), m.stderr(0), m.exit_prefix(0)), "bad exit");
        bad(format!("{}\n***\n{}\n{}0@@\n", m.stdout(0), m.stderr(0), m.exit_prefix(0)), "stdout");
        bad("@@NUMAVM:n:WHAT@@\n".to_string(), "unknown marker");
        bad("@@NUMAVM:n:DONE\n".to_string(), "unterminated");
    }
}
