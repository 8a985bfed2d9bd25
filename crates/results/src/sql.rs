//! One statement set for both stores, and the two small dialect layers that differ: the
//! PostgreSQL schema's types, and how each driver takes parameters.
//!
//! Every shared statement numbers its parameters `$1, $2, …` in order of first appearance:
//! PostgreSQL reads them as written, and SQLite numbers `$NAME` parameters by first appearance,
//! so the same text binds the same values in both (checked by a test below). Runs are keyed by
//! a UUID made on the host that measured them: `INSERT … ON CONFLICT (uuid) DO NOTHING` makes a
//! second push of the same run a no-op in either database.

/// Which database a statement is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// A host: its name is what `--host` matches; first seen when it first recorded or pushed.
pub const INSERT_HOST: &str =
    "INSERT INTO hosts (name, first_seen) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING";

/// A run; returns its id, or no row when a run with this UUID is already there.
pub const INSERT_RUN: &str = "INSERT INTO runs (uuid, host, recorded_at, command, parameters, \
     version, environment, topology, result, interrupted) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (uuid) DO NOTHING RETURNING id";

pub const INSERT_METRIC: &str = "INSERT INTO metrics (run_id, position, name, unit, labels, \
     median, p25, p75, min, max, samples) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

pub const INSERT_PLACEMENT: &str = "INSERT INTO placements (run_id, position, worker, \
     requested, verified) VALUES ($1, $2, $3, $4, $5)";

/// The newest runs with their first metric, newest first; `$1` limits them.
pub const LIST: &str = "SELECT r.id, r.uuid, r.host, r.recorded_at, r.command, r.version, \
     r.interrupted, m.name, m.median, m.unit, m.labels \
     FROM runs r LEFT JOIN metrics m ON m.run_id = r.id AND m.position = 0 \
     ORDER BY r.recorded_at DESC, r.id DESC LIMIT $1";

pub const RUN: &str = "SELECT uuid, host, recorded_at, command, parameters, version, \
     environment, topology, result, interrupted FROM runs WHERE id = $1";

pub const METRICS: &str = "SELECT name, unit, median, p25, p75, min, max, samples, labels \
     FROM metrics WHERE run_id = $1 ORDER BY position";

pub const PLACEMENTS: &str =
    "SELECT worker, requested, verified FROM placements WHERE run_id = $1 ORDER BY position";

/// The newest run of host `$1` whose command is `$2`.
pub const LATEST_OF_HOST: &str = "SELECT id FROM runs WHERE host = $1 AND command = $2 \
     ORDER BY recorded_at DESC, id DESC LIMIT 1";

/// The UUIDs of host `$1`'s runs already in the database (a push sends only the others).
pub const UUIDS_OF_HOST: &str = "SELECT uuid FROM runs WHERE host = $1";

/// A distinct set of machine facts, stored once however many reports share it.
pub const INSERT_FACTS: &str =
    "INSERT INTO fleet_facts (digest, facts) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING";

/// A report's row for the fleet reader; returns its id, or no row when its UUID is there.
pub const INSERT_FLEET_REPORT: &str = "INSERT INTO fleet_reports (uuid, host, recorded_at, \
     version, facts_digest) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (uuid) DO NOTHING RETURNING id";

/// Every headline figure's description (few: one per figure a report can show).
pub const FLEET_HEADLINES: &str = "SELECT id, area, name, metric, unit FROM fleet_headlines";

/// A new figure description; returns its id, or no row when another writer made it first.
pub const INSERT_FLEET_HEADLINE: &str = "INSERT INTO fleet_headlines (area, name, metric, unit) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (area, name, metric, unit) DO NOTHING RETURNING id";

pub const FLEET_HEADLINE_ID: &str = "SELECT id FROM fleet_headlines \
     WHERE area = $1 AND name = $2 AND metric = $3 AND unit = $4";

pub const INSERT_FLEET_FIGURE: &str = "INSERT INTO fleet_figures (report_id, position, \
     headline_id, median, p25, p75, samples) VALUES ($1, $2, $3, $4, $5, $6, $7)";

/// The `report` runs that have no row in `fleet_reports` yet (what a backfill computes).
pub const REPORTS_WITHOUT_FIGURES: &str = "SELECT r.id FROM runs r WHERE r.command = $1 \
     AND NOT EXISTS (SELECT 1 FROM fleet_reports f WHERE f.uuid = r.uuid) ORDER BY r.id";

/// The UUIDs of host `$1`'s reports whose figures the database has (a push sends the others).
pub const FLEET_UUIDS_OF_HOST: &str = "SELECT uuid FROM fleet_reports WHERE host = $1";

