//! `platscope alloc` (seed 004's allocator bake-off) and its hidden `alloc-worker`: argument
//! mapping and printing only; discovery, verification, runs and verdicts are `allocbench`'s.

use std::io::Write as _;
use std::path::PathBuf;

use allocbench::allocator::{ldconfig_cache, parse_custom, resolve, DEFAULT_LIST};
use allocbench::run::{CommandSpec, Outcome, Throughput, WorkerCommand};
use allocbench::server::{ServerKind, ServerSpec};
use allocbench::workload::BuiltinParams;
use allocbench::{Plan, Workload};
use anyhow::Context as _;
use clap::Args;
use measure::{stop, UsageError};
use results::StoreOptions;
use topo::Topology;

use crate::output::{emit, emit_json};

#[derive(Debug, Args)]
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
    /// Rounds; allocators run interleaved round-robin in each. Fewer than 3: no ranking.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// The built-in multi-threaded allocation workload (the default without a command or
    /// --server).
    #[arg(long, value_parser = ["builtin"], conflicts_with_all = ["server", "command"])]
    pub workload: Option<String>,
    /// Built-in: allocations per thread. Command: the operations it does (the rate is this
    /// over its wall time).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub ops: Option<u64>,
    /// Built-in: live objects per thread.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..))]
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
    #[arg(long, value_name = "TX/S", value_parser = clap::value_parser!(u32).range(1..))]
    pub rate: Option<u32>,
    /// Also write the charts as a standalone HTML page.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// The command to measure, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// The hidden worker: the built-in workload in its own process, so the preload applies.
#[derive(Debug, Args)]
pub struct AllocWorkerArgs {
    /// `--threads=N --ops=N …` as the parent writes them.
    #[arg(allow_hyphen_values = true, trailing_var_arg = true)]
    pub args: Vec<String>,
}

pub fn worker(args: &AllocWorkerArgs) -> anyhow::Result<()> {
    let params = BuiltinParams::from_args(&args.args)?;
    allocbench::workload::serve(
        &params,
        &mut std::io::stdin().lock(),
        &mut std::io::stdout().lock(),
    )?;
    Ok(())
}

fn workload(args: &AllocArgs) -> anyhow::Result<Workload> {
    if let Some(server) = &args.server {
        let kind: ServerKind = server.parse()?;
        return Ok(Workload::Server(ServerSpec { kind, seconds: args.seconds, rate: args.rate }));
    }
    if args.rate.is_some() {
        return Err(UsageError::Message("--rate applies to --server runs".into()).into());
    }
    if !args.command.is_empty() {
        let throughput = match (&args.metric, args.ops) {
            (Some(_), Some(_)) => {
                return Err(UsageError::Message("give --metric or --ops, not both".into()).into())
            }
            (Some(re), None) => Throughput::Metric(regex::Regex::new(re).map_err(|e| {
                // The regex crate draws a multi-line caret diagram; its last line says what.
                let what = e.to_string();
                let what = what.lines().last().unwrap_or("").trim().trim_start_matches("error: ");
                UsageError::Message(format!(
                    "--metric '{re}': not a valid regular expression ({what})"
                ))
            })?),
            (None, Some(n)) => Throughput::Ops(n),
            (None, None) => {
                return Err(UsageError::Message(
                    "a command's throughput needs --metric REGEX (a rate it prints) or --ops N \
                     (operations it does)"
                        .into(),
                )
                .into())
            }
        };
        return Ok(Workload::Command(CommandSpec { argv: args.command.clone(), throughput }));
    }
    if args.metric.is_some() {
        return Err(UsageError::Message("--metric needs a command after --".into()).into());
    }
    let exe = std::env::current_exe().context("finding this program to start the worker")?;
    let params = BuiltinParams {
        threads: 1,
        ops_per_thread: args.ops.unwrap_or(BuiltinParams::default().ops_per_thread),
        working_set: args.working_set,
        cross_share: args.cross_thread,
        ..BuiltinParams::default()
    };
    params.validate()?;
    Ok(Workload::Builtin {
        worker: WorkerCommand { program: exe, args: vec!["alloc-worker".into()] },
        params,
    })
}

fn progress(outcome: &Outcome) {
    let line = match outcome {
        Outcome::Measured(r) => format!(
            "alloc: round {} {} × {}: {:.0} ops/s ({})",
            r.round + 1,
            r.allocator,
            r.threads,
            r.throughput,
            r.verified
        ),
        Outcome::Refused(r) => format!("alloc: {} refused: {}", r.allocator, r.reason),
        Outcome::Interrupted => "alloc: stopped".into(),
    };
    let _ = writeln!(std::io::stderr(), "{line}");
}

pub fn run(args: &AllocArgs, json: bool, store: &StoreOptions) -> anyhow::Result<()> {
    let names: Vec<String> = args
        .allocators
        .clone()
        .unwrap_or_else(|| DEFAULT_LIST.iter().map(|s| s.to_string()).collect());
    let custom = args.custom.iter().map(|c| parse_custom(c)).collect::<Result<Vec<_>, _>>()?;
    let cache = ldconfig_cache();
    let resolved = resolve(&names, &custom, &cache)?;
    for m in &resolved.missing {
        let _ = writeln!(std::io::stderr(), "alloc: skipping {m}");
    }
    let plan = Plan {
        allocators: resolved.allocators,
        missing: resolved.missing,
        threads: args.threads.clone().unwrap_or_else(|| {
            if args.command.is_empty() {
                vec![1, 2]
            } else {
                vec![1]
            }
        }),
        repeat: args.repeat,
        workload: workload(args)?,
    };
    plan.validate()?;
    let topology = Topology::detect().context("reading the topology")?;
    stop::install();
    let mut rec = super::record::recorder(store, &topology)?;
    let bakeoff = allocbench::bakeoff::run(&plan, &cache, stop::flag(), &mut progress)?;
    if json {
        emit_json(&bakeoff)?;
    } else {
        emit(&allocbench::render::render(&bakeoff))?;
    }
    if let Some(path) = &args.html {
        report::alloc::write_page(path, &bakeoff)
            .with_context(|| format!("writing {}", path.display()))?;
        let _ = writeln!(std::io::stderr(), "alloc: charts written to {}", path.display());
    }
    rec.record("alloc", &bakeoff, &bakeoff, bakeoff.interrupted)?;
    if bakeoff.runs.is_empty() && !bakeoff.interrupted {
        anyhow::bail!("no run could be verified: every allocator was refused (see above)");
    }
    Ok(())
}
