//! `cpu util --from FILE`: an mpstat log read with [`super::mpstat_log`], each interval turned
//! into a [`Report`] and printed by the live command's renderer ([`render::emit`]) — the same
//! table, `--busy-only`, one JSON object per interval — with per-node lines when the log has
//! them (`-N`, or `-T`'s `NODE` column) or [`NodeCpus`] says which CPUs make a node.
//!
//! The figures are mpstat's own: the all-CPU line is mpstat's `all` line (computed from the
//! summed ticks, which a mean of the per-CPU lines is not), and only when a log has none is it the
//! mean of the CPUs listed (said once). A node made with `--node-cpus` is the mean of its CPUs'
//! lines. Intervals that cannot be read are named with the reason, one line each, and counted at
//! the end; mpstat's `Average:` block is read, and not printed.
//!
//! ```
//! use cpuacct::cpuutil::{replay, render::Sink, Options};
//! let log = b"21:13:25     CPU    %usr   %nice    %sys %iowait    %irq   %soft  %steal  %guest  %gnice   %idle
//! 21:13:26     all   50.00    0.00    0.00    0.00    0.00    0.00    0.00    0.00    0.00   50.00
//! 21:13:26       0  100.00    0.00    0.00    0.00    0.00    0.00    0.00    0.00    0.00    0.00
//! 21:13:26       1    0.00    0.00    0.00    0.00    0.00    0.00    0.00    0.00    0.00  100.00
//! ";
//! let (mut out, mut notes) = (String::new(), Vec::new());
//! let mut write = |t: &str| { out.push_str(t); Ok(true) };
//! let mut note = |n: &str| notes.push(n.to_string());
//! let mut sink = Sink { out: &mut write, note: &mut note };
//! let opts = Options { busy_only: true };
//! let summary = replay::replay(&log[..], "log", &opts, None, false, &mut sink).unwrap();
//! assert_eq!(summary.intervals, 1);
//! assert!(out.contains("    0  100.00") && !out.contains("    1    0.00"));
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use super::mpstat_log::{Figures, Interval, Item, LogParser};
use super::render::{self, Format, Sink};
use super::{hide_idle, node_util, CpuUtil, LoggedAt, NodeUtil, Options, Report};
use measure::UsageError;

/// Longest line read whole; the rest of a longer one is dropped (and said).
const MAX_LINE: usize = 16 << 20;
/// Largest CPU number `--node-cpus` takes.
const MAX_CPU: u32 = 1 << 20;

/// Which CPUs make each NUMA node: `--node-cpus 0-31,32-63` (nodes in order, separated by `,`;
/// a node's ranges joined with `+`: `0-15+32-47,16-31+48-63`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeCpus {
    nodes: Vec<Vec<u32>>,
}

impl NodeCpus {
    /// Parses the flag's value; a CPU in two nodes, a range that runs backwards or an empty node
    /// is a usage error that shows the form.
    pub fn parse(text: &str) -> Result<NodeCpus, UsageError> {
        let bad = |why: String| {
            UsageError::Message(format!(
                "malformed --node-cpus '{text}': {why} (expected each node's CPUs, nodes \
                 separated by ',' as in 0-31,32-63; join one node's ranges with '+' as in \
                 0-15+32-47,16-31+48-63)"
            ))
        };
        let id = |s: &str| -> Result<u32, UsageError> {
            let s = s.trim();
            match s.parse::<u32>() {
                Ok(v) if v <= MAX_CPU && !s.starts_with('+') => Ok(v),
                Ok(_) => Err(bad(format!("CPU {s} is too large"))),
                Err(_) => Err(bad(format!("'{s}' is not a CPU number"))),
            }
        };
        let mut nodes = Vec::new();
        let mut seen = BTreeSet::new();
        for (n, node) in text.split(',').enumerate() {
            if node.trim().is_empty() {
                return Err(bad(format!("node {n} has no CPUs")));
            }
            let mut cpus = Vec::new();
            for piece in node.split('+') {
                let (lo, hi) = match piece.split_once('-') {
                    Some((a, b)) => (id(a)?, id(b)?),
                    None => {
                        let v = id(piece)?;
                        (v, v)
                    }
                };
                if lo > hi {
                    return Err(bad(format!(
                        "range '{}' runs backwards (write low-high)",
                        piece.trim()
                    )));
                }
                for cpu in lo..=hi {
                    if !seen.insert(cpu) {
                        return Err(bad(format!("CPU {cpu} is in two nodes")));
                    }
                    cpus.push(cpu);
                }
            }
            cpus.sort_unstable();
            nodes.push(cpus);
        }
        Ok(NodeCpus { nodes })
    }

