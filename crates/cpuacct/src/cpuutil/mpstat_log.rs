//! sysstat's `mpstat` output read back, I/O-free: what `cpu util --from FILE` reads, for the
//! logs customers send (as the script of the article "Utilization — can I have more accuracy
//! please?" read them, for Solaris).
//!
//! Fed line by line ([`LogParser::push_line`], or all at once with [`parse`]), it reads:
//!
//! - mpstat's text, `mpstat [-P ALL] [-N ALL] [-T] [INTERVAL [COUNT]]` from sysstat 9 to 12: its
//!   first line (`Linux 6.1.0 (host)  11/25/26  _x86_64_  (2 CPU)`, the date), header lines whose
//!   columns are found by **name** (`CPU` or `NODE`, `%usr` … `%idle`, sysstat 8's `%user`,
//!   `-T`'s `CORE SOCK NODE`; a column a version lacks, such as `%gnice` before sysstat 10, is
//!   0.00 and noted in [`Facts::missing_columns`]), times in 24-hour or AM/PM form (`LC_TIME`),
//!   and the `Average:` block (under any translation of the word);
//! - `mpstat -o JSON` (sysstat 11.5 and later; 11's JSON names the all-CPU line `"-1"`), a
//!   truncated document included, and several documents one after another;
//! - either with a date before every line, or some lines, as shell loops write them
//!   (`mpstat 5 | while read l; do echo "$(date) $l"; done`, or `echo "$(date) $(mpstat …)"`):
//!   `date`'s and ctime(3)'s (`Wed Nov 25 21:04:05 UTC 2026`, `Wed Nov 25 09:04:05 PM UTC
//!   2026`, `Wed Nov 25 21:04:05 2026`) or ISO 8601's (`2026-11-25T21:04:05+00:00`,
//!   `2026-11-25 21:04:05+00:00` from `date --rfc-3339`, a fraction allowed).
//!
//! It yields [`Item`]s in order: an [`Interval`] per mpstat interval (the all-CPU line, each
//! CPU's, each node's), mpstat's averages (as [`Item::Average`]), and the intervals it could not
//! read, each with the reason ([`Unreadable`]). Lines that are not mpstat's are counted and
//! skipped ([`Facts`]).
//!
//! **Intervals.** An interval is the rows that share one timestamp: mpstat prints a header
//! line stamped with the previous sample's time, then one row per CPU stamped with this
//! sample's time (and with `-N ALL` a `NODE` header and one row per node, same time). A row
//! whose time differs from the interval's, or whose CPU (node) the interval already has,
//! starts the next interval; so does mpstat's first line (a new run). A header stamped with the
//! same time as its rows is mpstat without an interval: figures since boot.
//!
//! **When.** The time of day is mpstat's own. The date comes from a date before the line, or
//! else from mpstat's first line (`11/25/26` is month/day/year unless the first number is over
//! 12), and moves on at midnight. `epoch_s` is known only when a date before the lines says its
//! zone (`UTC`, `GMT`, `Z`, `+01:00`): mpstat never says.
//!
//! ```
//! use cpuacct::cpuutil::mpstat_log::{parse, Item};
//! let log = "\
//! Linux 6.1.0 (db1) \t11/25/26 \t_x86_64_\t(2 CPU)
//!
//! 21:13:25     CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle
//! 21:13:26     all   45.27    0.00    2.49    0.00    0.00    0.00    0.00    0.00    0.00   52.24
//! 21:13:26       0    0.00    0.00    5.00    0.00    0.00    0.00    0.00    0.00    0.00   95.00
//! 21:13:26       1   90.10    0.00    0.00    0.00    0.00    0.00    0.00    0.00    0.00    9.90
//! ";
//! let parsed = parse(log);
//! let Item::Interval(i) = &parsed.items[0] else { panic!() };
//! assert_eq!(i.all.unwrap().usr, 45.27);
//! assert_eq!(i.cpus.len(), 2);
//! assert_eq!(i.clock.unwrap().to_string(), "21:13:26");
//! ```

use std::collections::BTreeSet;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

/// One utilization column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Field {
    Usr,
    Nice,
    Sys,
    Iowait,
    Irq,
    Soft,
    Steal,
    Guest,
    Gnice,
    Idle,
}

impl Field {
    pub const ALL: [Field; 10] = [
        Field::Usr,
        Field::Nice,
        Field::Sys,
        Field::Iowait,
        Field::Irq,
        Field::Soft,
        Field::Steal,
        Field::Guest,
        Field::Gnice,
        Field::Idle,
    ];

