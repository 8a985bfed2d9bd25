//! The parser: [`LogParser`], and the intervals it puts together.

use std::collections::BTreeSet;

use super::dates::{banner_date, split_token, strip_date_prefix, Clock, Date};
use super::json::{json_rows, Capture, JsonEvent, JsonScan};
use super::text::{banner, header, label, lead, row, Kind, Label, Lead, Table};
use super::{
    Facts, Field, Figures, Interval, Item, LoggedCpu, LoggedNode, Unreadable, HOPELESS_AFTER,
    MAX_ROWS,
};

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
