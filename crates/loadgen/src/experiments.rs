//! `platscope load` (sysbench's `--tx-rate` patch, redone) and `load prepare` as the product runs
//! them: the arguments, the run (interval lines printed as they are measured), what the outcome
//! prints, stores and draws. One registry line each in the binary.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use experiment::{Context, Experiment, Globals, Outcome, Tool};
use measure::database::ServerKind;
use measure::{stop, Classified, Metric, ToMetrics};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::run::OnDisconnect;
use crate::WorkloadKind;
use crate::{render, Arrivals, IntervalLine, LoadReport, Plan, PrepareOptions, Protocol, Target};

/// Where the server is.
#[derive(Debug, Args)]
pub struct ConnArgs {
    /// The server kind.
    #[arg(long, required = true, value_parser = ["postgres", "mariadb"])]
    pub server: Option<String>,
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

/// `load`'s arguments; `load prepare` is a subcommand of its own ([`Prepare`]).
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct LoadArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Offered transactions per second, all connections together.
    #[arg(long, value_name = "TX/s", required_unless_present = "sweep_rate", value_parser = parse_rate, allow_negative_numbers = true)]
    pub rate: Option<f64>,
    /// Run one fixed-rate step per rate (`100,200,500`) and draw throughput, latency and CPU
    /// per transaction against offered rate (--out).
    #[arg(long, value_name = "LIST", conflicts_with = "rate", value_delimiter = ',', value_parser = parse_rate, allow_negative_numbers = true)]
    pub sweep_rate: Option<Vec<f64>>,
    /// Move each start by up to ±US µs (0: ±10% of the connection's period, as sysbench's
    /// `--tx-jitter` defaulted).
    #[arg(long, value_name = "US")]
    pub jitter: Option<u64>,
    /// Evenly spaced or Poisson starts.
    #[arg(long, default_value = "fixed", value_parser = ["fixed", "poisson"])]
    pub arrivals: String,
    /// Connections, one thread each.
    #[arg(long, default_value = "1", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub connections: u32,
    /// Seconds of schedule (per step with --sweep-rate).
    #[arg(long, value_name = "S", default_value = "10", value_parser = parse_seconds, conflicts_with = "transactions", allow_negative_numbers = true)]
    pub duration: Duration,
    /// Stop after this many transactions instead.
    #[arg(long, value_name = "N", value_parser = measure::args::parse_count, allow_negative_numbers = true)]
    pub transactions: Option<u64>,
    /// point-select, read-only, read-write (sysbench-like, after `load prepare`), or a SQL file
    /// with `:rand(lo,hi)` parameters.
    #[arg(long, default_value = "point-select")]
    pub workload: String,
    /// Simple (text) or prepared (extended) protocol.
    #[arg(long, default_value = "prepared", value_parser = ["simple", "prepared"])]
    pub protocol: String,
    /// Seconds between interval lines.
    #[arg(long, value_name = "S", default_value = "1", value_parser = parse_seconds, allow_negative_numbers = true)]
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
    /// When the server goes away mid-run: reconnect with bounded backoff and keep the schedule
    /// (transactions due meanwhile fail, counted by cause; the outage is reported), or stop the
    /// run there (what ran is kept, exit 1).
    #[arg(long, value_name = "WHAT", default_value = "reconnect", value_parser = ["reconnect", "stop"])]
    pub on_disconnect: String,
    /// Where --sweep-rate writes its chart.
    #[arg(long, value_name = "FILE", default_value = "load-sweep.html")]
    pub out: PathBuf,
}

/// `load prepare`'s arguments.
#[derive(Debug, Args)]
pub struct PrepareArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Tables sbtest1..N.
    #[arg(long, default_value = "1", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub tables: u32,
    /// Rows per table.
    #[arg(long, default_value = "10000", value_parser = measure::args::parse_count, allow_negative_numbers = true)]
    pub rows: u64,
    /// Seed of the data.
    #[arg(long, default_value = "1")]
    pub seed: u64,
}

