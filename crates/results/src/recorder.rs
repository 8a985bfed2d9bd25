//! What measuring commands use to record a run: where it goes (`--db`, the default file, or
//! nowhere), the facts every run carries, and what happens when storing fails — the measurement
//! is written to a JSON file named in the error instead of being lost.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use measure::ToMetrics;
use serde::Serialize;
use serde_json::{json, Value};

use crate::{
    default_path, FleetStore, Location, NewRun, PgStore, ReportFigures, ResultStore, SqliteStore,
    StoreError,
};

/// Where results go: `--db PATH`, the default XDG path, or nowhere (`--no-store`). A
/// PostgreSQL `--db` (`postgresql://…`) records in the default local file as always and pushes
/// each run there too: the local file stays the source of truth.
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    pub db: Option<PathBuf>,
    pub no_store: bool,
}

/// The facts every recorded run carries.
#[derive(Debug, Clone, Default)]
pub struct RunContext {
    /// The command line, lossily as text (arguments need not be UTF-8); [`Recorder::open`]
    /// redacts passwords from it before anything is stored.
    pub argv: Vec<String>,
    /// platscope version and git commit.
    pub version: String,
    pub topology: Value,
    pub environment: Value,
    /// Parameters known only when the run is recorded (e.g. the clock the benchmark trusted).
    pub late_parameters: Option<fn() -> Value>,
}

/// Why a run could not be recorded, and where the measurement went instead.
#[derive(Debug, thiserror::Error)]
#[error("{cause}; {kept}")]
pub struct RecordError {
    pub cause: StoreError,
    kept: String,
}

impl measure::Usage for RecordError {
    /// Storing failed after measuring: the system's fault.
    fn is_usage(&self) -> bool {
        false
    }
}

/// An open results store (or none), with the facts every run carries.
#[derive(Debug)]
pub struct Recorder {
    store: Option<SqliteStore>,
    /// A shared PostgreSQL database each run is pushed to after it is stored locally.
    push_to: Option<String>,
    /// Its connection, made at the first push and kept for the runs after (a report's steps).
    remote: Option<PgStore>,
    context: RunContext,
}

fn warn(text: &str) {
    measure::say!("platscope: warning: {text}");
}

impl Recorder {
    /// Opens the store before anything is measured, so a bad `--db` fails fast. Without `--db`,
    /// a default location that cannot be used is a warning, not a failure.
    /// The command line is kept with its secrets redacted ([`crate::redact_argv`]).
    pub fn open(options: &StoreOptions, mut context: RunContext) -> Result<Self, StoreError> {
        context.argv = crate::redact_argv(&context.argv);
        let location = options.db.as_deref().map(Location::parse);
        let (local, push_to) = match location {
            Some(Location::File(path)) => (Some(path), None),
            Some(Location::Postgres(url)) => (None, Some(url)),
            None => (None, None),
        };
        let store = if options.no_store {
            None
        } else if let Some(path) = &local {
            Some(SqliteStore::open(path)?)
        } else {
            match default_path().map(|p| SqliteStore::open(&p)) {
                Some(Ok(store)) => Some(store),
                Some(Err(e)) => {
                    warn(&format!("results not stored: {e}"));
                    None
                }
                None => {
                    warn("results not stored: no HOME or XDG_DATA_HOME; use --db PATH");
                    None
                }
            }
        };
        if push_to.is_some() && store.is_none() {
            warn("runs are pushed only after they are stored locally; nothing will be pushed");
        }
        Ok(Self { store, push_to, remote: None, context })
    }

    /// A recorder that stores nothing (tests, `--no-store`).
    pub fn none() -> Self {
        Self { store: None, push_to: None, remote: None, context: RunContext::default() }
    }

    pub fn database(&self) -> Option<String> {
        self.store.as_ref().map(|s| s.location())
    }

    /// The local store runs are recorded in, to read back what was stored (`None` with
    /// `--no-store` or no usable store).
    pub fn store(&self) -> Option<&SqliteStore> {
        self.store.as_ref()
    }

