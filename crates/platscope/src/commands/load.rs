//! `platscope load` (seed 004's sysbench `--tx-rate`): transactions at a steady rate against
//! PostgreSQL or MariaDB, latency from the schedule, CPU per transaction; `load prepare` makes
//! the tables. Arguments and printing only: the work is `loadgen`'s.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use loadgen::{Arrivals, Plan, PrepareOptions, Protocol, ServerKind, Target, WorkloadKind};
use measure::{stop, UsageError};
use results::StoreOptions;
use topo::Topology;

use crate::output::{emit, emit_json};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct LoadArgs {
    #[command(subcommand)]
    pub action: Option<LoadAction>,
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum LoadAction {
    /// Create and fill the sysbench-like tables (sbtest1..N) the built-in workloads use; the
    /// data comes from --seed, so the same arguments give the same rows.
    Prepare(PrepareArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ServerArg {
    Postgres,
    Mariadb,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ArrivalsArg {
    Fixed,
    Poisson,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ProtocolArg {
    Simple,
    Prepared,
}

/// Where the server is.
#[derive(Debug, Args)]
pub struct ConnArgs {
    /// The server kind.
    #[arg(long, required = true)]
    pub server: Option<ServerArg>,
    /// PostgreSQL URL or conninfo (`host=/run/postgresql port=5432 user=…`); `mysql://` URL for
    /// MariaDB.
    #[arg(long, conflicts_with = "socket")]
    pub url: Option<String>,
    /// Unix socket: PostgreSQL's socket directory (or its .s.PGSQL.PORT file), MariaDB's
    /// socket file.
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Port (with --socket for PostgreSQL's socket name, or TCP).
    #[arg(long)]
    pub port: Option<u16>,
    /// User (default: postgres / $PGUSER, or root).
    #[arg(long)]
    pub user: Option<String>,
    /// Database (default: postgres / $PGDATABASE, or platscope).
    #[arg(long)]
    pub database: Option<String>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Offered transactions per second, all connections together.
    #[arg(long, value_name = "TX/s", required_unless_present = "sweep_rate", value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// Run one fixed-rate step per rate (`100,200,500`) and draw throughput, latency and CPU
    /// per transaction against offered rate (--out).
    #[arg(long, value_name = "LIST", conflicts_with = "rate", value_delimiter = ',', value_parser = parse_rate)]
    pub sweep_rate: Option<Vec<f64>>,
    /// Move each start by up to ±US µs (0: ±10% of the connection's period, the seed's default).
    #[arg(long, value_name = "US")]
    pub jitter: Option<u64>,
    /// Evenly spaced or Poisson starts.
    #[arg(long, value_enum, default_value = "fixed")]
    pub arrivals: ArrivalsArg,
    /// Connections, one thread each.
    #[arg(long, default_value = "1", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub connections: u32,
    /// Seconds of schedule (per step with --sweep-rate).
    #[arg(long, value_name = "S", default_value = "10", value_parser = parse_seconds, conflicts_with = "transactions")]
    pub duration: Duration,
    /// Stop after this many transactions instead.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub transactions: Option<u64>,
    /// point-select, read-only, read-write (sysbench-like, after `load prepare`), or a SQL file
    /// with `:rand(lo,hi)` parameters.
    #[arg(long, default_value = "point-select")]
    pub workload: String,
    /// Simple (text) or prepared (extended) protocol.
    #[arg(long, value_enum, default_value = "prepared")]
    pub protocol: ProtocolArg,
    /// Seconds between interval lines.
    #[arg(long, value_name = "S", default_value = "1", value_parser = parse_seconds)]
    pub interval: Duration,
    /// Skip (and count) transactions that could only start MS late (pgbench -L).
    #[arg(long, value_name = "MS", value_parser = parse_ms)]
    pub max_lag: Option<Duration>,
    /// Count a transaction late when it starts more than MS after its time.
    #[arg(long, value_name = "MS", default_value = "5", value_parser = parse_ms)]
    pub late: Duration,
    /// Retry a transaction up to N times after a serialization failure or deadlock (SQLSTATE
    /// class 40).
    #[arg(long, value_name = "N", default_value = "0")]
    pub retry: u32,
    /// Seed of the jitter, arrivals and parameters.
    #[arg(long, default_value = "1")]
    pub seed: u64,
    /// The server's main process, for CPU per transaction when it cannot be found from the
    /// connection.
    #[arg(long, value_parser = measure::args::parse_pid)]
    pub server_pid: Option<u32>,
    /// Where --sweep-rate writes its chart.
    #[arg(long, value_name = "FILE", default_value = "load-sweep.html")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct PrepareArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Tables sbtest1..N.
    #[arg(long, default_value = "1", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub tables: u32,
    /// Rows per table.
    #[arg(long, default_value = "10000", value_parser = clap::value_parser!(u64).range(1..))]
    pub rows: u64,
    /// Seed of the data.
    #[arg(long, default_value = "1")]
    pub seed: u64,
}

fn parse_rate(text: &str) -> Result<f64, String> {
    let v: f64 = text.trim().parse().map_err(|_| format!("{text:?} is not a rate in tx/s"))?;
    if !(v.is_finite() && v > 0.0 && v <= 10_000_000.0) {
        return Err(format!("{text:?} must be between 0 and 10,000,000 tx/s"));
    }
    Ok(v)
}

fn parse_seconds(text: &str) -> Result<Duration, String> {
    let v: f64 = text.trim().parse().map_err(|_| format!("{text:?} is not seconds"))?;
    if !(v.is_finite() && v > 0.0 && v < 1e7) {
        return Err(format!("{text:?} must be a positive number of seconds"));
    }
    Ok(Duration::from_secs_f64(v))
}

fn parse_ms(text: &str) -> Result<Duration, String> {
    let v: f64 = text.trim().parse().map_err(|_| format!("{text:?} is not milliseconds"))?;
    if !(v.is_finite() && (0.0..1e9).contains(&v)) {
        return Err(format!("{text:?} must be a non-negative number of milliseconds"));
    }
    Ok(Duration::from_secs_f64(v / 1e3))
}

fn target(c: &ConnArgs) -> anyhow::Result<Target> {
    let kind = match c.server {
        Some(ServerArg::Postgres) => ServerKind::Postgres,
        Some(ServerArg::Mariadb) => ServerKind::MariaDb,
        None => {
            return Err(UsageError::Message("--server postgres|mariadb is required".into()).into())
        }
    };
    Ok(Target {
        kind,
        url: c.url.clone(),
        socket: c.socket.clone(),
        port: c.port,
        user: c.user.clone(),
        database: c.database.clone(),
    })
}

fn plan(r: &RunArgs) -> anyhow::Result<Plan> {
    let arrivals = match (r.arrivals, r.jitter) {
        (ArrivalsArg::Poisson, Some(_)) => {
            return Err(UsageError::Message(
                "--jitter applies to fixed arrivals; Poisson starts are random already".into(),
            )
            .into())
        }
        (ArrivalsArg::Poisson, None) => Arrivals::Poisson,
        (ArrivalsArg::Fixed, Some(us)) => Arrivals::Jitter { us },
        (ArrivalsArg::Fixed, None) => Arrivals::Fixed,
    };
    let workload = match r.workload.as_str() {
        "point-select" => WorkloadKind::PointSelect,
        "read-only" => WorkloadKind::ReadOnly,
        "read-write" => WorkloadKind::ReadWrite,
        file => {
            let path = PathBuf::from(file);
            if !path.is_file() {
                return Err(UsageError::Message(format!(
                    "--workload {file:?}: not point-select, read-only, read-write or a SQL file"
                ))
                .into());
            }
            WorkloadKind::File(path)
        }
    };
    Ok(Plan {
        rate: r.rate.unwrap_or(1.0),
        arrivals,
        connections: r.connections,
        duration: if r.transactions.is_some() { None } else { Some(r.duration) },
        transactions: r.transactions,
        workload,
        protocol: match r.protocol {
            ProtocolArg::Simple => Protocol::Simple,
            ProtocolArg::Prepared => Protocol::Prepared,
        },
        interval: r.interval,
        max_lag: r.max_lag,
        late_after: r.late,
        retry: r.retry,
        seed: r.seed,
        server_pid: r.server_pid,
    })
}

fn say(text: &str) {
    let _ = writeln!(std::io::stderr(), "platscope: {text}");
}

pub fn run(args: &LoadArgs, json: bool, store: &StoreOptions) -> anyhow::Result<()> {
    if let Some(LoadAction::Prepare(p)) = &args.action {
        return prepare(p, json);
    }
    let target = target(&args.conn)?;
    let plan = plan(&args.run)?;
    let topology = Topology::detect()?;
    let mut rec = super::record::recorder(store, &topology)?;
    stop::install();
    let mut first = true;
    let mut on_interval = |line: &loadgen::IntervalLine| {
        if json {
            return;
        }
        let mut text = String::new();
        if first {
            text.push_str(&loadgen::render::interval_header());
            text.push('\n');
            first = false;
        }
        text.push_str(&loadgen::render::interval_line(line));
        text.push('\n');
        let _ = emit(&text);
    };
    if let Some(rates) = &args.run.sweep_rate {
        let mut on_step = |rate: f64| say(&format!("step at {rate} tx/s"));
        let steps =
            loadgen::sweep(&target, &plan, rates, stop::flag(), &mut on_step, &mut on_interval)?;
        let title = format!("Load sweep: {}", steps.first().map_or("", |s| s.workload.as_str()));
        let page = loadgen::chart::write_sweep_html(&args.run.out, &steps, &title)?;
        if json {
            emit_json(&steps)?;
        } else {
            let mut text = format!("\n{}\n", loadgen::render::sweep_header());
            for s in &steps {
                text.push_str(&loadgen::render::sweep_line(s));
                text.push('\n');
            }
            emit(&text)?;
        }
        say(&format!("chart written to {}", page.display()));
        let interrupted = steps.iter().any(|s| s.interrupted.is_some());
        rec.record("load --sweep-rate", &steps, &steps, interrupted || stop::requested())?;
        return gone(steps.iter().filter_map(|s| s.interrupted.as_deref()).next());
    }
    let report = loadgen::run(&target, &plan, stop::flag(), &mut on_interval)?;
    if json {
        emit_json(&report)?;
    } else {
        emit(&format!("\n{}", loadgen::render::render_report(&report)))?;
    }
    rec.record("load", &report, &report, report.interrupted.is_some())?;
    gone(report.interrupted.as_deref())
}

/// A run cut short by the server is a failure (exit 1) after its figures are printed and stored.
fn gone(interrupted: Option<&str>) -> anyhow::Result<()> {
    match interrupted {
        Some(why) if why.starts_with("the server went away") => {
            Err(anyhow::anyhow!("{why}; what ran was printed and stored as interrupted"))
        }
        _ => Ok(()),
    }
}

fn prepare(p: &PrepareArgs, json: bool) -> anyhow::Result<()> {
    let target = target(&p.conn)?;
    let opts = PrepareOptions { tables: p.tables, rows: p.rows, seed: p.seed };
    say(&format!("preparing {} table(s) of {} rows in {}", p.tables, p.rows, target.describe()));
    let done = loadgen::prepare(&target, &opts, &mut |t| {
        if !json {
            say(&format!("sbtest{t} done"));
        }
    })?;
    if json {
        emit_json(&done)?;
    } else {
        emit(&format!(
            "prepared {} table(s) × {} rows (seed {}) in {:.1} s\n",
            done.tables, done.rows_per_table, done.seed, done.seconds
        ))?;
    }
    Ok(())
}
