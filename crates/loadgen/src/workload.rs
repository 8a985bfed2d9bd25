//! What a transaction is: statements with parameters, built in (sysbench-like OLTP on the
//! schema [`crate::prepare()`] makes) or read from a SQL file with `:rand(lo,hi)` parameters.
//!
//! A statement is text with parameter slots; a slot names a generator of the transaction, so
//! two statements can share a value (the read-write transaction deletes a row and inserts it
//! back with the same id). The same template gives the prepared text (`$1` for PostgreSQL, `?`
//! for MariaDB) and, with the values written in, the simple-protocol text.

use serde::Serialize;

use crate::Error;
use measure::rng::SplitMix64;

/// The SQL dialect of placeholders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dialect {
    /// `$1, $2, …`
    Postgres,
    /// `?`
    MariaDb,
}

/// A built-in workload, or a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// One `SELECT c FROM sbtestN WHERE id = ?` (no explicit transaction).
    PointSelect,
    /// sysbench oltp_read_only: 10 point selects and four 100-row range queries in a transaction.
    ReadOnly,
    /// oltp_read_write: read-only plus two updates, a delete and an insert.
    ReadWrite,
    /// Statements from a file, `:rand(lo,hi)` parameters; run in order as one transaction.
    File(std::path::PathBuf),
}

impl WorkloadKind {
    /// The name in output and metric labels.
    pub fn name(&self) -> String {
        match self {
            WorkloadKind::PointSelect => "point-select".into(),
            WorkloadKind::ReadOnly => "read-only".into(),
            WorkloadKind::ReadWrite => "read-write".into(),
            WorkloadKind::File(p) => p.display().to_string(),
        }
    }
}

/// A parameter value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Int(i64),
    Text(String),
}

/// How a transaction makes one of its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gen {
    /// Uniform integer in `[lo, hi]`.
    Rand { lo: i64, hi: i64 },
    /// Another value of the transaction plus a constant.
    Plus { of: usize, add: i64 },
    /// `groups` groups of 11 digits joined by `-` (sysbench's `c` and `pad`).
    Digits { groups: usize },
}

/// A piece of statement text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Text(String),
    /// The transaction's value number `n`.
    Param(usize),
}

/// One statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    pub parts: Vec<Part>,
}

impl Statement {
    fn text(text: &str) -> Self {
        Statement { parts: vec![Part::Text(text.to_string())] }
    }

    /// The values it uses, in order.
    pub fn params(&self) -> Vec<usize> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Param(n) => Some(*n),
                Part::Text(_) => None,
            })
            .collect()
    }

    /// The text to prepare: slots become placeholders.
    pub fn prepared_text(&self, dialect: Dialect) -> String {
        let mut out = String::new();
        let mut n = 0;
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Param(_) => {
                    n += 1;
                    match dialect {
                        Dialect::Postgres => out.push_str(&format!("${n}")),
                        Dialect::MariaDb => out.push('?'),
                    }
                }
            }
        }
        out
    }

    /// The text with the values written in (simple protocol). Text values are made of digits
    /// and `-` only, quoted.
    pub fn literal_text(&self, values: &[Value]) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Param(n) => match values.get(*n) {
                    Some(Value::Int(v)) => out.push_str(&v.to_string()),
                    Some(Value::Text(s)) => {
                        out.push('\'');
                        out.push_str(&s.replace('\'', "''"));
                        out.push('\'');
                    }
                    None => out.push_str("NULL"),
                },
            }
        }
        out
    }
}

/// One kind of transaction: its statements and the generators of its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxTemplate {
    pub statements: Vec<Statement>,
    pub gens: Vec<Gen>,
    /// Whether it runs inside `BEGIN … COMMIT` (a failure then needs a `ROLLBACK`).
    pub explicit: bool,
}

impl TxTemplate {
    /// Draws this transaction's values.
    pub fn values(&self, rng: &mut SplitMix64) -> Vec<Value> {
        let mut out: Vec<Value> = Vec::with_capacity(self.gens.len());
        for g in &self.gens {
            let v = match g {
                Gen::Rand { lo, hi } => Value::Int(rng.range(*lo, *hi)),
                Gen::Plus { of, add } => match out.get(*of) {
                    Some(Value::Int(v)) => Value::Int(v.saturating_add(*add)),
                    _ => Value::Int(*add),
                },
                Gen::Digits { groups } => Value::Text(digits(rng, *groups)),
            };
            out.push(v);
        }
        out
    }
}

