//! `platscope cpu pstime`, `platscope cpu util` and the `pstime` compat name: arguments, the
//! sampling loops and what they print. The figures come from [`pstime`] and
//! [`crate::cpuutil`]; the BPF part from [`crate::cputime`] (exit records for pstime, busy time
//! at every switch for `util --event`); a command's lifetime from [`crate::child`].
//!
//! `cpu util` has three sources of reports — since boot, every INTERVAL, one command's
//! lifetime — and one printer, [`emit_util`], that every report of the live monitor goes
//! through.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use clap::{Args, Parser};
use experiment::output::write_out;
use experiment::{Format, Globals, Tool};
use measure::args::{parse_count, parse_interval, parse_pid};
use measure::time::ClockTicks;
use measure::{stop, Classified, FsRoot};
use pstime::render::{self as pstime_render, Layout, UserNames, PSTIME_COMMAND_WIDTH};
use pstime::Sampler;
use serde::Serialize;

use crate::cputime::{CpuEvents, Wanted};
use crate::cpuutil::render::{self as util_render, command_line, notes as util_notes};
use crate::cpuutil::render::{render_report, CommandRun, Sink};
use crate::cpuutil::{self, EventReading};
use pstime::tasks::TaskIter;

/// pstime: exact CPU time per process over INTERVAL seconds, %USR and %SYS (the exact time
/// split by tick samples) as percentages of all CPUs, four significant digits; every
/// process, or the PIDs given.
#[derive(Debug, Clone, Args)]
pub struct PstimeArgs {
    /// Seconds between the two samples; decimals allowed (0.5).
    #[arg(value_name = "INTERVAL", value_parser = parse_interval, allow_negative_numbers = true)]
    pub interval: Duration,

    /// Processes to report (default: every process).
    #[arg(value_name = "PID", value_parser = parse_pid, allow_negative_numbers = true)]
    pub pids: Vec<u32>,

    /// List each process's threads under it.
    #[arg(long)]
    pub threads: bool,
}

/// Per-CPU and all-CPU utilization (%usr %nice %sys %iowait %irq %soft %steal %guest
/// %gnice %idle) as floating-point percentages; since boot, every INTERVAL seconds, or
/// over exactly one command's lifetime (-- COMMAND ARGS...).
#[derive(Debug, Clone, Args)]
pub struct UtilArgs {
    /// Seconds between reports; decimals allowed. Without it, one report since boot.
    #[arg(value_name = "INTERVAL", value_parser = parse_interval, allow_negative_numbers = true)]
    pub interval: Option<Duration>,

    /// Number of reports (default: until Ctrl-C).
    #[arg(value_name = "COUNT", value_parser = parse_count, allow_negative_numbers = true)]
    pub count: Option<u64>,

    /// Hide CPUs whose %idle is 100.00 (the all-CPU line stays).
    #[arg(long)]
    pub busy_only: bool,

    /// Next to the tick-sampled figures, busy time measured at every context switch (BPF on
    /// sched_switch), and the difference.
    #[arg(long)]
    pub event: bool,

    /// Run this command and report utilization over exactly its lifetime.
    #[arg(last = true, value_name = "COMMAND", conflicts_with_all = ["interval", "count"])]
    pub command: Vec<OsString>,

    /// Read sysstat mpstat output someone sent (text, -o JSON, a date before each line; - for
    /// stdin) instead of this machine, and print it as this command prints.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["interval", "count", "event", "command"])]
    pub from: Option<std::path::PathBuf>,

    /// With --from: per-node lines from these CPUs, nodes separated by ',' (0-31,32-63; one
    /// node's ranges joined with '+': 0-15+32-47,16-31+48-63).
    #[arg(long, value_name = "LIST", requires = "from", value_parser = cpuutil::replay::NodeCpus::parse)]
    pub node_cpus: Option<cpuutil::replay::NodeCpus>,
}

/// The standalone `pstime` command line (the compat name), with platscope's `--json`.
#[derive(Debug, Parser)]
#[command(name = "pstime", disable_version_flag = true)]
pub struct PstimeCli {
    /// Print the report as JSON instead of text.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub args: PstimeArgs,
}

/// `platscope cpu pstime`.
#[derive(Debug)]
pub struct Pstime;

impl Tool for Pstime {
    const PATH: &'static [&'static str] = &["cpu", "pstime"];
    const ABOUT: &'static str = "pstime: exact CPU time per process over INTERVAL seconds, %USR \
                                 and %SYS (the exact time split by tick samples) as percentages \
                                 of all CPUs, four significant digits; every process, or the \
                                 PIDs given";
    type Args = PstimeArgs;

    fn run(args: &PstimeArgs, globals: &Globals) -> Result<(), Classified> {
        run_pstime(args, globals.format, Style::Platscope)
    }
}

/// `platscope cpu util`.
#[derive(Debug)]
pub struct Util;

