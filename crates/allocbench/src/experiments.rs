//! `platscope alloc` (the allocator bake-off) and its hidden `alloc-worker` as the
//! product runs them: the arguments, the run (a progress line per run on stderr), and what the
//! bake-off prints, stores and draws. One registry line each in the binary.

use std::path::PathBuf;

use experiment::{Context, Experiment, Globals, Outcome, Tool};
use measure::database::ServerKind;
use measure::{stop, Classified};

use crate::allocator::{ldconfig_cache, parse_custom, resolve, DEFAULT_LIST};
use crate::bakeoff::{BakeOff, Plan, Workload};
use crate::run::{CommandSpec, Outcome as RunOutcome, Throughput, WorkerCommand};
use crate::server::ServerSpec;
use crate::workload::BuiltinParams;

/// The bake-off's arguments.
#[derive(Debug, clap::Args)]
pub struct AllocArgs {
    /// Allocators to compare, glibc first as the baseline: glibc, jemalloc, tcmalloc,
    /// mimalloc, tbb, any `lib<NAME>.so` in `ldconfig -p`, and glibc tunables as
    /// glibc:arena_max=N, glibc:tcache_count=0 (joined with ':').
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub allocators: Option<Vec<String>>,
    /// A library of your own, preloaded as NAME (repeatable).
    #[arg(long = "allocator", value_name = "NAME=PATH")]
    pub custom: Vec<String>,
    /// Thread counts (default 1,2; for a command, substituted for {threads}, default 1; for a
    /// server, connections).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<Vec<u32>>,
    /// Rounds; allocators run interleaved round-robin in each. Fewer than 2: no ranking.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// The built-in multi-threaded allocation workload (the default without a command or
    /// --server).
    #[arg(long, value_parser = ["builtin"], conflicts_with_all = ["server", "command"])]
    pub workload: Option<String>,
    /// Built-in: allocations per thread. Command: the operations it does (the rate is this
    /// over its wall time).
    #[arg(long, value_parser = measure::args::parse_count, allow_negative_numbers = true)]
    pub ops: Option<u64>,
    /// Built-in: live objects per thread.
    #[arg(long, default_value_t = 4096, value_parser = measure::args::parse_count_u32, allow_negative_numbers = true)]
    pub working_set: u32,
    /// Built-in: share of objects freed by another thread (0–1).
    #[arg(long, default_value_t = 0.25)]
    pub cross_thread: f64,
    /// Command: a regular expression for the rate it prints (first capture group, last match),
    /// e.g. 'transactions:\s+\d+\s+\(([\d.]+) per sec'.
    #[arg(long, value_name = "REGEX", conflicts_with = "server")]
    pub metric: Option<String>,
    /// Start a throwaway database server per allocator and load it (root).
    #[arg(long, value_parser = ["postgres", "mariadb"], conflicts_with = "command")]
    pub server: Option<String>,
    /// Server: seconds of load per run.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub seconds: u32,
    /// Server: a fixed rate in transactions per second (CPU per transaction is the figure to
    /// read then).
    #[arg(long, value_name = "TX/S", value_parser = measure::args::parse_count_u32, allow_negative_numbers = true)]
    pub rate: Option<u32>,
    /// Also write the charts as a standalone HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// The command to measure, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// The hidden worker's arguments: the built-in workload in its own process, so the preload
/// applies.
#[derive(Debug, clap::Args)]
pub struct AllocWorkerArgs {
    /// `--threads=N --ops=N …` as the parent writes them.
    #[arg(allow_hyphen_values = true, trailing_var_arg = true)]
    pub args: Vec<String>,
}

/// What the command line asks to measure.
fn workload(args: &AllocArgs) -> Result<Workload, Classified> {
    if let Some(server) = &args.server {
        let kind: ServerKind = server.parse()?;
        return Ok(Workload::Server(ServerSpec { kind, seconds: args.seconds, rate: args.rate }));
    }
    if args.rate.is_some() {
        return Err(Classified::usage("--rate applies to --server runs"));
    }
    if !args.command.is_empty() {
        let throughput = match (&args.metric, args.ops) {
            (Some(_), Some(_)) => {
                return Err(Classified::usage("give --metric or --ops, not both"))
            }
            (Some(re), None) => Throughput::Metric(regex::Regex::new(re).map_err(|e| {
                // The regex crate draws a multi-line caret diagram; its last line says what.
                let what = e.to_string();
                let what = what.lines().last().unwrap_or("").trim().trim_start_matches("error: ");
                Classified::usage(format!(
                    "--metric '{re}': not a valid regular expression ({what})"
                ))
            })?),
            (None, Some(n)) => Throughput::Ops(n),
            (None, None) => {
                return Err(Classified::usage(
                    "a command's throughput needs --metric REGEX (a rate it prints) or --ops N \
                     (operations it does)",
                ))
            }
        };
        return Ok(Workload::Command(CommandSpec { argv: args.command.clone(), throughput }));
    }
    if args.metric.is_some() {
        return Err(Classified::usage("--metric needs a command after --"));
    }
    let params = BuiltinParams {
        threads: 1,
        ops_per_thread: args.ops.unwrap_or(BuiltinParams::default().ops_per_thread),
        working_set: args.working_set,
        cross_share: args.cross_thread,
        ..BuiltinParams::default()
    };
    params.validate()?;
    Ok(Workload::Builtin { worker: worker_command()?, params })
}

/// This program's hidden `alloc-worker`.
fn worker_command() -> Result<WorkerCommand, Classified> {
    let exe = std::env::current_exe().map_err(|e| {
        Classified::runtime(format!("finding this program to start the worker: {e}"))
    })?;
    Ok(WorkerCommand { program: exe, args: vec![AllocWorker::PATH[0].into()] })
}

/// One stderr line per run as it ends.
fn progress(outcome: &RunOutcome) {
    match outcome {
        RunOutcome::Measured(r) => measure::say!(
            "alloc: round {} {} × {}: {:.0} ops/s ({})",
            r.round + 1,
            r.allocator,
            r.threads,
            r.throughput,
            r.verified
        ),
        RunOutcome::Refused(r) => measure::say!("alloc: {} refused: {}", r.allocator, r.reason),
        RunOutcome::Interrupted => measure::say!("alloc: stopped"),
    }
}

/// `platscope alloc`.
#[derive(Debug)]
pub struct Alloc;

impl Experiment for Alloc {
    const PATH: &'static [&'static str] = &["alloc"];
    const ABOUT: &'static str = "The allocator bake-off: one workload — the built-in \
                                 multi-threaded allocation workload, any command, or a throwaway \
                                 PostgreSQL/MariaDB — under glibc, jemalloc, tcmalloc, mimalloc, \
                                 tbbmalloc and glibc tunables, each preload verified in the \
                                 measured process; throughput, CPU per operation and memory per \
                                 thread count";
    const TINY: &'static [&'static str] = &[
        "--allocators",
        "glibc,glibc:arena_max=1",
        "--threads",
        "1",
        "--repeat",
        "1",
        "--ops",
        "20000",
    ];
    type Args = AllocArgs;
    type Outcome = BakeOff;

    fn run(args: &AllocArgs, ctx: &mut Context<'_>) -> Result<BakeOff, Classified> {
        let names: Vec<String> = args
            .allocators
            .clone()
            .unwrap_or_else(|| DEFAULT_LIST.iter().map(|s| s.to_string()).collect());
        let custom = args.custom.iter().map(|c| parse_custom(c)).collect::<Result<Vec<_>, _>>()?;
        let cache = ldconfig_cache();
        let resolved = resolve(&names, &custom, &cache)?;
        for m in resolved.missing.iter().filter(|_| !ctx.quiet) {
            measure::say!("alloc: skipping {m}");
        }
        let default_threads = if args.command.is_empty() { vec![1, 2] } else { vec![1] };
        let plan = Plan {
            allocators: resolved.allocators,
            missing: resolved.missing,
            threads: args.threads.clone().unwrap_or(default_threads),
            repeat: args.repeat,
            workload: workload(args)?,
            probe: Some(worker_command()?),
        };
        plan.validate()?;
        // A step of a report stays quiet: its bar says what runs.
        let quiet = ctx.quiet;
        let mut on_run = |outcome: &RunOutcome| {
            if !quiet {
                progress(outcome);
            }
        };
        let bakeoff = crate::bakeoff::run(&plan, &cache, stop::flag(), &mut on_run)?;
        if let Some(path) = &args.html {
            let parts = bakeoff.parts(ctx.topology);
            experiment::output::write_page(path, "alloc", ctx.globals.version, &parts)
                .map_err(Classified::runtime)?;
            measure::say!("alloc: charts written to {}", path.display());
        }
        Ok(bakeoff)
    }
}

