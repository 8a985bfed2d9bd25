//! A shared PostgreSQL database of runs from many hosts: the same tables and statements as the
//! local file (`sql`), runs keyed by the UUID their host gave them. The local SQLite file stays
//! the source of truth: a push copies what is missing, and a push that fails changes nothing
//! there and can simply be repeated.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::time::Duration;

use postgres::types::ToSql;
use postgres::{Client, Config, NoTls, Transaction};

use crate::fleet::{self, Assembler, FleetFilter, FleetStore, ReportFigures};
use crate::row::{ListedRow, RunHead, RunRow};
use crate::{sql, NewRun, ResultStore, RunSummary, SqliteStore, StoreError, StoredRun};

/// A results database on a PostgreSQL server.
pub struct PgStore {
    client: RefCell<Client>,
    /// The connection string without its password, for messages.
    location: String,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("location", &self.location).finish_non_exhaustive()
    }
}

/// What a push did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct PushOutcome {
    /// Runs copied now.
    pub pushed: usize,
    /// Runs the database already had (pushed before).
    pub already_there: usize,
    /// Reports whose headline figures (the fleet reader's rows) were copied now.
    pub figures: usize,
}

/// `postgresql://user@host:port/db`, or the libpq string, as it may be shown: no password.
fn redact(config: &Config) -> String {
    let user = config.get_user().map_or(String::new(), |u| format!("{u}@"));
    let host = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            postgres::config::Host::Tcp(name) => name.clone(),
            postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect::<Vec<_>>()
        .join(",");
    let port = config.get_ports().first().map_or(String::new(), |p| format!(":{p}"));
    let db = config.get_dbname().unwrap_or("");
    format!("postgresql://{user}{host}{port}/{db}")
}

fn remote(location: &str, e: &postgres::Error) -> StoreError {
    // The server's own words when it sent any (a refused password, a missing database), else
    // the client's (no route, refused connection, timeout).
    let cause = match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => measure::usage::one_line(e),
    };
    StoreError::Remote { location: location.to_string(), cause }
}

impl PgStore {
    /// Connects (giving up after 10 s) and makes the schema if it is not there yet.
    pub fn connect(conninfo: &str) -> Result<Self, StoreError> {
        let mut config: Config = conninfo.parse().map_err(|e: postgres::Error| {
            StoreError::BadLocation { location: conninfo.to_string(), reason: e.to_string() }
        })?;
        config.connect_timeout(Duration::from_secs(10));
        if config.get_application_name().is_none() {
            config.application_name("platscope");
        }
        let location = redact(&config);
        crate::credentials::fill_pg_password(&mut config)
            .map_err(|e| StoreError::Remote { location: location.clone(), cause: e.to_string() })?;
        let mut client = config.connect(NoTls).map_err(|e| remote(&location, &e))?;
        // The published findings' tables too, so the dashboard's panels read empty, not
        // missing, until `platscope fleet --publish` first runs.
        let schema =
            sql::create(sql::Dialect::Postgres) + &sql::create_findings(sql::Dialect::Postgres);
        client.batch_execute(&schema).map_err(|e| remote(&location, &e))?;
        Ok(Self { client: RefCell::new(client), location })
    }

    fn err(&self, e: postgres::Error) -> StoreError {
        remote(&self.location, &e)
    }

    /// Inserts one run (and its host) unless a run with its UUID is there; whether it was new.
    fn insert(&self, tx: &mut Transaction<'_>, row: &RunRow) -> Result<bool, StoreError> {
        tx.execute(sql::INSERT_HOST, &[&row.head.host, &row.head.recorded_at])
            .map_err(|e| self.err(e))?;
        let inserted = tx
            .query_opt(
                sql::INSERT_RUN,
                &[
                    &row.head.uuid,
                    &row.head.host,
                    &row.head.recorded_at,
                    &row.head.command,
                    &row.head.parameters,
                    &row.head.version,
                    &row.head.environment,
                    &row.head.topology,
                    &row.head.result,
                    &row.head.interrupted,
                ],
            )
            .map_err(|e| self.err(e))?;
        let Some(inserted) = inserted else { return Ok(false) };
        let id: i64 = inserted.get(0);
        for (position, m) in row.metrics.iter().enumerate() {
            let [median, p25, p75, min, max] = m.quantiles;
            let position = position as i32;
            tx.execute(
                sql::INSERT_METRIC,
                &[
                    &id, &position, &m.name, &m.unit, &m.labels, &median, &p25, &p75, &min, &max,
                    &m.samples,
                ],
            )
            .map_err(|e| self.err(e))?;
        }
        for (position, (worker, requested, verified)) in row.placements.iter().enumerate() {
            let position = position as i32;
            tx.execute(sql::INSERT_PLACEMENT, &[&id, &position, worker, requested, verified])
                .map_err(|e| self.err(e))?;
        }
        Ok(true)
    }

