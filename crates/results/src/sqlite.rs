//! The local results database: one SQLite file (WAL), the source of truth on each machine.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension};

use crate::error::At;
use crate::{
    legacy, schema, without_samples, LatestMetrics, NewRun, ResultStore, RunSummary, StoreError,
    StoredMetric, StoredRun, WorkerPlacement,
};

/// A results database in a local SQLite file.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
    /// Schema 2 and later keep labels; an older file opened read-only is relabelled on reading.
    labels: bool,
}

/// A path as the path of a `file:` URI: bytes outside the unreserved set percent-encoded.
fn uri_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn sorted_quantile(sorted: &[f64], q: f64) -> f64 {
    measure::summary::quantile(sorted, q)
}

impl SqliteStore {
    /// Opens for recording (creating it and its directory if needed), checks it is platscope's
    /// and not from a newer version, and brings an older schema up to date. A foreign or newer
    /// file is left untouched.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let open_error = |reason: String| StoreError::Open { path: path.to_path_buf(), reason };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| open_error(format!("creating {}: {e}", dir.display())))?;
        }
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => return Err(open_error("it is a directory".into())),
            Ok(meta) if !meta.is_file() => {
                return Err(open_error("it is not a regular file".into()));
            }
            _ => {}
        }
        let mut conn = Connection::open(path).map_err(|e| StoreError::sql(path, &e))?;
        conn.busy_timeout(Duration::from_secs(10)).at(path)?;
        schema::prepare(&mut conn, path)?;
        conn.pragma_update(None, "foreign_keys", true).at(path)?;
        Ok(Self { conn, path: path.to_path_buf(), labels: true })
    }

    /// Opens an existing store for reading only: nothing is written to it or created beside it,
    /// so a store owned by another user or on a read-only mount can be listed, shown, compared
    /// and exported. An older schema is read as it is.
    pub fn open_read_only(path: &Path) -> Result<Self, StoreError> {
        let open_error = |reason: String| StoreError::Open { path: path.to_path_buf(), reason };
        let meta = std::fs::metadata(path).map_err(|e| open_error(e.to_string()))?;
        if !meta.is_file() {
            return Err(open_error("it is not a regular file".into()));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        // With no write-ahead log beside it the file is complete, and SQLite is told it will
        // not change (`immutable`), so it creates no `-shm`/`-wal` files next to a store that
        // may belong to someone else or sit on a read-only mount. With a log (a writer is
        // running, or one crashed) it is opened as a normal reader, which needs them.
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        let conn = if Path::new(&wal).exists() {
            Connection::open_with_flags(path, flags).at(path)?
        } else {
            let uri = format!("file:{}?immutable=1", uri_path(path));
            Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI).at(path)?
        };
        conn.busy_timeout(Duration::from_secs(10)).at(path)?;
        let labels = schema::has_labels(&conn, path)?;
        Ok(Self { conn, path: path.to_path_buf(), labels })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The newest run that holds metric `name` — with label `with_label` on it, when given
    /// (a latency matrix's `cpu_node`, not a single-size `mem latency`) — and that run's
    /// metrics of that name. `None` when no run has one. Exporters read the latest stored
    /// figures through this without loading whole runs.
    pub fn latest_metrics(
        &self,
        name: &str,
        with_label: Option<&str>,
    ) -> Result<Option<LatestMetrics>, StoreError> {
        let wanted = |m: &StoredMetric| {
            m.name == name && with_label.is_none_or(|l| m.labels.contains_key(l))
        };
        let run_id: Option<i64> = if self.labels {
            // The label test here only narrows; `wanted` below decides.
            let pattern = with_label.map_or("%".to_string(), |l| format!("%\"{l}\"%"));
            self.conn
                .query_row(
                    "SELECT MAX(run_id) FROM metrics WHERE name = ?1 AND labels LIKE ?2",
                    params![name, pattern],
                    |row| row.get(0),
                )
                .at(&self.path)?
        } else {
            // Schema 1 kept formatted names: relabel the newest runs until one matches.
            let mut stmt = self
                .conn
                .prepare("SELECT id FROM runs ORDER BY id DESC LIMIT 200")
                .at(&self.path)?;
            let ids = stmt
                .query_map([], |row| row.get::<_, i64>(0))
                .at(&self.path)?
                .collect::<Result<Vec<_>, _>>()
                .at(&self.path)?;
            let mut found = None;
            for id in ids {
                if self.metrics(id)?.iter().any(wanted) {
                    found = Some(id);
                    break;
                }
            }
            found
        };
        let Some(run_id) = run_id else { return Ok(None) };
        let (command, recorded_at, unix): (String, String, f64) = self
            .conn
            .query_row(
                "SELECT command, recorded_at, (julianday(recorded_at) - 2440587.5) * 86400.0
                 FROM runs WHERE id = ?1",
                params![run_id],
                |row| Ok((row.get(0)?, row.get(1)?, row.get::<_, Option<f64>>(2)?.unwrap_or(0.0))),
            )
            .at(&self.path)?;
        let metrics: Vec<StoredMetric> = self.metrics(run_id)?.into_iter().filter(wanted).collect();
        Ok(Some(LatestMetrics { run_id, command, recorded_at, recorded_at_unix: unix, metrics }))
    }

    fn metrics(&self, id: i64) -> Result<Vec<StoredMetric>, StoreError> {
        let labels_column = if self.labels { "labels" } else { "'{}'" };
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT name, unit, median, p25, p75, min, max, samples, {labels_column}
                 FROM metrics WHERE run_id = ?1 ORDER BY position"
            ))
            .at(&self.path)?;
        let rows = stmt
            .query_map(params![id], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    [row.get::<_, f64>(2)?, row.get(3)?, row.get(4)?, row.get(5)?, row.get(6)?],
                    row.get::<_, String>(7)?,
                    row.get::<_, String>(8)?,
                ))
            })
            .at(&self.path)?
            .collect::<Result<Vec<_>, _>>()
            .at(&self.path)?;
        rows.into_iter()
            .map(|(name, unit, [median, p25, p75, min, max], samples, labels)| {
                let (name, labels) = if self.labels {
                    let labels: BTreeMap<String, String> =
                        serde_json::from_str(&labels).at(&self.path)?;
                    (name, labels)
                } else {
                    legacy::relabel(&name)
                };
                Ok(StoredMetric {
                    name,
                    unit,
                    labels,
                    samples: serde_json::from_str(&samples).at(&self.path)?,
                    median,
                    p25,
                    p75,
                    min,
                    max,
                })
            })
            .collect()
    }
}

