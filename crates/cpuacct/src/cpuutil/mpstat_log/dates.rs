//! Dates and times of day: the [`Date`] and [`Clock`] types, mpstat's own date (its first
//! line, or JSON's `"date"`), and the dates shell loops write before lines.

use std::fmt;

use jiff::civil;
use jiff::Span;
use serde::Serialize;

/// A time of day, in seconds since midnight; shown `HH:MM:SS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Clock(pub u32);

impl fmt::Display for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        write!(f, "{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    }
}

/// A calendar date (proleptic Gregorian); shown `YYYY-MM-DD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Date {
    pub year: i32,
    pub month: u32,
    pub day: u32,
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

/// Day 0 of [`Date::days_since_epoch`].
const UNIX_EPOCH: civil::Date = civil::Date::constant(1970, 1, 1);

impl Date {
    /// A valid date between the years 1900 and 9999.
    pub fn new(year: i32, month: u32, day: u32) -> Option<Date> {
        if !(1900..=9999).contains(&year) {
            return None;
        }
        // jiff checks the month and the day (leap years included).
        let date = Date { year, month, day };
        date.civil().map(|_| date)
    }

    /// Days since 1970-01-01. [`Date::new`] makes only real dates; one whose fields were set to
    /// a day that does not exist counts as 1970-01-01.
    pub fn days_since_epoch(self) -> i64 {
        self.civil().map_or(0, |date| date.duration_since(UNIX_EPOCH).as_hours() / 24)
    }

    /// The date `days` days after 1970-01-01; `None` outside the years 1900 to 9999.
    fn from_days(days: i64) -> Option<Date> {
        Date::from_civil(UNIX_EPOCH.checked_add(Span::new().try_days(days).ok()?).ok()?)
    }

    pub(super) fn add_days(self, n: i64) -> Option<Date> {
        Date::from_days(self.days_since_epoch().checked_add(n)?)
    }

    /// The same day as jiff's date; `None` if it does not exist.
    fn civil(self) -> Option<civil::Date> {
        let (year, month, day) = (
            i16::try_from(self.year).ok()?,
            i8::try_from(self.month).ok()?,
            i8::try_from(self.day).ok()?,
        );
        civil::Date::new(year, month, day).ok()
    }

    /// jiff's date as a [`Date`]; `None` outside the years 1900 to 9999.
    fn from_civil(date: civil::Date) -> Option<Date> {
        Date::new(
            i32::from(date.year()),
            u32::try_from(date.month()).ok()?,
            u32::try_from(date.day()).ok()?,
        )
    }
}

/// A date and time written before a line.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Prefix {
    pub(super) date: Date,
    pub(super) sod: u32,
    frac: f64,
    pub(super) zone: Option<String>,
    offset_s: Option<i32>,
}

impl Prefix {
    pub(super) fn epoch(&self) -> Option<f64> {
        let offset = self.offset_s?;
        Some(
            (self.date.days_since_epoch() * 86_400 + i64::from(self.sod) - i64::from(offset))
                as f64
                + self.frac,
        )
    }
}

/// The next whitespace-separated token and what follows it.
pub(super) fn split_token(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    if s.is_empty() {
        return None;
    }
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    Some((&s[..end], &s[end..]))
}

pub(super) fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn small_number(s: &str, max_len: usize) -> Option<u32> {
    if s.len() > max_len || !all_digits(s) {
        return None;
    }
    s.parse().ok()
}

