//! `platscope results list | show ID | compare A B | export ID… --format json|csv | push --to URL`
//! (`results textfile` is the exporter's). Every command reads the local file, or with
//! `--db postgresql://…` the shared database.

use clap::ValueEnum;
use experiment::output::{emit, emit_json};
use experiment::{Format, Globals, Tool};
use measure::Classified;
use results::{Location, PgStore, ResultStore, SqliteStore, StoreOptions};

fn no_default_store() -> Classified {
    Classified::usage("no HOME or XDG_DATA_HOME to find the results database; use --db PATH")
}

/// The store `--db` (or the default path) names: a PostgreSQL database, or a local file opened
/// for reading only (nothing is written to it or beside it).
pub fn open_store(options: &StoreOptions) -> Result<Box<dyn ResultStore>, Classified> {
    if let Some(Location::Postgres(url)) = options.db.as_deref().map(Location::parse) {
        return Ok(Box::new(PgStore::connect(&url)?));
    }
    Ok(Box::new(open_read_only(options)?))
}

/// The local store `--db` (or the default path) names, opened for reading only.
pub fn open_read_only(options: &StoreOptions) -> Result<SqliteStore, Classified> {
    let path = match &options.db {
        Some(p) => p.clone(),
        None => results::default_path().ok_or_else(no_default_store)?,
    };
    if !path.exists() {
        return Err(Classified::runtime(format!(
            "no results database at {}: run a measurement first, or give --db PATH",
            path.display()
        )));
    }
    Ok(SqliteStore::open_read_only(&path)?)
}

fn print<T: serde::Serialize>(
    globals: &Globals,
    value: &T,
    text: impl FnOnce() -> String,
) -> Result<(), Classified> {
    match globals.format {
        Format::Json => emit_json(value)?,
        _ => emit(&text())?,
    }
    Ok(())
}

/// The most recent runs, newest first.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// How many.
    #[arg(long, default_value_t = 20)]
    limit: usize,
}

/// `results list`.
#[derive(Debug)]
pub struct List;

impl Tool for List {
    const PATH: &'static [&'static str] = &["results", "list"];
    const ABOUT: &'static str = "The most recent runs, newest first.";
    type Args = ListArgs;

    fn run(args: &ListArgs, globals: &Globals) -> Result<(), Classified> {
        let runs = open_store(&globals.store)?.list(args.limit)?;
        print(globals, &runs, || results::render::list_text(&runs))
    }
}

/// One run: command, version, environment, metrics with their spread, placement.
#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    id: i64,
}

/// `results show`.
#[derive(Debug)]
pub struct Show;

impl Tool for Show {
    const PATH: &'static [&'static str] = &["results", "show"];
    const ABOUT: &'static str =
        "One run: command, version, environment, metrics with their spread, placement.";
    type Args = ShowArgs;

    fn run(args: &ShowArgs, globals: &Globals) -> Result<(), Classified> {
        let run = open_store(&globals.store)?.run(args.id)?;
        print(globals, &run, || results::render::show_text(&run))
    }
}

/// Per-metric change from run A to run B, each with its verdict (faster, slower or same: a
/// minimum effect and a Mann–Whitney U test on the stored samples; untested when the samples
/// are too few for that test, docs/comparing.md). With
/// `--host A --host B` (a shared database), the two hosts' newest runs of one command.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    #[arg(required_unless_present = "host")]
    a: Option<i64>,
    #[arg(required_unless_present = "host")]
    b: Option<i64>,
    /// Compare two hosts' newest runs instead of two run ids (give it twice).
    #[arg(long, num_args = 1, conflicts_with_all = ["a", "b"])]
    host: Vec<String>,
    /// With --host: the command whose runs to compare (default: the first host's newest run's
    /// command).
    #[arg(long, requires = "host")]
    command: Option<String>,
}

/// `results compare`.
#[derive(Debug)]
pub struct Compare;

impl Tool for Compare {
    const PATH: &'static [&'static str] = &["results", "compare"];
    const ABOUT: &'static str = "Per-metric change from run A to run B with its verdict (faster, \
                                 slower or same, tested on the stored samples; untested when \
                                 too few samples); with --host A \
                                 --host B, two hosts' newest runs of one command.";
    type Args = CompareArgs;

    fn run(args: &CompareArgs, globals: &Globals) -> Result<(), Classified> {
        let store = open_store(&globals.store)?;
        let (a, b) = match (args.a, args.b, args.host.as_slice()) {
            (Some(a), Some(b), []) => (a, b),
            (_, _, [first, second]) => {
                hosts_latest(store.as_ref(), first, second, args.command.as_deref())?
            }
            _ => return Err(Classified::usage("compare takes two run ids, or --host A --host B")),
        };
        let c = results::compare(&store.run(a)?, &store.run(b)?);
        print(globals, &c, || results::render::compare_text(&c))
    }
}