/// sysbench's `###########-###########…` strings.
pub fn digits(rng: &mut SplitMix64, groups: usize) -> String {
    let mut s = String::with_capacity(groups * 12);
    for g in 0..groups {
        if g > 0 {
            s.push('-');
        }
        for _ in 0..11 {
            s.push(char::from(b'0' + (rng.next_u64() % 10) as u8));
        }
    }
    s
}

/// The transactions of a built-in workload, one template per table (a transaction picks its
/// table at random, as sysbench does).
pub fn builtin(kind: &WorkloadKind, tables: u32, rows: u64) -> Vec<TxTemplate> {
    let rows = i64::try_from(rows.max(1)).unwrap_or(i64::MAX);
    (1..=tables.max(1))
        .map(|t| {
            let tbl = format!("sbtest{t}");
            let mut b = Builder::default();
            match kind {
                WorkloadKind::PointSelect | WorkloadKind::File(_) => {
                    let id = b.gen(Gen::Rand { lo: 1, hi: rows });
                    b.stmt(&[&format!("SELECT c FROM {tbl} WHERE id = ")], &[id]);
                }
                WorkloadKind::ReadOnly | WorkloadKind::ReadWrite => {
                    b.explicit = true;
                    b.statements.push(Statement::text("BEGIN"));
                    for _ in 0..10 {
                        let id = b.gen(Gen::Rand { lo: 1, hi: rows });
                        b.stmt(&[&format!("SELECT c FROM {tbl} WHERE id = ")], &[id]);
                    }
                    for sel in [
                        "SELECT c FROM {t} WHERE id BETWEEN ",
                        "SELECT SUM(k) FROM {t} WHERE id BETWEEN ",
                        "SELECT c FROM {t} WHERE id BETWEEN ",
                        "SELECT DISTINCT c FROM {t} WHERE id BETWEEN ",
                    ]
                    .iter()
                    .enumerate()
                    {
                        let (i, head) = sel;
                        let lo = b.gen(Gen::Rand { lo: 1, hi: (rows - 99).max(1) });
                        let hi = b.gen(Gen::Plus { of: lo, add: 99 });
                        let tail = match i {
                            2 => " ORDER BY c",
                            3 => " ORDER BY c",
                            _ => "",
                        };
                        b.stmt(&[&head.replace("{t}", &tbl), " AND ", tail], &[lo, hi]);
                    }
                    if *kind == WorkloadKind::ReadWrite {
                        let id = b.gen(Gen::Rand { lo: 1, hi: rows });
                        b.stmt(&[&format!("UPDATE {tbl} SET k = k + 1 WHERE id = ")], &[id]);
                        let c = b.gen(Gen::Digits { groups: 10 });
                        let id = b.gen(Gen::Rand { lo: 1, hi: rows });
                        b.stmt(&[&format!("UPDATE {tbl} SET c = "), " WHERE id = "], &[c, id]);
                        let id = b.gen(Gen::Rand { lo: 1, hi: rows });
                        b.stmt(&[&format!("DELETE FROM {tbl} WHERE id = ")], &[id]);
                        let k = b.gen(Gen::Rand { lo: 1, hi: rows });
                        let c = b.gen(Gen::Digits { groups: 10 });
                        let pad = b.gen(Gen::Digits { groups: 5 });
                        b.stmt(
                            &[
                                &format!("INSERT INTO {tbl} (id, k, c, pad) VALUES ("),
                                ", ",
                                ", ",
                                ", ",
                                ")",
                            ],
                            &[id, k, c, pad],
                        );
                    }
                    b.statements.push(Statement::text("COMMIT"));
                }
            }
            TxTemplate { statements: b.statements, gens: b.gens, explicit: b.explicit }
        })
        .collect()
}

#[derive(Default)]
struct Builder {
    statements: Vec<Statement>,
    gens: Vec<Gen>,
    explicit: bool,
}

impl Builder {
    fn gen(&mut self, g: Gen) -> usize {
        self.gens.push(g);
        self.gens.len() - 1
    }

    /// `texts[0] P0 texts[1] P1 … texts[n]` (a missing last text is empty).
    fn stmt(&mut self, texts: &[&str], params: &[usize]) {
        let mut parts = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            if !t.is_empty() {
                parts.push(Part::Text((*t).to_string()));
            }
            if let Some(p) = params.get(i) {
                parts.push(Part::Param(*p));
            }
        }
        self.statements.push(Statement { parts });
    }
}

