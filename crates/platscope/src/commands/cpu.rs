//! `platscope cpu pstime|util` and the `pstime` compat name: arguments, the sampling loop and
//! output. The figures come from `cpuacct::pstime` and `cpuacct::cpuutil`; the BPF part
//! (`cpuacct::cputime`) comes in through [`exit_tracer`] and [`event_clock`].

use std::ffi::OsString;
use std::io;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use cpuacct::cputime::{CpuEvents, Wanted};
use cpuacct::cpuutil::render::{self as util_render, command_line, notes as util_notes};
use cpuacct::cpuutil::render::{render_report, CommandRun, Sink};
use cpuacct::cpuutil::{self, EventReading};
use cpuacct::pstime::render::{self as pstime_render, Layout, UserNames, SEED_COMMAND_WIDTH};
use cpuacct::pstime::{self, Sampler};
use cpuacct::tasks::TaskIter;
use measure::args::{parse_count, parse_interval, parse_pid};
use measure::stop;
use measure::time::ClockTicks;
use measure::FsRoot;

#[derive(Debug, Subcommand)]
pub enum CpuCommand {
    /// pstime: exact CPU time per process over INTERVAL seconds, %USR and %SYS (the exact time
    /// split by tick samples) as percentages of all CPUs, four significant digits; every
    /// process, or the PIDs given.
    Pstime(PstimeArgs),
    /// Per-CPU and all-CPU utilization (%usr %nice %sys %iowait %irq %soft %steal %guest
    /// %gnice %idle) as floating-point percentages; since boot, every INTERVAL seconds, or
    /// over exactly one command's lifetime (-- COMMAND ARGS...).
    Util(UtilArgs),
}

/// `cpu pstime`'s arguments (also the `pstime` compat name's).
#[derive(Debug, Clone, Args)]
pub struct PstimeArgs {
    /// Seconds between the two samples; decimals allowed (0.5).
    #[arg(value_name = "INTERVAL", value_parser = interval_arg, allow_negative_numbers = true)]
    pub interval: Duration,

    /// Processes to report (default: every process).
    #[arg(value_name = "PID", value_parser = pid_arg, allow_negative_numbers = true)]
    pub pids: Vec<u32>,

    /// List each process's threads under it.
    #[arg(long)]
    pub threads: bool,
}

/// `cpu util`'s arguments.
#[derive(Debug, Clone, Args)]
pub struct UtilArgs {
    /// Seconds between reports; decimals allowed. Without it, one report since boot.
    #[arg(value_name = "INTERVAL", value_parser = interval_arg, allow_negative_numbers = true)]
    pub interval: Option<Duration>,

    /// Number of reports (default: until Ctrl-C).
    #[arg(value_name = "COUNT", value_parser = count_arg, allow_negative_numbers = true)]
    pub count: Option<u64>,

    /// Hide CPUs that were idle the whole interval (the all-CPU line stays).
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

fn interval_arg(text: &str) -> Result<Duration, measure::UsageError> {
    parse_interval(text)
}

fn count_arg(text: &str) -> Result<u64, measure::UsageError> {
    parse_count(text)
}

fn pid_arg(text: &str) -> Result<u32, measure::UsageError> {
    parse_pid(text)
}

pub fn run(command: &CpuCommand, json: bool, _store: &results::StoreOptions) -> anyhow::Result<()> {
    match command {
        CpuCommand::Pstime(args) => run_pstime(args, json, Style::Platscope),
        CpuCommand::Util(args) => run_util(args, json),
    }
}

/// Runs the `pstime` compat name with its arguments (not including `argv[0]`).
pub fn run_pstime_compat(args: &[OsString]) -> anyhow::Result<()> {
    let argv = std::iter::once(OsString::from("pstime")).chain(args.iter().cloned());
    match PstimeCli::try_parse_from(argv) {
        Ok(cli) => run_pstime(&cli.args, cli.json, Style::Seed),
        Err(err) => {
            use clap::error::ErrorKind;
            if matches!(err.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                err.print()?;
                return Ok(());
            }
            Err(measure::UsageError::Message(super::compat::clap_one_line(&err, "pstime -h"))
                .into())
        }
    }
}

/// Which text layout: the seed's exactly (the compat name), or with the exact columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Seed,
    Platscope,
}

// ---------------------------------------------------------------------------------------------
// The BPF part (cpuacct::cputime): exit records for pstime, sched_switch busy time for util.