/// Runs as JSON (everything) or CSV (one row per raw sample).
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[arg(required = true)]
    ids: Vec<i64>,
    #[arg(long, value_enum, default_value = "json")]
    format: ExportFormat,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ExportFormat {
    Json,
    Csv,
}

/// `results export`.
#[derive(Debug)]
pub struct Export;

impl Tool for Export {
    const PATH: &'static [&'static str] = &["results", "export"];
    const ABOUT: &'static str = "Runs as JSON (everything) or CSV (one row per raw sample).";
    type Args = ExportArgs;

    fn run(args: &ExportArgs, globals: &Globals) -> Result<(), Classified> {
        let store = open_store(&globals.store)?;
        let runs = args.ids.iter().map(|id| store.run(*id)).collect::<Result<Vec<_>, _>>()?;
        match args.format {
            ExportFormat::Json => emit_json(&runs)?,
            ExportFormat::Csv => emit(&results::samples_csv(&runs))?,
        }
        Ok(())
    }
}

/// The newest run of each host, of the same command.
fn hosts_latest(
    store: &dyn ResultStore,
    first: &str,
    second: &str,
    command: Option<&str>,
) -> Result<(i64, i64), Classified> {
    let command = match command {
        Some(c) => c.to_string(),
        None => {
            let newest = store.list(usize::MAX)?.into_iter().find(|r| r.host == first);
            newest
                .ok_or_else(|| {
                    Classified::usage(format!(
                        "no runs of host {first:?} in {} (see `platscope results list`)",
                        store.location()
                    ))
                })?
                .command
        }
    };
    let latest = |host: &str| -> Result<i64, Classified> {
        store.latest_of_host(host, &command)?.ok_or_else(|| {
            Classified::usage(format!(
                "host {host:?} has no {command:?} run in {} (see `platscope results list`)",
                store.location()
            ))
        })
    };
    Ok((latest(first)?, latest(second)?))
}

/// Copy the local runs a PostgreSQL database does not have yet (idempotent: pushing twice
/// copies each run once). The local file (`--db`, or the default) stays as it is.
#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// postgresql://USER@HOST:PORT/DB (or a libpq string: "host=/run/postgresql dbname=…").
    #[arg(long, value_name = "URL")]
    to: String,
    /// Only these local runs (default: all).
    #[arg(long = "run", value_name = "ID")]
    runs: Vec<i64>,
}

/// `results push --to URL`: the local runs the shared database lacks.
#[derive(Debug)]
pub struct Push;

impl Tool for Push {
    const PATH: &'static [&'static str] = &["results", "push"];
    const ABOUT: &'static str = "Copy the local runs a PostgreSQL database does not have yet \
                                 (idempotent: pushing twice copies each run once). The local \
                                 file (--db, or the default) stays as it is.";
    type Args = PushArgs;

    fn run(args: &PushArgs, globals: &Globals) -> Result<(), Classified> {
        let nothing = |path: &std::path::Path| {
            Classified::runtime(format!(
                "no results database at {}: nothing to push",
                path.display()
            ))
        };
        if let Some(Location::File(path)) = globals.store.db.as_deref().map(Location::parse) {
            if !path.exists() {
                return Err(nothing(&path));
            }
        }
        let Location::Postgres(url) = Location::parse(std::path::Path::new(&args.to)) else {
            return Err(Classified::usage(format!(
                "--to {:?} is not a PostgreSQL database; give postgresql://USER@HOST:PORT/DB",
                args.to
            )));
        };
        // Opened for recording: an older file gets its runs' UUIDs (schema 3) before they
        // travel.
        let local = match &globals.store.db {
            Some(path) if matches!(Location::parse(path), Location::File(_)) => {
                SqliteStore::open(path)?
            }
            _ => {
                let path = results::default_path().ok_or_else(no_default_store)?;
                if !path.exists() {
                    return Err(nothing(&path));
                }
                SqliteStore::open(&path)?
            }
        };
        let remote = PgStore::connect(&url)?;
        let only = (!args.runs.is_empty()).then_some(args.runs.as_slice());
        // Reports stored before their headline figures were kept get them now, so the figures
        // travel with them.
        let mut local = local;
        let filled =
            crate::figures::backfill_some(&mut local, &globals.registry, only, &mut |_, _| {})?;
        for report in &filled.skipped {
            measure::say!(
                "platscope: warning: report run {} is pushed without its headline figures: {}",
                report.id,
                report.why
            );
        }
        let outcome = remote.push(&local, only)?;
        print(globals, &outcome, || {
            let figures = match outcome.figures {
                0 => String::new(),
                n => format!("; the headline figures of {n} report(s)"),
            };
            format!(
                "pushed {} run(s) from {} to {}; {} were there already{figures}\n",
                outcome.pushed,
                local.path().display(),
                remote.location(),
                outcome.already_there
            )
        })
    }
}
