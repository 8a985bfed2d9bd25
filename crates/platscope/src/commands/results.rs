//! `platscope results list | show ID | compare A B | export ID… --format json|csv`.

use clap::{Subcommand, ValueEnum};
use results::{ResultStore, SqliteStore, StoreOptions};

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
    /// The latest benchmark figures as a node_exporter textfile (text format 0.0.4), written
    /// to DIR/platscope.prom through a temp file and a rename.
    Textfile {
        /// node_exporter's textfile directory (its --collector.textfile.directory).
        #[arg(long, value_name = "DIR")]
        dir: std::path::PathBuf,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    Json,
    Csv,
}

/// The store `--db` (or the default path) names, opened for reading only: nothing is written to
/// it or beside it.
pub fn open_read_only(options: &StoreOptions) -> anyhow::Result<SqliteStore> {
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
    Ok(SqliteStore::open_read_only(&path)?)
}

pub fn run(command: &ResultsCommand, options: &StoreOptions, json: bool) -> anyhow::Result<()> {
    if let ResultsCommand::Textfile { dir } = command {
        return textfile(dir, options);
    }
    let store = open_read_only(options)?;
    match command {
        ResultsCommand::List { limit } => {
            let runs = store.list(*limit)?;
            if json {
                return emit_json(&runs);
            }
            Ok(emit(&results::render::list_text(&runs))?)
        }
        ResultsCommand::Show { id } => {
            let run = store.run(*id)?;
            if json {
                return emit_json(&run);
            }
            Ok(emit(&results::render::show_text(&run))?)
        }
        ResultsCommand::Compare { a, b } => {
            let c = results::compare(&store.run(*a)?, &store.run(*b)?);
            if json {
                return emit_json(&c);
            }
            Ok(emit(&results::render::compare_text(&c))?)
        }
        ResultsCommand::Textfile { dir } => textfile(dir, options),
        ResultsCommand::Export { ids, format } => {
            let runs = ids.iter().map(|id| store.run(*id)).collect::<Result<Vec<_>, _>>()?;
            match format {
                ExportFormat::Json => emit_json(&runs),
                ExportFormat::Csv => Ok(emit(&results::samples_csv(&runs))?),
            }
        }
    }
}

/// `results textfile --dir DIR`: the `bench` collector's families, as `serve` would answer
/// them, in node_exporter's textfile directory.
fn textfile(dir: &std::path::Path, options: &StoreOptions) -> anyhow::Result<()> {
    use exporter::collect::Collector as _;
    let store = open_read_only(options)?;
    let collector = exporter::collect::bench::BenchCollector::new(Some(store.path().to_path_buf()));
    drop(store);
    let mut families = Vec::new();
    collector.collect(&mut families)?;
    let path = exporter::textfile::write(dir, &families)?;
    let series: usize = families.iter().map(|f| f.samples.len()).sum();
    measure::say!("wrote {} ({series} series)", path.display());
    Ok(())
}
