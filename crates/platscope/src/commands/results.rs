//! `platscope results list | show ID | compare A B | export ID… --format json|csv | push --to URL`.
//! Every command reads the local file, or with `--db postgresql://…` the shared database.

use clap::{Subcommand, ValueEnum};
use measure::UsageError;
use results::{Location, PgStore, ResultStore, SqliteStore, StoreOptions};

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
    /// both runs' sample spread. With `--host A --host B` (a shared database), the two hosts'
    /// newest runs of one command.
    Compare {
        #[arg(required_unless_present = "host")]
        a: Option<i64>,
        #[arg(required_unless_present = "host")]
        b: Option<i64>,
        /// Compare two hosts' newest runs instead of two run ids (give it twice).
        #[arg(long, num_args = 1, conflicts_with_all = ["a", "b"])]
        host: Vec<String>,
        /// With --host: the command whose runs to compare (default: the first host's newest
        /// run's command).
        #[arg(long, requires = "host")]
        command: Option<String>,
    },
    /// Runs as JSON (everything) or CSV (one row per raw sample).
    Export {
        #[arg(required = true)]
        ids: Vec<i64>,
        #[arg(long, value_enum, default_value = "json")]
        format: ExportFormat,
    },
    /// Copy the local runs a PostgreSQL database does not have yet (idempotent: pushing twice
    /// copies each run once). The local file (`--db`, or the default) stays as it is.
    Push {
        /// postgresql://USER@HOST:PORT/DB (or a libpq string: "host=/run/postgresql dbname=…").
        #[arg(long, value_name = "URL")]
        to: String,
        /// Only these local runs (default: all).
        #[arg(long = "run", value_name = "ID")]
        runs: Vec<i64>,
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

/// The store `--db` (or the default path) names: a PostgreSQL database, or a local file opened
/// for reading only (nothing is written to it or beside it).
fn open_store(options: &StoreOptions) -> anyhow::Result<Box<dyn ResultStore>> {
    if let Some(Location::Postgres(url)) = options.db.as_deref().map(Location::parse) {
        return Ok(Box::new(PgStore::connect(&url)?));
    }
    Ok(Box::new(open_read_only(options)?))
}

/// The local store `--db` (or the default path) names, opened for reading only.
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
    if let ResultsCommand::Push { to, runs } = command {
        return push(to, runs, options, json);
    }
    if let ResultsCommand::Textfile { dir } = command {
        return textfile(dir, options);
    }
    let store = open_store(options)?;
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
        ResultsCommand::Compare { a, b, host, command } => {
            let (a, b) = match (a, b, host.as_slice()) {
                (Some(a), Some(b), []) => (*a, *b),
                (_, _, [first, second]) => hosts_latest(store.as_ref(), first, second, command)?,
                _ => {
                    return Err(UsageError::Message(
                        "compare takes two run ids, or --host A --host B".into(),
                    )
                    .into())
                }
            };
            let c = results::compare(&store.run(a)?, &store.run(b)?);
            if json {
                return emit_json(&c);
            }
            Ok(emit(&results::render::compare_text(&c))?)
        }
        ResultsCommand::Export { ids, format } => {
            let runs = ids.iter().map(|id| store.run(*id)).collect::<Result<Vec<_>, _>>()?;
            match format {
                ExportFormat::Json => emit_json(&runs),
                ExportFormat::Csv => Ok(emit(&results::samples_csv(&runs))?),
            }
        }
        ResultsCommand::Push { .. } | ResultsCommand::Textfile { .. } => Ok(()),
    }
}

/// The newest run of each host, of the same command.
fn hosts_latest(
    store: &dyn ResultStore,
    first: &str,
    second: &str,
    command: &Option<String>,
) -> anyhow::Result<(i64, i64)> {
    let command = match command {
        Some(c) => c.clone(),
        None => {
            let newest = store.list(usize::MAX)?.into_iter().find(|r| r.host == first);
            newest
                .ok_or_else(|| {
                    UsageError::Message(format!(
                        "no runs of host {first:?} in {} (see `platscope results list`)",
                        store.location()
                    ))
                })?
                .command
        }
    };
    let latest = |host: &str| -> anyhow::Result<i64> {
        store.latest_of_host(host, &command)?.ok_or_else(|| {
            UsageError::Message(format!(
                "host {host:?} has no {command:?} run in {} (see `platscope results list`)",
                store.location()
            ))
            .into()
        })
    };
    Ok((latest(first)?, latest(second)?))
}

/// `results push --to URL`: the local runs the shared database lacks.
fn push(to: &str, runs: &[i64], options: &StoreOptions, json: bool) -> anyhow::Result<()> {
    if let Some(Location::File(path)) = options.db.as_deref().map(Location::parse) {
        if !path.exists() {
            anyhow::bail!("no results database at {}: nothing to push", path.display());
        }
    }
    let Location::Postgres(url) = Location::parse(std::path::Path::new(to)) else {
        return Err(UsageError::Message(format!(
            "--to {to:?} is not a PostgreSQL database; give postgresql://USER@HOST:PORT/DB"
        ))
        .into());
    };
    // Opened for recording: an older file gets its runs' UUIDs (schema 3) before they travel.
    let local = match &options.db {
        Some(path) if matches!(Location::parse(path), Location::File(_)) => {
            SqliteStore::open(path)?
        }
        _ => {
            let path = results::default_path().ok_or_else(|| {
                anyhow::anyhow!(
                    "no HOME or XDG_DATA_HOME to find the results database; use --db PATH"
                )
            })?;
            if !path.exists() {
                anyhow::bail!("no results database at {}: nothing to push", path.display());
            }
            SqliteStore::open(&path)?
        }
    };
    let remote = PgStore::connect(&url)?;
    let only = (!runs.is_empty()).then_some(runs);
    let outcome = remote.push(&local, only)?;
    if json {
        return emit_json(&outcome);
    }
    Ok(emit(&format!(
        "pushed {} run(s) from {} to {}; {} were there already\n",
        outcome.pushed,
        local.path().display(),
        remote.location(),
        outcome.already_there
    ))?)
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