    /// Copies the local store's runs that this database does not have yet (all of them, or
    /// those in `only`), in one transaction: all arrive or none. Pushing again copies nothing.
    pub fn push(
        &self,
        local: &SqliteStore,
        only: Option<&[i64]>,
    ) -> Result<PushOutcome, StoreError> {
        let keys = local.run_keys()?;
        let wanted: Vec<&(i64, String, String)> =
            keys.iter().filter(|(id, _, _)| only.is_none_or(|ids| ids.contains(id))).collect();
        if let Some(ids) = only {
            if let Some(missing) = ids.iter().find(|id| !keys.iter().any(|k| k.0 == **id)) {
                return Err(StoreError::NoSuchRun(*missing));
            }
        }
        let mut client = self.client.borrow_mut();
        let hosts: HashSet<&str> = wanted.iter().map(|k| k.2.as_str()).collect();
        let mut known = HashSet::new();
        let mut with_figures = HashSet::new();
        for host in hosts {
            for row in client.query(sql::UUIDS_OF_HOST, &[&host]).map_err(|e| self.err(e))? {
                known.insert(row.get::<_, String>(0));
            }
            for row in client.query(sql::FLEET_UUIDS_OF_HOST, &[&host]).map_err(|e| self.err(e))? {
                with_figures.insert(row.get::<_, String>(0));
            }
        }
        let mut outcome = PushOutcome::default();
        let mut tx = client.transaction().map_err(|e| self.err(e))?;
        let mut writer = self.figures_writer(&mut tx)?;
        for (_, uuid, _) in &wanted {
            // A report's figures travel with it, and follow it when it went before them.
            if with_figures.contains(uuid) {
                continue;
            }
            if let Some(figures) = local.report_figures_of(uuid)? {
                if self.insert_figures(&mut tx, &mut writer, &figures)? {
                    outcome.figures += 1;
                }
            }
        }
        for (id, uuid, _) in wanted {
            if known.contains(uuid) {
                outcome.already_there += 1;
                continue;
            }
            let row = RunRow::copy_of(&local.run(*id)?)
                .map_err(|reason| StoreError::Json { path: local.path().to_path_buf(), reason })?;
            // Another host's push may have sent the same run meanwhile: then it is not new.
            if self.insert(&mut tx, &row)? {
                outcome.pushed += 1;
            } else {
                outcome.already_there += 1;
            }
        }
        tx.commit().map_err(|e| self.err(e))?;
        Ok(outcome)
    }

    fn json(&self, reason: serde_json::Error) -> StoreError {
        StoreError::Remote {
            location: self.location.clone(),
            cause: format!("invalid JSON in a run: {reason}"),
        }
    }
}

impl ResultStore for PgStore {
    fn record(&mut self, run: &NewRun) -> Result<i64, StoreError> {
        let row = RunRow::new(run).map_err(|e| self.json(e))?;
        let mut client = self.client.borrow_mut();
        let mut tx = client.transaction().map_err(|e| self.err(e))?;
        self.insert(&mut tx, &row)?;
        let id: i64 = tx
            .query_one("SELECT id FROM runs WHERE uuid = $1", &[&row.head.uuid])
            .map_err(|e| self.err(e))?
            .get(0);
        tx.commit().map_err(|e| self.err(e))?;
        Ok(id)
    }

