//! `platscope io pattern`: the monitor. Attach, then every INTERVAL turn two snapshots into one
//! [`Interval`] (per filesystem and, with `--per-file`, the busiest files) and print it as it ends
//! — the DTrace random-vs-sequential I/O script's table, or one JSON object per line. Ctrl-C prints
//! the interval so far; with `--pid` the run ends when that process does.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use clap::Args;
use experiment::output::write_out;
use experiment::{Format, Globals, Tool};
use measure::Classified;
use serde::Serialize;

use crate::mounts::{kernel_dev_of, KernelDev, MountTable};
use crate::pattern::{self, Counts, FileInterval, FsInterval};
use crate::tracer::{Options, Snapshot, Tracer};

/// Reads and writes per filesystem split into sequential, random and page (mmap) I/O,
/// with lookups, readdir, getattr/setattr, create/remove and other calls per second
/// (the table of a DTrace script for Solaris that told random from sequential I/O). Needs root:
/// BPF on tracepoints.
#[derive(Debug, Args)]
pub struct PatternArgs {
    /// Seconds per sample (fractions allowed).
    #[arg(value_name = "INTERVAL", default_value = "1", value_parser = measure::args::parse_interval)]
    pub interval: Duration,
    /// Number of samples (default: until Ctrl-C).
    #[arg(value_name = "COUNT", value_parser = measure::args::parse_count, allow_negative_numbers = true)]
    pub count: Option<u64>,
    /// Only the filesystem holding this path (shown even when idle).
    #[arg(long = "fs", value_name = "MOUNT")]
    pub fs: Option<PathBuf>,
    /// Only this process (all its threads).
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,
    /// Only tasks with this command name (as /proc/PID/comm shows it).
    #[arg(long, value_name = "NAME")]
    pub comm: Option<String>,
    /// Only tasks in this cgroup v2 directory or below it (absolute, or relative to where
    /// cgroup2 is mounted).
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<PathBuf>,
    /// Count a forward gap of up to this many bytes as sequential (k, M suffixes allowed).
    #[arg(long, value_name = "BYTES", default_value = "0", value_parser = parse_tolerance)]
    pub tolerance: u64,
    /// Also list the busiest files (default 10) with their sequential share.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "10",
          value_parser = measure::args::parse_count)]
    pub per_file: Option<u64>,
    /// Bench only: attach one empty program at sys_exit instead, count nothing (the floor of
    /// tracing's cost; bench/io_pattern_overhead.sh).
    #[arg(long, hide = true)]
    pub empty_programs: bool,
}

fn parse_tolerance(text: &str) -> Result<u64, String> {
    if text.trim() == "0" {
        return Ok(0);
    }
    topo::units::parse_bytes(text).map_err(|e| e.to_string())
}

/// `platscope io pattern`.
#[derive(Debug)]
pub struct IoPattern;

impl Tool for IoPattern {
    const PATH: &'static [&'static str] = &["io", "pattern"];
    const ABOUT: &'static str = "Reads and writes per filesystem split into sequential, random \
                                 and page (mmap) I/O, with lookups, readdir, getattr/setattr, \
                                 create/remove and other calls per second (the table of a DTrace \
                                 script for Solaris that told random from sequential I/O). Needs \
                                 root: BPF on tracepoints";
    type Args = PatternArgs;

    fn run(args: &PatternArgs, globals: &Globals) -> Result<(), Classified> {
        if globals.format == Format::Csv {
            return Err(Classified::usage(
                "io pattern has no CSV form; use --json (one object per interval) or the text",
            ));
        }
        let fs_filter = match &args.fs {
            Some(path) => Some(
                std::fs::metadata(path)
                    .map(|m| kernel_dev_of(std::os::unix::fs::MetadataExt::dev(&m)))
                    .map_err(|reason| crate::Error::Filesystem { path: path.clone(), reason })?,
            ),
            None => None,
        };
        let options = Options {
            pid: args.pid,
            comm: args.comm.clone(),
            cgroup: args.cgroup.clone(),
            tolerance: args.tolerance,
            empty_programs: args.empty_programs,
            file_slots: None,
        };
        measure::stop::install();
        crate::tracer::trace(&options, |tracer| {
            sample_loop(tracer, args, fs_filter, globals.format)
        })?
    }
}

/// One interval: what is printed, as text or as one JSON line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interval {
    pub seconds: f64,
    pub end_epoch_s: i64,
    pub filesystems: Vec<FsInterval>,
    /// The busiest files, with `--per-file` (else empty and not shown).
    pub files: Vec<FileInterval>,
    /// What the tracer said at attach time (first interval only).
    pub notes: Vec<String>,
    #[serde(skip)]
    pub per_file: bool,
}

