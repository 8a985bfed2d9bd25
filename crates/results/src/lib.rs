//! Results that last: every measuring run goes into one SQLite file with the command and its
//! parameters, the platscope version, the machine's topology and environment, requested and
//! verified placement, every raw sample and the summary — written in one transaction, so a
//! crash, Ctrl-C or a full disk never leaves half a run.
//!
//! ```
//! let dir = std::env::temp_dir().join(format!("store-doc-{}", std::process::id()));
//! let mut store = results::Store::open(&dir.join("results.db")).unwrap();
//! let id = store
//!     .record(&results::NewRun {
//!         command: "mem latency".into(),
//!         metrics: vec![results::Metric::new("latency", "ns", vec![90.0, 91.0, 92.0])],
//!         ..store::NewRun::default()
//!     })
//!     .unwrap();
//! assert_eq!(store.run(id).unwrap().metrics[0].median, 91.0);
//! # std::fs::remove_dir_all(dir).ok();
//! ```

mod compare;
mod schema;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use compare::{compare, Comparison, MetricDelta};
pub use schema::SCHEMA_VERSION;

/// Why the store could not be used. Every message names the file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open results database {path}: {reason}; choose another with --db or skip storing with --no-store")]
    Open { path: PathBuf, reason: String },
    #[error("{0} is not a platscope results database (it holds other data or is corrupt); nothing was written — use another --db")]
    Foreign(PathBuf),
    #[error("{path} was written by a newer platscope (schema {found}, this one knows up to {supported}); nothing was written — upgrade platscope or use another --db")]
    NewerSchema { path: PathBuf, found: i64, supported: i64 },
    #[error("no run {0} in the results database (see `platscope results list`)")]
    NoSuchRun(i64),
    #[error("results database error: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("results database holds invalid JSON: {0}")]
    Json(#[from] serde_json::Error),
}

impl StoreError {
    /// Whether the user asked for something that does not exist (exit code 2).
    pub fn is_usage(&self) -> bool {
        matches!(self, StoreError::NoSuchRun(_))
    }
}

/// One series of samples and its unit; the summary is computed when it is recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub unit: String,
    pub samples: Vec<f64>,
}

impl Metric {
    pub fn new(name: impl Into<String>, unit: impl Into<String>, samples: Vec<f64>) -> Self {
        Self { name: name.into(), unit: unit.into(), samples }
    }
}

/// Requested and verified placement of one worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerPlacement {
    pub worker: String,
    pub requested: Value,
    pub verified: Value,
}

/// A run to record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NewRun {
    /// e.g. `mem latency`.
    pub command: String,
    pub parameters: Value,
    /// platscope version and git commit.
    pub version: String,
    pub environment: Value,
    pub topology: Value,
    pub metrics: Vec<Metric>,
    pub placements: Vec<WorkerPlacement>,
    /// The command's whole JSON output.
    pub result: Value,
    pub interrupted: bool,
}

/// A metric as stored: summary and samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredMetric {
    pub name: String,
    pub unit: String,
    pub samples: Vec<f64>,
    pub median: f64,
    pub p25: f64,
    pub p75: f64,
    pub min: f64,
    pub max: f64,
}

/// One line of `results list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub id: i64,
    pub recorded_at: String,
    pub command: String,
    pub version: String,
    pub interrupted: bool,
    /// Headline: the first metric's median and unit.
    pub headline: Option<(String, f64, String)>,
}

/// A run read back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRun {
    pub id: i64,
    pub recorded_at: String,
    pub command: String,
    pub parameters: Value,
    pub version: String,
    pub environment: Value,
    pub topology: Value,
    pub metrics: Vec<StoredMetric>,
    pub placements: Vec<WorkerPlacement>,
    pub result: Value,
    pub interrupted: bool,
}

/// An open results database.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// `$XDG_DATA_HOME/platscope/results.db`, else `~/.local/share/platscope/results.db`.
pub fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    Some(base.join("platscope").join("results.db"))
}

fn sorted_quantile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let pos = q * (n - 1) as f64;
            let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
            sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
        }
    }
}