    /// The text header's name (sysstat 9–12).
    pub fn name(self) -> &'static str {
        match self {
            Field::Usr => "%usr",
            Field::Nice => "%nice",
            Field::Sys => "%sys",
            Field::Iowait => "%iowait",
            Field::Irq => "%irq",
            Field::Soft => "%soft",
            Field::Steal => "%steal",
            Field::Guest => "%guest",
            Field::Gnice => "%gnice",
            Field::Idle => "%idle",
        }
    }

    fn from_text(name: &str) -> Option<Field> {
        Some(match name {
            "%usr" | "%user" => Field::Usr,
            "%nice" => Field::Nice,
            "%sys" | "%system" => Field::Sys,
            "%iowait" => Field::Iowait,
            "%irq" => Field::Irq,
            "%soft" => Field::Soft,
            "%steal" => Field::Steal,
            "%guest" => Field::Guest,
            "%gnice" => Field::Gnice,
            "%idle" => Field::Idle,
            _ => return None,
        })
    }

    /// The JSON key (`mpstat -o JSON`).
    fn json_key(self) -> &'static str {
        &self.name()[1..]
    }

    /// A table without these is not a utilization table.
    fn required(self) -> bool {
        matches!(self, Field::Usr | Field::Sys | Field::Idle)
    }
}

/// The ten utilization figures of one mpstat line, percentages as printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Figures {
    pub usr: f64,
    pub nice: f64,
    pub sys: f64,
    pub iowait: f64,
    pub irq: f64,
    pub soft: f64,
    pub steal: f64,
    pub guest: f64,
    pub gnice: f64,
    pub idle: f64,
}

impl Figures {
    /// Everything but idle and iowait (mpstat's `%usr` excludes guest time, so guest is added),
    /// rounded to the hundredth the figures are printed to (no `99.99999999999999`).
    pub fn busy(&self) -> f64 {
        let sum = self.usr
            + self.nice
            + self.sys
            + self.irq
            + self.soft
            + self.steal
            + self.guest
            + self.gnice;
        (sum * 100.0).round() / 100.0
    }

    /// All ten at zero, `%idle` included: how sysstat 11 prints a CPU that is offline (12
    /// leaves the line out). An idle CPU reads `%idle` 100.00.
    pub fn is_offline(&self) -> bool {
        Field::ALL.iter().all(|&f| self.get(f) == 0.0)
    }

    pub fn get(&self, field: Field) -> f64 {
        match field {
            Field::Usr => self.usr,
            Field::Nice => self.nice,
            Field::Sys => self.sys,
            Field::Iowait => self.iowait,
            Field::Irq => self.irq,
            Field::Soft => self.soft,
            Field::Steal => self.steal,
            Field::Guest => self.guest,
            Field::Gnice => self.gnice,
            Field::Idle => self.idle,
        }
    }

    fn set(&mut self, field: Field, value: f64) {
        let slot = match field {
            Field::Usr => &mut self.usr,
            Field::Nice => &mut self.nice,
            Field::Sys => &mut self.sys,
            Field::Iowait => &mut self.iowait,
            Field::Irq => &mut self.irq,
            Field::Soft => &mut self.soft,
            Field::Steal => &mut self.steal,
            Field::Guest => &mut self.guest,
            Field::Gnice => &mut self.gnice,
            Field::Idle => &mut self.idle,
        };
        *slot = value;
    }
}

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

impl Date {
    /// A valid date between the years 1900 and 9999.
    pub fn new(year: i32, month: u32, day: u32) -> Option<Date> {
        if !(1900..=9999).contains(&year) || !(1..=12).contains(&month) || day == 0 {
            return None;
        }
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        let days = match month {
            2 if leap => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        (day <= days).then_some(Date { year, month, day })
    }

    /// Days since 1970-01-01.
    pub fn days_since_epoch(self) -> i64 {
        // The usual era arithmetic (March-based years, 400-year eras).
        let y = i64::from(self.year) - i64::from(self.month <= 2);
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let m = i64::from(self.month);
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(self.day) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    fn from_days(days: i64) -> Option<Date> {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        Date::new(i32::try_from(year).ok()?, u32::try_from(month).ok()?, u32::try_from(day).ok()?)
    }

    fn add_days(self, n: i64) -> Option<Date> {
        Date::from_days(self.days_since_epoch() + n)
    }
}

/// One CPU's line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoggedCpu {
    pub cpu: u32,
    /// Its NUMA node, when the log has `-T`'s `NODE` column.
    pub node: Option<u32>,
    pub figures: Figures,
}

/// One node's line (`-N`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoggedNode {
    pub node: u32,
    pub figures: Figures,
}