impl Interval {
    /// Per filesystem (the one of `fs_filter` even when idle; others only when they saw I/O,
    /// and only devices in the mount table) and the `per_file` busiest files, between two
    /// snapshots `seconds` apart.
    pub fn between(
        mounts: &MountTable,
        previous: &Snapshot,
        now: &Snapshot,
        seconds: f64,
        fs_filter: Option<KernelDev>,
        per_file: Option<u64>,
    ) -> Self {
        let zero = Counts::default();
        let devs: Vec<KernelDev> = match fs_filter {
            Some(dev) => vec![dev],
            None => now.per_fs.keys().copied().collect(),
        };
        let mut filesystems: Vec<FsInterval> = devs
            .into_iter()
            .filter_map(|dev| {
                let counts = now
                    .per_fs
                    .get(&dev)
                    .unwrap_or(&zero)
                    .since(previous.per_fs.get(&dev).unwrap_or(&zero));
                // Devices outside the mount table (sockets, pipes, anonymous inodes) are not
                // filesystems anyone asked about.
                let mount = mounts.mount_of(dev)?;
                (fs_filter.is_some() || !counts.is_zero()).then(|| {
                    let device = format!("{}:{}", mount.major, mount.minor);
                    FsInterval::new(&mount.mount_point, &mount.fstype, &device, counts, seconds)
                })
            })
            .collect();
        filesystems.sort_by(|a, b| a.mount_point.cmp(&b.mount_point));
        let files = match per_file {
            Some(top) => {
                let mut all = now.files_since(previous);
                if let Some(dev) = fs_filter {
                    let point = mounts.mount_of(dev).map(|m| m.mount_point.clone());
                    all.retain(|f| Some(&f.mount_point) == point.as_ref());
                }
                pattern::top_files(all, usize::try_from(top).unwrap_or(usize::MAX))
            }
            None => Vec::new(),
        };
        let end_epoch_s = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        Self {
            seconds,
            end_epoch_s,
            filesystems,
            files,
            notes: Vec::new(),
            per_file: per_file.is_some(),
        }
    }

    /// The DTrace script's header and one table per filesystem (then the files, with
    /// `--per-file`).
    pub fn text(&self) -> String {
        let mut text = pattern::render_header(self.seconds, self.end_epoch_s);
        for note in &self.notes {
            text.push_str(&format!("Note: {note}\n"));
        }
        text.push('\n');
        if self.filesystems.is_empty() {
            text.push_str("(no file-system I/O)\n\n");
        }
        for table in &self.filesystems {
            text.push_str(&table.render());
            text.push('\n');
        }
        if self.per_file {
            text.push_str(&pattern::render_files(&self.files, self.seconds));
            text.push('\n');
        }
        text
    }

    /// One line of JSON.
    pub fn json_line(&self) -> Result<String, serde_json::Error> {
        let mut line = serde_json::to_string(self)?;
        line.push('\n');
        Ok(line)
    }

    /// What is printed for it in `format`.
    fn printed(&self, format: Format) -> Result<String, serde_json::Error> {
        match format {
            Format::Json => self.json_line(),
            Format::Text | Format::Csv => Ok(self.text()),
        }
    }
}

fn sample_loop(
    tracer: &mut Tracer<'_>,
    args: &PatternArgs,
    fs_filter: Option<KernelDev>,
    format: Format,
) -> Result<(), Classified> {
    let mut notes: Vec<String> = tracer.notes().to_vec();
    // In JSON the notes are in the first interval's object; in text also on stderr at once.
    if format == Format::Text {
        for note in &notes {
            measure::say!("io pattern: {note}");
        }
    }
    // On stderr, so scripts (and the tests) know when counting has started.
    measure::say!("io pattern: tracing file I/O; Ctrl-C prints the interval so far");
    let with_files = args.per_file.is_some();
    let maps = |e| Classified::from(e).context("reading the BPF maps");
    let mut previous = tracer.snapshot(with_files).map_err(maps)?;
    let mut previous_at = Instant::now();
    let start = previous_at;
    let count = args.count.unwrap_or(u64::MAX);
    for n in 1..=count {
        let due = start + args.interval.saturating_mul(u32::try_from(n).unwrap_or(u32::MAX));
        // With --pid, the interval ends early when the process does; this interval is the last.
        let (interrupted, exited) = match args.pid {
            Some(pid) => sleep_while_alive(due, pid),
            None => (!measure::stop::sleep_until(due), false),
        };
        let now = tracer.snapshot(with_files).map_err(maps)?;
        let now_at = Instant::now();
        let seconds = (now_at - previous_at).as_secs_f64();
        let mut interval =
            Interval::between(tracer.mounts(), &previous, &now, seconds, fs_filter, args.per_file);
        interval.notes = std::mem::take(&mut notes);
        if !write_out(&interval.printed(format)?)? || interrupted {
            break;
        }
        if exited {
            if let Some(pid) = args.pid {
                measure::say!(
                    "io pattern: process {pid} exited; the last interval covers its I/O until then"
                );
            }
            break;
        }
        previous = now;
        previous_at = now_at;
    }
    Ok(())
}