/// Starts exit tracing before the first pstime sample; `Err` says why there is none.
fn exit_tracer() -> Result<CpuEvents<'static>, String> {
    CpuEvents::attach(Wanted { busy: false, exits: true }).map_err(|e| e.to_string())
}

/// Starts event-based busy-time accounting; `Err` says why there is none.
fn event_clock() -> Result<CpuEvents<'static>, String> {
    CpuEvents::attach(Wanted { busy: true, exits: false }).map_err(|e| e.to_string())
}

// ---------------------------------------------------------------------------------------------

fn run_pstime(args: &PstimeArgs, json: bool, style: Style) -> anyhow::Result<()> {
    let program = match style {
        Style::Seed => "pstime",
        Style::Platscope => "platscope",
    };
    let opts = pstime::Options { pids: args.pids.clone(), threads: args.threads };
    let root = FsRoot::live();
    // Usage errors (no such PID, a thread ID) stay measure::Error so main exits with 2.
    let mut sampler = Sampler::new(root.clone(), opts, ClockTicks::system())?;
    let tracer = exit_tracer();
    // As root, every process in one pass over the kernel's tasks instead of a /proc read each.
    let tasks = if sampler.can_use_task_records() { TaskIter::load().ok() } else { None };
    let sample = |sampler: &mut Sampler| -> anyhow::Result<pstime::Snapshot> {
        match &tasks {
            Some(iter) => Ok(sampler.snapshot_from_tasks(&iter.read()?)?),
            None => Ok(sampler.snapshot().context("sampling processes")?),
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
                measure::say!("{program}: exit tracing failed: {e:#}");
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
    if json {
        let mut text = serde_json::to_string_pretty(&report)?;
        text.push('\n');
        crate::output::write_out(&text)?;
        return Ok(());
    }
    let layout = match style {
        Style::Seed => Layout { exact: false, command_width: Some(SEED_COMMAND_WIDTH) },
        Style::Platscope => Layout { exact: true, command_width: None },
    };
    let users = UserNames::load(&root);
    crate::output::write_out(&pstime_render::render_report(&report, &layout, &users))?;
    Ok(())
}

fn run_util(args: &UtilArgs, json: bool) -> anyhow::Result<()> {
    let ticks = ClockTicks::system();
    let opts = cpuutil::Options { busy_only: args.busy_only };
    if let Some(from) = &args.from {
        let (out, note) =
            (&mut crate::output::write_out, &mut |n: &str| measure::say!("platscope: {n}"));
        cpuutil::replay::run(from, &opts, args.node_cpus.as_ref(), json, &mut Sink { out, note })?;
        return Ok(());
    }
    let mut monitor = cpuutil::Monitor::new(FsRoot::live());
    let mut events: Option<CpuEvents<'static>> = None;
    if args.event {
        match event_clock() {
            Ok(clock) => events = Some(clock),
            Err(why) => measure::say!(
                "platscope: --event: event-based busy time unavailable ({why}); showing the \
                 tick-sampled figures only"
            ),
        }
    }
    let read_events = |events: &mut Option<CpuEvents<'static>>| -> Option<EventReading> {
        let clock = events.as_ref()?;
        match clock.busy_per_cpu() {
            Ok(cpus) => Some(EventReading { cpus }),
            Err(e) => {
                measure::say!("platscope: --event: reading event-based busy time failed: {e:#}");
                *events = None;
                None
            }
        }
    };
    let mut snapshot = |events: &mut Option<CpuEvents<'static>>| {
        let event = read_events(events);
        monitor.snapshot(event).context("reading /proc/stat")
    };

    if !args.command.is_empty() {
        let before = snapshot(&mut events)?;
        let (run, status) = run_command(&args.command)?;
        let after = snapshot(&mut events)?;
        let report = cpuutil::compute(Some(&before), &after, ticks, &opts);
        for note in util_notes(&report) {
            measure::say!("platscope: {note}");
        }
        if json {
            let value = CommandReport { command: &run, report: &report };
            let mut text = serde_json::to_string_pretty(&value)?;
            text.push('\n');
            crate::output::write_out(&text)?;
        } else {
            let stamp = util_render::stamp_for(&report, false);
            let text = format!("{}\n{}", command_line(&run), render_report(&report, &stamp));
            crate::output::write_out(&text)?;
        }
        // Like time(1): the command's own status, so `cpu util -- make` fails when make does.
        if status != 0 {
            return Err(super::ExitWith(status).into());
        }
        return Ok(());
    }

    let Some(interval) = args.interval else {
        let now = snapshot(&mut events)?;
        let report = cpuutil::compute(None, &now, ticks, &opts);
        return emit_util(&report, json, false, true).map(|_| ());
    };
    let count = args.count.unwrap_or(u64::MAX);
    let subsecond = interval < Duration::from_secs(1);
    stop::install();
    let start = Instant::now();
    let mut prev = snapshot(&mut events)?;
    for n in 1..=count {
        let due = start + interval.saturating_mul(u32::try_from(n).unwrap_or(u32::MAX));
        let completed = stop::sleep_until(due);
        let cur = snapshot(&mut events)?;
        let report = cpuutil::compute(Some(&prev), &cur, ticks, &opts);
        // An interrupted interval is still measured: print it, then stop.
        if !emit_util(&report, json, subsecond, n == 1)? || !completed {
            break;
        }
        prev = cur;
    }
    Ok(())
}