impl Tool for Util {
    const PATH: &'static [&'static str] = &["cpu", "util"];
    const ABOUT: &'static str = "Per-CPU and all-CPU utilization (%usr %nice %sys %iowait %irq \
                                 %soft %steal %guest %gnice %idle) as floating-point \
                                 percentages; since boot, every INTERVAL seconds, or over exactly \
                                 one command's lifetime (-- COMMAND ARGS...)";
    type Args = UtilArgs;

    fn run(args: &UtilArgs, globals: &Globals) -> Result<(), Classified> {
        run_util(args, globals.format)
    }
}

/// The `pstime` compat name with its arguments (not including `argv[0]`).
pub fn pstime_compat(args: &[OsString]) -> Result<(), Classified> {
    match experiment::compat::parse::<PstimeCli>("pstime", args)? {
        Some(cli) => {
            let format = if cli.json { Format::Json } else { Format::Text };
            run_pstime(&cli.args, format, Style::Original)
        }
        None => Ok(()),
    }
}

/// Which text layout: the original pstime's exactly (the compat name), or with the exact columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Original,
    Platscope,
}

/// What a monitor prints for `--csv`: it has no table form.
fn no_csv(command: &str) -> Classified {
    Classified::usage(format!("{command} has no CSV form; use --json or the text output"))
}

// ---------------------------------------------------------------------------------------------
// The BPF part (crate::cputime): exit records for pstime, sched_switch busy time for util.

/// Starts exit tracing before the first pstime sample; `Err` says why there is none.
fn exit_tracer() -> Result<CpuEvents<'static>, String> {
    CpuEvents::attach(Wanted { busy: false, exits: true }).map_err(|e| e.to_string())
}

/// Starts event-based busy-time accounting; `Err` says why there is none.
fn event_clock() -> Result<CpuEvents<'static>, String> {
    CpuEvents::attach(Wanted { busy: true, exits: false }).map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------------------------

fn run_pstime(args: &PstimeArgs, format: Format, style: Style) -> Result<(), Classified> {
    if format == Format::Csv {
        return Err(no_csv("cpu pstime"));
    }
    let program = match style {
        Style::Original => "pstime",
        Style::Platscope => "platscope",
    };
    let opts = pstime::Options { pids: args.pids.clone(), threads: args.threads };
    let root = FsRoot::live();
    // Usage errors (no such PID, a thread ID) stay usage errors: exit status 2.
    let mut sampler = Sampler::new(root.clone(), opts, ClockTicks::system())?;
    let tracer = exit_tracer();
    // As root, every process in one pass over the kernel's tasks instead of a /proc read each.
    let tasks = if sampler.can_use_task_records() { TaskIter::load().ok() } else { None };
    let sample = |sampler: &mut Sampler| -> Result<pstime::Snapshot, Classified> {
        match &tasks {
            Some(iter) => {
                let records = iter.read().map_err(Classified::runtime)?;
                Ok(sampler.snapshot_from_tasks(&records)?)
            }
            None => {
                sampler.snapshot().map_err(|e| Classified::from(e).context("sampling processes"))
            }
        }
    };
    stop::install();
    let first = sample(&mut sampler)?;
    let due = Instant::now() + args.interval;
    let interrupted = !stop::sleep_until(due);
    let second = sample(&mut sampler)?;
    let exits = match &tracer {
        Ok(t) => match t.take_exited_tasks() {
            Ok(records) => Some(records),
            Err(e) => {
                measure::say!("{program}: exit tracing failed: {e}");
                None
            }
        },
        Err(_) => None,
    };
    let mut report =
        pstime::compare(&first, &second, exits.as_deref(), sampler.basis(), sampler.options());
    if exits.is_none() {
        report.exit_tracing_unavailable = Some(match &tracer {
            Err(why) => why.clone(),
            Ok(_) => "the exit tracer failed".into(),
        });
    }
    sampler.describe(&mut report);
    if interrupted {
        measure::say!(
            "{program}: interrupted after {:.3} s; reporting that interval",
            report.elapsed_s
        );
    }
    for note in pstime_render::notes(&report) {
        measure::say!("{program}: {note}");
    }
    let text = match format {
        Format::Json => format!("{}\n", serde_json::to_string_pretty(&report)?),
        _ => {
            let layout = match style {
                Style::Original => {
                    Layout { exact: false, command_width: Some(PSTIME_COMMAND_WIDTH) }
                }
                Style::Platscope => Layout { exact: true, command_width: None },
            };
            pstime_render::render_report(&report, &layout, &UserNames::load(&root))
        }
    };
    write_out(&text)?;
    Ok(())
}

/// `/proc/stat` (and, with `--event`, the BPF busy time) read as one snapshot at a time.
struct UtilReader {
    monitor: cpuutil::Monitor,
    events: Option<CpuEvents<'static>>,
}

impl UtilReader {
    fn new(event: bool) -> Self {
        let mut events = None;
        if event {
            match event_clock() {
                Ok(clock) => events = Some(clock),
                Err(why) => measure::say!(
                    "platscope: --event: event-based busy time unavailable ({why}); showing the \
                     tick-sampled figures only"
                ),
            }
        }
        Self { monitor: cpuutil::Monitor::new(FsRoot::live()), events }
    }