/// `H:MM:SS` or `HH:MM:SS`, with an optional fraction after `.` or `,`: seconds of the day and
/// the fraction.
fn parse_clock(tok: &str) -> Option<(u32, f64)> {
    let (hms, frac) = match tok.find(['.', ',']) {
        Some(i) => (&tok[..i], &tok[i + 1..]),
        None => (tok, ""),
    };
    let mut parts = hms.split(':');
    let h = small_number(parts.next()?, 2)?;
    let m = parts.next()?;
    let s = parts.next()?;
    if parts.next().is_some() || m.len() != 2 || s.len() != 2 {
        return None;
    }
    let (m, s) = (small_number(m, 2)?, small_number(s, 2)?);
    if h > 23 || m > 59 || s > 60 {
        return None;
    }
    let frac = if frac.is_empty() {
        0.0
    } else if all_digits(frac) && frac.len() <= 9 {
        format!("0.{frac}").parse().ok()?
    } else {
        return None;
    };
    Some((h * 3600 + m * 60 + s.min(59), frac))
}

/// `AM`/`PM` (also lower case, `a.m.`): true for PM.
fn meridiem(tok: &str) -> Option<bool> {
    match tok.to_ascii_lowercase().as_str() {
        "am" | "a.m." => Some(false),
        "pm" | "p.m." => Some(true),
        _ => None,
    }
}

/// Applies AM/PM to a 12-hour clock (12 AM is midnight).
fn twelve_hour(sod: u32, pm: bool) -> Option<u32> {
    let h = sod / 3600;
    if !(1..=12).contains(&h) {
        return None;
    }
    let h24 = match (h, pm) {
        (12, false) => 0,
        (12, true) => 12,
        (h, false) => h,
        (h, true) => h + 12,
    };
    Some(sod - h * 3600 + h24 * 3600)
}

/// A clock token, with an AM/PM token after it taken too.
pub(super) fn clock_and_meridiem(s: &str) -> Option<(u32, f64, &str)> {
    let (tok, rest) = split_token(s)?;
    let (sod, frac) = parse_clock(tok)?;
    if let Some((next, after)) = split_token(rest) {
        if let Some(pm) = meridiem(next) {
            return Some((twelve_hour(sod, pm)?, frac, after));
        }
    }
    Some((sod, frac, rest))
}

/// A time-zone token: `UTC`, `GMT`, `Z`, `+hh`, `+hhmm`, `+hh:mm`, or a short upper-case name
/// (`CET`; offset unknown). mpstat's `CPU` and `NODE` are not zones.
fn zone_token(tok: &str) -> Option<(String, Option<i32>)> {
    if matches!(tok, "UTC" | "GMT" | "UT" | "Z") {
        return Some((tok.to_string(), Some(0)));
    }
    if let Some(offset) = numeric_offset(tok) {
        return Some((tok.to_string(), Some(offset)));
    }
    let letters = (2..=5).contains(&tok.len()) && tok.bytes().all(|b| b.is_ascii_uppercase());
    (letters && tok != "CPU" && tok != "NODE").then(|| (tok.to_string(), None))
}

fn numeric_offset(tok: &str) -> Option<i32> {
    let sign = match tok.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let digits: String = tok[1..].chars().filter(|&c| c != ':').collect();
    if tok[1..].matches(':').count() > 1 || !all_digits(&digits) {
        return None;
    }
    let (h, m) = match digits.len() {
        2 => (digits.parse::<i32>().ok()?, 0),
        4 => (digits[..2].parse::<i32>().ok()?, digits[2..].parse::<i32>().ok()?),
        _ => return None,
    };
    (h <= 14 && m < 60).then_some(sign * (h * 3600 + m * 60))
}

fn weekday(tok: &str) -> bool {
    ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].contains(&tok)
}

fn month(tok: &str) -> Option<u32> {
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    MONTHS.iter().position(|m| *m == tok).and_then(|i| u32::try_from(i + 1).ok())
}

fn year(tok: &str) -> Option<i32> {
    (tok.len() == 4 && all_digits(tok)).then(|| tok.parse().ok()).flatten()
}

/// An optional zone token.
fn optional_zone(s: &str) -> (Option<(String, Option<i32>)>, &str) {
    match split_token(s) {
        Some((tok, rest)) => match zone_token(tok) {
            Some(zone) => (Some(zone), rest),
            None => (None, s),
        },
        None => (None, s),
    }
}