impl ResultStore for SqliteStore {
    fn record(&mut self, run: &NewRun) -> Result<i64, StoreError> {
        let path = self.path.clone();
        let tx = self.conn.transaction().at(&path)?;
        tx.execute(
            "INSERT INTO runs (recorded_at, command, parameters, version, environment, topology, result, interrupted)
             VALUES (strftime('%Y-%m-%dT%H:%M:%fZ','now'), ?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                run.command,
                run.parameters.to_string(),
                run.version,
                run.environment.to_string(),
                run.topology.to_string(),
                without_samples(run.result.clone()).to_string(),
                run.interrupted
            ],
        )
        .at(&path)?;
        let id = tx.last_insert_rowid();
        for (position, m) in run.metrics.iter().enumerate() {
            let mut sorted: Vec<f64> =
                m.samples.iter().copied().filter(|v| v.is_finite()).collect();
            sorted.sort_by(f64::total_cmp);
            tx.execute(
                "INSERT INTO metrics (run_id, position, name, unit, labels, median, p25, p75, min, max, samples)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    id,
                    position as i64,
                    m.name,
                    m.unit.symbol(),
                    serde_json::to_string(&m.labels).at(&path)?,
                    sorted_quantile(&sorted, 0.5),
                    sorted_quantile(&sorted, 0.25),
                    sorted_quantile(&sorted, 0.75),
                    sorted.first().copied().unwrap_or(f64::NAN),
                    sorted.last().copied().unwrap_or(f64::NAN),
                    serde_json::to_string(&m.samples).at(&path)?
                ],
            )
            .at(&path)?;
        }
        for (position, p) in run.placements.iter().enumerate() {
            tx.execute(
                "INSERT INTO placements (run_id, position, worker, requested, verified) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![id, position as i64, p.worker, p.requested.to_string(), p.verified.to_string()],
            )
            .at(&path)?;
        }
        tx.commit().at(&path)?;
        Ok(id)
    }

    fn list(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
        let labels_column = if self.labels { "m.labels" } else { "'{}'" };
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT r.id, r.recorded_at, r.command, r.version, r.interrupted, m.name, m.median, m.unit, {labels_column}
                 FROM runs r LEFT JOIN metrics m ON m.run_id = r.id AND m.position = 0
                 ORDER BY r.id DESC LIMIT ?1"
            ))
            .at(&self.path)?;
        let rows = stmt
            .query_map(params![limit as i64], |row| {
                Ok((
                    RunSummary {
                        id: row.get(0)?,
                        recorded_at: row.get(1)?,
                        command: row.get(2)?,
                        version: row.get(3)?,
                        interrupted: row.get(4)?,
                        headline: None,
                    },
                    row.get::<_, Option<String>>(5)?,
                    row.get::<_, Option<f64>>(6)?,
                    row.get::<_, Option<String>>(7)?,
                    row.get::<_, Option<String>>(8)?,
                ))
            })
            .at(&self.path)?
            .collect::<Result<Vec<_>, _>>()
            .at(&self.path)?;
        Ok(rows
            .into_iter()
            .map(|(mut summary, name, median, unit, labels)| {
                if let (Some(name), Some(median), Some(unit)) = (name, median, unit) {
                    let (name, labels) = if self.labels {
                        let labels = labels.and_then(|l| serde_json::from_str(&l).ok());
                        (name, labels.unwrap_or_default())
                    } else {
                        legacy::relabel(&name)
                    };
                    let key = measure::metric::metric_key(&name, &labels);
                    summary.headline = Some((key, median, unit));
                }
                summary
            })
            .collect())
    }

    fn run(&self, id: i64) -> Result<StoredRun, StoreError> {
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
            .optional()
            .at(&self.path)?
            .ok_or(StoreError::NoSuchRun(id))?;
        let metrics = self.metrics(id)?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT worker, requested, verified FROM placements WHERE run_id = ?1 ORDER BY position",
            )
            .at(&self.path)?;
        let placements = stmt
            .query_map(params![id], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?, row.get::<_, String>(2)?))
            })
            .at(&self.path)?
            .collect::<Result<Vec<_>, _>>()
            .at(&self.path)?
            .into_iter()
            .map(|(worker, requested, verified)| {
                Ok(WorkerPlacement {
                    worker,
                    requested: serde_json::from_str(&requested).at(&self.path)?,
                    verified: serde_json::from_str(&verified).at(&self.path)?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let (recorded_at, command, parameters, version, environment, topology, result, interrupted) =
            head;
        let json = |text: &str| serde_json::from_str(text).at(&self.path);
        Ok(StoredRun {
            id,
            recorded_at,
            command,
            parameters: json(&parameters)?,
            version,
            environment: json(&environment)?,
            topology: json(&topology)?,
            metrics,
            placements,
            result: json(&result)?,
            interrupted,
        })
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }
}