/// The columns every fleet read selects, in the order [`crate::fleet`]'s reader takes them.
pub const FLEET_COLUMNS: &str = "r.id, r.uuid, r.host, r.recorded_at, r.version, \
     r.facts_digest, f.headline_id, f.median, f.p25, f.p75, f.samples";

/// The tables the fleet reader reads: one row per report (who, when, which facts), each
/// distinct fact set once, each figure description once, one row per report and headline
/// figure. They hold no samples, so a fleet's years of daily reports stay small
/// (docs/results.md gives the bytes per report).
pub fn create_fleet(dialect: Dialect) -> String {
    let (id, small_id, real, reference, small) = match dialect {
        Dialect::Postgres => (
            "BIGSERIAL PRIMARY KEY",
            "SERIAL PRIMARY KEY",
            "DOUBLE PRECISION",
            "BIGINT",
            "SMALLINT",
        ),
        Dialect::Sqlite => {
            ("INTEGER PRIMARY KEY", "INTEGER PRIMARY KEY", "REAL", "INTEGER", "INTEGER")
        }
    };
    format!(
        "CREATE TABLE IF NOT EXISTS fleet_facts (
             digest TEXT PRIMARY KEY,
             facts  TEXT NOT NULL
         );
         CREATE TABLE IF NOT EXISTS fleet_reports (
             id           {id},
             uuid         TEXT NOT NULL UNIQUE,
             host         TEXT NOT NULL,
             recorded_at  TEXT NOT NULL,
             version      TEXT NOT NULL,
             facts_digest TEXT NOT NULL REFERENCES fleet_facts(digest)
         );
         CREATE INDEX IF NOT EXISTS fleet_reports_by_host ON fleet_reports (host, recorded_at, id);
         CREATE INDEX IF NOT EXISTS fleet_reports_by_time ON fleet_reports (recorded_at);
         CREATE TABLE IF NOT EXISTS fleet_headlines (
             id     {small_id},
             area   TEXT NOT NULL,
             name   TEXT NOT NULL,
             metric TEXT NOT NULL,
             unit   TEXT NOT NULL,
             UNIQUE (area, name, metric, unit)
         );
         CREATE TABLE IF NOT EXISTS fleet_figures (
             report_id   {reference} NOT NULL REFERENCES fleet_reports(id) ON DELETE CASCADE,
             position    {small} NOT NULL,
             headline_id INTEGER NOT NULL REFERENCES fleet_headlines(id),
             median {real} NOT NULL, p25 {real} NOT NULL, p75 {real} NOT NULL,
             samples     INTEGER NOT NULL,
             PRIMARY KEY (report_id, position)
         );"
    )
}

/// The tables `platscope fleet --publish` fills with its latest analysis (made when first
/// published to, in either store; dashboards read them).
pub fn create_findings(dialect: Dialect) -> String {
    let real = match dialect {
        Dialect::Postgres => "DOUBLE PRECISION",
        Dialect::Sqlite => "REAL",
    };
    format!(
        "CREATE TABLE IF NOT EXISTS fleet_outliers (
             analysed_at  TEXT NOT NULL,
             window_text  TEXT NOT NULL,
             host         TEXT NOT NULL,
             class        TEXT NOT NULL,
             figure       TEXT NOT NULL,
             unit         TEXT NOT NULL,
             value        {real} NOT NULL,
             class_median {real} NOT NULL,
             ratio        {real} NOT NULL,
             min_effect   {real} NOT NULL,
             verdict      TEXT NOT NULL
         );
         CREATE TABLE IF NOT EXISTS fleet_changes (
             analysed_at  TEXT NOT NULL,
             window_text  TEXT NOT NULL,
             host         TEXT NOT NULL,
             figure       TEXT NOT NULL,
             unit         TEXT NOT NULL,
             at           TEXT NOT NULL,
             before_value {real} NOT NULL,
             after_value  {real} NOT NULL,
             ratio        {real} NOT NULL,
             p_value      {real} NOT NULL,
             config       TEXT NOT NULL,
             verdict      TEXT NOT NULL
         );"
    )
}

/// The previous publication goes as the new one comes.
pub const CLEAR_FINDINGS: &str = "DELETE FROM fleet_outliers; DELETE FROM fleet_changes;";

pub const INSERT_OUTLIER: &str = "INSERT INTO fleet_outliers (analysed_at, window_text, host, \
     class, figure, unit, value, class_median, ratio, min_effect, verdict) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

pub const INSERT_CHANGE: &str = "INSERT INTO fleet_changes (analysed_at, window_text, host, \
     figure, unit, at, before_value, after_value, ratio, p_value, config, verdict) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)";

