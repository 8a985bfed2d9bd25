//! `platscope io pattern`: random vs sequential file I/O per filesystem, seed 004's table.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use clap::Args;
use iopattern::mounts::{kernel_dev_of, KernelDev};
use iopattern::pattern::{self, Counts, FsInterval};
use iopattern::tracer::{Options, Snapshot, Tracer};
use serde::Serialize;

#[derive(Debug, Args)]
pub struct PatternArgs {
    /// Seconds per sample (fractions allowed).
    #[arg(value_name = "INTERVAL", default_value = "1", value_parser = interval_arg)]
    pub interval: Duration,
    /// Number of samples (default: until Ctrl-C).
    #[arg(value_name = "COUNT", value_parser = clap::value_parser!(u64).range(1..))]
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
          value_parser = clap::value_parser!(u64).range(1..))]
    pub per_file: Option<u64>,
}

fn interval_arg(text: &str) -> Result<Duration, measure::UsageError> {
    measure::args::parse_interval(text)
}

fn parse_tolerance(text: &str) -> Result<u64, String> {
    if text.trim() == "0" {
        return Ok(0);
    }
    topo::units::parse_bytes(text).map_err(|e| e.to_string())
}

/// One interval, as JSON (one object per line).
#[derive(Debug, Serialize)]
struct IntervalJson<'a> {
    seconds: f64,
    end_epoch_s: i64,
    filesystems: &'a [FsInterval],
    files: &'a [pattern::FileInterval],
    notes: &'a [String],
}

pub fn run(args: &PatternArgs, json: bool) -> anyhow::Result<()> {
    let fs_filter = match &args.fs {
        Some(path) => Some(
            std::fs::metadata(path)
                .map(|m| kernel_dev_of(std::os::unix::fs::MetadataExt::dev(&m)))
                .map_err(|reason| iopattern::Error::Filesystem { path: path.clone(), reason })?,
        ),
        None => None,
    };
    let options = Options {
        pid: args.pid,
        comm: args.comm.clone(),
        cgroup: args.cgroup.clone(),
        tolerance: args.tolerance,
    };
    measure::stop::install();
    iopattern::tracer::trace(&options, |tracer| sample_loop(tracer, args, fs_filter, json))?
}

fn sample_loop(
    tracer: &mut Tracer<'_>,
    args: &PatternArgs,
    fs_filter: Option<KernelDev>,
    json: bool,
) -> anyhow::Result<()> {
    let mut notes: Vec<String> = tracer.notes().to_vec();
    if !json {
        for note in &notes {
            measure::say!("io pattern: {note}");
        }
    }
    // On stderr, so scripts (and the tests) know when counting has started.
    measure::say!("io pattern: tracing file I/O; Ctrl-C prints the interval so far");
    let with_files = args.per_file.is_some();
    let mut previous = tracer.snapshot(with_files).context("reading the BPF maps")?;
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
        let now = tracer.snapshot(with_files).context("reading the BPF maps")?;
        let now_at = Instant::now();
        let seconds = (now_at - previous_at).as_secs_f64();
        let text =
            render_interval(tracer, &previous, &now, seconds, args, fs_filter, json, &notes)?;
        notes.clear();
        if !crate::output::write_out(&text)? || interrupted {
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
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()) != Some("Z")
        }
        Err(_) => false,
    }
}

#[allow(clippy::too_many_arguments)]
fn render_interval(
    tracer: &Tracer<'_>,
    previous: &Snapshot,
    now: &Snapshot,
    seconds: f64,
    args: &PatternArgs,
    fs_filter: Option<KernelDev>,
    json: bool,
    notes: &[String],
) -> anyhow::Result<String> {
    let zero = Counts::default();
    let mut devs: Vec<KernelDev> = now.per_fs.keys().copied().collect();
    if let Some(dev) = fs_filter {
        devs = vec![dev];
    }
    let mut tables: Vec<FsInterval> = devs
        .into_iter()
        .filter_map(|dev| {
            let counts = now
                .per_fs
                .get(&dev)
                .unwrap_or(&zero)
                .since(previous.per_fs.get(&dev).unwrap_or(&zero));
            // Devices outside the mount table (sockets, pipes, anonymous inodes) are not
            // filesystems anyone asked about.
            let mount = tracer.mounts().mount_of(dev)?;
            (fs_filter.is_some() || !counts.is_zero()).then(|| {
                let device = format!("{}:{}", mount.major, mount.minor);
                FsInterval::new(&mount.mount_point, &mount.fstype, &device, counts, seconds)
            })
        })
        .collect();
    tables.sort_by(|a, b| a.mount_point.cmp(&b.mount_point));
    let files = match args.per_file {
        Some(top) => {
            let mut all = now.files_since(previous);
            if let Some(dev) = fs_filter {
                let point = tracer.mounts().mount_of(dev).map(|m| m.mount_point.clone());
                all.retain(|f| Some(&f.mount_point) == point.as_ref());
            }
            pattern::top_files(all, usize::try_from(top).unwrap_or(usize::MAX))
        }
        None => Vec::new(),
    };
    let end_epoch_s = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    if json {
        let mut line = serde_json::to_string(&IntervalJson {
            seconds,
            end_epoch_s,
            filesystems: &tables,
            files: &files,
            notes,
        })?;
        line.push('\n');
        return Ok(line);
    }
    let mut text = pattern::render_header(seconds, end_epoch_s);
    for note in notes {
        text.push_str(&format!("Note: {note}\n"));
    }
    text.push('\n');
    if tables.is_empty() {
        text.push_str("(no file-system I/O)\n\n");
    }
    for table in &tables {
        text.push_str(&table.render());
        text.push('\n');
    }
    if args.per_file.is_some() {
        text.push_str(&pattern::render_files(&files, seconds));
        text.push('\n');
    }
    Ok(text)
}