    fn list(&self, limit: usize) -> Result<Vec<RunSummary>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.client.borrow_mut().query(sql::LIST, &[&limit]).map_err(|e| self.err(e))?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let metric = match (r.get(7), r.get(8), r.get(9)) {
                    (Some(name), Some(median), Some(unit)) => Some((name, median, unit, r.get(10))),
                    _ => None,
                };
                ListedRow {
                    id: r.get(0),
                    uuid: r.get(1),
                    host: r.get(2),
                    recorded_at: r.get(3),
                    command: r.get(4),
                    version: r.get(5),
                    interrupted: r.get(6),
                    metric,
                }
                .summary(false)
            })
            .collect())
    }

    fn run(&self, id: i64) -> Result<StoredRun, StoreError> {
        let mut client = self.client.borrow_mut();
        let head = client
            .query_opt(sql::RUN, &[&id])
            .map_err(|e| self.err(e))?
            .ok_or(StoreError::NoSuchRun(id))?;
        let head = RunHead {
            uuid: head.get(0),
            host: head.get(1),
            recorded_at: head.get(2),
            command: head.get(3),
            parameters: head.get(4),
            version: head.get(5),
            environment: head.get(6),
            topology: head.get(7),
            result: head.get(8),
            interrupted: head.get(9),
        };
        let mut metrics = Vec::new();
        for r in client.query(sql::METRICS, &[&id]).map_err(|e| self.err(e))? {
            let quantiles = [r.get(2), r.get(3), r.get(4), r.get(5), r.get(6)];
            let samples: String = r.get(7);
            let labels: String = r.get(8);
            metrics.push(
                crate::row::metric(r.get(0), r.get(1), quantiles, &samples, &labels, false)
                    .map_err(|e| self.json(e))?,
            );
        }
        let placements = client
            .query(sql::PLACEMENTS, &[&id])
            .map_err(|e| self.err(e))?
            .into_iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        head.into_run(id, metrics, placements).map_err(|e| self.json(e))
    }

    fn location(&self) -> String {
        self.location.clone()
    }

    fn latest_of_host(&self, host: &str, command: &str) -> Result<Option<i64>, StoreError> {
        let row = self
            .client
            .borrow_mut()
            .query_opt(sql::LATEST_OF_HOST, &[&host, &command])
            .map_err(|e| self.err(e))?;
        Ok(row.map(|r| r.get(0)))
    }
}

/// Rows a fleet read fetches at a time: a few MiB, whatever the store holds.
const FLEET_BATCH: i32 = 20_000;

/// A column of a fleet row, or the store's error naming it (a table of another shape).
fn column<'a, T: postgres::types::FromSql<'a>>(
    location: &str,
    row: &'a postgres::Row,
    index: usize,
) -> Result<T, StoreError> {
    row.try_get(index).map_err(|e| remote(location, &e))
}

/// A report's row and all its figures in one statement, one round trip: the figures come as
/// arrays (position, headline id, median, p25, p75, samples) unnested against the report's
/// new id; no row is made when its UUID is there. Returns 1 for a new report, 0 otherwise.
const INSERT_REPORT_WITH_FIGURES: &str = "WITH r AS (INSERT INTO fleet_reports (uuid, host, \
     recorded_at, version, facts_digest) VALUES ($1, $2, $3, $4, $5) \
     ON CONFLICT (uuid) DO NOTHING RETURNING id), \
     f AS (INSERT INTO fleet_figures (report_id, position, headline_id, median, p25, p75, samples) \
     SELECT r.id, p.position, p.headline_id, p.median, p.p25, p.p75, p.samples FROM r, \
     unnest($6::smallint[], $7::integer[], $8::double precision[], $9::double precision[], \
     $10::double precision[], $11::integer[]) AS p(position, headline_id, median, p25, p75, \
     samples)) SELECT count(*) FROM r";

/// What one transaction writing reports' figures keeps: its statements, prepared once, the
/// figure descriptions' ids, and the hosts and fact sets it has written already.
struct FiguresWriter {
    host: postgres::Statement,
    facts: postgres::Statement,
    report: postgres::Statement,
    headlines: HashMap<(String, String, String, String), i32>,
    hosts: HashSet<String>,
    digests: HashSet<String>,
}

