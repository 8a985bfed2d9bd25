//! Utilization as text: mpstat's column order with two decimals, `%idle` last (so the old
//! `grep -v ' 100.00$'` trick still finds idle CPUs), and the event-based columns appended when
//! present. [`emit`] is the one way an interval is printed, live or read from a log: text or one
//! JSON object per line, notes through the caller's sink.

use std::fmt::Write;
use std::io;

use serde::Serialize;

use super::{CpuUtil, Report};
use measure::time::Stamp;

const FIGURES: [&str; 10] =
    ["%usr", "%nice", "%sys", "%iowait", "%irq", "%soft", "%steal", "%guest", "%gnice", "%idle"];

/// The header line (with `events`: the sampled-vs-event columns too).
pub fn header(stamp: &Stamp, events: bool) -> String {
    header_named(stamp, "CPU", events)
}

fn header_named(stamp: &Stamp, what: &str, events: bool) -> String {
    let mut out = format!("{:<w$} {what:>4}", stamp.clock, w = stamp_width(stamp));
    for name in FIGURES {
        let _ = write!(out, " {name:>7}");
    }
    if events {
        let _ = write!(out, " {:>8} {:>8} {:>7}", "%busy-tk", "%busy-ev", "diff");
    }
    out
}

fn stamp_width(stamp: &Stamp) -> usize {
    stamp.clock.len().max(8)
}

fn row(out: &mut String, stamp: &Stamp, label: &str, u: &CpuUtil, events: bool) {
    let _ = write!(out, "{:<w$} {label:>4}", stamp.clock, w = stamp_width(stamp));
    for v in [u.usr, u.nice, u.sys, u.iowait, u.irq, u.soft, u.steal, u.guest, u.gnice, u.idle] {
        let _ = write!(out, " {v:>7.2}");
    }
    if events {
        match &u.event {
            Some(e) => {
                let mark = if e.differs() { " !" } else { "" };
                let _ = write!(
                    out,
                    " {:>8.2} {:>8.2} {:>+7.2}{mark}",
                    u.busy, e.busy_pct, e.sampled_minus_event_pct
                );
            }
            None => {
                let _ = write!(out, " {:>8.2} {:>8} {:>7}", u.busy, "-", "-");
            }
        }
    }
    out.push('\n');
}

fn cpu_label(u: &CpuUtil) -> String {
    match u.cpu {
        Some(n) => n.to_string(),
        None => "all".into(),
    }
}

/// One report: header, the all-CPU line, then each CPU shown; then, when the report has
/// per-node figures, a `NODE` header and a line per node (as `mpstat -N` prints them). Event
/// columns appear when any line has event figures.
pub fn render_report(report: &Report, stamp: &Stamp) -> String {
    let events = report.all.event.is_some() || report.cpus.iter().any(|c| c.event.is_some());
    let mut out = header(stamp, events);
    out.push('\n');
    row(&mut out, stamp, "all", &report.all, events);
    for cpu in &report.cpus {
        row(&mut out, stamp, &cpu_label(cpu), cpu, events);
    }
    if !report.nodes.is_empty() {
        out.push_str(&header_named(stamp, "NODE", events));
        out.push('\n');
        for node in &report.nodes {
            row(&mut out, stamp, &node.node.to_string(), &node.util, events);
        }
    }
    out
}

/// The time a report is shown at: the log's own clock for a report read from a log, else the
/// local time of its end (with milliseconds when `subsecond`).
pub fn stamp_for(report: &Report, subsecond: bool) -> Stamp {
    match &report.logged_at {
        Some(at) => {
            let epoch = report.epoch_s.map(|e| format!("{}", e.floor() as i64)).unwrap_or_default();
            Stamp::fixed(&at.time, &epoch)
        }
        None => Stamp::local(report.epoch_s.unwrap_or(0.0), subsecond),
    }
}

/// How [`emit`] prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    /// One JSON object per line instead of the table.
    pub json: bool,
    /// Milliseconds in the time column (live sub-second intervals).
    pub subsecond: bool,
    /// The first report of a run: no blank line before the table, the column legend noted.
    pub first: bool,
}

/// Where [`emit`] writes: `out` takes stdout text and answers `Ok(false)` when the reader has
/// gone away; `note` takes one stderr line (without a program name).
#[allow(missing_debug_implementations)] // two closures
pub struct Sink<'a> {
    pub out: &'a mut dyn FnMut(&str) -> io::Result<bool>,
    pub note: &'a mut dyn FnMut(&str),
}

/// Prints one interval — the live command's and `--from`'s — its notes first (the column
/// legend only with the first report); `Ok(false)` when the reader has gone away.
pub fn emit(report: &Report, format: Format, sink: &mut Sink<'_>) -> io::Result<bool> {
    for note in notes(report) {
        if format.first || !note.starts_with("%busy-tk") {
            (sink.note)(&note);
        }
    }
    let text = if format.json {
        let mut line = serde_json::to_string(report).map_err(io::Error::other)?;
        line.push('\n');
        line
    } else {
        let gap = if format.first { "" } else { "\n" };
        format!("{gap}{}", render_report(report, &stamp_for(report, format.subsecond)))
    };
    (sink.out)(&text)
}

/// Remarks about a report that belong on their own lines (hot-plugged CPUs, counters that
/// stepped back, how the event columns compare).
pub fn notes(report: &Report) -> Vec<String> {
    let mut notes = Vec::new();
    let list = |cpus: &[u32]| cpus.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    if !report.onlined.is_empty() {
        notes.push(format!(
            "CPU {} came online during the interval: left out until the next one",
            list(&report.onlined)
        ));
    }
    if !report.offlined.is_empty() {
        let when = match &report.logged_at {
            Some(at) => format!("the {} interval of the log", at.time),
            None => "the interval".into(),
        };
        notes.push(format!("CPU {} went offline during {when}: left out", list(&report.offlined)));
    }
    let back: Vec<u32> = report.cpus.iter().filter(|c| c.went_back).filter_map(|c| c.cpu).collect();
    if !back.is_empty() {
        notes.push(format!(
            "CPU {}: a /proc/stat time went backwards (tickless idle/iowait); counted as 0",
            list(&back)
        ));
    }
    if report.all.event.is_some() {
        notes.push(
            "%busy-tk: tick-sampled (/proc/stat); %busy-ev: measured at every context switch; \
             diff = tk - ev, '!' where they disagree by more than a tenth"
                .into(),
        );
    }
    notes
}

/// A command run under `cpu util -- COMMAND`: what ran, how it ended, its own CPU time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandRun {
    pub argv: Vec<String>,
    /// `exited 0`, `exited 3`, `killed by signal 9`.
    pub status: String,
    /// The exit code when it exited normally.
    pub exit_code: Option<i32>,
    /// From just before the spawn to just after the wait.
    pub wall_s: f64,
    /// CPU time of the command and the descendants it waited for (`getrusage(RUSAGE_CHILDREN)`):
    /// the total is exact, the user/system split tick-sampled.
    pub user_s: f64,
    pub system_s: f64,
}

/// The line printed before a command's utilization table.
pub fn command_line(run: &CommandRun) -> String {
    format!(
        "command: {} ({}; {:.3} s wall, {:.3} s user + {:.3} s system CPU)",
        run.argv.join(" "),
        run.status,
        run.wall_s,
        run.user_s,
        run.system_s
    )
}
