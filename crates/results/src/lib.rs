//! results: runs that last, and what can be asked of them.
//!
//! Every measuring run is recorded with its command and parameters, the platscope version, the
//! machine's topology and environment, requested and verified placement, and its labelled
//! metrics ([`measure::Metric`]) with every raw sample — written in one transaction, so a crash,
//! Ctrl-C or a full disk never leaves half a run.
//!
//! - [`ResultStore`]: what a store does (record, list, read back). [`SqliteStore`] is the local
//!   file every command writes by default; other backends implement the same trait.
//! - [`compare`]: two runs metric by metric, matched on name and labels ([`Metric::key`]), never
//!   on formatted text; runs recorded before labels existed are relabelled when their database
//!   is migrated ([`legacy`]).
//! - [`samples_csv`]: every sample as CSV; [`Recorder`]: what commands use to record a run.
//!
//! ```
//! use measure::{Metric, Unit};
//! use results::{NewRun, ResultStore, SqliteStore};
//!
//! let dir = std::env::temp_dir().join(format!("results-doc-{}", std::process::id()));
//! let mut store = SqliteStore::open(&dir.join("results.db")).unwrap();
//! let id = store
//!     .record(&NewRun {
//!         command: "mem latency".into(),
//!         metrics: vec![Metric::new("mem_latency", Unit::Nanoseconds, vec![90.0, 91.0, 92.0])],
//!         ..NewRun::default()
//!     })
//!     .unwrap();
//! assert_eq!(store.run(id).unwrap().metrics[0].median, 91.0);
//! # std::fs::remove_dir_all(dir).ok();
//! ```

mod compare;
pub mod credentials;
mod error;
mod export;
pub mod fleet;
pub mod legacy;
mod postgres;
mod recorder;
pub mod render;
mod row;
mod schema;
mod secrets;
pub mod sql;
mod sqlite;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use compare::{compare, Comparison, MetricDelta};
pub use error::StoreError;
pub use export::samples_csv;
pub use fleet::{
    facts_digest, Findings, FleetFilter, FleetStore, HeadlineFigure, PublishedChange,
    PublishedOutlier, ReportFigures,
};
pub use measure::{Metric, WorkerPlacement};
pub use postgres::{PgStore, PushOutcome};
pub use recorder::{RecordError, Recorder, RunContext, StoreOptions};
pub use schema::SCHEMA_VERSION;
pub use secrets::{redact, redact_argv, scrub_parameters, MASK};
pub use sqlite::SqliteStore;

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
    /// The command's whole JSON output. Raw samples are kept once, in the metrics: arrays of
    /// samples inside summaries (`values`) are left out when it is stored.
    pub result: Value,
    pub interrupted: bool,
}

/// A metric as stored: name, unit, labels, summary and samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredMetric {
    pub name: String,
    /// The unit's symbol (`ns`, `GB/s`).
    pub unit: String,
    pub labels: BTreeMap<String, String>,
    pub samples: Vec<f64>,
    pub median: f64,
    pub p25: f64,
    pub p75: f64,
    pub min: f64,
    pub max: f64,
}

impl StoredMetric {
    /// A metric of one sample `value` (every quantile is it): how tests and fixtures make one.
    pub fn single(name: &str, unit: &str, labels: &[(&str, &str)], value: f64) -> Self {
        Self {
            name: name.into(),
            unit: unit.into(),
            labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            samples: vec![value],
            median: value,
            p25: value,
            p75: value,
            min: value,
            max: value,
        }
    }

    /// `name{labels}`: what matches this metric across runs.
    pub fn key(&self) -> String {
        measure::metric::metric_key(&self.name, &self.labels)
    }
}

/// The newest stored run's metrics of one name ([`SqliteStore::latest_metrics`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatestMetrics {
    pub run_id: i64,
    pub command: String,
    /// As stored: `2026-11-23T21:57:23.123Z` (UTC).
    pub recorded_at: String,
    /// The same instant in seconds since the Unix epoch.
    pub recorded_at_unix: f64,
    pub metrics: Vec<StoredMetric>,
}

/// One line of `results list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub id: i64,
    /// Made by the host that recorded the run; the same in every database it is pushed to.
    #[serde(default)]
    pub uuid: String,
    /// The host that recorded it.
    #[serde(default)]
    pub host: String,
    pub recorded_at: String,
    pub command: String,
    pub version: String,
    pub interrupted: bool,
    /// Headline: the first metric's key, median and unit.
    pub headline: Option<(String, f64, String)>,
}

/// A run read back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRun {
    pub id: i64,
    #[serde(default)]
    pub uuid: String,
    #[serde(default)]
    pub host: String,
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

/// What a results store does. The local SQLite file ([`SqliteStore`]) is the default; a shared
/// server database implements the same calls.
pub trait ResultStore: std::fmt::Debug {
    /// Records a run in one transaction and returns its id.
    fn record(&mut self, run: &NewRun) -> Result<i64, StoreError>;
    /// The most recent runs, newest first.
    fn list(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError>;
    /// One run with everything recorded about it.
    fn run(&self, id: i64) -> Result<StoredRun, StoreError>;
    /// Where the store is, for messages (a path or a URL without its password).
    fn location(&self) -> String;
    /// The id of host `host`'s newest run of `command`, if it has one.
    fn latest_of_host(&self, host: &str, command: &str) -> Result<Option<i64>, StoreError>;
}

/// The name runs are recorded under: `PLATSCOPE_HOST` when set (containers whose host name
/// means nothing, tests that play two hosts), else the kernel's host name.
pub fn host_name() -> String {
    std::env::var("PLATSCOPE_HOST")
        .ok()
        .filter(|h| !h.trim().is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

/// A random (version 4) UUID from the kernel, which makes a new one at every read of this file.
pub(crate) fn new_uuid() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/uuid")
        .map(|u| u.trim().to_string())
        .unwrap_or_else(|_| {
            // No procfs: time and process id are unique enough for one host's runs.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            format!("{:032x}-{}", nanos, std::process::id())
        })
}

/// Where results are: a local SQLite file, or a PostgreSQL database named by a URL
/// (`postgresql://…`, `postgres://…`) or a libpq key=value string (`host=… dbname=…`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    File(PathBuf),
    Postgres(String),
}

impl Location {
    /// What a `--db` or `--to` value names.
    pub fn parse(value: &std::path::Path) -> Self {
        let text = value.to_string_lossy();
        let is_url = text.starts_with("postgresql://") || text.starts_with("postgres://");
        let is_conninfo = text.split_whitespace().any(|w| {
            ["host=", "hostaddr=", "dbname=", "port=", "user="].iter().any(|k| w.starts_with(k))
        });
        if is_url || is_conninfo {
            Location::Postgres(text.into_owned())
        } else {
            Location::File(value.to_path_buf())
        }
    }
}

/// `$XDG_DATA_HOME/platscope/results.db`, else `~/.local/share/platscope/results.db`.
pub fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    Some(base.join("platscope").join("results.db"))
}

/// The result JSON without raw sample arrays: every object that looks like a summary (it has
/// `median` and `p99`) loses its `values`, which the metrics keep.
pub fn without_samples(mut value: Value) -> Value {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                if map.contains_key("median") && map.contains_key("p99") {
                    map.remove("values");
                }
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut value);
    value
}
