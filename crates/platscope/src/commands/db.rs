//! `platscope db querystat` (seed 004's querystat): query throughput every INTERVAL, then the
//! latency histogram, cache hits and pre-emption. The tracing is `querystat`'s.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use measure::stop;
use querystat::{
    find_server, render_report, By, Options, RunOptions, Selector, ServerKind, Tracer,
};
use results::StoreOptions;
use topo::Topology;

use crate::output::{emit, emit_json};

#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Query (or transaction) throughput every INTERVAL seconds; at the end (COUNT intervals or
    /// Ctrl-C) the latency histogram, cache hits against misses, latency when pre-empted or not,
    /// and who pre-empted the server's threads. PostgreSQL through its USDT probes, MariaDB
    /// through uprobes; root.
    Querystat(QuerystatArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ServerArg {
    Postgres,
    Mariadb,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ByArg {
    Query,
    Transaction,
}

#[derive(Debug, Args)]
pub struct QuerystatArgs {
    /// Seconds between throughput lines.
    #[arg(value_name = "INTERVAL", default_value = "3", value_parser = measure::args::parse_interval)]
    pub interval: Duration,
    /// Stop after this many intervals (default: until Ctrl-C or the server exits).
    #[arg(value_name = "COUNT", value_parser = measure::args::parse_count)]
    pub count: Option<u64>,
    /// Which kind of server to look for (default: whichever one is running).
    #[arg(long)]
    pub server: Option<ServerArg>,
    /// The server's process (the postmaster or mariadbd, or one of its backends).
    #[arg(long, value_parser = measure::args::parse_pid, conflicts_with = "exe")]
    pub pid: Option<u32>,
    /// The server binary that is running (when several servers run from different builds).
    #[arg(long)]
    pub exe: Option<PathBuf>,
    /// Time transactions instead of queries (PostgreSQL).
    #[arg(long, value_enum, default_value = "query")]
    pub by: ByArg,
    /// Print each query slower than MS milliseconds, with its text, as it happens.
    #[arg(long, value_name = "MS", value_parser = parse_ms)]
    pub slower: Option<Duration>,
    /// Count exact shared-buffer hits (one probe per buffer lookup: costs more; PostgreSQL).
    #[arg(long)]
    pub buffer_hits: bool,
}

fn parse_ms(text: &str) -> Result<Duration, String> {
    let ms: f64 = text.trim().parse().map_err(|_| format!("{text:?} is not milliseconds"))?;
    if !(ms.is_finite() && ms > 0.0) {
        return Err(format!("{text:?} must be a positive number of milliseconds"));
    }
    Ok(Duration::from_secs_f64(ms / 1e3))
}

pub fn run(command: &DbCommand, json: bool, store: &StoreOptions) -> anyhow::Result<()> {
    let DbCommand::Querystat(args) = command;
    querystat::preflight()?;
    let selector = Selector {
        kind: args.server.map(|s| match s {
            ServerArg::Postgres => ServerKind::Postgres,
            ServerArg::Mariadb => ServerKind::MariaDb,
        }),
        pid: args.pid,
        exe: args.exe.clone(),
    };
    let server = find_server(&selector)?;
    let options = Options {
        by: match args.by {
            ByArg::Query => By::Query,
            ByArg::Transaction => By::Transaction,
        },
        slower: args.slower,
        buffer_hits: args.buffer_hits,
    };
    let topology = Topology::detect()?;
    let mut rec = super::record::recorder(store, &topology)?;
    stop::install();
    measure::say!("platscope: tracing {}", server.describe());
    let tracer = Tracer::attach(&server, &options)?;
    let run_options = RunOptions { interval: args.interval, count: args.count };
    let mut stdout = std::io::stdout();
    let mut sink = std::io::sink();
    let out: &mut dyn std::io::Write = if json { &mut sink } else { &mut stdout };
    let report = querystat::run(&tracer, &run_options, stop::flag(), out)?;
    drop(tracer);
    if json {
        emit_json(&report)?;
    } else {
        emit(&render_report(&report))?;
    }
    rec.record("db querystat", &report, &report, stop::requested())?;
    Ok(())
}
