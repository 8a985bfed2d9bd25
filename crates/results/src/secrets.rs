//! Credentials out of the record: the password of a `postgresql://`/`mysql://` (any
//! `scheme://user:PASSWORD@…`) URL, the value of a libpq `password=` conninfo key (and any
//! `…password=`, `…passwd=`, `…pwd=` key: `PGPASSWORD=`, `MYSQL_PWD=`, `--password=`, a URL's
//! `?password=`), and the word after a bare `--password` flag are replaced with `***` before a
//! command line is stored. When a word is ambiguous, more is hidden rather than less.
//!
//! ```
//! use results::redact;
//!
//! assert_eq!(redact("postgresql://app:hunter2@db1/orders"), "postgresql://app:***@db1/orders");
//! assert_eq!(redact("host=db1 password='a b' dbname=x"), "host=db1 password='***' dbname=x");
//! ```

/// What replaces a secret.
pub const MASK: &str = "***";

/// The keys (lower case) whose values are secrets, matched at the end of a key: `password`,
/// `sslpassword`, `PGPASSWORD`, `MYSQL_PWD`, `--password`.
const KEYS: [&str; 3] = ["password", "passwd", "pwd"];

/// `argv` with every secret in it replaced by [`MASK`].
pub fn redact_argv(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut hide_next = false;
    for word in argv {
        if hide_next {
            out.push(MASK.to_string());
            hide_next = false;
            continue;
        }
        let lower = word.to_ascii_lowercase();
        hide_next = lower.starts_with('-')
            && !lower.contains('=')
            && KEYS.iter().any(|k| lower.ends_with(k));
        out.push(redact(word));
    }
    out
}

/// A stored run's parameters with the secrets of its recorded `argv` replaced: runs recorded
/// before argv was redacted are scrubbed by this when a store is opened for writing and when
/// they are pushed. True when something changed.
pub fn scrub_parameters(parameters: &mut serde_json::Value) -> bool {
    let Some(argv) = parameters.get_mut("argv").and_then(|a| a.as_array_mut()) else {
        return false;
    };
    let words: Vec<String> = argv.iter().filter_map(|w| w.as_str().map(String::from)).collect();
    if words.len() != argv.len() {
        return false;
    }
    let clean = redact_argv(&words);
    if clean == words {
        return false;
    }
    *argv = clean.into_iter().map(serde_json::Value::String).collect();
    true
}

/// One word with its secrets replaced by [`MASK`]: URL passwords first, then key values.
pub fn redact(word: &str) -> String {
    redact_keys(&redact_urls(word))
}

/// `scheme://user:PASSWORD@host…` → `scheme://user:***@host…`. The user part ends at the first
/// `:`; the password at the *last* `@` of the word (a password may hold `@`, `/`, `?`, even
/// `://` unencoded; a `@` in a query string hides the host too, which is the safe side).
fn redact_urls(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    while let Some(i) = rest.find("://") {
        out.push_str(&rest[..i + 3]);
        rest = &rest[i + 3..];
        let userinfo = rest.rfind('@').map(|at| &rest[..at]);
        let colon = userinfo.and_then(|u| u.find(':'));
        match (userinfo, colon) {
            (Some(u), Some(c)) if !u[..c].contains(['/', '?', '#']) => {
                out.push_str(&u[..=c]);
                out.push_str(MASK);
                rest = &rest[u.len()..];
            }
            _ => {}
        }
    }
    out.push_str(rest);
    out
}