impl Outcome for BakeOff {
    const KINDS: &'static [&'static str] = &["alloc"];

    fn interrupted(&self) -> bool {
        self.interrupted
    }

    fn text(&self) -> String {
        crate::render::render(self)
    }

    fn parts(&self, _topology: &topo::Topology) -> Vec<chart::Part> {
        crate::chart::parts(self)
    }

    /// Every allocator asked for that was refused makes the run a failure (exit 1), after what
    /// was measured of the others has been stored and printed: as `cp a b dir/` fails when one
    /// of its files cannot be copied. A run stopped by Ctrl-C says so on its own.
    fn failure(&self) -> Option<Classified> {
        if self.interrupted {
            return None;
        }
        if self.runs.is_empty() {
            return Some(Classified::runtime(
                "no run could be verified: every allocator was refused (see above)",
            ));
        }
        let mut refused: Vec<&str> = Vec::new();
        for r in &self.refused {
            if !refused.contains(&r.allocator.as_str()) {
                refused.push(&r.allocator);
            }
        }
        (!refused.is_empty()).then(|| {
            Classified::runtime(format!(
                "refused: {} (see above); the other allocators were measured",
                refused.join(", ")
            ))
        })
    }
}

/// `platscope alloc-worker`: the built-in workload in a child process under the allocator
/// (started by `alloc`, not by people).
#[derive(Debug)]
pub struct AllocWorker;