fn parse_rate(text: &str) -> Result<f64, String> {
    let v: f64 = text.trim().parse().map_err(|_| format!("{text:?} is not a rate in tx/s"))?;
    if !(v.is_finite() && v > 0.0 && v <= 10_000_000.0) {
        return Err(format!("{text:?} must be above 0 and at most 10,000,000 tx/s"));
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

fn target(c: &ConnArgs) -> Result<Target, Classified> {
    let Some(server) = &c.server else {
        return Err(Classified::usage("--server postgres|mariadb is required"));
    };
    Ok(Target {
        kind: server.parse::<ServerKind>()?,
        url: c.url.clone(),
        socket: c.socket.clone(),
        port: c.port,
        user: c.user.clone(),
        database: c.database.clone(),
    })
}

/// The plan `load ARGS…` would run (`argv` as on its command line, without the connection
/// flags): for a multi-step experiment that drives load beside another measurement.
pub fn plan_from_argv(argv: &[&str]) -> Result<Plan, Classified> {
    use clap::FromArgMatches as _;
    let command = <RunArgs as Args>::augment_args(clap::Command::new("load")).no_binary_name(true);
    let matches =
        command.try_get_matches_from(argv).map_err(|e| Classified::usage(e.to_string()))?;
    plan(&RunArgs::from_arg_matches(&matches).map_err(|e| Classified::usage(e.to_string()))?)
}

fn plan(r: &RunArgs) -> Result<Plan, Classified> {
    let arrivals = match (r.arrivals.as_str(), r.jitter) {
        ("poisson", Some(_)) => {
            return Err(Classified::usage(
                "--jitter applies to fixed arrivals; Poisson starts are random already",
            ))
        }
        ("poisson", None) => Arrivals::Poisson,
        (_, Some(us)) => Arrivals::Jitter { us },
        (_, None) => Arrivals::Fixed,
    };
    let workload = match r.workload.as_str() {
        "point-select" => WorkloadKind::PointSelect,
        "read-only" => WorkloadKind::ReadOnly,
        "read-write" => WorkloadKind::ReadWrite,
        file => {
            let path = PathBuf::from(file);
            if !path.is_file() {
                return Err(Classified::usage(format!(
                    "--workload {file:?}: not point-select, read-only, read-write or a SQL file"
                )));
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
        protocol: if r.protocol == "simple" { Protocol::Simple } else { Protocol::Prepared },
        interval: r.interval,
        max_lag: r.max_lag,
        late_after: r.late,
        retry: r.retry,
        seed: r.seed,
        server_pid: r.server_pid,
        on_disconnect: if r.on_disconnect == "stop" {
            OnDisconnect::Stop
        } else {
            OnDisconnect::Reconnect
        },
    })
}

/// What `load` measured: one run at a fixed rate, or a sweep's steps (stored as `load` and
/// `load --sweep-rate`, as the report and the sweep have always been).
#[derive(Debug, Clone, PartialEq)]
pub enum LoadOutcome {
    Run(Box<LoadReport>),
    Sweep {
        steps: Vec<LoadReport>,
        /// Ctrl-C came between two steps (no step itself was cut short); not stored.
        stopped_between_steps: bool,
    },
}

impl LoadOutcome {
    fn runs(&self) -> &[LoadReport] {
        match self {
            LoadOutcome::Run(r) => std::slice::from_ref(r.as_ref()),
            LoadOutcome::Sweep { steps, .. } => steps,
        }
    }

    /// The interval lines as they were printed while the run went on (one header for all).
    fn intervals_text(&self) -> String {
        let mut out = String::new();
        for line in self.runs().iter().flat_map(|r| &r.intervals) {
            if out.is_empty() {
                out.push_str(&render::interval_header());
                out.push('\n');
            }
            out.push_str(&render::interval_line(line));
            out.push('\n');
        }
        out
    }

    /// What is printed after the last interval line: the summary, or a line per step.
    fn summary_text(&self) -> String {
        match self {
            LoadOutcome::Run(r) => format!("\n{}", render::render_report(r)),
            LoadOutcome::Sweep { steps, .. } => {
                let mut text = format!("\n{}\n", render::sweep_header());
                for s in steps {
                    text.push_str(&render::sweep_line(s));
                    text.push('\n');
                }
                text
            }
        }
    }
}

impl Serialize for LoadOutcome {
    /// The report, or the array of steps: what `--json` printed and the store kept.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            LoadOutcome::Run(r) => r.serialize(s),
            LoadOutcome::Sweep { steps, .. } => steps.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for LoadOutcome {
    /// An array is a sweep's steps, anything else one run.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Stored {
            Sweep(Vec<LoadReport>),
            Run(Box<LoadReport>),
        }
        Ok(match Stored::deserialize(d)? {
            Stored::Sweep(steps) => LoadOutcome::Sweep { steps, stopped_between_steps: false },
            Stored::Run(r) => LoadOutcome::Run(r),
        })
    }
}

impl ToMetrics for LoadOutcome {
    fn to_metrics(&self) -> Vec<Metric> {
        self.runs().iter().flat_map(ToMetrics::to_metrics).collect()
    }
}

const RUN: &str = "load";
const SWEEP: &str = "load --sweep-rate";

impl Outcome for LoadOutcome {
    const KINDS: &'static [&'static str] = &[RUN, SWEEP];

    fn kind(&self) -> &'static str {
        match self {
            LoadOutcome::Run(_) => RUN,
            LoadOutcome::Sweep { .. } => SWEEP,
        }
    }

    fn interrupted(&self) -> bool {
        let cut = self.runs().iter().any(|r| r.interrupted.is_some());
        cut || matches!(self, LoadOutcome::Sweep { stopped_between_steps: true, .. })
    }

    fn text(&self) -> String {
        self.intervals_text() + &self.summary_text()
    }

    fn parts(&self, _topology: &topo::Topology) -> Vec<chart::Part> {
        match self {
            LoadOutcome::Run(r) => crate::chart::run_parts(r),
            LoadOutcome::Sweep { steps, .. } => crate::chart::sweep_parts(steps),
        }
    }

    /// A run cut short by the server is a failure (exit 1) after its figures are printed and
    /// stored.
    fn failure(&self) -> Option<Classified> {
        if let Some(why) = self.runs().iter().find_map(|r| r.interrupted.as_deref()) {
            return why.starts_with("the server went away").then(|| {
                Classified::runtime(format!(
                    "{why}; what ran was printed and stored as interrupted"
                ))
            });
        }
        // Rode through an outage the server never came back from.
        let open =
            self.runs().iter().flat_map(|r| &r.outages).find(|o| o.first_success_s.is_none())?;
        Some(Classified::runtime(format!(
            "the server went away at {:.2} s and did not come back before the end ({} \
             transaction(s) failed); what ran was printed and stored",
            open.start_s, open.failed
        )))
    }

    fn from_stored(kind: &str, result: serde_json::Value) -> Result<Self, serde_json::Error> {
        if kind == SWEEP {
            let steps = serde_json::from_value(result)?;
            return Ok(LoadOutcome::Sweep { steps, stopped_between_steps: false });
        }
        Ok(LoadOutcome::Run(Box::new(serde_json::from_value(result)?)))
    }
}