impl Store {
    /// Opens (creating if needed) the database at `path`, checks it is platscope's and not from
    /// a newer version, and brings an older schema up to date. A foreign or newer file is left
    /// untouched.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let open_error = |reason: String| StoreError::Open { path: path.to_path_buf(), reason };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| open_error(format!("creating {}: {e}", dir.display())))?;
        }
        if path.is_dir() {
            return Err(open_error("it is a directory".into()));
        }
        let conn = Connection::open(path).map_err(|e| open_error(e.to_string()))?;
        conn.busy_timeout(Duration::from_secs(10))?;
        let mut store = Store { conn, path: path.to_path_buf() };
        schema::prepare(&mut store.conn, path)?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records a run in one transaction and returns its id.
    pub fn record(&mut self, run: &NewRun) -> Result<i64, StoreError> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO runs (recorded_at, command, parameters, version, environment, topology, result, interrupted)
             VALUES (strftime('%Y-%m-%dT%H:%M:%fZ','now'), ?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                run.command,
                run.parameters.to_string(),
                run.version,
                run.environment.to_string(),
                run.topology.to_string(),
                run.result.to_string(),
                run.interrupted
            ],
        )?;
        let id = tx.last_insert_rowid();
        for (position, m) in run.metrics.iter().enumerate() {
            let mut sorted: Vec<f64> =
                m.samples.iter().copied().filter(|v| v.is_finite()).collect();
            sorted.sort_by(f64::total_cmp);
            tx.execute(
                "INSERT INTO metrics (run_id, position, name, unit, median, p25, p75, min, max, samples)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    id,
                    position as i64,
                    m.name,
                    m.unit,
                    sorted_quantile(&sorted, 0.5),
                    sorted_quantile(&sorted, 0.25),
                    sorted_quantile(&sorted, 0.75),
                    sorted.first().copied().unwrap_or(f64::NAN),
                    sorted.last().copied().unwrap_or(f64::NAN),
                    serde_json::to_string(&m.samples)?
                ],
            )?;
        }
        for (position, p) in run.placements.iter().enumerate() {
            tx.execute(
                "INSERT INTO placements (run_id, position, worker, requested, verified) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, position as i64, p.worker, p.requested.to_string(), p.verified.to_string()],
            )?;
        }
        tx.commit()?;
        Ok(id)
    }

    /// The most recent runs, newest first.
    pub fn list(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT r.id, r.recorded_at, r.command, r.version, r.interrupted, m.name, m.median, m.unit
             FROM runs r LEFT JOIN metrics m ON m.run_id = r.id AND m.position = 0
             ORDER BY r.id DESC LIMIT ?1",
        )?;
        let rows = stmt.query_map(params![limit as i64], |row| {
            let name: Option<String> = row.get(5)?;
            let median: Option<f64> = row.get(6)?;
            let unit: Option<String> = row.get(7)?;
            Ok(RunSummary {
                id: row.get(0)?,
                recorded_at: row.get(1)?,
                command: row.get(2)?,
                version: row.get(3)?,
                interrupted: row.get(4)?,
                headline: match (name, median, unit) {
                    (Some(n), Some(m), Some(u)) => Some((n, m, u)),
                    _ => None,
                },
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// One run with everything recorded about it.
    pub fn run(&self, id: i64) -> Result<StoredRun, StoreError> {
        let head = self
            .conn
            .query_row(
                "SELECT recorded_at, command, parameters, version, environment, topology, result, interrupted
                 FROM runs WHERE id = ?1",
                params![id],
                |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, String>(3)?,
                        row.get::<_, String>(4)?,
                        row.get::<_, String>(5)?,
                        row.get::<_, String>(6)?,
                        row.get::<_, bool>(7)?,
                    ))
                },
            )
            .optional()?
            .ok_or(StoreError::NoSuchRun(id))?;
        let mut stmt = self.conn.prepare(
            "SELECT name, unit, median, p25, p75, min, max, samples FROM metrics WHERE run_id = ?1 ORDER BY position",
        )?;
        let metrics = stmt
            .query_map(params![id], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    [row.get::<_, f64>(2)?, row.get(3)?, row.get(4)?, row.get(5)?, row.get(6)?],
                    row.get::<_, String>(7)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .map(|(name, unit, [median, p25, p75, min, max], samples)| {
                Ok(StoredMetric {
                    name,
                    unit,
                    samples: serde_json::from_str(&samples)?,
                    median,
                    p25,
                    p75,
                    min,
                    max,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let mut stmt =
            self.conn.prepare("SELECT worker, requested, verified FROM placements WHERE run_id = ?1 ORDER BY position")?;
        let placements = stmt
            .query_map(params![id], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?, row.get::<_, String>(2)?))
            })?
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .map(|(worker, requested, verified)| {
                Ok(WorkerPlacement {
                    worker,
                    requested: serde_json::from_str(&requested)?,
                    verified: serde_json::from_str(&verified)?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let (recorded_at, command, parameters, version, environment, topology, result, interrupted) =
            head;
        Ok(StoredRun {
            id,
            recorded_at,
            command,
            parameters: serde_json::from_str(&parameters)?,
            version,
            environment: serde_json::from_str(&environment)?,
            topology: serde_json::from_str(&topology)?,
            metrics,
            placements,
            result: serde_json::from_str(&result)?,
            interrupted,
        })
    }
}

/// CSV of runs' samples: `run_id,metric,unit,index,value`, one row per sample.
pub fn samples_csv(runs: &[StoredRun]) -> String {
    let mut out = String::from("run_id,metric,unit,index,value\n");
    let quote = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    for run in runs {
        for m in &run.metrics {
            for (i, v) in m.samples.iter().enumerate() {
                out.push_str(&format!(
                    "{},{},{},{},{}\n",
                    run.id,
                    quote(&m.name),
                    quote(&m.unit),
                    i,
                    v
                ));
            }
        }
    }
    out
}
