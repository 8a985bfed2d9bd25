//! `load prepare`: the sysbench-like schema (`sbtest1..N`: `id` primary key, `k` indexed, `c`
//! and `pad` strings), filled with data drawn from a seed, so two machines prepared with the
//! same arguments hold the same rows.

use serde::Serialize;

use crate::conn::Conn;
use crate::driver::{ServerKind, Target};
use crate::workload::digits;
use crate::Error;
use measure::rng::SplitMix64;

/// What to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrepareOptions {
    pub tables: u32,
    pub rows: u64,
    pub seed: u64,
}

/// What was created.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prepared {
    pub target: String,
    pub tables: u32,
    pub rows_per_table: u64,
    pub seed: u64,
    pub seconds: f64,
}

const BATCH: u64 = 500;

fn sql(conn: &mut dyn Conn, what: &str, text: &str) -> Result<(), Error> {
    conn.simple(text).map_err(|e| Error::Sql { what: what.to_string(), message: e.to_string() })
}

/// Drops and recreates the tables, fills them, indexes `k` and updates statistics.
/// `progress` is told each table as it is finished.
pub fn prepare(
    target: &Target,
    opts: &PrepareOptions,
    progress: &mut dyn FnMut(u32),
) -> Result<Prepared, Error> {
    if opts.tables == 0 || opts.rows == 0 {
        return Err(
            measure::UsageError::Message("--tables and --rows must be at least 1".into()).into()
        );
    }
    let started = std::time::Instant::now();
    let mut conn = match target.kind {
        ServerKind::Postgres => target.connect()?,
        ServerKind::MariaDb => {
            let mut c = target.connect_with(false)?;
            let db = target.mariadb_database().replace('`', "``");
            sql(
                c.as_mut(),
                "creating the database",
                &format!("CREATE DATABASE IF NOT EXISTS `{db}`"),
            )?;
            sql(c.as_mut(), "using the database", &format!("USE `{db}`"))?;
            c
        }
    };
    let engine = match target.kind {
        ServerKind::Postgres => "",
        ServerKind::MariaDb => " ENGINE=InnoDB",
    };
    for t in 1..=opts.tables {
        let name = format!("sbtest{t}");
        sql(conn.as_mut(), "dropping the table", &format!("DROP TABLE IF EXISTS {name}"))?;
        sql(
            conn.as_mut(),
            "creating the table",
            &format!(
                "CREATE TABLE {name} (id INTEGER NOT NULL PRIMARY KEY, k INTEGER NOT NULL DEFAULT 0, \
                 c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT ''){engine}"
            ),
        )?;
        let mut rng = SplitMix64::new(opts.seed ^ (u64::from(t) << 40));
        let rows = i64::try_from(opts.rows).unwrap_or(i64::MAX);
        sql(conn.as_mut(), "starting the load", "BEGIN")?;
        let mut id = 1u64;
        while id <= opts.rows {
            let last = (id + BATCH - 1).min(opts.rows);
            let mut text = format!("INSERT INTO {name} (id, k, c, pad) VALUES ");
            for i in id..=last {
                if i > id {
                    text.push(',');
                }
                let k = rng.range(1, rows);
                text.push_str(&format!(
                    "({i},{k},'{}','{}')",
                    digits(&mut rng, 10),
                    digits(&mut rng, 5)
                ));
            }
            sql(conn.as_mut(), "loading rows", &text)?;
            id = last + 1;
        }
        sql(conn.as_mut(), "committing the load", "COMMIT")?;
        sql(conn.as_mut(), "indexing k", &format!("CREATE INDEX k_{t} ON {name} (k)"))?;
        let analyze = match target.kind {
            ServerKind::Postgres => format!("ANALYZE {name}"),
            ServerKind::MariaDb => format!("ANALYZE TABLE {name}"),
        };
        sql(conn.as_mut(), "updating statistics", &analyze)?;
        progress(t);
    }
    Ok(Prepared {
        target: target.describe(),
        tables: opts.tables,
        rows_per_table: opts.rows,
        seed: opts.seed,
        seconds: started.elapsed().as_secs_f64(),
    })
}