impl Tool for AllocWorker {
    const PATH: &'static [&'static str] = &["alloc-worker"];
    const ABOUT: &'static str =
        "Internal: the built-in workload of `alloc`, in a child process under the allocator";
    const HIDDEN: bool = true;
    type Args = AllocWorkerArgs;

    fn run(args: &AllocWorkerArgs, _globals: &Globals) -> Result<(), Classified> {
        let params = BuiltinParams::from_args(&args.args)?;
        crate::workload::serve(
            &params,
            &mut std::io::stdin().lock(),
            &mut std::io::stdout().lock(),
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocator::{parse_glibc, Allocator};
    use crate::bakeoff::summarize_runs;
    use crate::procfs::{AddressSpace, Memory};
    use crate::run::{CpuUse, Refusal, RunRecord};

    fn record(allocator: &str, round: u32, throughput: f64, ops: f64) -> RunRecord {
        RunRecord {
            allocator: allocator.into(),
            threads: 2,
            round,
            pid: 1,
            verified: "x".into(),
            ops,
            seconds: 1.0,
            throughput,
            cpu: CpuUse { process_s: 0.001, ..Default::default() },
            cpu_per_op_us: crate::run::cpu_per_op_us(0.001, ops),
            machine_cpu_per_op_us: crate::run::cpu_per_op_us(0.002, ops),
            memory: Memory { hwm_bytes: Some(1 << 20), rss_bytes: None, pss_bytes: None },
            space_start: AddressSpace::default(),
            space_end: AddressSpace { total_bytes: 1 << 20, prot_none_bytes: 0 },
            minor_faults: 10,
        }
    }

    /// A bake-off of glibc and a tuned glibc at two threads over `rounds` rounds.
    fn bake_off(rounds: u32) -> BakeOff {
        let tuned = parse_glibc("glibc:arena_max=1").unwrap().unwrap();
        let allocators = vec![Allocator::glibc(), tuned];
        let runs: Vec<RunRecord> = (0..rounds)
            .flat_map(|r| {
                [
                    record("glibc", r, 100.0 + f64::from(r), 1000.0),
                    record("glibc:arena_max=1", r, 150.0 + 3.0 * f64::from(r), 1000.0),
                ]
            })
            .collect();
        let groups = summarize_runs(&allocators, &[2], &runs, Some("glibc"));
        BakeOff {
            workload: "built-in".into(),
            allocators,
            missing: Vec::new(),
            threads: vec![2],
            repeat: rounds,
            baseline: Some("glibc".into()),
            runs,
            refused: Vec::new(),
            groups,
            notes: Vec::new(),
            interrupted: false,
        }
    }

    #[test]
    fn the_relative_throughput_is_stored_one_sample_a_round() {
        use measure::ToMetrics;
        let topology =
            topo::Topology::from_synthetic("pack:1 [numa(memory=1GiB)] core:2 pu:1").unwrap();
        let b = bake_off(5);
        let head = &b.parts(&topology)[0].headlines[0];
        assert!(
            head.detail.starts_with("2 thread(s), faster: 1.53× (95% interval 1.47–1.59)"),
            "{}",
            head.detail
        );
        assert!(head.detail.ends_with(", 5 runs each"), "{}", head.detail);
        let key = head.metric.as_deref().unwrap();
        let metrics = b.to_metrics();
        let backing = metrics.iter().find(|m| m.key() == key).expect("the headline's metric");
        // Each round's throughput over glibc's median (102): what the chart draws.
        let expected: Vec<f64> = (0..5).map(|r| (150.0 + 3.0 * f64::from(r)) / 102.0).collect();
        assert_eq!(backing.samples, expected);
        let median = measure::summarize(&backing.samples).unwrap().median;
        let relative = b.groups.iter().find(|g| g.allocator != "glibc").unwrap().relative;
        assert!((median - relative.unwrap()).abs() < 1e-12, "its median is the headline's value");
        // One round: one sample (such a figure compares as untested).
        let one = bake_off(1).to_metrics();
        let one = one.iter().find(|m| m.key() == key).unwrap();
        assert_eq!(one.samples, vec![150.0 / 100.0]);
    }

    #[test]
    fn a_stored_bake_off_draws_the_same_sections_even_with_nan_figures() {
        let topology =
            topo::Topology::from_synthetic("pack:1 [numa(memory=1GiB)] core:2 pu:1").unwrap();
        let tuned = parse_glibc("glibc:arena_max=1").unwrap().unwrap();
        let allocators = vec![Allocator::glibc(), tuned];
        // A command that reported no operations: CPU per operation is NaN, stored as null.
        let runs: Vec<RunRecord> = (0..3)
            .flat_map(|r| {
                [
                    record("glibc", r, 100.0 + f64::from(r), 1000.0),
                    record("glibc:arena_max=1", r, 150.0, 0.0),
                ]
            })
            .collect();
        let groups = summarize_runs(&allocators, &[2], &runs, Some("glibc"));
        let b = BakeOff {
            workload: "built-in".into(),
            allocators,
            missing: Vec::new(),
            threads: vec![2],
            repeat: 3,
            baseline: Some("glibc".into()),
            runs,
            refused: Vec::new(),
            groups,
            notes: vec!["a note".into()],
            interrupted: false,
        };
        let stored = serde_json::to_value(&b).unwrap();
        let back = BakeOff::from_stored("alloc", stored).unwrap();
        assert_eq!(back.parts(&topology), b.parts(&topology));
        assert_eq!(back.text(), b.text());
        assert!(b.failure().is_none());
        // One allocator refused beside measured ones: a failure naming it, once.
        let refusal = |allocator: &str, round| Refusal {
            allocator: allocator.into(),
            threads: 2,
            round,
            reason: "malloc resolves to libc.so.6".into(),
        };
        let partial =
            BakeOff { refused: vec![refusal("zlib", 0), refusal("zlib", 1)], ..b.clone() };
        let why = partial.failure().expect("a refused allocator is a failure");
        assert!(!why.is_usage(), "{why}");
        assert_eq!(
            why.to_string(),
            "refused: zlib (see above); the other allocators were measured"
        );
        // Stopped by Ctrl-C: the interruption is the answer, not the refusal.
        assert!(BakeOff { interrupted: true, ..partial }.failure().is_none());
        let none = BakeOff { runs: Vec::new(), groups: Vec::new(), ..b };
        assert!(none
            .failure()
            .is_some_and(|f| f.to_string().contains("every allocator was refused")));
    }
}