impl PgStore {
    fn figures_writer(&self, tx: &mut Transaction<'_>) -> Result<FiguresWriter, StoreError> {
        let err = |e| self.err(e);
        let mut headlines = HashMap::new();
        for r in tx.query(sql::FLEET_HEADLINES, &[]).map_err(err)? {
            let key = (
                column(&self.location, &r, 1)?,
                column(&self.location, &r, 2)?,
                column(&self.location, &r, 3)?,
                column(&self.location, &r, 4)?,
            );
            headlines.insert(key, column(&self.location, &r, 0)?);
        }
        Ok(FiguresWriter {
            host: tx.prepare(sql::INSERT_HOST).map_err(err)?,
            facts: tx.prepare(sql::INSERT_FACTS).map_err(err)?,
            report: tx.prepare(INSERT_REPORT_WITH_FIGURES).map_err(err)?,
            headlines,
            hosts: HashSet::new(),
            digests: HashSet::new(),
        })
    }

    /// Inserts one report's figures in `tx` unless its UUID is there; whether it was new.
    fn insert_figures(
        &self,
        tx: &mut Transaction<'_>,
        writer: &mut FiguresWriter,
        figures: &ReportFigures,
    ) -> Result<bool, StoreError> {
        let err = |e| self.err(e);
        if writer.hosts.insert(figures.host.clone()) {
            tx.execute(&writer.host, &[&figures.host, &figures.recorded_at]).map_err(err)?;
        }
        let digest = figures.digest();
        if writer.digests.insert(digest.clone()) {
            tx.execute(&writer.facts, &[&digest, &fleet::facts_json(&figures.facts)])
                .map_err(err)?;
        }
        let (mut position, mut headline, mut median, mut p25, mut p75, mut samples) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (i, f) in fleet::storable(figures).enumerate() {
            let key = (f.area.clone(), f.name.clone(), f.metric.clone(), f.unit.clone());
            let id = match writer.headlines.get(&key) {
                Some(id) => *id,
                None => {
                    let params: [&(dyn ToSql + Sync); 4] = [&f.area, &f.name, &f.metric, &f.unit];
                    let made = tx.query_opt(sql::INSERT_FLEET_HEADLINE, &params).map_err(err)?;
                    let row = match made {
                        Some(row) => row,
                        // Another writer made it first (and committed): read its id.
                        None => tx.query_one(sql::FLEET_HEADLINE_ID, &params).map_err(err)?,
                    };
                    let id = column(&self.location, &row, 0)?;
                    writer.headlines.insert(key, id);
                    id
                }
            };
            position.push(i16::try_from(i).unwrap_or(i16::MAX));
            headline.push(id);
            median.push(f.median);
            p25.push(f.p25);
            p75.push(f.p75);
            samples.push(i32::try_from(f.samples).unwrap_or(i32::MAX));
        }
        let row = tx
            .query_one(
                &writer.report,
                &[
                    &figures.uuid,
                    &figures.host,
                    &figures.recorded_at,
                    &figures.version,
                    &digest,
                    &position,
                    &headline,
                    &median,
                    &p25,
                    &p75,
                    &samples,
                ],
            )
            .map_err(err)?;
        Ok(column::<i64>(&self.location, &row, 0)? == 1)
    }
}

impl FleetStore for PgStore {
    fn record_report_figures(&mut self, figures: &ReportFigures) -> Result<bool, StoreError> {
        Ok(self.record_many_report_figures(std::slice::from_ref(figures))? == 1)
    }

    fn record_many_report_figures(
        &mut self,
        reports: &[ReportFigures],
    ) -> Result<usize, StoreError> {
        let mut client = self.client.borrow_mut();
        let mut tx = client.transaction().map_err(|e| self.err(e))?;
        let mut writer = self.figures_writer(&mut tx)?;
        let mut new = 0;
        for figures in reports {
            if self.insert_figures(&mut tx, &mut writer, figures)? {
                new += 1;
            }
        }
        tx.commit().map_err(|e| self.err(e))?;
        Ok(new)
    }