    /// Records a report's headline figures ([`ReportFigures`]) beside its run, and in the
    /// shared database when runs are pushed there (a failure there is a warning: the local
    /// store has them, and `results push` sends them later). Nothing when nothing is stored.
    pub fn record_figures(&mut self, figures: &ReportFigures) -> Result<(), StoreError> {
        let Some(store) = self.store.as_mut() else { return Ok(()) };
        store.record_report_figures(figures)?;
        if let Some(pg) = self.remote.as_mut() {
            if let Err(e) = pg.record_report_figures(figures) {
                warn(&format!("the report's headline figures were not pushed: {e}"));
            }
        }
        Ok(())
    }

    /// Records one run; returns its id when stored. When the store fails, the run is written as
    /// JSON to a file beside the current directory (or the temporary directory) and the error
    /// names it.
    pub fn record(
        &mut self,
        command: &str,
        result: &impl Serialize,
        measured: &(impl ToMetrics + ?Sized),
        interrupted: bool,
    ) -> Result<Option<i64>, RecordError> {
        self.record_with(command, result, measured, interrupted, serde_json::Map::new())
    }

    /// [`record`](Self::record) with parameters of this run alone beside the command line
    /// (the placement it was measured in).
    pub fn record_with(
        &mut self,
        command: &str,
        result: &impl Serialize,
        measured: &(impl ToMetrics + ?Sized),
        interrupted: bool,
        own: serde_json::Map<String, Value>,
    ) -> Result<Option<i64>, RecordError> {
        let Some(store) = self.store.as_mut() else { return Ok(None) };
        let mut parameters = json!({ "argv": self.context.argv });
        if let Some(late) = self.context.late_parameters {
            if let (Value::Object(map), Value::Object(extra)) = (&mut parameters, late()) {
                map.extend(extra);
            }
        }
        if let Value::Object(map) = &mut parameters {
            map.extend(own);
        }
        let run = NewRun {
            command: command.to_string(),
            parameters,
            version: self.context.version.clone(),
            environment: self.context.environment.clone(),
            topology: self.context.topology.clone(),
            metrics: measured.to_metrics(),
            placements: measured.placements(),
            result: serde_json::to_value(result).unwrap_or_default(),
            interrupted,
        };
        match store.record(&run) {
            Ok(id) => {
                if std::io::stderr().is_terminal() {
                    measure::say!("platscope: stored as run {id} (platscope results show {id})");
                }
                if let Some(url) = &self.push_to {
                    if self.remote.is_none() {
                        match PgStore::connect(url) {
                            Ok(pg) => self.remote = Some(pg),
                            Err(e) => {
                                // The runs are safe locally; one warning, and no more tries in
                                // this command (each could wait out a connect timeout).
                                warn(&format!("run {id} not pushed: {e}"));
                                self.push_to = None;
                            }
                        }
                    }
                    if let Some(pg) = &self.remote {
                        if let Err(e) = pg.push(store, Some(&[id])) {
                            warn(&format!("run {id} not pushed: {e}"));
                        }
                    }
                }
                Ok(Some(id))
            }
            Err(cause) => {
                let kept = match keep_unsaved(&run) {
                    Ok(path) => format!(
                        "the measurement is kept in {} (printed above as well)",
                        path.display()
                    ),
                    Err(e) => format!("it could not be kept in a file either ({e})"),
                };
                Err(RecordError { cause, kept })
            }
        }
    }
}

/// Writes a run that could not be stored to `platscope-unsaved-<time>-<pid>.json`, in the
/// current directory or else the temporary directory; written to a temporary name and renamed,
/// so the file is whole or absent.
fn keep_unsaved(run: &NewRun) -> std::io::Result<PathBuf> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let name = format!("platscope-unsaved-{stamp}-{}.json", std::process::id());
    let text = serde_json::to_vec_pretty(run).map_err(std::io::Error::other)?;
    let mut last = None;
    for dir in [PathBuf::from("."), std::env::temp_dir()] {
        match write_whole(&dir, &name, &text) {
            Ok(path) => return Ok(path),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no directory to write to")))
}

fn write_whole(dir: &Path, name: &str, text: &[u8]) -> std::io::Result<PathBuf> {
    let path = dir.join(name);
    let partial = dir.join(format!(".{name}.partial"));
    let result = std::fs::write(&partial, text).and_then(|()| std::fs::rename(&partial, &path));
    if result.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    result.map(|()| std::fs::canonicalize(&path).unwrap_or(path))
}