/// `date`'s and ctime(3)'s forms: `Wed Nov 25 21:04:05 [PM] [UTC] 2026`, or (other locales'
/// `date`) `Wed 25 Nov 2026 09:04:05 PM UTC`.
fn ctime_prefix(line: &str) -> Option<(Prefix, &str)> {
    let (wd, rest) = split_token(line)?;
    if !weekday(wd) {
        return None;
    }
    let (a, rest) = split_token(rest)?;
    let (date, sod, frac, zone, rest) = if let Some(mon) = month(a) {
        let (d, rest) = split_token(rest)?;
        let day = small_number(d, 2)?;
        let (sod, frac, rest) = clock_and_meridiem(rest)?;
        let (zone, rest) = optional_zone(rest);
        let (y, rest) = split_token(rest)?;
        (Date::new(year(y)?, mon, day)?, sod, frac, zone, rest)
    } else {
        let day = small_number(a, 2)?;
        let (m, rest) = split_token(rest)?;
        let mon = month(m)?;
        let (y, rest) = split_token(rest)?;
        let y = year(y)?;
        let (sod, frac, rest) = clock_and_meridiem(rest)?;
        let (zone, rest) = optional_zone(rest);
        (Date::new(y, mon, day)?, sod, frac, zone, rest)
    };
    let (zone, offset_s) = match zone {
        Some((z, o)) => (Some(z), o),
        None => (None, None),
    };
    Some((Prefix { date, sod, frac, zone, offset_s }, rest))
}

fn iso_date(s: &str) -> Option<Date> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    Date::new(
        s.get(..4)?.parse().ok()?,
        small_number(s.get(5..7)?, 2)?,
        small_number(s.get(8..)?, 2)?,
    )
}

/// ISO 8601: `2026-11-25T21:04:05[.frac][Z|+hh:mm]` or the same with a space (`date
/// --rfc-3339`), optionally a separate zone token (`2026-11-25 21:04:05 UTC`).
fn iso_prefix(line: &str) -> Option<(Prefix, &str)> {
    let (tok, rest) = split_token(line)?;
    let date = iso_date(tok.get(..10)?)?;
    let (time, rest) = match tok.get(10..)? {
        "" => split_token(rest)?,
        t => (t.strip_prefix('T')?, rest),
    };
    // The clock is the first 8 bytes; then a fraction, then a zone.
    let hms = time.get(..8)?;
    let mut tail = time.get(8..)?;
    let mut frac_text = "";
    if let Some(after) = tail.strip_prefix(['.', ',']) {
        let n = after.bytes().take_while(u8::is_ascii_digit).count();
        frac_text = &after[..n];
        tail = &after[n..];
    }
    let clock_text =
        if frac_text.is_empty() { hms.to_string() } else { format!("{hms}.{frac_text}") };
    let (sod, frac) = parse_clock(&clock_text)?;
    let (zone, offset_s, rest) = if tail.is_empty() {
        match optional_zone(rest) {
            (Some((z, o)), rest) => (Some(z), o, rest),
            (None, rest) => (None, None, rest),
        }
    } else {
        let (z, o) = zone_token(tail)?;
        (Some(z), o, rest)
    };
    Some((Prefix { date, sod, frac, zone, offset_s }, rest))
}

/// Takes a date off the front of a line, if there is one.
pub(super) fn strip_date_prefix(line: &str) -> (Option<Prefix>, &str) {
    if let Some((p, rest)) = ctime_prefix(line).or_else(|| iso_prefix(line)) {
        return (Some(p), rest);
    }
    (None, line)
}