    fn report_figures(
        &self,
        filter: &FleetFilter,
        each: &mut dyn FnMut(ReportFigures) -> ControlFlow<()>,
    ) -> Result<usize, StoreError> {
        let (sql, values) = filter.select();
        let (facts_sql, _) = filter.select_facts();
        let params: Vec<&(dyn ToSql + Sync)> =
            values.iter().map(|v| v as &(dyn ToSql + Sync)).collect();
        let location = self.location.as_str();
        let mut client = self.client.borrow_mut();
        // One snapshot for the whole read, fetched in batches through a portal.
        let mut tx = client.build_transaction().read_only(true).start().map_err(|e| self.err(e))?;
        let mut assembler = Assembler::new(each);
        for r in tx.query(sql::FLEET_HEADLINES, &[]).map_err(|e| self.err(e))? {
            let id: i32 = column(location, &r, 0)?;
            assembler.headlines.insert(
                i64::from(id),
                (
                    column(location, &r, 1)?,
                    column(location, &r, 2)?,
                    column(location, &r, 3)?,
                    column(location, &r, 4)?,
                ),
            );
        }
        for r in tx.query(&facts_sql, &params).map_err(|e| self.err(e))? {
            let text: String = column(location, &r, 1)?;
            let facts = serde_json::from_str(&text).map_err(|e| self.json(e))?;
            assembler.facts.insert(column(location, &r, 0)?, facts);
        }
        let portal = tx.bind(&sql, &params).map_err(|e| self.err(e))?;
        loop {
            let rows = tx.query_portal(&portal, FLEET_BATCH).map_err(|e| self.err(e))?;
            if rows.is_empty() {
                break;
            }
            for row in &rows {
                let figure = match column::<Option<i32>>(location, row, 6)? {
                    Some(headline) => Some((
                        i64::from(headline),
                        column(location, row, 7)?,
                        column(location, row, 8)?,
                        column(location, row, 9)?,
                        i64::from(column::<i32>(location, row, 10)?),
                    )),
                    None => None,
                };
                let head = || -> Result<_, StoreError> {
                    Ok((
                        column(location, row, 1)?,
                        column(location, row, 2)?,
                        column(location, row, 3)?,
                        column(location, row, 4)?,
                        column(location, row, 5)?,
                    ))
                };
                if assembler.row(column(location, row, 0)?, head, figure)?.is_break() {
                    return Ok(assembler.given);
                }
            }
        }
        let _ = assembler.flush();
        tx.commit().map_err(|e| self.err(e))?;
        Ok(assembler.given)
    }

    fn reports_without_figures(&self) -> Result<Vec<i64>, StoreError> {
        let rows = self
            .client
            .borrow_mut()
            .query(sql::REPORTS_WITHOUT_FIGURES, &[&fleet::REPORT_COMMAND])
            .map_err(|e| self.err(e))?;
        rows.iter().map(|r| column(&self.location, r, 0)).collect()
    }

    fn publish_findings(&mut self, findings: &fleet::Findings) -> Result<(), StoreError> {
        let mut client = self.client.borrow_mut();
        let err = |e| remote(&self.location, &e);
        let mut tx = client.transaction().map_err(err)?;
        // Two analyses published at once: one waits for the other, so neither's rows mix.
        tx.batch_execute("LOCK TABLE fleet_outliers, fleet_changes IN EXCLUSIVE MODE")
            .map_err(err)?;
        tx.batch_execute(sql::CLEAR_FINDINGS).map_err(err)?;
        let (at, window) = (&findings.analysed_at, &findings.window);
        let insert = tx.prepare(sql::INSERT_OUTLIER).map_err(err)?;
        for o in &findings.outliers {
            tx.execute(
                &insert,
                &[
                    at,
                    window,
                    &o.host,
                    &o.class,
                    &o.figure,
                    &o.unit,
                    &o.value,
                    &o.class_median,
                    &o.ratio,
                    &o.min_effect,
                    &o.verdict,
                ],
            )
            .map_err(err)?;
        }
        let insert = tx.prepare(sql::INSERT_CHANGE).map_err(err)?;
        for c in &findings.changes {
            tx.execute(
                &insert,
                &[
                    at, window, &c.host, &c.figure, &c.unit, &c.at, &c.before, &c.after, &c.ratio,
                    &c.p_value, &c.config, &c.verdict,
                ],
            )
            .map_err(err)?;
        }
        tx.commit().map_err(err)
    }
}
