//! Query text as it is stored: every literal replaced by a placeholder, as
//! `pg_stat_statements` shows statements (`WHERE id = $1`), so that `--slower` never puts
//! customers' data or an `ALTER ROLE … PASSWORD '…'` into the results database or a push.
//! The terminal still prints the text whole; `--store-query-text` stores it whole too.
//!
//! A small lexer, not a parser: it knows where literals start and end — quoted strings (with
//! `''` and, in `E'…'` strings and MariaDB's, backslash escapes), dollar-quoted bodies, bit and
//! hex strings, numbers — and leaves identifiers, keywords, quoted identifiers, comments and
//! existing `$n` parameters alone. The captured text is the statement's first 256 bytes, so a
//! literal cut off by the end is still replaced.
//!
//! ```
//! use querystat::normalize::normalize;
//! use measure::database::ServerKind;
//!
//! let stored = normalize("SELECT c FROM t WHERE id = 42 AND k = 'secret'", ServerKind::Postgres);
//! assert_eq!(stored, "SELECT c FROM t WHERE id = $1 AND k = $2");
//! ```

use measure::database::ServerKind;

/// `text` with each literal replaced by a placeholder: `$n` for PostgreSQL (numbered after the
/// highest `$n` the text already has), `?` for MariaDB.
pub fn normalize(text: &str, kind: ServerKind) -> String {
    let mariadb = kind == ServerKind::MariaDb;
    let chars: Vec<char> = text.chars().collect();
    let mut next = highest_parameter(&chars).saturating_add(1);
    let mut out = String::with_capacity(text.len());
    let mut placeholder = |out: &mut String| {
        // Kept apart from what precedes it, so it reads back as a placeholder, not as part of
        // a word or a dollar quote.
        if out.chars().last().is_some_and(is_word) {
            out.push(' ');
        }
        if mariadb {
            out.push('?');
        } else {
            out.push('$');
            out.push_str(&next.to_string());
            next = next.saturating_add(1);
        }
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let prev_is_word = i > 0 && is_word(chars[i - 1]);
        match c {
            // Comments are kept as written.
            '-' if chars.get(i + 1) == Some(&'-') => {
                let end = find(&chars, i, |c| c == '\n').unwrap_or(chars.len());
                out.extend(&chars[i..end]);
                i = end;
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                let end = find_seq(&chars, i + 2, &['*', '/']).map_or(chars.len(), |e| e + 2);
                out.extend(&chars[i..end]);
                i = end;
            }
            // MariaDB strings take backslash escapes; PostgreSQL's only as E'…' (below).
            '\'' => {
                i = string_end(&chars, i, '\'', mariadb);
                placeholder(&mut out);
            }
            '"' if mariadb => {
                i = string_end(&chars, i, '"', true);
                placeholder(&mut out);
            }
            '"' => {
                // A quoted identifier.
                let end = string_end(&chars, i, '"', false);
                out.extend(&chars[i..end]);
                i = end;
            }
            '$' if !mariadb && !prev_is_word => match dollar_tag(&chars, i) {
                Some(tag_len) => {
                    let tag = &chars[i..i + tag_len];
                    let body = i + tag_len;
                    i = find_seq(&chars, body, tag).map_or(chars.len(), |e| e + tag_len);
                    placeholder(&mut out);
                }
                None => {
                    // `$n`, a parameter: kept.
                    let end = find(&chars, i + 1, |c| !c.is_ascii_digit()).unwrap_or(chars.len());
                    out.extend(&chars[i..end]);
                    i = end;
                }
            },
            c if c.is_ascii_digit() && !prev_is_word => {
                i = number_end(&chars, i);
                placeholder(&mut out);
            }
            '.' if !prev_is_word && chars.get(i + 1).is_some_and(char::is_ascii_digit) => {
                i = number_end(&chars, i);
                placeholder(&mut out);
            }
            // B'0101', X'1F' and E'a\'b': the prefix letter goes with the literal (E'…' takes
            // backslash escapes).
            'b' | 'B' | 'x' | 'X' | 'e' | 'E'
                if !prev_is_word && chars.get(i + 1) == Some(&'\'') =>
            {
                let escapes = mariadb || matches!(c, 'e' | 'E');
                i = string_end(&chars, i + 1, '\'', escapes);
                placeholder(&mut out);
            }
            c if is_word(c) => {
                let end = find(&chars, i, |c| !is_word(c)).unwrap_or(chars.len());
                out.extend(&chars[i..end]);
                i = end;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

fn find(chars: &[char], from: usize, what: impl Fn(char) -> bool) -> Option<usize> {
    (from..chars.len()).find(|&j| what(chars[j]))
}

fn find_seq(chars: &[char], from: usize, seq: &[char]) -> Option<usize> {
    if seq.is_empty() || from > chars.len() {
        return None;
    }
    (from..chars.len()).find(|&j| chars[j..].starts_with(seq))
}

/// Index just past the string opened by `quote` at `open` (doubled quotes, and backslash
/// escapes when `escapes`); the text's end when it is cut off.
fn string_end(chars: &[char], open: usize, quote: char, escapes: bool) -> usize {
    let mut j = open + 1;
    while j < chars.len() {
        match chars[j] {
            '\\' if escapes => j += 2,
            c if c == quote => {
                if chars.get(j + 1) == Some(&quote) {
                    j += 2;
                } else {
                    return j + 1;
                }
            }
            _ => j += 1,
        }
    }
    chars.len()
}

/// The length of a dollar-quote tag (`$$`, `$body$`) starting at `at`, if one starts there.
fn dollar_tag(chars: &[char], at: usize) -> Option<usize> {
    let mut j = at + 1;
    while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
        if j == at + 1 && chars[j].is_ascii_digit() {
            return None; // `$1`: a parameter
        }
        j += 1;
    }
    (chars.get(j) == Some(&'$')).then_some(j + 1 - at)
}

/// Index just past a number starting at `at`: digits, one decimal point, an exponent.
fn number_end(chars: &[char], at: usize) -> usize {
    let mut j = at;
    let digits = |j: &mut usize| {
        while *j < chars.len() && (chars[*j].is_ascii_digit() || chars[*j] == '_') {
            *j += 1;
        }
    };
    if chars[j] == '0' && matches!(chars.get(j + 1), Some('x' | 'X' | 'o' | 'O' | 'b' | 'B')) {
        j += 2;
        while j < chars.len() && (chars[j].is_ascii_hexdigit() || chars[j] == '_') {
            j += 1;
        }
        return j;
    }
    digits(&mut j);
    if chars.get(j) == Some(&'.') {
        j += 1;
        digits(&mut j);
    }
    if matches!(chars.get(j), Some('e' | 'E')) {
        let mut k = j + 1;
        if matches!(chars.get(k), Some('+' | '-')) {
            k += 1;
        }
        if chars.get(k).is_some_and(char::is_ascii_digit) {
            j = k;
            digits(&mut j);
        }
    }
    j
}

/// The highest `$n` parameter already in the text (0 when none).
fn highest_parameter(chars: &[char]) -> u64 {
    let mut highest = 0;
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '$' && (i == 0 || !is_word(chars[i - 1])) {
            let end = find(chars, i + 1, |c| !c.is_ascii_digit()).unwrap_or(chars.len());
            if end > i + 1 {
                let n: String = chars[i + 1..end].iter().collect();
                highest = highest.max(n.parse().unwrap_or(0));
            }
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    highest
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pg(text: &str) -> String {
        normalize(text, ServerKind::Postgres)
    }

    #[test]
    fn literals_become_numbered_parameters() {
        assert_eq!(
            pg("ALTER ROLE app PASSWORD 'hunter2'"),
            "ALTER ROLE app PASSWORD $1",
            "a password never reaches the store"
        );
        assert_eq!(
            pg("SELECT * FROM t WHERE a = 1.5e3 AND b IN (2, 3) AND c = 'it''s'"),
            "SELECT * FROM t WHERE a = $1 AND b IN ($2, $3) AND c = $4"
        );
        // Existing parameters are kept and new ones numbered after them.
        assert_eq!(pg("SELECT $1, 'x' FROM t WHERE id = $2"), "SELECT $1, $3 FROM t WHERE id = $2");
        assert_eq!(pg("SELECT E'a\\'b', x'1F', B'0101'"), "SELECT $1, $2, $3");
        assert_eq!(pg("DO $body$ BEGIN PERFORM 'x'; END $body$"), "DO $1");
        assert_eq!(pg("SELECT $$secret$$ || 'y'"), "SELECT $1 || $2");
    }

    #[test]
    fn identifiers_comments_and_keywords_stay() {
        assert_eq!(pg("SELECT \"Col 1\", t2.c3 FROM t2"), "SELECT \"Col 1\", t2.c3 FROM t2");
        assert_eq!(pg("SELECT a -- note 5\nFROM t"), "SELECT a -- note 5\nFROM t");
        assert_eq!(pg("SELECT /* 7 */ NULL, TRUE"), "SELECT /* 7 */ NULL, TRUE");
        assert_eq!(pg("SELECT col1 FROM tab_2"), "SELECT col1 FROM tab_2");
    }

    #[test]
    fn a_cut_off_literal_is_still_replaced() {
        assert_eq!(pg("UPDATE u SET note = 'the customer said th"), "UPDATE u SET note = $1");
        assert_eq!(pg("SELECT $tag$ unterminated"), "SELECT $1");
    }

    #[test]
    fn mariadb_uses_question_marks_and_double_quoted_strings() {
        let m = |t: &str| normalize(t, ServerKind::MariaDb);
        assert_eq!(m("SELECT \"secret\", 'a\\'b', 42"), "SELECT ?, ?, ?");
        assert_eq!(m("SET PASSWORD = PASSWORD('pw')"), "SET PASSWORD = PASSWORD(?)");
        // A word ending in e before a quote is a word, not an E'…' prefix.
        assert_eq!(m("SELECT a FROM t WHERE a LIKE'x%'"), "SELECT a FROM t WHERE a LIKE ?");
        assert_eq!(pg("SELECT a FROM t WHERE a LIKE'x%'"), "SELECT a FROM t WHERE a LIKE $1");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Any text: no panic, and normalizing twice changes nothing more.
        #[test]
        fn any_text_normalizes_and_is_stable(text in "\\PC{0,300}") {
            let once = pg(&text);
            prop_assert_eq!(pg(&once), once.clone());
            let m = normalize(&text, ServerKind::MariaDb);
            prop_assert_eq!(normalize(&m, ServerKind::MariaDb), m);
        }

        /// A secret inside any string literal, in any statement around it, never survives.
        #[test]
        fn a_string_literals_content_never_survives(
            before in "[A-Za-z0-9_ ,()=*.]{0,40}",
            secret in "[A-Za-z]{6,20}",
            after in "[A-Za-z0-9_ ,()=*.]{0,40}",
        ) {
            let secret = format!("ZZ{secret}");
            let text = format!("{before} '{secret}' {after}");
            prop_assert!(!pg(&text).contains(&secret), "{} -> {}", text, pg(&text));
            let m = normalize(&text, ServerKind::MariaDb);
            prop_assert!(!m.contains(&secret), "{} -> {}", text, m);
        }
    }
}
