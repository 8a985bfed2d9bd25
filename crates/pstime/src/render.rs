//! pstime's text: the original's layout, `  UID    PID  %USR  %SYS COMMAND`, with four significant
//! digits, optionally with the exact `%CPU` and `CPU-ms` columns before `COMMAND`; one-line
//! notes for what the figures leave out.

use std::collections::HashMap;
use std::fmt::Write;

use super::{CpuSource, Lifetime, ProcessCpu, Report};
use measure::FsRoot;

/// How to lay a report out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Layout {
    /// Add `%CPU` (exact, = %USR + %SYS) and `CPU-ms` (exact) before `COMMAND`, and mark
    /// processes that started or exited in the interval.
    pub exact: bool,
    /// Cut the command to this many characters (the original pstime showed 52).
    pub command_width: Option<usize>,
}

/// The original pstime's command width.
pub const PSTIME_COMMAND_WIDTH: usize = 52;

/// A value with four significant digits, as the original pstime prints them: `44.17`, `3.391`,
/// `0.000`, `100.0`; whole numbers from 1000 up.
pub fn sig4(value: f64) -> String {
    let v = if value.is_finite() && value > 0.0 { value } else { 0.0 };
    if v < 1.0 {
        return format!("{v:.3}");
    }
    for decimals in [3usize, 2, 1] {
        let text = format!("{v:.decimals$}");
        let whole = text.find('.').unwrap_or(text.len());
        if whole + decimals <= 4 {
            return text;
        }
    }
    format!("{v:.0}")
}

fn opt_sig4(value: Option<f64>) -> String {
    value.map(sig4).unwrap_or_else(|| "-".into())
}

/// User names by UID, from the root's `etc/passwd` (no NSS: the same in a static binary);
/// unknown UIDs show as numbers.
#[derive(Debug, Clone, Default)]
pub struct UserNames {
    names: HashMap<u32, String>,
}

impl UserNames {
    /// Reads `etc/passwd` under `root`; an unreadable file gives numbers only.
    pub fn load(root: &FsRoot) -> Self {
        let text = std::fs::read_to_string(root.path("etc/passwd")).unwrap_or_default();
        Self::parse(&text)
    }

    /// From passwd(5) text.
    pub fn parse(text: &str) -> Self {
        let mut names = HashMap::new();
        for line in text.lines() {
            let mut fields = line.split(':');
            let (Some(name), Some(_), Some(uid)) = (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            if let Ok(uid) = uid.parse::<u32>() {
                names.entry(uid).or_insert_with(|| name.to_string());
            }
        }
        Self { names }
    }

    pub fn name(&self, uid: Option<u32>) -> String {
        match uid {
            Some(uid) => self.names.get(&uid).cloned().unwrap_or_else(|| uid.to_string()),
            None => "-".into(),
        }
    }
}

/// The header line.
pub fn header(layout: &Layout) -> &'static str {
    if layout.exact {
        "  UID    PID  %USR  %SYS  %CPU   CPU-ms COMMAND"
    } else {
        "  UID    PID  %USR  %SYS COMMAND"
    }
}

