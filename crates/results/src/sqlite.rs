//! The local results database: one SQLite file (WAL), the source of truth on each machine.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OpenFlags, OptionalExtension};

use crate::error::At;
use crate::fleet::{self, Assembler, FleetFilter, FleetStore, ReportFigures};
use crate::row::{ListedRow, RunHead, RunRow};
use crate::{
    schema, sql, LatestMetrics, NewRun, ResultStore, RunSummary, StoreError, StoredMetric,
    StoredRun,
};

/// A results database in a local SQLite file.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
    /// The schema version: 5 (current) for a store opened for recording; a file opened
    /// read-only keeps its own (before 2: no labels, relabelled on reading; before 3: no UUIDs
    /// or hosts).
    version: i64,
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

impl SqliteStore {
    /// Opens for recording (creating it and its directory if needed), checks it is platscope's
    /// and not from a newer version, and brings an older schema up to date. A foreign or newer
    /// file is left untouched.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let open_error = |reason: String| StoreError::Open { path: path.to_path_buf(), reason };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            // Directories made here are the owner's alone (0700); existing ones are left as
            // they are.
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| open_error(format!("creating {}: {e}", dir.display())))?;
        }
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => return Err(open_error("it is a directory".into())),
            Ok(meta) if !meta.is_file() => {
                return Err(open_error("it is not a regular file".into()));
            }
            Ok(_) => {}
            // A new store is readable by its owner only (0600): runs carry command lines and
            // query text. SQLite gives its journal and WAL files the database file's mode. An
            // existing file keeps its mode (a shared store may be group-readable on purpose).
            Err(_) => match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
            {
                Ok(_) => {}
                // Another run made it first: open it as it is.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(open_error(format!("creating it: {e}"))),
            },
        }
        let mut conn = Connection::open(path).map_err(|e| StoreError::sql(path, &e))?;
        conn.busy_timeout(Duration::from_secs(10)).at(path)?;
        schema::prepare(&mut conn, path)?;
        conn.pragma_update(None, "foreign_keys", true).at(path)?;
        Ok(Self { conn, path: path.to_path_buf(), version: schema::SCHEMA_VERSION })
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
        let version = schema::version(&conn, path)?;
        Ok(Self { conn, path: path.to_path_buf(), version })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Labels exist from schema 2 on; UUIDs and hosts from 3.
    fn labels(&self) -> bool {
        self.version >= 2
    }

    /// A shared statement, or for a file from before schema 3 (read as it is) the same query
    /// with the columns it lacks given as constants.
    fn statement(&self, shared: &str) -> String {
        let mut sql = shared.to_string();
        if self.version < 3 {
            sql = sql.replace("r.uuid, r.host,", "'' AS uuid, '' AS host,");
            sql = sql.replace("SELECT uuid, host,", "SELECT '' AS uuid, '' AS host,");
            sql = sql.replace("ORDER BY r.recorded_at DESC, r.id DESC", "ORDER BY r.id DESC");
        }
        if !self.labels() {
            sql = sql.replace("m.labels", "'{}'").replace("samples, labels", "samples, '{}'");
        }
        sql
    }

    /// Every run's id, UUID and host, oldest first (what a push walks).
    pub fn run_keys(&self) -> Result<Vec<(i64, String, String)>, StoreError> {
        if self.version < 3 {
            return Err(StoreError::Open {
                path: self.path.clone(),
                reason: format!(
                    "its runs have no UUIDs yet (schema {}); open it for recording once (any \
                     platscope command with --db {}) to bring it to schema 3",
                    self.version,
                    self.path.display()
                ),
            });
        }
        let mut stmt =
            self.conn.prepare("SELECT id, uuid, host FROM runs ORDER BY id").at(&self.path)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .at(&self.path)?
            .collect::<Result<Vec<_>, _>>()
            .at(&self.path);
        rows
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
        let run_id: Option<i64> = if self.labels() {
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
        let mut stmt = self.conn.prepare(&self.statement(sql::METRICS)).at(&self.path)?;
        let rows = stmt
            .query_map(params![id], |row| {
                let q = |i: usize| row.get::<_, Option<f64>>(i).map(|v| v.unwrap_or(f64::NAN));
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    // SQLite stores NaN (a metric without finite samples) as NULL.
                    [q(2)?, q(3)?, q(4)?, q(5)?, q(6)?],
                    row.get::<_, String>(7)?,
                    row.get::<_, String>(8)?,
                ))
            })
            .at(&self.path)?
            .collect::<Result<Vec<_>, _>>()
            .at(&self.path)?;
        rows.into_iter()
            .map(|(name, unit, quantiles, samples, labels)| {
                crate::row::metric(name, unit, quantiles, &samples, &labels, !self.labels())
                    .at(&self.path)
            })
            .collect()
    }
}