/// `cpu util --json -- COMMAND`'s object.
#[derive(Debug, serde::Serialize)]
struct CommandReport<'a> {
    command: &'a CommandRun,
    report: &'a cpuutil::Report,
}

/// Prints one utilization report (text reports after the first one after a blank line);
/// `Ok(false)` when the reader has gone away.
fn emit_util(
    report: &cpuutil::Report,
    json: bool,
    subsecond: bool,
    first: bool,
) -> anyhow::Result<bool> {
    let (out, note) =
        (&mut crate::output::write_out, &mut |n: &str| measure::say!("platscope: {n}"));
    let format = util_render::Format { json, subsecond, first };
    Ok(util_render::emit(report, format, &mut Sink { out, note })?)
}

/// Runs `argv` to completion with stdin/stdout/stderr inherited. Ctrl-C goes to the command
/// (same process group); platscope keeps waiting and reports.
/// Waits for the command; a SIGTERM to platscope (`timeout`, systemd) is passed on to it once,
/// so both end. Ctrl-C is not passed on: the terminal already sent it to the command as well.
fn wait_passing_sigterm(child: &mut std::process::Child) -> io::Result<std::process::ExitStatus> {
    let mut passed_on = false;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if !passed_on && stop::signal() == Some(libc::SIGTERM) {
            if let Ok(pid) = libc::pid_t::try_from(child.id()) {
                // SAFETY: kill has no memory effects; the pid is our unreaped child.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
            passed_on = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs the command to its end; its record, and the status to exit with (see
/// [`super::passed_on_status`]).
fn run_command(argv: &[OsString]) -> anyhow::Result<(CommandRun, u8)> {
    let (program, rest) = argv.split_first().context("no command given")?;
    let children_before = children_cpu();
    stop::install();
    let started = Instant::now();
    let mut child = match Command::new(program).args(rest).spawn() {
        Ok(child) => child,
        Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied) => {
            let why = if e.kind() == io::ErrorKind::NotFound {
                "not found"
            } else {
                "not executable (permission denied)"
            };
            return Err(measure::UsageError::Message(format!(
                "cannot run {:?}: {why}",
                program.to_string_lossy()
            ))
            .into());
        }
        Err(e) => {
            return Err(e).with_context(|| format!("starting {:?}", program.to_string_lossy()))
        }
    };
    let status = wait_passing_sigterm(&mut child).context("waiting for the command")?;
    let wall_s = started.elapsed().as_secs_f64();
    let children_after = children_cpu();
    use std::os::unix::process::ExitStatusExt;
    let status_text = match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "ended".into(),
    };
    let run = CommandRun {
        argv: argv.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
        status: status_text,
        exit_code: status.code(),
        wall_s,
        user_s: (children_after.0 - children_before.0).max(0.0),
        system_s: (children_after.1 - children_before.1).max(0.0),
    };
    Ok((run, super::passed_on_status(status)))
}

/// User and system CPU seconds of waited-for children (`getrusage(RUSAGE_CHILDREN)`).
fn children_cpu() -> (f64, f64) {
    // SAFETY: rusage is plain data; all zeroes is valid and getrusage overwrites it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: usage is a live local the kernel writes one rusage into.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(usage.ru_utime), secs(usage.ru_stime))
}
