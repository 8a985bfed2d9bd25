//! The schema, its version, and migrations. The file is marked with an application id so a
//! foreign SQLite file is recognised and left alone. Creation and migration run inside one
//! immediate transaction, so any number of processes can open a new store at once: one creates
//! it, the others wait for it and find it made.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, ErrorCode, TransactionBehavior};

use crate::{legacy, StoreError};

/// `PRAGMA application_id` of platscope databases ("PSCP").
const APPLICATION_ID: i64 = 0x5053_4350;

/// The schema this platscope writes: 2 added metric labels, 3 run UUIDs and hosts (so runs
/// can be pushed to a shared PostgreSQL database exactly once), 4 no password in a stored
/// command line (runs recorded before argv was redacted are scrubbed), 5 the fleet reader's
/// tables (each report's headline figures and facts, [`crate::fleet`]).
pub const SCHEMA_VERSION: i64 = 5;

/// Version 1, as the first release created it.
const CREATE_V1: &str = "
    CREATE TABLE runs (
        id          INTEGER PRIMARY KEY,
        recorded_at TEXT    NOT NULL,
        command     TEXT    NOT NULL,
        parameters  TEXT    NOT NULL,  -- JSON
        version     TEXT    NOT NULL,  -- platscope version (git commit)
        environment TEXT    NOT NULL,  -- JSON: kernel, THP, numa_balancing, clocksource, ...
        topology    TEXT    NOT NULL,  -- JSON: platscope topo --json
        result      TEXT    NOT NULL,  -- JSON: the command's whole output
        interrupted INTEGER NOT NULL
    );
    CREATE TABLE metrics (
        run_id   INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        name     TEXT    NOT NULL,
        unit     TEXT    NOT NULL,
        median REAL, p25 REAL, p75 REAL, min REAL, max REAL,
        samples  TEXT    NOT NULL,     -- JSON array: every raw sample
        PRIMARY KEY (run_id, position)
    );
    CREATE TABLE placements (
        run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        position  INTEGER NOT NULL,
        worker    TEXT    NOT NULL,
        requested TEXT    NOT NULL,    -- JSON
        verified  TEXT    NOT NULL,    -- JSON: pages per node as the kernel reported them
        PRIMARY KEY (run_id, position)
    );
";

/// Version 2: labelled metrics. Schema-1 names are turned into today's names and labels.
fn migrate_v2(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "ALTER TABLE metrics ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';  -- JSON object",
    )?;
    let rows: Vec<(i64, i64, String)> = tx
        .prepare("SELECT run_id, position, name FROM metrics")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    let mut update = tx
        .prepare("UPDATE metrics SET name = ?1, labels = ?2 WHERE run_id = ?3 AND position = ?4")?;
    for (run, position, old) in rows {
        let (name, labels) = legacy::relabel(&old);
        let labels = serde_json::to_string(&labels).unwrap_or_else(|_| "{}".into());
        update.execute(params![name, labels, run, position])?;
    }
    Ok(())
}

/// Version 3: every run gets a UUID and the host that recorded it; existing runs were recorded
/// here, so they get this host's name.
fn migrate_v3(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "ALTER TABLE runs ADD COLUMN uuid TEXT;
         ALTER TABLE runs ADD COLUMN host TEXT;
         CREATE TABLE hosts (name TEXT PRIMARY KEY, first_seen TEXT NOT NULL);",
    )?;
    let host = crate::host_name();
    let ids: Vec<i64> = tx
        .prepare("SELECT id FROM runs")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut update = tx.prepare("UPDATE runs SET uuid = ?1, host = ?2 WHERE id = ?3")?;
    for id in ids {
        update.execute(params![crate::new_uuid(), host, id])?;
    }
    tx.execute(crate::sql::INSERT_HOST, params![host, measure::time::utc_now_rfc3339()])?;
    tx.execute_batch(
        "CREATE UNIQUE INDEX runs_uuid ON runs (uuid);
         CREATE INDEX runs_by_host ON runs (host, command, recorded_at);",
    )
}

fn is_not_a_database(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt))
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

