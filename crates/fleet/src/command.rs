//! `platscope fleet`: reads every report's compact record from a results store (the local file
//! or the shared PostgreSQL database `results push` fills), analyses the fleet and prints the
//! summary, the JSON (`--json`) or writes `fleet.html` (`--out DIR`).

use std::path::{Path, PathBuf};

use experiment::output::{check_writable, emit, emit_json, write_atomically};
use std::ops::ControlFlow;

use experiment::{Format, Globals, Tool};
use measure::Classified;
use results::{
    FleetFilter, FleetStore, Location, PgStore, ReportFigures, ResultStore, SqliteStore,
};

use crate::analysis::{analyse_built, Options};
use crate::series::{Fleet, FleetBuilder};
use crate::window::Window;
use crate::FleetError;

/// Which of my servers is slower than its siblings, since when, and what changed on it then.
#[derive(Debug, clap::Args)]
pub struct FleetArgs {
    /// The shared PostgreSQL store (postgresql://USER@HOST:PORT/DB, or a libpq string); the
    /// password as `results push --to` takes it (PGPASSWORD, ~/.pgpass). Default: --db.
    #[arg(long, value_name = "URL")]
    from: Option<String>,
    /// Reports recorded from this date on: YYYY-MM-DD (UTC), an RFC 3339 time, or an age
    /// (30d, 12h).
    #[arg(long, value_name = "DATE")]
    since: Option<String>,
    /// Reports recorded before the end of this date (same forms as --since).
    #[arg(long, value_name = "DATE")]
    until: Option<String>,
    /// Only these hosts: patterns with * and ?, separated by commas (db-*,web-0?).
    #[arg(long, value_name = "PATTERN")]
    hosts: Option<String>,
    /// Write fleet.html (self-contained) into this directory (created if missing).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Store the outliers and changes found in the store read (tables fleet_outliers and
    /// fleet_changes, replacing the previous analysis's): what the history dashboard's
    /// "Latest outliers" and "Latest changes" panels show.
    #[arg(long, conflicts_with = "reports_json")]
    publish: bool,
    /// Read the reports from a JSON file (an array of report records, as the synthetic fleet
    /// example writes) instead of a store: for benches.
    #[arg(long, value_name = "FILE", hide = true, conflicts_with = "from")]
    reports_json: Option<PathBuf>,
}

/// `platscope fleet`.
#[derive(Debug)]
pub struct FleetCommand;

impl Tool for FleetCommand {
    const PATH: &'static [&'static str] = &["fleet"];
    const ABOUT: &'static str = "Which servers are slow for their kind, since when, and what \
                                 changed: hosts of a results store grouped by hardware class, \
                                 each headline figure's outliers within its class, change points \
                                 per host and figure with the configuration that changed at each";
    type Args = FleetArgs;

    fn run(args: &FleetArgs, globals: &Globals) -> Result<(), Classified> {
        let window = Window::parse(
            args.since.as_deref(),
            args.until.as_deref(),
            args.hosts.as_deref(),
            jiff::Timestamp::now(),
        )?;
        // `--out DIR` writes DIR/fleet.html; the global `--html-out FILE` writes the same page
        // to FILE.
        let mut pages: Vec<PathBuf> =
            args.out.as_deref().map(prepare_out).transpose()?.into_iter().collect();
        if let Some(file) = &globals.html_out {
            check_writable(file).map_err(|e| {
                Classified::runtime(format!("cannot write {}: {e}", file.display()))
            })?;
            pages.push(file.clone());
        }
        let mut builder = FleetBuilder::new(window.clone());
        let mut notes = Vec::new();
        let mut publish_to = None;
        let source = match &args.reports_json {
            Some(path) => read_json(path, &mut builder)?,
            None => {
                let location = store_location(args, globals)?;
                let source = read_store(&location, &window, globals, &mut builder, &mut notes)?;
                publish_to = args.publish.then_some(location);
                source
            }
        };
        let fleet = builder.finish();
        if fleet.hosts.is_empty() {
            return Err(nothing_to_read(&source, &window, &fleet));
        }
        let options = Options { window: window.clone(), ..Options::default() };
        let mut analysis = analyse_built(fleet, &options);
        analysis.notes.extend(notes);
        let within = window.describe();
        if let Some(location) = &publish_to {
            let findings =
                analysis.report.findings(jiff::Timestamp::now().to_string(), within.clone());
            publish(location, &findings)?;
        }
        if !pages.is_empty() {
            let html = crate::page::render(&analysis, &source, &within, globals.version);
            for path in &pages {
                write_atomically(path, html.as_bytes()).map_err(|e| {
                    Classified::runtime(format!("cannot write {}: {e}", path.display()))
                })?;
            }
        }
        match globals.format {
            Format::Json => emit_json(&analysis.report)?,
            _ => {
                let mut text = crate::text::summary(&analysis, &source, &within);
                for path in &pages {
                    text.push_str(&format!("\npage: {}\n", path.display()));
                }
                emit(&text)?;
            }
        }
        Ok(())
    }
}

