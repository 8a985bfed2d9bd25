//! Which reports the fleet reader looks at: `--since`, `--until` (dates) and `--hosts` (a
//! pattern), parsed once and applied to the reports read.
//!
//! ```
//! use fleet::window::{HostPattern, Window};
//!
//! let hosts = HostPattern::parse("db-*,web-0?").unwrap();
//! assert!(hosts.matches("db-17") && hosts.matches("web-03") && !hosts.matches("web-10"));
//! let now = "2026-03-31T12:00:00Z".parse().unwrap();
//! let w = Window::parse(Some("2026-03-01"), Some("2026-03-02"), None, now).unwrap();
//! assert!(w.contains_time("2026-03-02T23:59:59Z".parse().unwrap()));
//! assert!(!w.contains_time("2026-03-03T00:00:00Z".parse().unwrap()));
//! assert!(Window::parse(Some("March"), None, None, now).is_err());
//! ```

use jiff::{civil, Timestamp, ToSpan};

use crate::FleetError;

/// Host name patterns: `*` any run of characters, `?` one character, several separated by
/// commas; a host matching any is in. Matched without regard to ASCII case (host names are
/// case-insensitive), as the stores' own filter matches them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    text: String,
    globs: Vec<Vec<char>>,
}

impl HostPattern {
    /// The patterns of `--hosts`: an error naming the pattern when one is empty or uses a
    /// wildcard other than `*` and `?`.
    pub fn parse(text: &str) -> Result<Self, FleetError> {
        let bad = |why: &str| FleetError::BadPattern { pattern: text.to_string(), why: why.into() };
        let mut globs = Vec::new();
        for glob in text.split(',') {
            let glob = glob.trim();
            if glob.is_empty() {
                return Err(bad("an empty pattern (between commas, or none at all)"));
            }
            if let Some(c) = glob.chars().find(|c| "[]{}".contains(*c) || c.is_whitespace()) {
                return Err(bad(&format!(
                    "{c:?} is not part of a host name nor a wildcard (only * and ?)"
                )));
            }
            globs.push(glob.to_ascii_lowercase().chars().collect());
        }
        Ok(Self { text: text.to_string(), globs })
    }

    pub fn matches(&self, host: &str) -> bool {
        let host: Vec<char> = host.to_ascii_lowercase().chars().collect();
        self.globs.iter().any(|g| glob_matches(g, &host))
    }

    /// The patterns as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Each pattern, as the stores' filter takes them.
    pub fn patterns(&self) -> Vec<String> {
        self.globs.iter().map(|g| g.iter().collect()).collect()
    }
}

/// Glob matching by backtracking to the last `*` (linear in practice, never exponential).
fn glob_matches(glob: &[char], text: &[char]) -> bool {
    let (mut g, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match glob.get(g) {
            Some('*') => {
                star = Some((g, t));
                g += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                g += 1;
                t += 1;
            }
            _ => match star {
                Some((sg, st)) => {
                    g = sg + 1;
                    t = st + 1;
                    star = Some((sg, st + 1));
                }
                None => return false,
            },
        }
    }
    glob[g..].iter().all(|&c| c == '*')
}

/// The reports looked at: recorded from `since` (inclusive) to `until` (exclusive), by hosts
/// matching `hosts`; `None` for no bound.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Window {
    pub since: Option<Timestamp>,
    pub until: Option<Timestamp>,
    pub hosts: Option<HostPattern>,
}

impl Window {
    /// The window of `--since`, `--until` and `--hosts`, dates read relative to `now` where
    /// they are relative (`30d`). A day given alone is a whole day in UTC: `--since 2026-03-01`
    /// starts at its midnight, `--until 2026-03-02` ends at the next.
    pub fn parse(
        since: Option<&str>,
        until: Option<&str>,
        hosts: Option<&str>,
        now: Timestamp,
    ) -> Result<Self, FleetError> {
        let since = since.map(|s| parse_date("--since", s, now, false)).transpose()?;
        let until = until.map(|u| parse_date("--until", u, now, true)).transpose()?;
        if let (Some(s), Some(u)) = (since, until) {
            if s >= u {
                return Err(FleetError::EmptyWindow { since: s.to_string(), until: u.to_string() });
            }
        }
        let hosts = hosts.map(HostPattern::parse).transpose()?;
        Ok(Self { since, until, hosts })
    }

    pub fn contains_time(&self, at: Timestamp) -> bool {
        self.since.is_none_or(|s| at >= s) && self.until.is_none_or(|u| at < u)
    }

    pub fn contains_host(&self, host: &str) -> bool {
        self.hosts.as_ref().is_none_or(|p| p.matches(host))
    }

    /// In words, for the summary's first line: `since 2026-03-01, hosts db-*`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(s) = self.since {
            parts.push(format!("from {}", short_time(s)));
        }
        if let Some(u) = self.until {
            parts.push(format!("before {}", short_time(u)));
        }
        if let Some(h) = &self.hosts {
            parts.push(format!("hosts {}", h.as_str()));
        }
        parts.join(", ")
    }
}