/// One mpstat interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interval {
    /// 1-based line of its first row.
    pub line: usize,
    /// mpstat's timestamp (the end of the interval); `None` for the `Average:` block.
    pub clock: Option<Clock>,
    pub date: Option<Date>,
    /// The zone a date before the lines named.
    pub zone: Option<String>,
    /// Seconds since the Unix epoch, when a date before the lines gave the zone.
    pub epoch_s: Option<f64>,
    /// From the previous sample's timestamp (the header's, or the previous interval's).
    pub elapsed_s: Option<f64>,
    /// mpstat without an interval: the figures are since boot.
    pub since_boot: bool,
    /// The all-CPU line (from the `NODE` table when the CPU table has none).
    pub all: Option<Figures>,
    pub cpus: Vec<LoggedCpu>,
    pub nodes: Vec<LoggedNode>,
}

/// An interval that could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unreadable {
    /// 1-based line where it starts (or where the fault is).
    pub line: usize,
    pub clock: Option<Clock>,
    pub reason: String,
}

impl fmt::Display for Unreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.clock {
            Some(c) => write!(f, "interval at {c} (line {}): {}", self.line, self.reason),
            None => write!(f, "interval at line {}: {}", self.line, self.reason),
        }
    }
}

/// What the parser yields, in input order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Item {
    Interval(Interval),
    /// mpstat's `Average:` block (not an interval).
    Average(Interval),
    Unreadable(Unreadable),
}

/// What the parser saw besides intervals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Facts {
    /// Something was mpstat's: its first line, a utilization header, or JSON with `"sysstat"`.
    pub mpstat_seen: bool,
    /// Lines read.
    pub lines: usize,
    /// Lines that were neither blank nor mpstat's, and the first of them (line, text).
    pub ignored_lines: usize,
    pub first_ignored: Option<(usize, String)>,
    /// The first line that is not blank (for saying what a file that is not mpstat's holds).
    pub first_line: Option<String>,
    /// Utilization columns a header or JSON entry lacked; read as 0.00.
    pub missing_columns: BTreeSet<&'static str>,
    /// The CPU count from mpstat's first line (`(2 CPU)`), the last one seen.
    pub cpu_count: Option<u32>,
    /// A JSON document ended before its end (a truncated file).
    pub json_truncated: bool,
}

/// Everything [`parse`] found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Parsed {
    pub items: Vec<Item>,
    pub facts: Facts,
}

impl Parsed {
    pub fn intervals(&self) -> impl Iterator<Item = &Interval> {
        self.items.iter().filter_map(|i| match i {
            Item::Interval(i) => Some(i),
            _ => None,
        })
    }

    pub fn unreadable(&self) -> impl Iterator<Item = &Unreadable> {
        self.items.iter().filter_map(|i| match i {
            Item::Unreadable(u) => Some(u),
            _ => None,
        })
    }
}

/// Parses a whole log.
pub fn parse(text: &str) -> Parsed {
    let mut parser = LogParser::new();
    let mut items = Vec::new();
    for line in text.lines() {
        parser.push_line(line);
        items.append(&mut parser.take_items());
    }
    parser.finish();
    items.append(&mut parser.take_items());
    Parsed { items, facts: parser.facts().clone() }
}

/// Rows per interval and bytes per JSON entry above which an interval is refused (a real
/// machine has far fewer CPUs; garbage must not grow without bound).
const MAX_ROWS: usize = 1 << 16;
const MAX_JSON_ENTRY: usize = 64 << 20;
/// Non-blank lines read without anything of mpstat's before [`LogParser::hopeless`] says so.
const HOPELESS_AFTER: usize = 10_000;

// ---------------------------------------------------------------------------------------------
// Dates before lines.

/// A date and time written before a line.
#[derive(Debug, Clone, PartialEq)]
struct Prefix {
    date: Date,
    sod: u32,
    frac: f64,
    zone: Option<String>,
    offset_s: Option<i32>,
}

impl Prefix {
    fn epoch(&self) -> Option<f64> {
        let offset = self.offset_s?;
        Some(
            (self.date.days_since_epoch() * 86_400 + i64::from(self.sod) - i64::from(offset))
                as f64
                + self.frac,
        )
    }
}

/// The next whitespace-separated token and what follows it.
fn split_token(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    if s.is_empty() {
        return None;
    }
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    Some((&s[..end], &s[end..]))
}