/// Sleeps until `due`, waking early for Ctrl-C/SIGTERM or when process `pid` has exited;
/// (interrupted, exited).
fn sleep_while_alive(due: Instant, pid: u32) -> (bool, bool) {
    const SLICE: Duration = Duration::from_millis(100);
    loop {
        if !process_alive(pid) {
            return (false, true);
        }
        let now = Instant::now();
        if now >= due {
            return (false, false);
        }
        if !measure::stop::sleep_until((now + SLICE).min(due)) {
            return (true, false);
        }
    }
}

/// Whether process `pid` still runs: it has a `/proc` entry and is not a zombie (a zombie has
/// exited; only its parent has not collected it yet).
fn process_alive(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/stat")).ok().is_some_and(|text| alive_by_stat(&text))
}

/// Whether a `/proc/PID/stat` text is that of a live task (an unreadable one counts as alive:
/// it exists).
fn alive_by_stat(text: &[u8]) -> bool {
    measure::procstat::parse_stat(text).map_or(true, |s| !s.is_zombie())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mounts::{kernel_dev, parse_mountinfo};

    #[test]
    fn zombies_are_not_alive() {
        let line =
            |state: &str| format!("9 (a) b) {state} 1 9 9 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 5\n");
        assert!(alive_by_stat(line("S").as_bytes()));
        assert!(!alive_by_stat(line("Z").as_bytes()));
    }

    fn table() -> MountTable {
        MountTable::new(parse_mountinfo(
            "22 1 0:21 / /data rw - tmpfs pstest rw\n23 1 8:1 / / rw - ext4 /dev/sda1 rw\n",
        ))
    }

    fn snapshot(entries: &[(KernelDev, u64)]) -> Snapshot {
        let mut s = Snapshot::default();
        for &(dev, writes) in entries {
            let mut c = Counts::default();
            c.ops[pattern::SEQUENTIAL][pattern::WRITE] = writes;
            c.bytes[pattern::SEQUENTIAL][pattern::WRITE] = writes * 4096;
            s.per_fs.insert(dev, c);
        }
        s
    }

    #[test]
    fn an_interval_shows_busy_mounted_filesystems_and_an_idle_chosen_one() {
        let (data, root, pipe) = (kernel_dev(0, 21), kernel_dev(8, 1), kernel_dev(0, 13));
        let before = snapshot(&[(data, 10), (root, 5), (pipe, 1)]);
        let after = snapshot(&[(data, 30), (root, 5), (pipe, 9)]);
        let i = Interval::between(&table(), &before, &after, 2.0, None, None);
        // The idle root and the unmounted pipe device are left out.
        assert_eq!(i.filesystems.len(), 1);
        assert_eq!(i.filesystems[0].mount_point, "/data");
        assert_eq!(i.filesystems[0].counts.ops[pattern::SEQUENTIAL][pattern::WRITE], 20);
        let chosen = Interval::between(&table(), &before, &after, 2.0, Some(root), Some(3));
        assert_eq!(chosen.filesystems.len(), 1);
        assert_eq!(chosen.filesystems[0].mount_point, "/");
        assert!(chosen.filesystems[0].counts.is_zero());
        let text = chosen.text();
        assert!(text.starts_with("Sample interval: 2 seconds\nEnd time: "), "{text}");
        assert!(text.contains("top files"), "--per-file adds the files table: {text}");
        // The keys in the order scripts have seen them.
        let line = chosen.json_line().unwrap();
        assert!(line.starts_with("{\"seconds\":2.0,\"end_epoch_s\":"), "{line}");
        let at = |key: &str| line.find(&format!("\"{key}\":")).unwrap();
        assert!(at("filesystems") < at("files") && at("files") < at("notes"), "{line}");
        assert!(line.ends_with("}\n") && !line.contains("per_file"), "{line}");
    }

    #[test]
    fn nothing_to_show_says_so() {
        let empty = Snapshot::default();
        let i = Interval::between(&table(), &empty, &empty, 1.0, None, None);
        assert!(i.text().ends_with("\n\n(no file-system I/O)\n\n"), "{}", i.text());
    }
}