/// `2026-03-01` for a midnight, else `2026-03-01T12:30:00Z`.
fn short_time(at: Timestamp) -> String {
    let text = at.to_string();
    text.strip_suffix("T00:00:00Z").map_or(text.clone(), str::to_string)
}

/// A date flag's value: `YYYY-MM-DD` (UTC), an RFC 3339 time (`2026-03-01T12:00:00Z`, or with
/// an offset), or an age before `now` (`30d`, `12h`). `end_of_day`: a bare date means the
/// midnight after it (for `--until`).
pub fn parse_date(
    flag: &'static str,
    value: &str,
    now: Timestamp,
    end_of_day: bool,
) -> Result<Timestamp, FleetError> {
    let bad = || FleetError::BadDate { flag, value: value.to_string() };
    let text = value.trim();
    if let Some(number) = text.strip_suffix('d').or_else(|| text.strip_suffix('h')) {
        if let Ok(n) = number.parse::<i64>() {
            let hours = if text.ends_with('d') { n.checked_mul(24) } else { Some(n) };
            return hours
                .filter(|h| (0..=24 * 365 * 100).contains(h))
                .and_then(|h| now.checked_sub(h.hours()).ok())
                .ok_or_else(bad);
        }
    }
    if let Ok(at) = text.parse::<Timestamp>() {
        return Ok(at);
    }
    let date: civil::Date = text.parse().map_err(|_| bad())?;
    let date = if end_of_day { date.tomorrow().map_err(|_| bad())? } else { date };
    date.to_zoned(jiff::tz::TimeZone::UTC).map(|z| z.timestamp()).map_err(|_| bad())
}

/// A stored `recorded_at` as a time: RFC 3339 (`2026-11-23T21:57:23.123Z`), or SQLite's own
/// `2026-11-23 21:57:23` (UTC).
pub fn parse_recorded(value: &str) -> Option<Timestamp> {
    if let Ok(at) = value.parse::<Timestamp>() {
        return Some(at);
    }
    let civil: civil::DateTime = value.replace(' ', "T").parse().ok()?;
    civil.to_zoned(jiff::tz::TimeZone::UTC).ok().map(|z| z.timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-03-31T12:00:00Z".parse().expect("time")
    }

    #[test]
    fn dates_in_every_accepted_form() {
        let t = |s: &str, end| parse_date("--since", s, now(), end).expect(s).to_string();
        assert_eq!(t("2026-03-01", false), "2026-03-01T00:00:00Z");
        assert_eq!(t("2026-03-01", true), "2026-03-02T00:00:00Z");
        assert_eq!(t("2026-03-01T06:30:00Z", true), "2026-03-01T06:30:00Z");
        assert_eq!(t("2026-03-01T06:30:00+02:00", false), "2026-03-01T04:30:00Z");
        assert_eq!(t("30d", false), "2026-03-01T12:00:00Z");
        assert_eq!(t("12h", false), "2026-03-31T00:00:00Z");
        for bad in ["", "March", "2026-13-01", "2026-02-30", "-3d", "99999999d", "d", "1.5d"] {
            let e = parse_date("--until", bad, now(), true).expect_err(bad);
            assert!(e.to_string().starts_with("--until"), "{e}");
            assert!(!e.to_string().contains('\n'));
        }
    }

    #[test]
    fn a_window_that_ends_before_it_starts_is_refused() {
        let e =
            Window::parse(Some("2026-03-05"), Some("2026-03-01"), None, now()).expect_err("empty");
        assert!(matches!(e, FleetError::EmptyWindow { .. }));
        let w =
            Window::parse(Some("2026-03-01"), Some("2026-03-01"), None, now()).expect("one day");
        assert!(w.contains_time("2026-03-01T23:00:00Z".parse().expect("t")));
        assert_eq!(w.describe(), "from 2026-03-01, before 2026-03-02");
    }

    #[test]
    fn globs_match_as_a_shell_does() {
        let p = |s: &str| HostPattern::parse(s).expect(s);
        assert!(p("*").matches("anything") && p("*").matches(""));
        assert!(p("db*").matches("db") && p("db*").matches("db-1") && !p("db*").matches("xdb"));
        assert!(p("*-0?").matches("web-03") && !p("*-0?").matches("web-003"));
        assert!(p("a*b*c").matches("axxbyyc") && !p("a*b*c").matches("axxbyy"));
        assert!(p("db1, web2").matches("web2"));
        assert!(p("DB-*").matches("db-1") && p("db-*").matches("DB-1"));
        assert_eq!(p("DB-*,web?").patterns(), ["db-*", "web?"]);
        for bad in ["", "db1,", ",", "db[1-3]", "db{1,2}", "db 1"] {
            let e = HostPattern::parse(bad).expect_err(bad);
            assert!(e.to_string().contains("--hosts"), "{e}");
        }
    }

    #[test]
    fn stored_times_read_in_both_forms() {
        let a = parse_recorded("2026-11-23T21:57:23.123Z").expect("rfc3339");
        let b = parse_recorded("2026-11-23 21:57:23").expect("sqlite");
        assert!(a > b);
        assert!(parse_recorded("yesterday").is_none());
    }
}
