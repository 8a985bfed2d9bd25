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

mod dates;
mod json;
mod parser;
mod text;

pub use dates::{Clock, Date};
pub use parser::LogParser;

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

#[cfg(test)]
mod tests {
    use super::*;

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