    /// Each node's CPUs, sorted; node N is the N-th.
    pub fn nodes(&self) -> &[Vec<u32>] {
        &self.nodes
    }
}

/// Why a log could not be replayed (all runtime failures: exit status 1).
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("cannot read {what}: {source}")]
    Read { what: String, source: io::Error },
    #[error(
        "{what} is not mpstat output: expected the text of `mpstat -P ALL INTERVAL [COUNT]` (a \
         header line naming CPU, %usr, %sys and %idle) or of `mpstat -o JSON`; {first}"
    )]
    NotMpstat { what: String, first: String },
    #[error("{what}: none of its {count} intervals could be read (each one's reason is above)")]
    NothingReadable { what: String, count: usize },
    #[error(
        "{what} has mpstat's first line but no utilization interval (only interrupt tables, or \
         cut short?)"
    )]
    NoIntervals { what: String },
    #[error("writing the output: {0}")]
    Write(io::Error),
}

impl measure::Usage for ReplayError {
    /// Never the command line's fault: exit status 1.
    fn is_usage(&self) -> bool {
        false
    }
}

/// What a replay read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Intervals printed.
    pub intervals: usize,
    pub unreadable: usize,
    /// mpstat `Average:` blocks read (not printed).
    pub averages: usize,
    /// The reader went away before the end (`| head`).
    pub stopped_early: bool,
}

/// Reads the log at `from` (`-`: standard input) and prints it as `cpu util` would; notes and
/// unreadable intervals go to `sink.note`.
pub fn run(
    from: &Path,
    opts: &Options,
    node_cpus: Option<&NodeCpus>,
    json: bool,
    sink: &mut Sink<'_>,
) -> Result<Summary, ReplayError> {
    if from == Path::new("-") {
        return replay(io::stdin().lock(), "standard input", opts, node_cpus, json, sink);
    }
    let what = from.display().to_string();
    let file =
        File::open(from).map_err(|source| ReplayError::Read { what: what.clone(), source })?;
    replay(BufReader::new(file), &what, opts, node_cpus, json, sink)
}

/// [`run`] on any reader; `what` names it in messages.
pub fn replay(
    mut reader: impl BufRead,
    what: &str,
    opts: &Options,
    node_cpus: Option<&NodeCpus>,
    json: bool,
    sink: &mut Sink<'_>,
) -> Result<Summary, ReplayError> {
    let mut parser = LogParser::new();
    let mut state = State { summary: Summary::default(), seen_cpus: BTreeSet::new(), mean_all: 0 };
    let mut buf = Vec::new();
    let mut line_no = 0usize;
    'read: loop {
        buf.clear();
        let (got, long) = read_line_capped(&mut reader, &mut buf, MAX_LINE)
            .map_err(|source| ReplayError::Read { what: what.to_string(), source })?;
        if !got {
            break;
        }
        line_no += 1;
        if long {
            (sink.note)(&format!(
                "line {line_no} is longer than {} MiB: only its start is read",
                MAX_LINE >> 20
            ));
        }
        let text = String::from_utf8_lossy(&buf);
        let line = text.strip_suffix('\n').unwrap_or(&text);
        parser.push_line(line);
        for item in parser.take_items() {
            if !state.item(item, opts, node_cpus, json, sink)? {
                state.summary.stopped_early = true;
                break 'read;
            }
        }
        if parser.hopeless() {
            break;
        }
    }
    if !state.summary.stopped_early && !parser.hopeless() {
        parser.finish();
        for item in parser.take_items() {
            if !state.item(item, opts, node_cpus, json, sink)? {
                state.summary.stopped_early = true;
                break;
            }
        }
    }
    let facts = parser.facts();
    if !facts.mpstat_seen {
        let first = match &facts.first_line {
            Some(line) => format!("its first line reads {line:?}"),
            None => "it is empty".into(),
        };
        return Err(ReplayError::NotMpstat { what: what.to_string(), first });
    }
    let s = state.summary;
    if s.stopped_early {
        return Ok(s);
    }
    if s.unreadable > 0 {
        (sink.note)(&format!(
            "{} of {} intervals could not be read",
            s.unreadable,
            s.unreadable + s.intervals
        ));
    }
    if s.intervals == 0 {
        return Err(if s.unreadable > 0 {
            ReplayError::NothingReadable { what: what.to_string(), count: s.unreadable }
        } else {
            ReplayError::NoIntervals { what: what.to_string() }
        });
    }
    if facts.ignored_lines > 0 {
        let first = match &facts.first_ignored {
            Some((line, text)) => format!(" (the first, line {line}: {text:?})"),
            None => String::new(),
        };
        (sink.note)(&format!(
            "{} line{} not mpstat's, skipped{first}",
            facts.ignored_lines,
            if facts.ignored_lines == 1 { " is" } else { "s are" }
        ));
    }
    if !facts.missing_columns.is_empty() {
        let cols: Vec<&str> = facts.missing_columns.iter().copied().collect();
        (sink.note)(&format!(
            "the log has no {} column (an older sysstat): shown as 0.00",
            cols.join(", ")
        ));
    }
    if facts.json_truncated {
        (sink.note)(
            "the JSON ends before the document does (a truncated file?): read what it holds",
        );
    }
    if state.mean_all > 0 {
        (sink.note)(&format!(
            "{} interval{} no all-CPU line (mpstat -P without ALL?): the all line shown is the \
             mean of the CPUs listed",
            state.mean_all,
            if state.mean_all == 1 { " has" } else { "s have" }
        ));
    }
    if let Some(nodes) = node_cpus {
        let named: BTreeSet<u32> = nodes.nodes().iter().flatten().copied().collect();
        let never: Vec<u32> = named.difference(&state.seen_cpus).copied().collect();
        if !never.is_empty() {
            (sink.note)(&format!("--node-cpus: CPU {} never appear in the log", ranges(&never)));
        }
        let orphans: Vec<u32> = state.seen_cpus.difference(&named).copied().collect();
        if !orphans.is_empty() {
            (sink.note)(&format!("CPU {} are in no node of --node-cpus", ranges(&orphans)));
        }
    }
    Ok(s)
}

