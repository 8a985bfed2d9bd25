//! `platscope results list | show ID | compare A B | export ID… --format json|csv`.

use std::fmt::Write as _;

use clap::{Subcommand, ValueEnum};
use results::Store;

use super::record::StoreOptions;
use crate::output::{emit, emit_json};

#[derive(Debug, Subcommand)]
pub enum ResultsCommand {
    /// The most recent runs, newest first.
    List {
        /// How many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// One run: command, version, environment, metrics with their spread, placement.
    Show { id: i64 },
    /// Per-metric change from run A to run B; a change is called real only when it exceeds
    /// both runs' sample spread.
    Compare { a: i64, b: i64 },
    /// Runs as JSON (everything) or CSV (one row per raw sample).
    Export {
        #[arg(required = true)]
        ids: Vec<i64>,
        #[arg(long, value_enum, default_value = "json")]
        format: ExportFormat,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    Json,
    Csv,
}

fn open(options: &StoreOptions) -> anyhow::Result<Store> {
    let path = match &options.db {
        Some(p) => p.clone(),
        None => results::default_path().ok_or_else(|| {
            anyhow::anyhow!("no HOME or XDG_DATA_HOME to find the results database; use --db PATH")
        })?,
    };
    if !path.exists() {
        anyhow::bail!(
            "no results database at {}: run a measurement first, or give --db PATH",
            path.display()
        );
    }
    Ok(Store::open(&path)?)
}

pub fn run(command: &ResultsCommand, options: &StoreOptions, json: bool) -> anyhow::Result<()> {
    let store = open(options)?;
    match command {
        ResultsCommand::List { limit } => {
            let runs = store.list(*limit)?;
            if json {
                return emit_json(&runs);
            }
            let mut out = format!(
                "{:>5}  {:<24} {:<22} {:<28} {}\n",
                "id", "recorded (UTC)", "command", "headline", "version"
            );
            for r in &runs {
                let headline = r
                    .headline
                    .as_ref()
                    .map_or("-".to_string(), |(n, v, u)| format!("{n}: {v:.3} {u}"));
                let _ = writeln!(
                    out,
                    "{:>5}  {:<24} {:<22} {:<28} {}{}",
                    r.id,
                    r.recorded_at,
                    r.command,
                    headline,
                    r.version,
                    if r.interrupted { " (interrupted)" } else { "" }
                );
            }
            Ok(emit(&out)?)
        }
        ResultsCommand::Show { id } => {
            let run = store.run(*id)?;
            if json {
                return emit_json(&run);
            }
            let mut out = format!(
                "run {} — {} — {} — platscope {}\n",
                run.id, run.recorded_at, run.command, run.version
            );
            if let Some(argv) = run.parameters.get("argv").and_then(|a| a.as_array()) {
                let words: Vec<&str> = argv.iter().filter_map(|w| w.as_str()).collect();
                let _ = writeln!(out, "command line: {}", words.join(" "));
            }
            let env = &run.environment;
            let _ = writeln!(
                out,
                "kernel {}, THP {}, numa_balancing {}, clocksource {}, hypervisor {}",
                env["kernel"].as_str().unwrap_or("?"),
                env["thp_enabled"].as_str().unwrap_or("?"),
                env["numa_balancing"].as_str().unwrap_or("?"),
                env["clocksource"].as_str().unwrap_or("?"),
                env["hypervisor"].as_str().unwrap_or("none")
            );
            if run.interrupted {
                out.push_str("INTERRUPTED: figures cover what was measured before Ctrl-C\n");
            }
            let _ = writeln!(
                out,
                "\n{:<44} {:>10} {:>10} {:>10} {:>10} {:>8}  unit",
                "metric", "median", "p25", "p75", "best", "samples"
            );
            for m in &run.metrics {
                let _ = writeln!(
                    out,
                    "{:<44} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>8}  {}",
                    m.name,
                    m.median,
                    m.p25,
                    m.p75,
                    m.min,
                    m.samples.len(),
                    m.unit
                );
            }
            if !run.placements.is_empty() {
                out.push_str("\nplacement (requested → verified by the kernel):\n");
                for p in &run.placements {
                    let _ =
                        writeln!(out, "  {}: {} → {}", p.worker, p.requested, compact(&p.verified));
                }
            }
            Ok(emit(&out)?)
        }
        ResultsCommand::Compare { a, b } => {
            let c = results::compare(&store.run(*a)?, &store.run(*b)?);
            if json {
                return emit_json(&c);
            }
            let mut out = format!(
                "{:<44} {:>12} {:>12} {:>10}  verdict\n",
                "metric",
                format!("run {a}"),
                format!("run {b}"),
                "change"
            );
            for d in &c.deltas {
                let _ = writeln!(
                    out,
                    "{:<44} {:>12.3} {:>12.3} {:>+9.1}%  {}",
                    d.name,
                    d.a_median,
                    d.b_median,
                    d.delta_pct,
                    if d.real { "real (beyond both runs' spread)" } else { "within noise" }
                );
            }
            if !c.unmatched.is_empty() {
                let _ = writeln!(out, "in only one run: {}", c.unmatched.join(", "));
            }
            Ok(emit(&out)?)
        }
        ResultsCommand::Export { ids, format } => {
            let runs = ids.iter().map(|id| store.run(*id)).collect::<Result<Vec<_>, _>>()?;
            match format {
                ExportFormat::Json => emit_json(&runs),
                ExportFormat::Csv => Ok(emit(&results::samples_csv(&runs))?),
            }
        }
    }
}

/// Placement JSON in one short line: pages per node when that is what it holds.
fn compact(verified: &serde_json::Value) -> String {
    let per_node = |p: &serde_json::Value| -> Option<String> {
        // Arena placements carry `per_node`, page-cache residency `nodes`.
        let nodes = p.get("per_node").or_else(|| p.get("nodes"))?.as_array()?;
        Some(
            nodes
                .iter()
                .map(|n| format!("node {}: {} pages", n["node"], n["pages"]))
                .collect::<Vec<_>>()
                .join(", "),
        )
    };
    match verified {
        serde_json::Value::Array(items) => {
            items.iter().filter_map(per_node).collect::<Vec<_>>().join("; ")
        }
        other => per_node(other).unwrap_or_else(|| other.to_string()),
    }
}