/// `KEY=VALUE` with `KEY` ending in one of [`KEYS`] (any case, spaces allowed around `=` as
/// libpq allows): the value becomes [`MASK`]. After `?` or `&` (a URL's query) the value ends
/// at `&`, `#` or white space; otherwise at white space, or at the closing quote of a
/// `'quoted value'` (with `\` escapes, as libpq reads them).
fn redact_keys(word: &str) -> String {
    let lower = word.to_ascii_lowercase();
    let bytes = word.as_bytes();
    let mut out = String::with_capacity(word.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let Some(key) = KEYS.iter().find(|k| lower.as_bytes()[i..].starts_with(k.as_bytes()))
        else {
            i += 1;
            continue;
        };
        let mut j = i + key.len();
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        if j >= bytes.len() || bytes[j] != b'=' {
            i += key.len();
            continue;
        }
        j += 1;
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        // The key's first byte: back over [A-Za-z0-9_-] from the match.
        let start = lower[..i]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .map_or(0, |p| p + 1);
        let in_query = start > 0 && matches!(bytes[start - 1], b'?' | b'&');
        let (value_start, value_end, quoted) = if !in_query && bytes.get(j) == Some(&b'\'') {
            let mut k = j + 1;
            let mut closed = None;
            while k < bytes.len() {
                match bytes[k] {
                    b'\\' => k += 2,
                    b'\'' => {
                        closed = Some(k);
                        break;
                    }
                    _ => k += 1,
                }
            }
            // Unterminated: everything after the quote is the value.
            (j + 1, closed.unwrap_or(bytes.len()), true)
        } else {
            let stop: &[u8] = if in_query { b"&# \t\n" } else { b" \t\n" };
            let end =
                bytes[j..].iter().position(|b| stop.contains(b)).map_or(bytes.len(), |p| j + p);
            (j, end, false)
        };
        out.push_str(&word[copied..value_start]);
        out.push_str(MASK);
        copied = value_end;
        i = if quoted { (value_end + 1).min(bytes.len()) } else { value_end.max(i + 1) };
        if quoted && value_end < bytes.len() {
            out.push('\'');
            copied = value_end + 1;
        }
    }
    out.push_str(&word[copied.min(word.len())..]);
    out
}

#[cfg(test)]
mod tests {
    use measure::rng::SplitMix64;

    use super::*;