struct State {
    summary: Summary,
    seen_cpus: BTreeSet<u32>,
    mean_all: usize,
}

impl State {
    /// Handles one parsed item; `Ok(false)` when the reader has gone away.
    fn item(
        &mut self,
        item: Item,
        opts: &Options,
        node_cpus: Option<&NodeCpus>,
        json: bool,
        sink: &mut Sink<'_>,
    ) -> Result<bool, ReplayError> {
        match item {
            Item::Interval(interval) => {
                self.seen_cpus.extend(interval.cpus.iter().map(|c| c.cpu));
                let (report, mean) = to_report(&interval, opts, node_cpus);
                self.mean_all += usize::from(mean);
                let format = Format { json, subsecond: false, first: self.summary.intervals == 0 };
                self.summary.intervals += 1;
                render::emit(&report, format, sink).map_err(ReplayError::Write)
            }
            Item::Average(_) => {
                self.summary.averages += 1;
                Ok(true)
            }
            Item::Unreadable(u) => {
                self.summary.unreadable += 1;
                (sink.note)(&u.to_string());
                Ok(true)
            }
        }
    }
}

/// A logged line as a [`CpuUtil`] (no ticks: a log gives percentages).
fn util(cpu: Option<u32>, f: &Figures) -> CpuUtil {
    CpuUtil {
        cpu,
        ticks: 0,
        usr: f.usr,
        nice: f.nice,
        sys: f.sys,
        iowait: f.iowait,
        irq: f.irq,
        soft: f.soft,
        steal: f.steal,
        guest: f.guest,
        gnice: f.gnice,
        idle: f.idle,
        busy: f.busy(),
        went_back: false,
        event: None,
    }
}