fn all_digits(s: &str) -> bool {
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
fn clock_and_meridiem(s: &str) -> Option<(u32, f64, &str)> {
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
fn strip_date_prefix(line: &str) -> (Option<Prefix>, &str) {
    if let Some((p, rest)) = ctime_prefix(line).or_else(|| iso_prefix(line)) {
        return (Some(p), rest);
    }
    (None, line)
}

// ---------------------------------------------------------------------------------------------
// mpstat's text.

/// What a line starts with: a timestamp, or `Average:` (in any language).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lead {
    Clock(u32),
    Average,
}

fn lead(s: &str) -> Option<(Lead, &str)> {
    if let Some((sod, _, rest)) = clock_and_meridiem(s) {
        return Some((Lead::Clock(sod), rest));
    }
    let (tok, rest) = split_token(s)?;
    let word = tok.strip_suffix(':')?;
    let is_word = !word.is_empty() && word.chars().all(|c| c.is_alphabetic() || c == '.');
    is_word.then_some((Lead::Average, rest))
}

/// `11/25/26`, `11/25/2026`, `25/11/2026` (first number over 12), `2026-11-25`, `25.11.2026`.
fn banner_date(tok: &str) -> Option<Date> {
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

/// mpstat's first line: `Linux 6.18.44 (host) \t11/25/26 \t_x86_64_\t(2 CPU)`.
fn banner(s: &str) -> Option<(Option<Date>, u32)> {
    let toks: Vec<&str> = s.split_whitespace().collect();
    let [.., count, last] = toks.as_slice() else { return None };
    if *last != "CPU)" {
        return None;
    }
    let n = count.strip_prefix('(')?.parse().ok()?;
    let date = toks.iter().find_map(|t| banner_date(t));
    Some((date, n))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Cpu,
    Node,
    /// A table that is not utilization (`-I`'s interrupt tables): its rows are skipped.
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Topo {
    Node,
    Other,
}

/// The columns of the header in force.
#[derive(Debug, Clone)]
struct Table {
    kind: Kind,
    line: usize,
    /// Columns between `CPU` and the first `%` column (`-T`'s `CORE SOCK NODE`): blank on the
    /// all-CPU row.
    topo: Vec<Topo>,
    /// The value columns, in order; `None` for columns that are not utilization (`intr/s`).
    values: Vec<Option<Field>>,
    clock: Option<u32>,
    average: bool,
}

/// A header line: `TIME CPU|NODE [CORE SOCK NODE] %usr … %idle`.
fn header(lead: Lead, rest: &str, line: usize) -> Option<Table> {
    let mut toks = rest.split_whitespace();
    let kind = match toks.next()? {
        "CPU" => Kind::Cpu,
        "NODE" => Kind::Node,
        _ => return None,
    };
    let names: Vec<&str> = toks.collect();
    let first_pct = names.iter().position(|n| n.starts_with('%'))?;
    let topo = names[..first_pct]
        .iter()
        .map(|n| if *n == "NODE" { Topo::Node } else { Topo::Other })
        .collect();
    let values: Vec<Option<Field>> =
        names[first_pct..].iter().map(|n| Field::from_text(n)).collect();
    let has = |f: Field| values.contains(&Some(f));
    let utilization = Field::ALL.iter().filter(|f| f.required()).all(|&f| has(f));
    Some(Table {
        kind: if utilization { kind } else { Kind::Other },
        line,
        topo,
        values,
        clock: match lead {
            Lead::Clock(c) => Some(c),
            Lead::Average => None,
        },
        average: lead == Lead::Average,
    })
}

/// A row's subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Label {
    All,
    Id(u32),
}

fn label(tok: &str) -> Option<Label> {
    match tok {
        "all" | "-1" => Some(Label::All),
        _ if all_digits(tok) => tok.parse().ok().map(Label::Id),
        _ => None,
    }
}

fn describe(kind: Kind, label: Label) -> String {
    match (kind, label) {
        (_, Label::All) => "the all line".into(),
        (Kind::Node, Label::Id(n)) => format!("node {n}"),
        (_, Label::Id(n)) => format!("CPU {n}"),
    }
}

/// A percentage as mpstat prints it (`12.34`; `12,34` under a comma locale).
fn number(tok: &str) -> Option<f64> {
    if tok.is_empty() || !tok.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b',') {
        return None;
    }
    let text = if tok.contains('.') { tok.to_string() } else { tok.replace(',', ".") };
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

fn check_range(what: &str, field: Field, v: f64) -> Result<f64, String> {
    if (0.0..=100.5).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{what}: {} is {v:.2}, outside 0-100", field.name()))
    }
}

/// A row's label, node (`-T`) and figures.
fn row(table: &Table, rest: &str) -> Result<(Label, Option<u32>, Figures), String> {
    let toks: Vec<&str> = rest.split_whitespace().collect();
    let Some((first, values)) = toks.split_first() else {
        return Err("a row with a time and nothing else".into());
    };
    let label = label(first).ok_or_else(|| format!("'{first}' is not a CPU number or 'all'"))?;
    let what = describe(table.kind, label);
    let (topo, values) = if values.len() == table.values.len() + table.topo.len() {
        values.split_at(table.topo.len())
    } else if values.len() == table.values.len() {
        (&values[..0], values)
    } else {
        return Err(format!(
            "{what}: {} figures where the header at line {} has {}",
            values.len(),
            table.line,
            table.values.len()
        ));
    };
    let mut node = None;
    for (col, tok) in table.topo.iter().zip(topo) {
        if *col == Topo::Node {
            node = Some(tok.parse().map_err(|_| format!("{what}: NODE is '{tok}', not a number"))?);
        }
    }
    let mut figures = Figures::default();
    for (col, tok) in table.values.iter().zip(values) {
        if let Some(field) = col {
            let v = number(tok)
                .ok_or_else(|| format!("{what}: {} is '{tok}', not a number", field.name()))?;
            figures.set(*field, check_range(&what, *field, v)?);
        }
    }
    Ok((label, node, figures))
}

// ---------------------------------------------------------------------------------------------
// Intervals being put together.

/// Where the log is in time: a date and (once known) mpstat's time of day on it, and the epoch
/// of that moment when a zone was given.
#[derive(Debug, Clone)]
struct Anchor {
    date: Date,
    sod: Option<u32>,
    epoch: Option<f64>,
    zone: Option<String>,
}

impl Anchor {
    /// Date, epoch and zone of mpstat's time `sod`, taken as the nearest such time (within 12
    /// hours) to the anchor's; the anchor moves there, so a long log crosses midnights.
    fn place(&mut self, sod: u32) -> (Option<Date>, Option<f64>, Option<String>) {
        let Some(at) = self.sod else {
            self.sod = Some(sod);
            return (Some(self.date), None, self.zone.clone());
        };
        let mut delta = i64::from(sod) - i64::from(at);
        if delta < -43_200 {
            delta += 86_400;
        } else if delta >= 43_200 {
            delta -= 86_400;
        }
        let days = (i64::from(at) + delta).div_euclid(86_400);
        if let Some(date) = self.date.add_days(days) {
            self.date = date;
        }
        self.sod = Some(sod);
        self.epoch = self.epoch.map(|e| e + delta as f64);
        (Some(self.date), self.epoch, self.zone.clone())
    }
}

#[derive(Debug)]
struct Building {
    line: usize,
    clock: Option<u32>,
    average: bool,
    /// The previous sample's time, when known.
    start: Option<u32>,
    since_boot: bool,
    all: Option<Figures>,
    node_all: Option<Figures>,
    cpus: Vec<LoggedCpu>,
    nodes: Vec<LoggedNode>,
    seen_cpus: BTreeSet<Label>,
    seen_nodes: BTreeSet<Label>,
    rows: usize,
    error: Option<(usize, String)>,
    date: Option<Date>,
    epoch_s: Option<f64>,
    zone: Option<String>,
}

impl Building {
    fn has(&self, kind: Kind, label: Label) -> bool {
        match kind {
            Kind::Node => self.seen_nodes.contains(&label),
            _ => self.seen_cpus.contains(&label),
        }
    }

    fn add(&mut self, kind: Kind, row: Result<(Label, Option<u32>, Figures), String>, line: usize) {
        self.rows += 1;
        if self.error.is_some() {
            return;
        }
        if self.rows > MAX_ROWS {
            self.error = Some((line, format!("more than {MAX_ROWS} rows in one interval")));
            return;
        }
        let (label, node, figures) = match row {
            Ok(r) => r,
            Err(why) => {
                self.error = Some((line, why));
                return;
            }
        };
        match (kind, label) {
            (Kind::Node, Label::All) => self.node_all = Some(figures),
            (Kind::Node, Label::Id(node)) => self.nodes.push(LoggedNode { node, figures }),
            (_, Label::All) => self.all = Some(figures),
            (_, Label::Id(cpu)) => self.cpus.push(LoggedCpu { cpu, node, figures }),
        }
        match kind {
            Kind::Node => self.seen_nodes.insert(label),
            _ => self.seen_cpus.insert(label),
        };
    }

    /// The interval, or why it cannot be read; `None` for an `Average:` block that cannot be
    /// read (it is not an interval, and not printed).
    fn finish(self) -> Option<Item> {
        let clock = self.clock.map(Clock);
        if let Some((line, reason)) = self.error {
            return (!self.average).then_some(Item::Unreadable(Unreadable { line, clock, reason }));
        }
        let elapsed_s = match (self.start, self.clock) {
            (Some(a), Some(b)) if !self.since_boot => Some(f64::from((b + 86_400 - a) % 86_400)),
            _ => None,
        };
        let interval = Interval {
            line: self.line,
            clock,
            date: self.date,
            zone: self.zone,
            epoch_s: self.epoch_s,
            elapsed_s,
            since_boot: self.since_boot,
            all: self.all.or(self.node_all),
            cpus: self.cpus,
            nodes: self.nodes,
        };
        Some(if self.average { Item::Average(interval) } else { Item::Interval(interval) })
    }
}

// ---------------------------------------------------------------------------------------------
// mpstat -o JSON, scanned a character at a time so a truncated document still gives the
// intervals it holds, and memory stays one entry deep.

#[derive(Debug)]
struct Capture {
    text: String,
    line: usize,
    depth: usize,
    overflow: bool,
}

#[derive(Debug, Default)]
struct JsonScan {
    depth: usize,
    in_string: bool,
    escaped: bool,
    string: String,
    last_string: Option<String>,
    key: Option<String>,
    stats_depth: Option<usize>,
    capture: Option<Capture>,
    /// The `"sysstat"` key was seen.
    sysstat: bool,
    /// The host's `"date"`.
    date: Option<String>,
}

/// What one character did.
enum JsonEvent {
    None,
    /// A statistics entry is complete.
    Entry(Capture),
    /// The document's outermost value closed.
    End,
}

impl JsonScan {
    fn feed(&mut self, c: char, line: usize) -> JsonEvent {
        if let Some(cap) = &mut self.capture {
            if cap.text.len() < MAX_JSON_ENTRY {
                cap.text.push(c);
            } else {
                cap.overflow = true;
            }
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if c == '\\' {
                self.escaped = true;
                return JsonEvent::None;
            } else if c == '"' {
                self.in_string = false;
                let s = std::mem::take(&mut self.string);
                if self.key.take().as_deref() == Some("date") {
                    self.date = Some(s);
                } else {
                    self.last_string = Some(s);
                }
                return JsonEvent::None;
            }
            if self.string.len() < 256 {
                self.string.push(c);
            }
            return JsonEvent::None;
        }
        match c {
            '"' => {
                self.in_string = true;
                self.string.clear();
            }
            ':' => {
                self.key = self.last_string.take();
                self.sysstat |= self.key.as_deref() == Some("sysstat");
            }
            ',' => {
                self.key = None;
                self.last_string = None;
            }
            '{' | '[' => {
                self.depth += 1;
                if c == '[' && self.key.as_deref() == Some("statistics") {
                    self.stats_depth = Some(self.depth);
                }
                if c == '{' && self.capture.is_none() && self.stats_depth == Some(self.depth - 1) {
                    self.capture = Some(Capture {
                        text: "{".into(),
                        line,
                        depth: self.depth,
                        overflow: false,
                    });
                }
                self.key = None;
                self.last_string = None;
            }
            '}' | ']' => {
                let depth = self.depth;
                self.depth = depth.saturating_sub(1);
                if self.stats_depth.is_some_and(|d| self.depth < d) {
                    self.stats_depth = None;
                }
                self.key = None;
                if c == '}' && self.capture.as_ref().is_some_and(|cap| cap.depth == depth) {
                    if let Some(cap) = self.capture.take() {
                        return JsonEvent::Entry(cap);
                    }
                }
                if self.depth == 0 {
                    return JsonEvent::End;
                }
            }
            _ => {}
        }
        JsonEvent::None
    }
}

/// Rows of one JSON entry; `Ok(None)` for an entry without utilization (interrupts only).
type JsonRows = (Option<u32>, Vec<(Kind, Result<(Label, Option<u32>, Figures), String>)>);

fn json_rows(
    cap: &Capture,
    missing: &mut BTreeSet<&'static str>,
) -> Result<Option<JsonRows>, String> {
    if cap.overflow {
        return Err(format!("a JSON entry longer than {} MiB", MAX_JSON_ENTRY >> 20));
    }
    let v: Value = serde_json::from_str(&cap.text).map_err(|e| format!("not valid JSON ({e})"))?;
    let clock = match v.get("timestamp") {
        Some(Value::String(ts)) => match lead(ts) {
            Some((Lead::Clock(c), rest)) if rest.trim().is_empty() => Some(c),
            _ => return Err(format!("timestamp '{ts}' is not a time of day")),
        },
        _ => None,
    };
    let mut rows = Vec::new();
    let mut any = false;
    for (key, kind, id_key) in [("cpu-load", Kind::Cpu, "cpu"), ("node-load", Kind::Node, "node")] {
        let Some(list) = v.get(key) else { continue };
        let Some(list) = list.as_array() else {
            return Err(format!("\"{key}\" is not a list"));
        };
        any = true;
        for entry in list {
            rows.push((kind, json_row(entry, kind, id_key, missing)));
        }
    }
    Ok(any.then_some((clock, rows)))
}

fn json_row(
    entry: &Value,
    kind: Kind,
    id_key: &str,
    missing: &mut BTreeSet<&'static str>,
) -> Result<(Label, Option<u32>, Figures), String> {
    let id = match entry.get(id_key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return Err(format!("an entry without \"{id_key}\"")),
    };
    let label =
        label(&id).ok_or_else(|| format!("\"{id_key}\": \"{id}\" is not a number or 'all'"))?;
    let what = describe(kind, label);
    // -T adds "node" to each CPU's entry ("" on the all line).
    let node = match (kind, entry.get("node")) {
        (Kind::Cpu, Some(Value::String(s))) if !s.is_empty() => {
            Some(s.parse().map_err(|_| format!("{what}: \"node\": \"{s}\" is not a number"))?)
        }
        _ => None,
    };
    let mut figures = Figures::default();
    for field in Field::ALL {
        match entry.get(field.json_key()) {
            Some(v) => {
                let n = v.as_f64().filter(|n| n.is_finite()).ok_or_else(|| {
                    format!("{what}: \"{}\" is {v}, not a number", field.json_key())
                })?;
                figures.set(field, check_range(&what, field, n)?);
            }
            None if field.required() => {
                return Err(format!("{what}: no \"{}\"", field.json_key()));
            }
            None => {
                missing.insert(field.name());
            }
        }
    }
    Ok((label, node, figures))
}

// ---------------------------------------------------------------------------------------------

/// Reads mpstat output a line at a time; take what it found with [`take_items`](Self::take_items)
/// as you go, and call [`finish`](Self::finish) at the end.
#[derive(Debug, Default)]
pub struct LogParser {
    facts: Facts,
    items: Vec<Item>,
    table: Option<Table>,
    building: Option<Building>,
    /// The header's time, for the interval its rows start.
    header_clock: Option<u32>,
    /// The last interval's time in this run.
    last_clock: Option<u32>,
    anchor: Option<Anchor>,
    json: Option<JsonScan>,
    nonblank: usize,
}

impl LogParser {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn facts(&self) -> &Facts {
        &self.facts
    }

    /// Items completed so far (an interval completes when the next one starts, or at
    /// [`finish`](Self::finish)).
    pub fn take_items(&mut self) -> Vec<Item> {
        std::mem::take(&mut self.items)
    }

    /// Many lines read and none of them mpstat's: no point reading on.
    pub fn hopeless(&self) -> bool {
        !self.facts.mpstat_seen && self.nonblank >= HOPELESS_AFTER
    }

    /// Reads one line (without its line end; a trailing `\r` is ignored).
    pub fn push_line(&mut self, raw: &str) {
        self.facts.lines += 1;
        let n = self.facts.lines;
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let (prefix, rest) = strip_date_prefix(raw);
        if let Some(p) = &prefix {
            self.anchor = Some(Anchor {
                date: p.date,
                sod: Some(p.sod),
                epoch: p.epoch(),
                zone: p.zone.clone(),
            });
        }
        let text = rest.trim();
        if text.is_empty() {
            return;
        }
        self.nonblank += 1;
        if self.facts.first_line.is_none() {
            self.facts.first_line = Some(shorten(raw.trim()));
        }
        if self.json.is_some() || text.starts_with('{') {
            self.json_line(text, n);
            return;
        }
        if let Some((date, count)) = banner(text) {
            self.flush();
            self.facts.mpstat_seen = true;
            self.facts.cpu_count = Some(count);
            self.table = None;
            self.header_clock = None;
            self.last_clock = None;
            if prefix.is_none() {
                if let Some(date) = date {
                    self.anchor = Some(Anchor { date, sod: None, epoch: None, zone: None });
                }
            }
            return;
        }
        let Some((lead, after)) = lead(text) else {
            self.ignore(n, raw);
            return;
        };
        if let Some(table) = header(lead, after, n) {
            if table.kind != Kind::Other {
                self.facts.mpstat_seen = true;
                for f in Field::ALL {
                    if !table.values.contains(&Some(f)) {
                        self.facts.missing_columns.insert(f.name());
                    }
                }
            }
            // A NODE header after the CPU rows of the same interval carries the same time.
            let same =
                self.building.as_ref().is_some_and(|b| b.start.is_some() && b.start == table.clock);
            if !table.average && !same {
                self.header_clock = table.clock;
            }
            self.table = Some(table);
            return;
        }
        let Some(table) = self.table.clone() else {
            self.ignore(n, raw);
            return;
        };
        if table.kind == Kind::Other {
            return;
        }
        // A row names a CPU, a node or `all` after its time; anything else is not mpstat's.
        if split_token(after).and_then(|(t, _)| label(t)).is_none() {
            self.ignore(n, raw);
            return;
        }
        let (clock, average) = match lead {
            Lead::Clock(c) => (Some(c), false),
            Lead::Average => (None, true),
        };
        let parsed = row(&table, after);
        let label = parsed.as_ref().ok().map(|r| r.0);
        let starts_new = match &self.building {
            None => true,
            Some(b) => {
                b.average != average
                    || b.clock != clock
                    || label.is_some_and(|l| b.has(table.kind, l))
            }
        };
        if starts_new {
            self.flush();
            self.start(n, clock, average);
        }
        if let Some(b) = &mut self.building {
            b.add(table.kind, parsed, n);
        }
    }

    /// Ends the input: completes the interval in progress, and a JSON entry cut off.
    pub fn finish(&mut self) {
        self.flush();
        if let Some(scan) = self.json.take() {
            self.facts.json_truncated = true;
            if let Some(cap) = scan.capture {
                self.items.push(Item::Unreadable(Unreadable {
                    line: cap.line,
                    clock: None,
                    reason: "the JSON ends inside this entry (a truncated file?)".into(),
                }));
            }
        }
    }

    fn ignore(&mut self, line: usize, raw: &str) {
        self.facts.ignored_lines += 1;
        if self.facts.first_ignored.is_none() {
            self.facts.first_ignored = Some((line, shorten(raw.trim())));
        }
    }

    fn start(&mut self, line: usize, clock: Option<u32>, average: bool) {
        let (start, since_boot) = if average {
            (None, false)
        } else {
            match self.header_clock.take() {
                Some(h) => (Some(h), Some(h) == clock),
                None => (self.last_clock, false),
            }
        };
        let (date, epoch_s, zone) = match (clock, &mut self.anchor) {
            (Some(c), Some(anchor)) => anchor.place(c),
            _ => (None, None, None),
        };
        if !average {
            self.last_clock = clock;
        }
        self.building = Some(Building {
            line,
            clock,
            average,
            start,
            since_boot,
            all: None,
            node_all: None,
            cpus: Vec::new(),
            nodes: Vec::new(),
            seen_cpus: BTreeSet::new(),
            seen_nodes: BTreeSet::new(),
            rows: 0,
            error: None,
            date,
            epoch_s,
            zone,
        });
    }

    fn flush(&mut self) {
        if let Some(item) = self.building.take().and_then(Building::finish) {
            self.items.push(item);
        }
    }

    fn json_line(&mut self, text: &str, line: usize) {
        if self.json.is_none() {
            self.flush();
            self.table = None;
            self.header_clock = None;
            self.last_clock = None;
        }
        let mut scan = self.json.take().unwrap_or_default();
        let mut ended = false;
        for c in text.chars().chain(std::iter::once('\n')) {
            match scan.feed(c, line) {
                JsonEvent::None => {}
                JsonEvent::Entry(cap) => {
                    // The host's date, unless a date before the lines already placed the log.
                    if let Some(date) = scan.date.take().and_then(|d| banner_date(&d)) {
                        if self.anchor.as_ref().is_none_or(|a| a.epoch.is_none()) {
                            self.anchor = Some(Anchor { date, sod: None, epoch: None, zone: None });
                        }
                    }
                    self.json_entry(&cap);
                }
                JsonEvent::End => {
                    ended = true;
                    break;
                }
            }
        }
        if scan.sysstat {
            self.facts.mpstat_seen = true;
        }
        if !ended {
            self.json = Some(scan);
        }
    }

    fn json_entry(&mut self, cap: &Capture) {
        let rows = match json_rows(cap, &mut self.facts.missing_columns) {
            Ok(Some(rows)) => rows,
            Ok(None) => return,
            Err(reason) => {
                self.items.push(Item::Unreadable(Unreadable {
                    line: cap.line,
                    clock: None,
                    reason,
                }));
                return;
            }
        };
        let (clock, rows) = rows;
        self.start(cap.line, clock, false);
        if let Some(b) = &mut self.building {
            for (kind, row) in rows {
                b.add(kind, row, cap.line);
            }
        }
        self.flush();
    }
}

/// At most 80 characters of a line, for messages.
fn shorten(s: &str) -> String {
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may unwrap
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
    fn twelve_hour_clocks() {
        assert_eq!(lead("12:00:01 AM  all").unwrap().0, Lead::Clock(1));
        assert_eq!(lead("12:00:01 PM  all").unwrap().0, Lead::Clock(12 * 3600 + 1));
        assert_eq!(lead("09:08:06 PM  CPU").unwrap().0, Lead::Clock(21 * 3600 + 8 * 60 + 6));
        assert_eq!(lead("Moyenne:  all").unwrap().0, Lead::Average);
        assert!(lead("13:00:00 PM all").is_none());
        assert!(lead("hello world").is_none());
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

    #[test]
    fn midnight_moves_the_date_on() {
        let log = "\
Linux 6.1 (h) \t12/31/26 \t_x86_64_\t(1 CPU)

23:59:58     CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle
23:59:59     all    1.00    0.00    0.00    0.00    0.00    0.00    0.00    0.00    0.00   99.00
00:00:00     all    2.00    0.00    0.00    0.00    0.00    0.00    0.00    0.00    0.00   98.00
";
        let p = parse(log);
        let v: Vec<_> = p.intervals().map(|i| (i.date.unwrap().to_string(), i.elapsed_s)).collect();
        assert_eq!(
            v,
            [("2026-12-31".to_string(), Some(1.0)), ("2027-01-01".to_string(), Some(1.0))]
        );
    }
}