/// Parses a SQL file: statements end with `;` (outside quotes), `--` comments run to the end
/// of the line, and each `:rand(lo,hi)` is a uniform integer in `[lo, hi]` drawn afresh for
/// every transaction. A file whose first statement is `BEGIN` (or `START TRANSACTION`) runs
/// as an explicit transaction.
pub fn parse_sql_file(text: &str) -> Result<TxTemplate, Error> {
    let mut statements = Vec::new();
    let mut gens = Vec::new();
    let mut parts: Vec<Part> = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut chars = text.char_indices().peekable();
    let mut line = 1usize;
    let flush = |parts: &mut Vec<Part>, cur: &mut String| {
        if !cur.is_empty() {
            parts.push(Part::Text(std::mem::take(cur)));
        }
    };
    while let Some((i, ch)) = chars.next() {
        if ch == '\n' {
            line += 1;
        }
        if let Some(q) = quote {
            cur.push(ch);
            if ch == q {
                quote = None;
            }
            continue;
        }
        match ch {
            '\'' | '"' | '`' => {
                quote = Some(ch);
                cur.push(ch);
            }
            '-' if text[i..].starts_with("--") => {
                for (_, c) in chars.by_ref() {
                    if c == '\n' {
                        line += 1;
                        cur.push('\n');
                        break;
                    }
                }
            }
            ':' if text[i..].starts_with(":rand(") => {
                let rest = &text[i + 6..];
                let close = rest.find(')').ok_or_else(|| Error::SqlFile {
                    line,
                    message: ":rand( without a closing parenthesis".into(),
                })?;
                let (lo, hi) = parse_rand_args(&rest[..close]).ok_or_else(|| Error::SqlFile {
                    line,
                    message: format!(
                        ":rand({}) needs two integers lo,hi with lo <= hi",
                        quoted_args(&rest[..close])
                    ),
                })?;
                flush(&mut parts, &mut cur);
                gens.push(Gen::Rand { lo, hi });
                parts.push(Part::Param(gens.len() - 1));
                // Skip "rand(" + args + ")": by byte position, as `close` is one (the
                // arguments may hold multi-byte blanks such as U+3000), counting the lines
                // they span.
                let end = i + 6 + close + 1;
                while let Some(&(j, c)) = chars.peek() {
                    if j >= end {
                        break;
                    }
                    line += usize::from(c == '\n');
                    chars.next();
                }
            }
            ';' => {
                flush(&mut parts, &mut cur);
                push_statement(&mut statements, std::mem::take(&mut parts));
            }
            _ => cur.push(ch),
        }
    }
    if quote.is_some() {
        return Err(Error::SqlFile { line, message: "unterminated quoted string".into() });
    }
    flush(&mut parts, &mut cur);
    push_statement(&mut statements, parts);
    if statements.is_empty() {
        return Err(Error::SqlFile { line, message: "no statements in the file".into() });
    }
    let explicit = matches!(statements[0].parts.first(), Some(Part::Text(t))
        if { let u = t.trim().to_ascii_uppercase(); u == "BEGIN" || u.starts_with("START TRANSACTION") });
    Ok(TxTemplate { statements, gens, explicit })
}

fn push_statement(statements: &mut Vec<Statement>, mut parts: Vec<Part>) {
    // Trim surrounding blanks; drop empty statements.
    if let Some(Part::Text(t)) = parts.first_mut() {
        *t = t.trim_start().to_string();
    }
    if let Some(Part::Text(t)) = parts.last_mut() {
        *t = t.trim_end().to_string();
    }
    parts.retain(|p| !matches!(p, Part::Text(t) if t.is_empty()));
    if !parts.is_empty() {
        statements.push(Statement { parts });
    }
}

/// The arguments of a bad `:rand(…)` as an error message shows them: on one line, at most 40
/// characters.
fn quoted_args(args: &str) -> String {
    let mut out: String = args.chars().take(40).collect::<String>().escape_debug().collect();
    if args.chars().nth(40).is_some() {
        out.push('…');
    }
    out
}