/// One interval as the live command's report; true when its all line had to be the mean of its
/// CPUs'.
pub fn to_report(i: &Interval, opts: &Options, node_cpus: Option<&NodeCpus>) -> (Report, bool) {
    let mut cpus = Vec::with_capacity(i.cpus.len());
    let mut offlined = Vec::new();
    let mut by_node: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for c in &i.cpus {
        // sysstat 11 prints an offline CPU as zeros, %idle included.
        if c.figures.is_offline() {
            offlined.push(c.cpu);
            continue;
        }
        if let Some(node) = c.node {
            by_node.entry(node).or_default().push(cpus.len());
        }
        cpus.push(util(Some(c.cpu), &c.figures));
    }
    let mean_of = |members: &[&CpuUtil]| node_util(0, members).map(|n| n.util);
    let (all, mean) = match &i.all {
        Some(f) => (util(None, f), false),
        None => {
            let members: Vec<&CpuUtil> = cpus.iter().collect();
            let nodes: Vec<CpuUtil> = i.nodes.iter().map(|n| util(None, &n.figures)).collect();
            let node_refs: Vec<&CpuUtil> = nodes.iter().collect();
            let all = mean_of(&members)
                .or_else(|| mean_of(&node_refs))
                .unwrap_or_else(|| util(None, &Figures::default()));
            (all, true)
        }
    };
    let nodes: Vec<NodeUtil> = match node_cpus {
        Some(given) => given
            .nodes()
            .iter()
            .zip(0u32..)
            .filter_map(|(set, node)| {
                let members: Vec<&CpuUtil> = cpus
                    .iter()
                    .filter(|c| c.cpu.is_some_and(|id| set.binary_search(&id).is_ok()))
                    .collect();
                node_util(node, &members)
            })
            .collect(),
        None if !i.nodes.is_empty() => i
            .nodes
            .iter()
            .filter(|n| !n.figures.is_offline())
            .map(|n| NodeUtil { node: n.node, cpus: Vec::new(), util: util(None, &n.figures) })
            .collect(),
        None => by_node
            .iter()
            .filter_map(|(&node, idx)| {
                let members: Vec<&CpuUtil> = idx.iter().map(|&k| &cpus[k]).collect();
                node_util(node, &members)
            })
            .collect(),
    };
    let hidden_idle = hide_idle(&mut cpus, opts);
    let logged_at = LoggedAt {
        date: i.date.map(|d| d.to_string()),
        time: i.clock.map_or_else(|| "--:--:--".to_string(), |c| c.to_string()),
        zone: i.zone.clone(),
    };
    let report = Report {
        epoch_s: i.epoch_s,
        elapsed_s: i.elapsed_s.unwrap_or(0.0),
        since_boot: i.since_boot,
        ticks_per_s: 0,
        all,
        cpus,
        nodes,
        hidden_idle,
        onlined: Vec::new(),
        offlined,
        context_switches_per_s: None,
        logged_at: Some(logged_at),
    };
    (report, mean)
}

/// Reads one line (with its `\n`) into `buf`, keeping at most `cap` bytes: (anything read,
/// longer than `cap`).
fn read_line_capped(
    r: &mut impl BufRead,
    buf: &mut Vec<u8>,
    cap: usize,
) -> io::Result<(bool, bool)> {
    let (mut any, mut long) = (false, false);
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok((any, long));
        }
        any = true;
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = cap.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        long |= take > room;
        r.consume(take);
        if done {
            return Ok((true, long));
        }
    }
}

/// `0-3,8` for a sorted list.
fn ranges(ids: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        out.push(if i == j { ids[i].to_string() } else { format!("{}-{}", ids[i], ids[j]) });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_cpus() {
        let n = NodeCpus::parse("0-3,4-7").unwrap();
        assert_eq!(n.nodes(), [vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        let n = NodeCpus::parse("0-1+4-5, 2-3+6-7").unwrap();
        assert_eq!(n.nodes(), [vec![0, 1, 4, 5], vec![2, 3, 6, 7]]);
        for bad in ["", "0-3,", "3-0", "0-3,2-5", "a", "0-99999999", "1-", "+1"] {
            let e = NodeCpus::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with("malformed --node-cpus"), "{bad}: {e}");
        }
    }

    #[test]
    fn long_lines_are_cut() {
        let mut r = &b"abcdef\nxy\nlast"[..];
        let mut buf = Vec::new();
        assert_eq!(read_line_capped(&mut r, &mut buf, 3).unwrap(), (true, true));
        assert_eq!(buf, b"abc");
        buf.clear();
        assert_eq!(read_line_capped(&mut r, &mut buf, 3).unwrap(), (true, false));
        assert_eq!(buf, b"xy\n");
        buf.clear();
        assert_eq!(read_line_capped(&mut r, &mut buf, 9).unwrap(), (true, false));
        assert_eq!(buf, b"last");
        buf.clear();
        assert_eq!(read_line_capped(&mut r, &mut buf, 9).unwrap(), (false, false));
    }

    #[test]
    fn ranges_are_compact() {
        assert_eq!(ranges(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
    }
}