/// `platscope load`.
#[derive(Debug)]
pub struct Load;

impl Experiment for Load {
    const PATH: &'static [&'static str] = &["load"];
    const ABOUT: &'static str = "Database load at a steady rate (open loop): latency from each \
                                 transaction's intended start, late and skipped counts, errors \
                                 by SQLSTATE, and the server's CPU per transaction; `load \
                                 prepare` makes the tables; `--sweep-rate` draws the curve";
    const TINY: &'static [&'static str] = &[
        "--server",
        "postgres",
        "--url",
        "{pg}",
        "--rate",
        "50",
        "--duration",
        "1",
        "--interval",
        "0.5",
    ];
    type Args = LoadArgs;
    type Outcome = LoadOutcome;

    fn run(args: &LoadArgs, ctx: &mut Context<'_>) -> Result<LoadOutcome, Classified> {
        let target = target(&args.conn)?;
        let plan = plan(&args.run)?;
        let mut first = true;
        let quiet = ctx.quiet;
        let mut on_interval = |line: &IntervalLine| {
            let mut text = String::new();
            if first {
                text.push_str(&render::interval_header());
                text.push('\n');
                first = false;
            }
            text.push_str(&render::interval_line(line));
            text.push('\n');
            let _ = ctx.live(&text);
            std::ops::ControlFlow::Continue(())
        };
        let outcome = match &args.run.sweep_rate {
            Some(rates) => {
                let mut on_step = |rate: f64| {
                    if !quiet {
                        measure::say!("platscope: step at {rate} tx/s");
                    }
                };
                let steps = crate::sweep(
                    &target,
                    &plan,
                    rates,
                    stop::flag(),
                    &mut on_step,
                    &mut on_interval,
                )?;
                let stopped_between_steps = stop::requested();
                LoadOutcome::Sweep { steps, stopped_between_steps }
            }
            None => LoadOutcome::Run(Box::new(crate::run(
                &target,
                &plan,
                stop::flag(),
                &mut on_interval,
            )?)),
        };
        // A step of a report draws its sections on the report's page, not in a file of its own.
        let sweep_page = matches!(outcome, LoadOutcome::Sweep { .. }) && !ctx.quiet;
        if sweep_page {
            let parts = outcome.parts(ctx.topology);
            experiment::output::write_page(&args.run.out, SWEEP, ctx.globals.version, &parts)
                .map_err(Classified::runtime)?;
        }
        // Everything is streamed: the summary follows the interval lines.
        let _ = ctx.live(&outcome.summary_text());
        if sweep_page {
            measure::say!("platscope: chart written to {}", args.run.out.display());
        }
        Ok(outcome)
    }
}