/// The schema a PostgreSQL database gets, all at once and idempotently. The SQLite file reaches
/// the same tables by its migrations (`schema.rs`), which also keep files from older releases.
pub fn create(dialect: Dialect) -> String {
    let (id, real, boolean) = match dialect {
        Dialect::Postgres => ("BIGSERIAL PRIMARY KEY", "DOUBLE PRECISION", "BOOLEAN"),
        Dialect::Sqlite => ("INTEGER PRIMARY KEY", "REAL", "INTEGER"),
    };
    let reference = match dialect {
        Dialect::Postgres => "BIGINT",
        Dialect::Sqlite => "INTEGER",
    };
    format!(
        "CREATE TABLE IF NOT EXISTS hosts (
             name       TEXT PRIMARY KEY,
             first_seen TEXT NOT NULL
         );
         CREATE TABLE IF NOT EXISTS runs (
             id          {id},
             uuid        TEXT NOT NULL UNIQUE,
             host        TEXT NOT NULL REFERENCES hosts(name),
             recorded_at TEXT NOT NULL,
             command     TEXT NOT NULL,
             parameters  TEXT NOT NULL,
             version     TEXT NOT NULL,
             environment TEXT NOT NULL,
             topology    TEXT NOT NULL,
             result      TEXT NOT NULL,
             interrupted {boolean} NOT NULL
         );
         CREATE INDEX IF NOT EXISTS runs_by_host ON runs (host, command, recorded_at);
         CREATE TABLE IF NOT EXISTS metrics (
             run_id   {reference} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
             position INTEGER NOT NULL,
             name     TEXT NOT NULL,
             unit     TEXT NOT NULL,
             labels   TEXT NOT NULL,
             median {real}, p25 {real}, p75 {real}, min {real}, max {real},
             samples  TEXT NOT NULL,
             PRIMARY KEY (run_id, position)
         );
         CREATE TABLE IF NOT EXISTS placements (
             run_id    {reference} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
             position  INTEGER NOT NULL,
             worker    TEXT NOT NULL,
             requested TEXT NOT NULL,
             verified  TEXT NOT NULL,
             PRIMARY KEY (run_id, position)
         );
         {fleet}",
        fleet = create_fleet(dialect)
    )
}

/// Every shared statement (for the test that their parameters bind alike in both drivers).
pub const SHARED: [&str; 17] = [
    INSERT_HOST,
    INSERT_RUN,
    INSERT_METRIC,
    INSERT_PLACEMENT,
    LIST,
    RUN,
    METRICS,
    PLACEMENTS,
    LATEST_OF_HOST,
    UUIDS_OF_HOST,
    INSERT_FACTS,
    INSERT_FLEET_REPORT,
    INSERT_FLEET_HEADLINE,
    FLEET_HEADLINE_ID,
    INSERT_FLEET_FIGURE,
    REPORTS_WITHOUT_FIGURES,
    FLEET_UUIDS_OF_HOST,
];

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The `$N` parameters of a statement in order of first appearance.
    pub(crate) fn parameters(sql: &str) -> Vec<usize> {
        let mut seen = Vec::new();
        let bytes = sql.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'$' {
                let digits: String =
                    sql[i + 1..].chars().take_while(|c| c.is_ascii_digit()).collect();
                if let Ok(n) = digits.parse::<usize>() {
                    if !seen.contains(&n) {
                        seen.push(n);
                    }
                }
                i += digits.len();
            }
            i += 1;
        }
        seen
    }

    #[test]
    fn parameters_first_appear_in_order_so_both_drivers_bind_alike() {
        for sql in SHARED {
            let params = parameters(sql);
            assert!(!params.is_empty(), "{sql}");
            assert_eq!(params, (1..=params.len()).collect::<Vec<_>>(), "{sql}");
        }
    }

    #[test]
    fn the_sqlite_dialect_of_the_schema_is_valid_sqlite() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(&create(Dialect::Sqlite)).unwrap();
        conn.execute(INSERT_HOST, rusqlite::params!["a", "t"]).unwrap();
        let insert = |uuid: &str| -> Option<i64> {
            let mut stmt = conn.prepare(INSERT_RUN).unwrap();
            let mut rows = stmt
                .query(rusqlite::params![uuid, "a", "t", "c", "{}", "v", "{}", "{}", "{}", false])
                .unwrap();
            rows.next().unwrap().map(|row| row.get(0).unwrap())
        };
        assert_eq!(insert("u1"), Some(1));
        assert_eq!(insert("u1"), None, "a second insert of the same run is a no-op");
        let id: i64 =
            conn.query_row(LATEST_OF_HOST, rusqlite::params!["a", "c"], |r| r.get(0)).unwrap();
        assert_eq!(id, 1);
        // Both dialects create the same tables and columns.
        let pg = create(Dialect::Postgres);
        for word in ["hosts", "runs", "metrics", "placements", "uuid", "labels", "samples"] {
            assert!(pg.contains(word), "{word}");
        }
    }
}
