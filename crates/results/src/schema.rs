//! The schema, its version, and migrations. The file is marked with an application id so a
//! foreign SQLite file is recognised and left alone.

use std::path::Path;

use rusqlite::{Connection, ErrorCode};

use crate::StoreError;

/// `PRAGMA application_id` of platscope databases ("PSCP").
const APPLICATION_ID: i64 = 0x5053_4350;

/// The schema this platscope writes.
pub const SCHEMA_VERSION: i64 = 1;

/// Migrations from version N-1 to N, in order; index 0 creates version 1.
const MIGRATIONS: &[&str] = &["
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
"];

fn is_not_a_database(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt))
}

/// Checks the file is platscope's (or empty), not newer, and migrates it to [`SCHEMA_VERSION`].
pub(crate) fn prepare(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let foreign = || StoreError::Foreign(path.to_path_buf());
    let pragma = |conn: &Connection, name: &str| -> Result<i64, StoreError> {
        conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0)).map_err(|e| {
            if is_not_a_database(&e) {
                foreign()
            } else {
                e.into()
            }
        })
    };
    let app = pragma(conn, "application_id")?;
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(|e| if is_not_a_database(&e) { foreign() } else { StoreError::from(e) })?;
    if app != APPLICATION_ID && (app != 0 || tables > 0) {
        return Err(foreign());
    }
    let version = pragma(conn, "user_version")?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    // WAL lets several platscope runs write at once (each waits out the others' commits).
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "foreign_keys", true)?;
    let tx = conn.transaction()?;
    for (index, migration) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.execute_batch(migration)?;
        tx.pragma_update(None, "user_version", index as i64 + 1)?;
    }
    tx.pragma_update(None, "application_id", APPLICATION_ID)?;
    tx.commit()?;
    Ok(())
}