/// `DIR/fleet.html`, the directory created and the file known writable before anything is read.
fn prepare_out(dir: &Path) -> Result<PathBuf, Classified> {
    if dir.exists() && !dir.is_dir() {
        return Err(Classified::usage(format!(
            "--out {} is a file; give a directory for fleet.html",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        Classified::runtime(format!("cannot create --out directory {}: {e}", dir.display()))
    })?;
    let path = dir.join("fleet.html");
    check_writable(&path)
        .map_err(|e| Classified::runtime(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

/// The store `--from` or `--db` names.
fn store_location(args: &FleetArgs, globals: &Globals) -> Result<Location, Classified> {
    match (&args.from, &globals.store.db) {
        (Some(_), Some(_)) => Err(Classified::usage(
            "give --from URL (the shared PostgreSQL store) or --db FILE, not both",
        )),
        (Some(url), None) => match Location::parse(Path::new(url)) {
            Location::Postgres(url) => Ok(Location::Postgres(url)),
            Location::File(_) => Err(Classified::usage(format!(
                "--from {url:?} is not a PostgreSQL database; give postgresql://USER@HOST:PORT/DB \
                 (a local file is --db FILE)"
            ))),
        },
        (None, Some(db)) => Ok(Location::parse(db)),
        (None, None) => results::default_path().map(Location::File).ok_or_else(|| {
            Classified::usage(
                "no HOME or XDG_DATA_HOME to find the results database; use --db PATH",
            )
        }),
    }
}

/// The store's filter for `window`: its times a second wider (the store compares them as
/// text, where `…00Z` and `…00.000Z` differ), the exact window applied as reports arrive.
fn filter(window: &Window) -> FleetFilter {
    let widen = |t: jiff::Timestamp, seconds: i64| {
        t.checked_add(jiff::SignedDuration::from_secs(seconds)).unwrap_or(t).to_string()
    };
    FleetFilter {
        since: window.since.map(|t| widen(t, -1)),
        until: window.until.map(|t| widen(t, 1)),
        hosts: window.hosts.as_ref().map(|h| h.patterns()).unwrap_or_default(),
    }
}

/// Fills in the figures of reports stored without them (by an older platscope), then reads
/// every report inside `window` into `builder`, one at a time. A store that cannot be written
/// (a read-only file, a role without INSERT) is read as it is, with a note.
fn read_from(
    store: &mut dyn FleetStore,
    window: &Window,
    globals: &Globals,
    builder: &mut FleetBuilder,
    notes: &mut Vec<String>,
) -> Result<(), Classified> {
    fill_in(store, globals, notes);
    store.report_figures(&filter(window), &mut |report| {
        builder.add(report);
        ControlFlow::Continue(())
    })?;
    Ok(())
}

/// The backfill the binary hands in ([`Globals::backfill`]), said on stderr when it has work,
/// its failures kept as notes.
fn fill_in(store: &mut dyn FleetStore, globals: &Globals, notes: &mut Vec<String>) {
    let waiting = match store.reports_without_figures() {
        Ok(ids) => ids.len(),
        Err(e) => {
            notes.push(format!("reports stored without headline figures were not looked for: {e}"));
            return;
        }
    };
    if waiting == 0 {
        return;
    }
    let Some(backfill) = globals.backfill else {
        notes.push(format!(
            "{waiting} report(s) stored by an older platscope are left out: this build cannot \
             compute their figures"
        ));
        return;
    };
    measure::say!(
        "platscope fleet: computing the headline figures of {waiting} report(s) stored by an \
         older platscope (once)"
    );
    match backfill(store, &globals.registry) {
        Ok(done) => {
            for skipped in done.skipped.iter().take(5) {
                notes.push(format!("report run {} left out: {}", skipped.id, skipped.why));
            }
            if done.skipped.len() > 5 {
                notes.push(format!(
                    "{} more reports left out that could not be read",
                    done.skipped.len() - 5
                ));
            }
        }
        Err(e) => notes.push(format!(
            "{waiting} report(s) stored by an older platscope are left out: their figures could \
             not be stored ({e})"
        )),
    }
}

/// Reads the reports of the store at `location` inside `window` into `builder`; returns the
/// store's name for the summary.
fn read_store(
    location: &Location,
    window: &Window,
    globals: &Globals,
    builder: &mut FleetBuilder,
    notes: &mut Vec<String>,
) -> Result<String, Classified> {
    match location {
        Location::File(path) => {
            if !path.exists() {
                return Err(Classified::runtime(format!(
                    "no results database at {}: run `platscope report` first, or give --db PATH \
                     or --from postgresql://…",
                    path.display()
                )));
            }
            // Opened for writing when it can be (the backfill, and an older file's schema
            // brought up to date); read as it is when not.
            let mut store = match SqliteStore::open(path) {
                Ok(store) => store,
                Err(writable) => SqliteStore::open_read_only(path).map_err(|_| writable)?,
            };
            read_from(&mut store, window, globals, builder, notes)?;
            Ok(path.display().to_string())
        }
        Location::Postgres(url) => {
            let mut store = PgStore::connect(url)?;
            read_from(&mut store, window, globals, builder, notes)?;
            Ok(store.location())
        }
    }
}

/// Replaces the findings published in the store at `location`.
fn publish(location: &Location, findings: &results::Findings) -> Result<(), Classified> {
    let how = "--publish needs a store it can write";
    match location {
        Location::File(path) => SqliteStore::open(path)
            .and_then(|mut store| store.publish_findings(findings))
            .map_err(|e| Classified::runtime(format!("{how}: {e}"))),
        Location::Postgres(url) => PgStore::connect(url)
            .and_then(|mut store| store.publish_findings(findings))
            .map_err(|e| Classified::runtime(format!("{how}: {e}"))),
    }
}

/// Reads a JSON array of report records.
fn read_json(path: &Path, builder: &mut FleetBuilder) -> Result<String, Classified> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Classified::runtime(format!("cannot read {}: {e}", path.display())))?;
    let reports: Vec<ReportFigures> = serde_json::from_str(&text).map_err(|e| {
        Classified::usage(format!("{} is not a JSON array of report records: {e}", path.display()))
    })?;
    for report in reports {
        builder.add(report);
    }
    Ok(path.display().to_string())
}

/// No host left to analyse: why, in one line.
fn nothing_to_read(source: &str, window: &Window, fleet: &Fleet) -> Classified {
    let left = &fleet.left_out;
    if left.outside_window > 0 {
        return FleetError::Runtime(format!(
            "no report in {source} is inside {} ({} outside it): widen --since/--until or --hosts",
            window.describe(),
            left.outside_window
        ))
        .into();
    }
    FleetError::Runtime(format!(
        "no reports in {source}: run `platscope report` on each host and `platscope results push \
         --to` the shared store (the Ansible role in deploy/ does both)"
    ))
    .into()
}