    fn snapshot(&mut self) -> Result<cpuutil::Snapshot, Classified> {
        let event = self.events.as_ref().and_then(|clock| match clock.busy_per_cpu() {
            Ok(cpus) => Some(EventReading { cpus }),
            Err(e) => {
                measure::say!("platscope: --event: reading event-based busy time failed: {e}");
                None
            }
        });
        if event.is_none() {
            // A clock that failed once is not asked again.
            self.events = None;
        }
        self.monitor.snapshot(event).map_err(|e| Classified::from(e).context("reading /proc/stat"))
    }
}

fn run_util(args: &UtilArgs, format: Format) -> Result<(), Classified> {
    if format == Format::Csv {
        return Err(no_csv("cpu util"));
    }
    let opts = cpuutil::Options { busy_only: args.busy_only };
    if let Some(from) = &args.from {
        let (out, note) = (&mut write_out, &mut |n: &str| measure::say!("platscope: {n}"));
        let json = format == Format::Json;
        cpuutil::replay::run(from, &opts, args.node_cpus.as_ref(), json, &mut Sink { out, note })?;
        return Ok(());
    }
    let ticks = ClockTicks::system();
    let mut reader = UtilReader::new(args.event);

    if !args.command.is_empty() {
        let before = reader.snapshot()?;
        let (run, status) = crate::child::run_command(&args.command)?;
        let after = reader.snapshot()?;
        let report = cpuutil::compute(Some(&before), &after, ticks, &opts);
        emit_command_util(&run, &report, format)?;
        // Like time(1): the command's own status, so `cpu util -- make` fails when make does.
        return match status {
            0 => Ok(()),
            status => Err(Classified::exit_with(status)),
        };
    }

    let Some(interval) = args.interval else {
        let now = reader.snapshot()?;
        let report = cpuutil::compute(None, &now, ticks, &opts);
        return emit_util(&report, format, false, true).map(drop);
    };
    let count = args.count.unwrap_or(u64::MAX);
    let subsecond = interval < Duration::from_secs(1);
    stop::install();
    let start = Instant::now();
    let mut prev = reader.snapshot()?;
    for n in 1..=count {
        let due = start + interval.saturating_mul(u32::try_from(n).unwrap_or(u32::MAX));
        let completed = stop::sleep_until(due);
        let cur = reader.snapshot()?;
        let report = cpuutil::compute(Some(&prev), &cur, ticks, &opts);
        // An interrupted interval is still measured: print it, then stop.
        if !emit_util(&report, format, subsecond, n == 1)? || !completed {
            break;
        }
        prev = cur;
    }
    Ok(())
}

/// `cpu util --json -- COMMAND`'s object.
#[derive(Debug, Serialize)]
struct CommandReport<'a> {
    command: &'a CommandRun,
    report: &'a cpuutil::Report,
}

/// Prints the report of one command's lifetime: its line, then the table (or one JSON object).
fn emit_command_util(
    run: &CommandRun,
    report: &cpuutil::Report,
    format: Format,
) -> Result<(), Classified> {
    for note in util_notes(report) {
        measure::say!("platscope: {note}");
    }
    let text = match format {
        Format::Json => {
            let value = CommandReport { command: run, report };
            format!("{}\n", serde_json::to_string_pretty(&value)?)
        }
        _ => {
            let stamp = util_render::stamp_for(report, false);
            format!("{}\n{}", command_line(run), render_report(report, &stamp))
        }
    };
    write_out(&text)?;
    Ok(())
}

/// Prints one utilization report of the live monitor: its notes on stderr (the column legend
/// with the first report only, other notes each time they apply), then the report — text after
/// a blank line (but the first), the clock with milliseconds when `subsecond`; or one JSON line.
/// `Ok(false)`: the reader has gone away.
pub fn emit_util(
    report: &cpuutil::Report,
    format: Format,
    subsecond: bool,
    first: bool,
) -> Result<bool, Classified> {
    let (out, note) = (&mut write_out, &mut |n: &str| measure::say!("platscope: {n}"));
    let format = util_render::Format { json: format == Format::Json, subsecond, first };
    Ok(util_render::emit(report, format, &mut Sink { out, note })?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn util_and_pstime_arguments_parse_as_before() {
        #[derive(Debug, Parser)]
        struct U {
            #[command(flatten)]
            a: UtilArgs,
        }
        let u = U::try_parse_from(["u", "--busy-only", "--", "sleep", "1"]).unwrap();
        assert!(u.a.busy_only && u.a.interval.is_none());
        assert_eq!(u.a.command, [OsString::from("sleep"), OsString::from("1")]);
        assert!(U::try_parse_from(["u", "1", "--", "true"]).is_err(), "interval with a command");
        let p = PstimeCli::try_parse_from(["pstime", "--json", "0.5", "1", "2"]).unwrap();
        assert!(p.json);
        assert_eq!(
            (p.args.interval, p.args.pids.as_slice()),
            (Duration::from_millis(500), &[1, 2][..])
        );
        for bad in
            [&["pstime"][..], &["pstime", "0"], &["pstime", "1", "0"], &["pstime", "1", "-4"]]
        {
            assert!(PstimeCli::try_parse_from(bad).is_err(), "{bad:?}");
        }
    }
}
