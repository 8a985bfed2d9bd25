//! Writes a synthetic fleet (`fleet::synthetic`) as JSON, for benches: the reports as an array
//! of report records (what `platscope fleet --reports-json FILE` reads) and what was injected.
//!
//! ```text
//! cargo run --release -p fleet --example synthetic_fleet -- \
//!     --real crates/fleet/tests/fixtures/reports_kvm_xeon_2cpu.json \
//!     --hosts 1000 --days 90 --classes 4 [--out fleet.json] [--truth truth.json] \
//!     [--into results.db | --into postgresql://…] [--quiet] [--analyse]
//! ```
//!
//! `--real` may also be a results database (its reports read as `platscope fleet` reads them;
//! run `platscope fleet --db FILE` once first to compute the figures of reports stored by an
//! older platscope); `--save-real FILE` writes them as JSON. `--analyse` also runs the analysis on the fleet and prints how long it took (wall clock) and
//! what it found against what was injected.

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use fleet::analysis::{analyse, FleetReport, Options};
use fleet::series::Fleet;
use fleet::synthetic::{generate, Plan};
use results::{FleetFilter, FleetStore, PgStore, ReportFigures, SqliteStore};

#[derive(Debug, Parser)]
struct Args {
    /// Real reports of one machine: a JSON array of report records, or a results database
    /// (SQLite) whose reports are read (their figures computed first if it has none).
    #[arg(long)]
    real: PathBuf,
    /// Write the real reports read as a JSON array (how the tests' fixture was made).
    #[arg(long)]
    save_real: Option<PathBuf>,
    #[arg(long, default_value_t = 40)]
    hosts: usize,
    #[arg(long, default_value_t = 30)]
    days: usize,
    #[arg(long, default_value_t = 2)]
    classes: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Inject nothing.
    #[arg(long)]
    quiet: bool,
    /// Where to write the reports (JSON).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Where to write what was injected (JSON).
    #[arg(long)]
    truth: Option<PathBuf>,
    /// Analyse the fleet and print the time it took and what it missed.
    #[arg(long)]
    analyse: bool,
    /// With --analyse: write the analysis (the JSON of `platscope fleet --json`) here.
    #[arg(long, value_name = "FILE")]
    report_out: Option<PathBuf>,
    /// Write every host's series (host, figure, unit, the times and values in time order) as
    /// JSON, for other change-point tools to run on the same data.
    #[arg(long, value_name = "FILE")]
    series_out: Option<PathBuf>,
    /// Judge a fleet analysis (the JSON of `platscope fleet --json`) against what this plan
    /// injects, and print what it missed.
    #[arg(long, value_name = "FILE")]
    judge: Option<PathBuf>,
    /// Also record the fleet's report records into a results store: a SQLite file, or
    /// postgresql://… (what `platscope fleet` then reads).
    #[arg(long, value_name = "STORE")]
    into: Option<String>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let real: Vec<ReportFigures> = if args.real.extension().is_some_and(|e| e == "json") {
        serde_json::from_str(&std::fs::read_to_string(&args.real)?)?
    } else {
        let store = SqliteStore::open_read_only(&args.real)?;
        store.all_report_figures(&FleetFilter::default())?
    };
    if let Some(path) = &args.save_real {
        std::fs::write(path, serde_json::to_vec_pretty(&real)?)?;
    }
    let mut plan = Plan::new(args.hosts, args.days, args.classes, args.seed);
    if args.quiet {
        plan = plan.quiet();
    }
    let (reports, truth) = generate(&real, &plan)?;
    if let Some(path) = &args.out {
        std::fs::write(path, serde_json::to_vec(&reports)?)?;
    }
    if let Some(path) = &args.truth {
        std::fs::write(path, serde_json::to_vec_pretty(&truth)?)?;
    }
    eprintln!(
        "{} hosts × {} days: {} reports, {} figures each; {} shifts injected",
        args.hosts,
        args.days,
        reports.len(),
        reports.first().map_or(0, |r| r.figures.len()),
        truth.shifts.len()
    );
    if let Some(store) = &args.into {
        let started = Instant::now();
        let mut target: Box<dyn FleetStore> = if store.starts_with("postgres") {
            Box::new(PgStore::connect(store)?)
        } else {
            Box::new(SqliteStore::open(std::path::Path::new(store))?)
        };
        let mut added = 0;
        for chunk in reports.chunks(5000) {
            added += target.record_many_report_figures(chunk)?;
        }
        eprintln!(
            "recorded {added} new report records into {} in {:.1} s",
            target.location(),
            started.elapsed().as_secs_f64()
        );
    }
    if let Some(path) = &args.judge {
        let report: FleetReport = serde_json::from_str(&std::fs::read_to_string(path)?)?;
        let misses = truth.misses(&plan, &report);
        eprintln!("{}: {} miss(es)", path.display(), misses.len());
        for miss in &misses {
            eprintln!("  missed: {miss}");
        }
    }
    if let Some(path) = &args.series_out {
        let fleet = Fleet::from_reports(&reports, &Default::default());
        let series: Vec<serde_json::Value> = fleet
            .series
            .iter()
            .map(|s| {
                let host = &fleet.hosts[s.host];
                let figure = &fleet.figures[s.figure];
                serde_json::json!({
                    "host": host.name,
                    "figure": figure.name,
                    "unit": figure.unit,
                    "at": s.runs.iter().map(|&r| host.runs[r].recorded_at.clone()).collect::<Vec<_>>(),
                    "values": s.values,
                })
            })
            .collect();
        std::fs::write(path, serde_json::to_vec(&series)?)?;
    }
    if args.analyse {
        let started = Instant::now();
        let analysis = analyse(&reports, &Options::default());
        let took = started.elapsed();
        let misses = truth.misses(&plan, &analysis.report);
        eprintln!(
            "analysed in {:.2} s on {} thread(s): {} series, {} changes, {} outliers, {} \
             configuration changes without a shift; {} of {} injected shifts found",
            took.as_secs_f64(),
            Options::default().threads,
            analysis.fleet.series.len(),
            analysis.report.changes.len(),
            analysis.report.outliers.len(),
            analysis.report.config_changes_without_shift.len(),
            truth.shifts.len() - misses.iter().filter(|m| m.ends_with("was not found")).count(),
            truth.shifts.len()
        );
        for miss in &misses {
            eprintln!("  missed: {miss}");
        }
        if let Some(path) = &args.report_out {
            std::fs::write(path, serde_json::to_vec_pretty(&analysis.report)?)?;
        }
    }
    Ok(())
}