    #[test]
    fn urls_conninfo_and_flags() {
        let cases = [
            ("postgresql://app:hunter2@db1:5432/orders", "postgresql://app:***@db1:5432/orders"),
            (
                "postgres://app:hunter2@db1/orders?sslmode=require",
                "postgres://app:***@db1/orders?sslmode=require",
            ),
            (
                "mysql://root:s3@cr/t@127.0.0.1:3306/sbtest",
                "mysql://root:***@127.0.0.1:3306/sbtest",
            ),
            ("mariadb://:only@h/d", "mariadb://:***@h/d"),
            ("postgresql://app@db1/orders", "postgresql://app@db1/orders"),
            ("postgresql:///orders?host=/run/pg", "postgresql:///orders?host=/run/pg"),
            (
                "postgresql://db1/o?user=a&password=hunter2&sslmode=x",
                "postgresql://db1/o?user=a&password=***&sslmode=x",
            ),
            (
                "host=db1 user=app password=hunter2 dbname=orders",
                "host=db1 user=app password=*** dbname=orders",
            ),
            ("host=db1 password = 'hun ter\\'2' dbname=x", "host=db1 password = '***' dbname=x"),
            ("password='unterminated secret", "password='***"),
            ("PASSWORD=hunter2", "PASSWORD=***"),
            ("PGPASSWORD=hunter2", "PGPASSWORD=***"),
            ("MYSQL_PWD=hunter2", "MYSQL_PWD=***"),
            ("--password=hunter2", "--password=***"),
            ("sslpassword=k3y host=x", "sslpassword=*** host=x"),
            ("password=", "password=***"),
            ("a password is not a key", "a password is not a key"),
            ("/data/passwords.txt", "/data/passwords.txt"),
            ("", ""),
        ];
        for (word, want) in cases {
            assert_eq!(redact(word), want, "{word}");
        }
        let argv: Vec<String> =
            ["mysql", "--password", "hunter2", "-u", "root", "--url", "postgresql://a:b@c/d"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        assert_eq!(
            redact_argv(&argv),
            ["mysql", "--password", "***", "-u", "root", "--url", "postgresql://a:***@c/d"]
        );
        // Non-ASCII around a key keeps the word intact.
        assert_eq!(redact("é password=ü é"), "é password=*** é");
    }

    fn pick(rng: &mut SplitMix64, alphabet: &[char], min: u64, max: u64) -> String {
        let len = min + rng.below(max - min + 1);
        (0..len).map(|_| alphabet[rng.below(alphabet.len() as u64) as usize]).collect()
    }

    /// Generated URLs and conninfo strings: the password never survives, and when it holds no
    /// character that makes the URL ambiguous the rest survives exactly.
    #[test]
    fn generated_credentials_never_survive() {
        let plain: Vec<char> = ('a'..='z').chain('0'..='9').chain(['.', '_', '-']).collect();
        let mut secret_chars: Vec<char> = ('A'..='Z').chain('0'..='9').collect();
        secret_chars
            .extend([':', '/', '@', '?', '#', '&', '%', '=', '!', '$', 'é', ' ', '\'', '\\']);
        let schemes = ["postgresql", "postgres", "mysql", "mariadb"];
        let mut rng = SplitMix64::new(29);
        for case in 0..10_000 {
            // Upper case only (plus symbols): never a substring of the lower-case rest.
            let password = format!("Q{}", pick(&mut rng, &secret_chars, 3, 16));
            let user = pick(&mut rng, &plain, 0, 8);
            let host = pick(&mut rng, &plain, 1, 12);
            let db = pick(&mut rng, &plain, 1, 8);
            let scheme = schemes[rng.below(4) as usize];
            let port =
                if rng.below(2) == 0 { String::new() } else { format!(":{}", rng.below(65536)) };
            let query =
                if rng.below(2) == 0 { String::new() } else { "?sslmode=require".to_string() };

            let url = format!("{scheme}://{user}:{password}@{host}{port}/{db}{query}");
            let r = redact(&url);
            assert!(!r.contains(&password), "case {case}: {url} → {r}");
            assert!(r.contains(MASK), "case {case}: {url} → {r}");
            assert_eq!(r, format!("{scheme}://{user}:***@{host}{port}/{db}{query}"), "{url}");

            // The same password as a URL query key, percent-encoded as it must be there.
            let encoded: String = password
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() {
                        c.to_string()
                    } else {
                        format!("%{:02X}", c as u32 & 0xff)
                    }
                })
                .collect();
            let q = format!(
                "{scheme}://{host}/{db}?user={user}&password={encoded}{}",
                query.replace('?', "&")
            );
            let r = redact(&q);
            assert!(!r.contains(&encoded), "case {case}: {q} → {r}");
            assert_eq!(
                r,
                format!(
                    "{scheme}://{host}/{db}?user={user}&password=***{}",
                    query.replace('?', "&")
                )
            );

            // libpq conninfo: quoted (with \ escapes) when it holds a space, quote or backslash.
            let quoted = password.contains([' ', '\'', '\\']) || rng.below(2) == 0;
            let value = if quoted {
                format!("'{}'", password.replace('\\', "\\\\").replace('\'', "\\'"))
            } else {
                password.clone()
            };
            let eq = ["=", " = ", "= "][rng.below(3) as usize];
            let conninfo = format!("host={host} user={user} password{eq}{value} dbname={db}");
            let r = redact(&conninfo);
            assert!(!r.contains(&password) && !r.contains(&value), "case {case}: {conninfo} → {r}");
            let masked = if quoted { "'***'" } else { MASK };
            assert_eq!(r, format!("host={host} user={user} password{eq}{masked} dbname={db}"));
        }
    }

    #[test]
    fn stored_parameters_are_scrubbed_once() {
        let mut p = serde_json::json!({
            "argv": ["platscope", "load", "--url", "postgresql://app:hunter2@db1/x"],
            "rate": 10
        });
        assert!(scrub_parameters(&mut p));
        assert_eq!(p["argv"][3], "postgresql://app:***@db1/x");
        assert_eq!(p["rate"], 10, "the rest is kept");
        assert!(!scrub_parameters(&mut p), "a scrubbed run is left alone");
        assert!(!scrub_parameters(&mut serde_json::json!({"no": "argv"})));
    }

    /// Arbitrary words: never a panic (byte slicing stays on char boundaries), and a word with no
    /// `=` and no `://` comes back as it was.
    #[test]
    fn arbitrary_words_never_panic() {
        let alphabet: Vec<char> = "pPaAsSwWoOrRdD=:/@?&#' \\-_éü€x1".chars().collect();
        let mut rng = SplitMix64::new(7);
        for _ in 0..20_000 {
            let word = pick(&mut rng, &alphabet, 0, 40);
            let r = redact(&word);
            if !word.contains('=') && !word.contains("://") {
                assert_eq!(r, word);
            }
        }
    }
}
