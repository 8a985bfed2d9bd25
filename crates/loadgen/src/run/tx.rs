//! A run's transactions: the templates (built in, or from a SQL file), a connection with its
//! statements prepared, and one transaction on it.

use super::Protocol;
use crate::conn::{Conn, DbError};
use crate::driver::{ServerKind, Target};
use crate::workload::{builtin, parse_sql_file, Part, TxTemplate, Value, WorkloadKind};
use crate::Error;

/// A connection with its statements prepared.
pub(super) struct Prepared {
    conn: Box<dyn Conn>,
    /// Per template, per statement: the prepared handle (statements without parameters run as
    /// text on either protocol).
    handles: Vec<Vec<Option<usize>>>,
}

/// The templates of a run: built in (tables and rows read from the schema) or from a file.
pub fn templates(
    target: &Target,
    conn: &mut dyn Conn,
    workload: &WorkloadKind,
) -> Result<Vec<TxTemplate>, Error> {
    if let WorkloadKind::File(path) = workload {
        let text = std::fs::read_to_string(path)
            .map_err(|source| Error::Io { path: path.clone(), source })?;
        return Ok(vec![parse_sql_file(&text)?]);
    }
    let schema = match target.kind {
        ServerKind::Postgres => "current_schema()",
        ServerKind::MariaDb => "DATABASE()",
    };
    let not_prepared =
        || Error::NotPrepared { target: target.describe(), server: target.kind.name() };
    let tables = conn
        .query_i64(&format!(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = {schema} \
             AND table_name LIKE 'sbtest%'"
        ))
        .map_err(|e| Error::Sql { what: "reading the schema".into(), message: e.to_string() })?
        .unwrap_or(0);
    if tables < 1 {
        return Err(not_prepared());
    }
    let rows = conn
        .query_i64("SELECT max(id) FROM sbtest1")
        .map_err(|e| Error::Sql { what: "reading sbtest1".into(), message: e.to_string() })?
        .unwrap_or(0);
    if rows < 1 {
        return Err(not_prepared());
    }
    Ok(builtin(workload, u32::try_from(tables).unwrap_or(1), rows.unsigned_abs()))
}

pub(super) fn prepare_conn(
    target: &Target,
    mut conn: Box<dyn Conn>,
    templates: &[TxTemplate],
    protocol: Protocol,
) -> Result<Prepared, Error> {
    let mut handles = Vec::with_capacity(templates.len());
    for t in templates {
        let mut hs = Vec::with_capacity(t.statements.len());
        for st in &t.statements {
            if protocol == Protocol::Prepared && !st.params().is_empty() {
                let text = st.prepared_text(crate::driver::dialect(target.kind));
                let h = conn.prepare(&text).map_err(|e| Error::Sql {
                    what: format!("preparing {text:?}"),
                    message: e.to_string(),
                })?;
                hs.push(Some(h));
            } else {
                hs.push(None);
            }
        }
        handles.push(hs);
    }
    Ok(Prepared { conn, handles })
}

/// Values bound to one statement that [`run_tx`] passes without allocating.
const INLINE_VALUES: usize = 8;

pub(super) fn run_tx(
    p: &mut Prepared,
    index: usize,
    t: &TxTemplate,
    values: &[Value],
) -> Result<(), DbError> {
    static UNUSED: Value = Value::Int(0);
    for (si, st) in t.statements.iter().enumerate() {
        let handle = p.handles.get(index).and_then(|h| h.get(si)).copied().flatten();
        let r = match handle {
            Some(h) => {
                // The statement's values, on the stack when they fit (no allocation per
                // statement: the driver's CPU per transaction is measured against pgbench's).
                let params = st.parts.iter().filter_map(|part| match part {
                    Part::Param(i) => values.get(*i),
                    Part::Text(_) => None,
                });
                let mut inline = [&UNUSED; INLINE_VALUES];
                let mut n = 0;
                for v in params.clone() {
                    if let Some(slot) = inline.get_mut(n) {
                        *slot = v;
                    }
                    n += 1;
                }
                if n <= INLINE_VALUES {
                    p.conn.exec(h, &inline[..n])
                } else {
                    p.conn.exec(h, &params.collect::<Vec<_>>())
                }
            }
            None => p.conn.simple(&st.literal_text(values)),
        };
        if let Err(e) = r {
            if t.explicit && matches!(e, DbError::Sql { .. }) {
                if let Err(DbError::Gone(m)) = p.conn.simple("ROLLBACK") {
                    return Err(DbError::Gone(m));
                }
            }
            return Err(e);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Each `exec`'s handle and values.
    type Execs = std::sync::Arc<Mutex<Vec<(usize, Vec<Value>)>>>;

    /// Records what each `exec` was given.
    struct Recorder(Execs);

    impl Conn for Recorder {
        fn simple(&mut self, _: &str) -> Result<(), DbError> {
            Ok(())
        }
        fn prepare(&mut self, _: &str) -> Result<usize, DbError> {
            Ok(0)
        }
        fn exec(&mut self, handle: usize, values: &[&Value]) -> Result<(), DbError> {
            let mut seen = self.0.lock().map_err(|e| DbError::Gone(e.to_string()))?;
            seen.push((handle, values.iter().map(|v| (*v).clone()).collect()));
            Ok(())
        }
        fn query_text(&mut self, _: &str) -> Result<Option<String>, DbError> {
            Ok(None)
        }
    }

    #[test]
    fn run_tx_binds_each_statements_values_in_order_few_or_many() {
        use crate::workload::{Gen, Statement};
        let text = |s: &str| Part::Text(s.into());
        let many: Vec<Part> = (0..11).rev().flat_map(|i| [text(","), Part::Param(i)]).collect();
        let t = TxTemplate {
            statements: vec![
                Statement {
                    parts: vec![text("SELECT "), Part::Param(2), text(", "), Part::Param(0)],
                },
                Statement { parts: many },
                Statement { parts: vec![text("SELECT 1")] },
            ],
            gens: vec![Gen::Rand { lo: 0, hi: 0 }; 11],
            explicit: false,
        };
        let values: Vec<Value> = (0..11).map(|i| Value::Int(i * 10)).collect();
        let seen: Execs = std::sync::Arc::new(Mutex::new(Vec::new()));
        let mut p = Prepared {
            conn: Box::new(Recorder(seen.clone())),
            handles: vec![vec![Some(4), Some(5), Some(6)]],
        };
        run_tx(&mut p, 0, &t, &values).expect("runs");
        let seen = seen.lock().expect("lock").clone();
        let ints = |v: &[i64]| v.iter().map(|&i| Value::Int(i)).collect::<Vec<_>>();
        assert_eq!(seen[0], (4, ints(&[20, 0])));
        let all: Vec<i64> = (0..11).rev().map(|i| i * 10).collect();
        assert_eq!(seen[1], (5, ints(&all)), "more values than fit on the stack");
        assert_eq!(seen[2], (6, Vec::new()));
    }
}