/// `platscope load prepare`: makes the tables; stores nothing.
#[derive(Debug)]
pub struct Prepare;

impl Tool for Prepare {
    const PATH: &'static [&'static str] = &["load", "prepare"];
    const ABOUT: &'static str = "Create and fill the sysbench-like tables (sbtest1..N) the \
                                 built-in workloads use; the data comes from --seed, so the same \
                                 arguments give the same rows";
    type Args = PrepareArgs;

    fn run(p: &PrepareArgs, globals: &Globals) -> Result<(), Classified> {
        let target = target(&p.conn)?;
        let opts = PrepareOptions { tables: p.tables, rows: p.rows, seed: p.seed };
        measure::say!(
            "platscope: preparing {} table(s) of {} rows in {}",
            p.tables,
            p.rows,
            target.describe()
        );
        let text = globals.format == experiment::Format::Text;
        let done = crate::prepare(&target, &opts, &mut |t| {
            if text {
                measure::say!("platscope: sbtest{t} done");
            }
        })?;
        match globals.format {
            experiment::Format::Text => experiment::output::emit(&format!(
                "prepared {} table(s) × {} rows (seed {}) in {:.1} s\n",
                done.tables, done.rows_per_table, done.seed, done.seconds
            ))?,
            _ => experiment::output::emit_json(&done)?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::tests::step;

    fn round_trip(o: &LoadOutcome) -> LoadOutcome {
        let stored = serde_json::to_value(o).unwrap();
        LoadOutcome::from_stored(o.kind(), stored).unwrap()
    }

    #[test]
    fn a_stored_run_and_sweep_draw_the_same_sections() {
        let topology =
            topo::Topology::from_synthetic("pack:1 [numa(memory=1GiB)] core:2 pu:1").unwrap();
        let mut run = step(200.0, 150.0, 7, Some(55.5));
        run.server = ServerKind::MariaDb;
        run.latency_log2_us.add(300);
        // No transaction to divide by: CPU per transaction is NaN, stored as null.
        let mut idle = step(100.0, 0.0, 3, None);
        idle.cost = step(1.0, 1.0, 1, Some(f64::NAN)).cost;
        for o in [
            LoadOutcome::Run(Box::new(run.clone())),
            LoadOutcome::Sweep { steps: vec![run.clone(), idle], stopped_between_steps: true },
        ] {
            let back = round_trip(&o);
            assert_eq!(back.kind(), o.kind());
            assert_eq!(back.parts(&topology), o.parts(&topology), "{}", o.kind());
            assert_eq!(back.text(), o.text());
        }
        // The stored spellings are today's: the server as `maria_db`, a sweep as an array.
        let stored = serde_json::to_value(LoadOutcome::Run(Box::new(run.clone()))).unwrap();
        assert_eq!(stored["server"], "maria_db");
        let sweep = LoadOutcome::Sweep { steps: vec![run], stopped_between_steps: false };
        assert!(serde_json::to_value(&sweep).unwrap().is_array());
    }

    #[test]
    fn only_a_server_that_went_away_fails_the_command() {
        let mut r = step(100.0, 90.0, 2, None);
        assert!(LoadOutcome::Run(Box::new(r.clone())).failure().is_none());
        r.interrupted = Some("stopped (signal)".into());
        assert!(LoadOutcome::Run(Box::new(r.clone())).failure().is_none());
        assert!(LoadOutcome::Run(Box::new(r.clone())).interrupted());
        r.interrupted = Some("the server went away: EOF".into());
        let why = LoadOutcome::Run(Box::new(r)).failure().unwrap();
        assert!(!why.is_usage(), "{why}");
        assert!(why.to_string().starts_with("the server went away: EOF;"), "{why}");
    }
}