/// The store's application id and schema version, refusing foreign files.
pub(crate) fn identify(conn: &Connection, path: &Path) -> Result<i64, StoreError> {
    let classify = |e: rusqlite::Error| {
        if is_not_a_database(&e) {
            StoreError::Foreign(path.to_path_buf())
        } else {
            StoreError::sql(path, &e)
        }
    };
    let app: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0)).map_err(classify)?;
    let tables: i64 =
        conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0)).map_err(classify)?;
    if app != APPLICATION_ID && (app != 0 || tables > 0) {
        return Err(StoreError::Foreign(path.to_path_buf()));
    }
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(classify)?;
    // Tables without a schema version (or a negative one) were not made by platscope, which
    // sets the version in the transaction that creates them.
    if version < 0 || (version == 0 && tables > 0) {
        return Err(StoreError::Foreign(path.to_path_buf()));
    }
    if version > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(version)
}

/// Checks the file is platscope's (or empty), not newer, and brings it to [`SCHEMA_VERSION`],
/// waiting out other processes doing the same.
pub(crate) fn prepare(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match try_prepare(conn, path) {
            Err(Retry::Busy(_)) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(Retry::Busy(e)) => return Err(StoreError::sql(path, &e)),
            Err(Retry::Fail(e)) => return Err(e),
            Ok(()) => return Ok(()),
        }
    }
}

enum Retry {
    Busy(rusqlite::Error),
    Fail(StoreError),
}

fn try_prepare(conn: &mut Connection, path: &Path) -> Result<(), Retry> {
    let sql = |e: rusqlite::Error| {
        if is_busy(&e) {
            Retry::Busy(e)
        } else if is_not_a_database(&e) {
            Retry::Fail(StoreError::Foreign(path.to_path_buf()))
        } else {
            Retry::Fail(StoreError::sql(path, &e))
        }
    };
    // WAL lets several platscope runs write at once (each waits out the others' commits). A
    // file that is already platscope's is checked before anything is written to it.
    // One read transaction, so the id and the tables are seen as of one moment (another process
    // committing its creation between two reads would make the file look foreign).
    let snapshot = conn.transaction().map_err(sql)?;
    let version = identify(&snapshot, path).map_err(Retry::Fail)?;
    drop(snapshot);
    if version == SCHEMA_VERSION {
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).map_err(sql)?;
        if !mode.eq_ignore_ascii_case("wal") {
            conn.pragma_update(None, "journal_mode", "WAL").map_err(sql)?;
        }
        return Ok(());
    }
    conn.pragma_update(None, "journal_mode", "WAL").map_err(sql)?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql)?;
    // Another process may have created or migrated it while this one waited for the lock.
    let version = identify(&tx, path).map_err(Retry::Fail)?;
    if version < 1 {
        tx.execute_batch(CREATE_V1).map_err(sql)?;
    }
    if version < 2 {
        migrate_v2(&tx).map_err(sql)?;
    }
    if version < 3 {
        migrate_v3(&tx).map_err(sql)?;
    }
    if version < 4 {
        migrate_v4(&tx).map_err(sql)?;
    }
    if version < 5 {
        // Empty: reports stored before are filled in by a backfill (`suite::figures`).
        tx.execute_batch(&crate::sql::create_fleet(crate::sql::Dialect::Sqlite)).map_err(sql)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION).map_err(sql)?;
    tx.pragma_update(None, "application_id", APPLICATION_ID).map_err(sql)?;
    tx.commit().map_err(sql)?;
    if version < 4 {
        // The scrubbed rows' old text is overwritten, not only unlinked: secure_delete zeroed
        // the freed cell space, and the checkpoint writes the new pages over the old ones in
        // the main file.
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).map_err(sql)?;
        conn.pragma_update(None, "secure_delete", false).map_err(sql)?;
    }
    Ok(())
}

/// Version 4: runs recorded before command lines were redacted have their stored argv scrubbed
/// of passwords in place (only rows whose parameters could hold one are read).
fn migrate_v4(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.pragma_update(None, "secure_delete", true)?;
    let rows: Vec<(i64, String)> = tx
        .prepare(
            "SELECT id, parameters FROM runs WHERE parameters LIKE '%pass%' \
             OR parameters LIKE '%pwd%' OR parameters LIKE '%://%'",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut update = tx.prepare("UPDATE runs SET parameters = ?1 WHERE id = ?2")?;
    for (id, text) in rows {
        let Ok(mut parameters) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        if crate::secrets::scrub_parameters(&mut parameters) {
            update.execute(params![parameters.to_string(), id])?;
        }
    }
    Ok(())
}

/// The schema version of a store opened as it is (read-only).
pub(crate) fn version(conn: &Connection, path: &Path) -> Result<i64, StoreError> {
    identify(conn, path)
}