impl ResultStore for SqliteStore {
    fn record(&mut self, run: &NewRun) -> Result<i64, StoreError> {
        let row = RunRow::new(run).at(&self.path)?;
        let path = self.path.clone();
        let tx = self.conn.transaction().at(&path)?;
        tx.execute(sql::INSERT_HOST, params![row.head.host, row.head.recorded_at]).at(&path)?;
        let id: i64 = tx
            .query_row(
                sql::INSERT_RUN,
                params![
                    row.head.uuid,
                    row.head.host,
                    row.head.recorded_at,
                    row.head.command,
                    row.head.parameters,
                    row.head.version,
                    row.head.environment,
                    row.head.topology,
                    row.head.result,
                    row.head.interrupted
                ],
                |r| r.get(0),
            )
            .at(&path)?;
        for (position, m) in row.metrics.iter().enumerate() {
            let [median, p25, p75, min, max] = m.quantiles;
            tx.execute(
                sql::INSERT_METRIC,
                params![
                    id,
                    position as i64,
                    m.name,
                    m.unit,
                    m.labels,
                    median,
                    p25,
                    p75,
                    min,
                    max,
                    m.samples
                ],
            )
            .at(&path)?;
        }
        for (position, (worker, requested, verified)) in row.placements.iter().enumerate() {
            tx.execute(
                sql::INSERT_PLACEMENT,
                params![id, position as i64, worker, requested, verified],
            )
            .at(&path)?;
        }
        tx.commit().at(&path)?;
        Ok(id)
    }

    fn list(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
        let mut stmt = self.conn.prepare(&self.statement(sql::LIST)).at(&self.path)?;
        let rows = stmt
            .query_map(params![limit as i64], |r| {
                Ok(ListedRow {
                    id: r.get(0)?,
                    uuid: r.get(1)?,
                    host: r.get(2)?,
                    recorded_at: r.get(3)?,
                    command: r.get(4)?,
                    version: r.get(5)?,
                    interrupted: r.get(6)?,
                    metric: match (r.get(7)?, r.get(8)?, r.get(9)?) {
                        (Some(name), Some(median), Some(unit)) => {
                            Some((name, median, unit, r.get::<_, Option<String>>(10)?))
                        }
                        _ => None,
                    },
                })
            })
            .at(&self.path)?
            .collect::<Result<Vec<_>, _>>()
            .at(&self.path)?;
        Ok(rows.into_iter().map(|row| row.summary(!self.labels())).collect())
    }