fn cut(text: &str, width: Option<usize>) -> &str {
    match width.and_then(|w| text.char_indices().nth(w)) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

fn command_of(p: &ProcessCpu, layout: &Layout) -> String {
    let base = p.command.clone().unwrap_or_else(|| p.comm.to_string());
    let mut text = cut(&base, layout.command_width).to_string();
    if layout.exact {
        match p.lifetime {
            Lifetime::Whole => {}
            Lifetime::Started => text.push_str(" <started>"),
            Lifetime::Exited => text.push_str(" <exited>"),
            Lifetime::StartedAndExited => text.push_str(" <started+exited>"),
        }
    }
    text
}

/// The table: a header and one line per process whose CPU time is known, highest first; with
/// threads in the report, each thread on its own line under its process (exact layout only).
pub fn render_report(report: &Report, layout: &Layout, users: &UserNames) -> String {
    let mut out = String::new();
    out.push_str(header(layout));
    out.push('\n');
    for p in report.processes.iter().filter(|p| p.cpu_ns.is_some()) {
        let user = users.name(p.uid);
        let (usr, sys) = (opt_sig4(p.usr_pct), opt_sig4(p.sys_pct));
        let command = command_of(p, layout);
        if layout.exact {
            let ms = p.cpu_ns.map(|ns| ns as f64 / 1e6);
            let _ = writeln!(
                out,
                "{user:>5} {:>6} {usr:>5} {sys:>5} {:>5} {:>8} {command}",
                p.pid,
                opt_sig4(p.cpu_pct),
                opt_sig4(ms)
            );
            // A one-thread process's thread is the process again.
            let alone = matches!(p.threads.as_slice(), [t] if t.tid == p.pid);
            for t in p.threads.iter().filter(|_| !alone) {
                let ms = t.cpu_ns.map(|ns| ns as f64 / 1e6);
                let mark = match t.lifetime {
                    Lifetime::Whole => "",
                    Lifetime::Started => " <started>",
                    Lifetime::Exited => " <exited>",
                    Lifetime::StartedAndExited => " <started+exited>",
                };
                let _ = writeln!(
                    out,
                    "{:>5} {:>6} {:>5} {:>5} {:>5} {:>8}   \\_ {}{mark}",
                    "",
                    t.tid,
                    opt_sig4(t.usr_pct),
                    opt_sig4(t.sys_pct),
                    opt_sig4(t.cpu_pct),
                    opt_sig4(ms),
                    t.comm
                );
            }
        } else {
            let _ = writeln!(out, "{user:>5} {:>6} {usr:>5} {sys:>5} {command}", p.pid);
        }
    }
    out
}

/// What the table leaves out or rests on, one line each.
pub fn notes(report: &Report) -> Vec<String> {
    let mut notes = Vec::new();
    if !report.exits_traced {
        let why = report.exit_tracing_unavailable.as_deref().unwrap_or("no exit tracer was given");
        notes.push(format!(
            "short-lived processes (started and exited inside the interval) not counted: needs BPF \
             exit tracing (sched_process_exit): {why}"
        ));
    }
    let unmeasured: Vec<&ProcessCpu> =
        report.processes.iter().filter(|p| p.cpu_ns.is_none()).collect();
    if !unmeasured.is_empty() {
        let mut list: Vec<String> =
            unmeasured.iter().take(8).map(|p| format!("{} ({})", p.pid, p.comm)).collect();
        if unmeasured.len() > 8 {
            list.push(format!("and {} more", unmeasured.len() - 8));
        }
        notes.push(format!(
            "{} exited during the interval; CPU time after the first sample unknown without exit \
             records: {}",
            plural(unmeasured.len(), "process", "processes"),
            list.join(", ")
        ));
    }
    let lower = report.processes.iter().filter(|p| p.cpu_lower_bound).count();
    if lower > 0 {
        notes.push(format!(
            "CPU time of {} is a lower bound: threads that exited in the interval took their last \
             part with them",
            plural(lower, "process", "processes")
        ));
    }
    match report.source {
        CpuSource::ProcessClock | CpuSource::Schedstat => {}
        CpuSource::StatTicks => notes.push(format!(
            "this kernel keeps no scheduler statistics (CONFIG_SCHED_INFO): CPU times are utime+stime \
             in 1/{} s",
            report.ticks_per_s
        )),
    }
    if report.counts.unreadable > 0 {
        notes.push(format!(
            "{} could not be read (hidepid or permissions)",
            plural(report.counts.unreadable as usize, "process", "processes")
        ));
    }
    notes
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_significant_digits_as_the_original() {
        assert_eq!(sig4(44.1749), "44.17");
        assert_eq!(sig4(3.3912), "3.391");
        assert_eq!(sig4(2.517), "2.517");
        assert_eq!(sig4(0.0), "0.000");
        assert_eq!(sig4(0.00004), "0.000");
        assert_eq!(sig4(9.99971), "10.00");
        assert_eq!(sig4(99.996), "100.0");
        assert_eq!(sig4(500.04), "500.0");
        assert_eq!(sig4(12345.6), "12346");
        assert_eq!(sig4(f64::NAN), "0.000");
    }

    #[test]
    fn passwd_names() {
        let u = UserNames::parse(
            "root:x:0:0:root:/root:/bin/sh\nmysql:x:27:27::/var:/bin/false\nbad\n",
        );
        assert_eq!(u.name(Some(27)), "mysql");
        assert_eq!(u.name(Some(4242)), "4242");
        assert_eq!(u.name(None), "-");
    }

    #[test]
    fn commands_are_cut_by_characters() {
        assert_eq!(cut("héllo world", Some(4)), "héll");
        assert_eq!(cut("short", Some(52)), "short");
    }
}