/// `11/25/26`, `11/25/2026`, `25/11/2026` (first number over 12), `2026-11-25`, `25.11.2026`.
pub(super) fn banner_date(tok: &str) -> Option<Date> {
    if let Some(d) = iso_date(tok) {
        return Some(d);
    }
    let sep = if tok.contains('/') { '/' } else { '.' };
    let parts: Vec<&str> = tok.split(sep).collect();
    let [a, b, y] = parts.as_slice() else { return None };
    let (a, b) = (small_number(a, 2)?, small_number(b, 2)?);
    let y = match y.len() {
        2 => 2000 + i32::try_from(small_number(y, 2)?).ok()?,
        4 => year(y)?,
        _ => return None,
    };
    let (month, day) = if sep == '.' || a > 12 { (b, a) } else { (a, b) };
    Date::new(y, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_before_lines() {
        let (p, rest) = strip_date_prefix("Wed Nov 25 21:13:42 UTC 2026 21:13:42 all 1.00");
        let p = p.unwrap();
        assert_eq!(
            (p.date.to_string(), p.sod, rest),
            ("2026-11-25".into(), 76_422, " 21:13:42 all 1.00")
        );
        assert_eq!(p.epoch(), Some(1_795_641_222.0));
        let (p, rest) = strip_date_prefix("Wed Nov 25 09:13:42 PM UTC 2026 x");
        assert_eq!((p.unwrap().sod, rest), (76_422, " x"));
        let (p, _) = strip_date_prefix("Thu Nov  5 21:13:42 2026 x");
        let p = p.unwrap();
        assert_eq!((p.date.day, p.zone.clone(), p.epoch()), (5, None, None));
        let (p, _) = strip_date_prefix("Wed 25 Nov 2026 09:13:42 PM CET x");
        let p = p.unwrap();
        assert_eq!((p.sod, p.zone.as_deref(), p.offset_s), (76_422, Some("CET"), None));
        let (p, rest) = strip_date_prefix("2026-11-25T21:13:42,196428839+01:00 21:13:42 all");
        let p = p.unwrap();
        assert_eq!((p.offset_s, rest), (Some(3600), " 21:13:42 all"));
        assert!((p.frac - 0.196_428_839).abs() < 1e-9);
        let (p, rest) = strip_date_prefix("2026-11-25 21:13:42+00:00 Linux");
        assert_eq!((p.unwrap().offset_s, rest), (Some(0), " Linux"));
        let (p, rest) = strip_date_prefix("2026-11-25 21:13:42 UTC 21:13:42     CPU");
        assert_eq!((p.unwrap().offset_s, rest), (Some(0), " 21:13:42     CPU"));
        // mpstat's own lines have no date before them.
        for line in ["21:13:42     CPU    %usr", "Average:  all 1.00", "Linux 6.1 (h) 11/25/26"] {
            assert_eq!(strip_date_prefix(line), (None, line));
        }
    }

    #[test]
    fn dates_and_days() {
        assert_eq!(Date::new(1970, 1, 1).unwrap().days_since_epoch(), 0);
        assert_eq!(Date::new(2026, 11, 25).unwrap().days_since_epoch(), 20_782);
        let d = Date::from_days(20_782).unwrap();
        assert_eq!(d.to_string(), "2026-11-25");
        assert_eq!(Date::new(2024, 12, 31).unwrap().add_days(1).unwrap().to_string(), "2025-01-01");
        assert!(Date::new(2026, 2, 29).is_none());
        assert_eq!(banner_date("11/25/26"), Date::new(2026, 11, 25));
        assert_eq!(banner_date("25/11/2026"), Date::new(2026, 11, 25));
        assert_eq!(banner_date("25.11.2026"), Date::new(2026, 11, 25));
        assert_eq!(banner_date("2026-11-25"), Date::new(2026, 11, 25));
    }

    #[test]
    fn offsets() {
        assert_eq!(numeric_offset("+0100"), Some(3600));
        assert_eq!(numeric_offset("-05:30"), Some(-(5 * 3600 + 1800)));
        assert_eq!(numeric_offset("+03"), Some(3 * 3600));
        assert_eq!(numeric_offset("2026"), None);
        assert_eq!(numeric_offset("+9999"), None);
    }
}