    fn run(&self, id: i64) -> Result<StoredRun, StoreError> {
        let head = self
            .conn
            .query_row(&self.statement(sql::RUN), params![id], |r| {
                Ok(RunHead {
                    uuid: r.get(0)?,
                    host: r.get(1)?,
                    recorded_at: r.get(2)?,
                    command: r.get(3)?,
                    parameters: r.get(4)?,
                    version: r.get(5)?,
                    environment: r.get(6)?,
                    topology: r.get(7)?,
                    result: r.get(8)?,
                    interrupted: r.get(9)?,
                })
            })
            .optional()
            .at(&self.path)?
            .ok_or(StoreError::NoSuchRun(id))?;
        let metrics = self.metrics(id)?;
        let mut stmt = self.conn.prepare(sql::PLACEMENTS).at(&self.path)?;
        let placements = stmt
            .query_map(params![id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .at(&self.path)?
            .collect::<Result<Vec<(String, String, String)>, _>>()
            .at(&self.path)?;
        head.into_run(id, metrics, placements).at(&self.path)
    }

    fn latest_of_host(&self, host: &str, command: &str) -> Result<Option<i64>, StoreError> {
        if self.version < 3 {
            return Ok(None);
        }
        self.conn
            .query_row(sql::LATEST_OF_HOST, params![host, command], |r| r.get(0))
            .optional()
            .at(&self.path)
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }
}

impl SqliteStore {
    /// Schema 5 holds the fleet tables; an older file opened read-only does not.
    fn has_fleet_tables(&self) -> bool {
        self.version >= 5
    }

    /// The figures of the report whose run has UUID `uuid`, if they were recorded (a push
    /// sends them with the run).
    pub fn report_figures_of(&self, uuid: &str) -> Result<Option<ReportFigures>, StoreError> {
        if !self.has_fleet_tables() {
            return Ok(None);
        }
        let sql = format!(
            "SELECT {} FROM fleet_reports r LEFT JOIN fleet_figures f ON f.report_id = r.id \
             WHERE r.uuid = $1 ORDER BY f.position",
            sql::FLEET_COLUMNS
        );
        let facts = "SELECT digest, facts FROM fleet_facts WHERE digest IN \
             (SELECT r.facts_digest FROM fleet_reports r WHERE r.uuid = $1)";
        let mut found = None;
        self.read_figures(&sql, facts, &[uuid.to_string()], &mut |r| {
            found = Some(r);
            ControlFlow::Break(())
        })?;
        Ok(found)
    }

    /// Runs the reader's statement `sql` with `values` (the fact sets of its reports from
    /// `facts_sql`, which takes the same values) and gives each report to `each`.
    fn read_figures(
        &self,
        sql: &str,
        facts_sql: &str,
        values: &[String],
        each: &mut dyn FnMut(ReportFigures) -> ControlFlow<()>,
    ) -> Result<usize, StoreError> {
        let path = &self.path;
        let mut assembler = Assembler::new(each);
        let mut stmt = self.conn.prepare(sql::FLEET_HEADLINES).at(path)?;
        let mut rows = stmt.query([]).at(path)?;
        while let Some(row) = rows.next().at(path)? {
            assembler.headlines.insert(
                row.get(0).at(path)?,
                (
                    row.get(1).at(path)?,
                    row.get(2).at(path)?,
                    row.get(3).at(path)?,
                    row.get(4).at(path)?,
                ),
            );
        }
        drop(rows);
        let mut stmt = self.conn.prepare(facts_sql).at(path)?;
        let mut rows = stmt.query(rusqlite::params_from_iter(values)).at(path)?;
        while let Some(row) = rows.next().at(path)? {
            let text: String = row.get(1).at(path)?;
            assembler.facts.insert(row.get(0).at(path)?, serde_json::from_str(&text).at(path)?);
        }
        drop(rows);
        let mut stmt = self.conn.prepare(sql).at(path)?;
        let mut rows = stmt.query(rusqlite::params_from_iter(values)).at(path)?;
        while let Some(row) = rows.next().at(path)? {
            let figure = match row.get::<_, Option<i64>>(6).at(path)? {
                Some(headline) => Some((
                    headline,
                    row.get(7).at(path)?,
                    row.get(8).at(path)?,
                    row.get(9).at(path)?,
                    row.get(10).at(path)?,
                )),
                None => None,
            };
            let head = || -> Result<_, StoreError> {
                Ok((
                    row.get(1).at(path)?,
                    row.get(2).at(path)?,
                    row.get(3).at(path)?,
                    row.get(4).at(path)?,
                    row.get(5).at(path)?,
                ))
            };
            if assembler.row(row.get(0).at(path)?, head, figure)?.is_break() {
                return Ok(assembler.given);
            }
        }
        let _ = assembler.flush();
        Ok(assembler.given)
    }
}

impl FleetStore for SqliteStore {
    fn record_report_figures(&mut self, figures: &ReportFigures) -> Result<bool, StoreError> {
        Ok(self.record_many_report_figures(std::slice::from_ref(figures))? == 1)
    }

    fn record_many_report_figures(
        &mut self,
        reports: &[ReportFigures],
    ) -> Result<usize, StoreError> {
        if !self.has_fleet_tables() {
            return Err(StoreError::Open {
                path: self.path.clone(),
                reason: format!(
                    "it has no table of report figures yet (schema {}); open it for recording \
                     once (any platscope command with --db {}) to bring it to schema {}",
                    self.version,
                    self.path.display(),
                    schema::SCHEMA_VERSION
                ),
            });
        }
        let path = self.path.clone();
        let tx = self.conn.transaction().at(&path)?;
        let mut known: HashMap<(String, String, String, String), i64> = HashMap::new();
        {
            let mut stmt = tx.prepare(sql::FLEET_HEADLINES).at(&path)?;
            let mut rows = stmt.query([]).at(&path)?;
            while let Some(r) = rows.next().at(&path)? {
                let key = (
                    r.get(1).at(&path)?,
                    r.get(2).at(&path)?,
                    r.get(3).at(&path)?,
                    r.get(4).at(&path)?,
                );
                known.insert(key, r.get(0).at(&path)?);
            }
        }
        let mut new = 0;
        for figures in reports {
            if insert_figures(&tx, &path, figures, &mut known)? {
                new += 1;
            }
        }
        tx.commit().at(&path)?;
        Ok(new)
    }

    fn report_figures(
        &self,
        filter: &FleetFilter,
        each: &mut dyn FnMut(ReportFigures) -> ControlFlow<()>,
    ) -> Result<usize, StoreError> {
        if !self.has_fleet_tables() {
            // An older file opened read-only: every report is still to be computed.
            return Ok(0);
        }
        let (sql, values) = filter.select();
        let (facts_sql, _) = filter.select_facts();
        self.read_figures(&sql, &facts_sql, &values, each)
    }

    fn reports_without_figures(&self) -> Result<Vec<i64>, StoreError> {
        let sql = if self.has_fleet_tables() {
            sql::REPORTS_WITHOUT_FIGURES
        } else {
            "SELECT id FROM runs WHERE command = $1 ORDER BY id"
        };
        let mut stmt = self.conn.prepare(sql).at(&self.path)?;
        let ids = stmt
            .query_map(params![fleet::REPORT_COMMAND], |r| r.get(0))
            .at(&self.path)?
            .collect::<Result<Vec<i64>, _>>()
            .at(&self.path);
        ids
    }

    fn publish_findings(&mut self, findings: &fleet::Findings) -> Result<(), StoreError> {
        let path = self.path.clone();
        let tx = self.conn.transaction().at(&path)?;
        tx.execute_batch(&sql::create_findings(sql::Dialect::Sqlite)).at(&path)?;
        tx.execute_batch(sql::CLEAR_FINDINGS).at(&path)?;
        let (at, window) = (&findings.analysed_at, &findings.window);
        {
            let mut insert = tx.prepare(sql::INSERT_OUTLIER).at(&path)?;
            for o in &findings.outliers {
                insert
                    .execute(params![
                        at,
                        window,
                        o.host,
                        o.class,
                        o.figure,
                        o.unit,
                        o.value,
                        o.class_median,
                        o.ratio,
                        o.min_effect,
                        o.verdict
                    ])
                    .at(&path)?;
            }
            let mut insert = tx.prepare(sql::INSERT_CHANGE).at(&path)?;
            for c in &findings.changes {
                insert
                    .execute(params![
                        at, window, c.host, c.figure, c.unit, c.at, c.before, c.after, c.ratio,
                        c.p_value, c.config, c.verdict
                    ])
                    .at(&path)?;
            }
        }
        tx.commit().at(&path)
    }
}

/// Inserts one report's figures in `tx` unless its UUID is there; whether it was new.
/// `known` maps figure descriptions to their ids, and learns the ones made here.
fn insert_figures(
    tx: &rusqlite::Transaction<'_>,
    path: &Path,
    figures: &ReportFigures,
    known: &mut HashMap<(String, String, String, String), i64>,
) -> Result<bool, StoreError> {
    tx.execute(sql::INSERT_HOST, params![figures.host, figures.recorded_at]).at(path)?;
    let digest = figures.digest();
    tx.execute(sql::INSERT_FACTS, params![digest, fleet::facts_json(&figures.facts)]).at(path)?;
    let id: Option<i64> = tx
        .query_row(
            sql::INSERT_FLEET_REPORT,
            params![figures.uuid, figures.host, figures.recorded_at, figures.version, digest],
            |r| r.get(0),
        )
        .optional()
        .at(path)?;
    let Some(id) = id else { return Ok(false) };
    for (position, f) in fleet::storable(figures).enumerate() {
        let key = (f.area.clone(), f.name.clone(), f.metric.clone(), f.unit.clone());
        let headline = match known.get(&key) {
            Some(id) => *id,
            None => {
                let description = params![f.area, f.name, f.metric, f.unit];
                let made: Option<i64> = tx
                    .query_row(sql::INSERT_FLEET_HEADLINE, description, |r| r.get(0))
                    .optional()
                    .at(path)?;
                let id = match made {
                    Some(id) => id,
                    None => {
                        tx.query_row(sql::FLEET_HEADLINE_ID, description, |r| r.get(0)).at(path)?
                    }
                };
                known.insert(key, id);
                id
            }
        };
        tx.execute(
            sql::INSERT_FLEET_FIGURE,
            params![id, position as i64, headline, f.median, f.p25, f.p75, i64::from(f.samples)],
        )
        .at(path)?;
    }
    Ok(true)
}