fn parse_rand_args(args: &str) -> Option<(i64, i64)> {
    let (lo, hi) = args.split_once(',')?;
    let lo: i64 = lo.trim().parse().ok()?;
    let hi: i64 = hi.trim().parse().ok()?;
    (lo <= hi).then_some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sql_file_parameters() {
        let t = parse_sql_file(
            "-- a comment; not a statement\nBEGIN;\nSELECT c FROM t WHERE id = :rand(1, 100) AND s = ':rand(1,2);';\n\
             UPDATE t SET k = k + 1 WHERE id = :rand(5,5);\nCOMMIT;\n",
        )
        .unwrap();
        assert!(t.explicit);
        assert_eq!(t.statements.len(), 4);
        assert_eq!(t.gens, vec![Gen::Rand { lo: 1, hi: 100 }, Gen::Rand { lo: 5, hi: 5 }]);
        let s = &t.statements[1];
        assert_eq!(
            s.prepared_text(Dialect::Postgres),
            "SELECT c FROM t WHERE id = $1 AND s = ':rand(1,2);'"
        );
        assert_eq!(
            s.prepared_text(Dialect::MariaDb),
            "SELECT c FROM t WHERE id = ? AND s = ':rand(1,2);'"
        );
        let v = t.values(&mut SplitMix64::new(1));
        assert_eq!(v[1], Value::Int(5));
        let Value::Int(id) = v[0] else { panic!("not an int") };
        assert!((1..=100).contains(&id));
        assert_eq!(t.statements[2].literal_text(&v), "UPDATE t SET k = k + 1 WHERE id = 5");
    }

    #[test]
    fn rand_with_multibyte_blanks_keeps_the_text_after_it() {
        // Found by tests/it/workload_fuzz.rs (text_around_rand_…): the arguments were skipped as if
        // each byte were a character, so text after `:rand(\u{3000}1,2)` (U+3000 is 3 bytes)
        // lost 2 characters.
        let t = parse_sql_file("SELECT :rand(\u{3000}1,2) AS x;").unwrap();
        assert_eq!(t.statements[0].prepared_text(Dialect::MariaDb), "SELECT ? AS x");
        // Arguments spanning lines are shown on one (tests/it/workload_fuzz.rs shrank a mutated
        // file to the second case: its error message ran over two lines).
        let e = parse_sql_file("SELECT :rand(1,\nx);").unwrap_err().to_string();
        assert!(!e.contains('\n') && e.contains(r":rand(1,\nx)"), "{e}");
        let e = parse_sql_file("INSERT INTO t (id, v) VALUES (:rand(\n10), 'x');").unwrap_err();
        assert!(!e.to_string().contains('\n'), "{e}");
        // Lines inside the arguments are counted.
        let e = parse_sql_file("SELECT :rand(1,\n2);\nSELECT :rand(2,1);").unwrap_err();
        assert!(e.to_string().contains("line 3"), "{e}");
    }

    #[test]
    fn sql_file_errors_name_the_line() {
        let e = parse_sql_file("SELECT 1;\nSELECT :rand(9,1);").unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("lo <= hi"), "{e}");
        let e = parse_sql_file("SELECT :rand(1,2;").unwrap_err().to_string();
        assert!(e.contains("closing"), "{e}");
        assert!(parse_sql_file(" -- nothing\n ;").is_err());
        assert!(parse_sql_file("SELECT 'x;").is_err());
    }

    #[test]
    fn builtins_share_values_and_render_both_ways() {
        let t = &builtin(&WorkloadKind::ReadWrite, 2, 1000)[1];
        assert!(t.explicit);
        assert_eq!(t.statements.len(), 1 + 10 + 4 + 4 + 1);
        let del = &t.statements[17];
        let ins = &t.statements[18];
        assert_eq!(del.params()[0], ins.params()[0], "insert puts back the deleted id");
        assert!(ins
            .prepared_text(Dialect::Postgres)
            .starts_with("INSERT INTO sbtest2 (id, k, c, pad) VALUES ($1, $2, $3, $4)"));
        let v = t.values(&mut SplitMix64::new(3));
        let range = t.statements[11].literal_text(&v);
        let nums: Vec<i64> = range
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect();
        assert_eq!(nums[nums.len() - 1] - nums[nums.len() - 2], 99, "{range}");
        let upd = t.statements[16].literal_text(&v);
        assert_eq!(
            upd.len(),
            "UPDATE sbtest2 SET c = '' WHERE id = ".len()
                + 119
                + upd.rsplit(' ').next().unwrap().len()
        );
        let ps = builtin(&WorkloadKind::PointSelect, 1, 10);
        assert_eq!(
            ps[0].statements[0].prepared_text(Dialect::MariaDb),
            "SELECT c FROM sbtest1 WHERE id = ?"
        );
        assert!(!ps[0].explicit);
    }
}
