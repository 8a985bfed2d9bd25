//! mpstat's text: its first line, header lines and rows.

use super::dates::{all_digits, banner_date, clock_and_meridiem, split_token, Date};
use super::{Field, Figures};

/// What a line starts with: a timestamp, or `Average:` (in any language).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lead {
    Clock(u32),
    Average,
}

pub(super) fn lead(s: &str) -> Option<(Lead, &str)> {
    if let Some((sod, _, rest)) = clock_and_meridiem(s) {
        return Some((Lead::Clock(sod), rest));
    }
    let (tok, rest) = split_token(s)?;
    let word = tok.strip_suffix(':')?;
    let is_word = !word.is_empty() && word.chars().all(|c| c.is_alphabetic() || c == '.');
    is_word.then_some((Lead::Average, rest))
}

/// mpstat's first line: `Linux 6.18.44 (host) \t11/25/26 \t_x86_64_\t(2 CPU)`.
pub(super) fn banner(s: &str) -> Option<(Option<Date>, u32)> {
    let toks: Vec<&str> = s.split_whitespace().collect();
    let [.., count, last] = toks.as_slice() else { return None };
    if *last != "CPU)" {
        return None;
    }
    let n = count.strip_prefix('(')?.parse().ok()?;
    let date = toks.iter().find_map(|t| banner_date(t));
    Some((date, n))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Cpu,
    Node,
    /// A table that is not utilization (`-I`'s interrupt tables): its rows are skipped.
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Topo {
    Node,
    Other,
}

/// The columns of the header in force.
#[derive(Debug, Clone)]
pub(super) struct Table {
    pub(super) kind: Kind,
    line: usize,
    /// Columns between `CPU` and the first `%` column (`-T`'s `CORE SOCK NODE`): blank on the
    /// all-CPU row.
    topo: Vec<Topo>,
    /// The value columns, in order; `None` for columns that are not utilization (`intr/s`).
    pub(super) values: Vec<Option<Field>>,
    pub(super) clock: Option<u32>,
    pub(super) average: bool,
}

/// A header line: `TIME CPU|NODE [CORE SOCK NODE] %usr … %idle`.
pub(super) fn header(lead: Lead, rest: &str, line: usize) -> Option<Table> {
    let mut toks = rest.split_whitespace();
    let kind = match toks.next()? {
        "CPU" => Kind::Cpu,
        "NODE" => Kind::Node,
        _ => return None,
    };
    let names: Vec<&str> = toks.collect();
    let first_pct = names.iter().position(|n| n.starts_with('%'))?;
    let topo = names[..first_pct]
        .iter()
        .map(|n| if *n == "NODE" { Topo::Node } else { Topo::Other })
        .collect();
    let values: Vec<Option<Field>> =
        names[first_pct..].iter().map(|n| Field::from_text(n)).collect();
    let has = |f: Field| values.contains(&Some(f));
    let utilization = Field::ALL.iter().filter(|f| f.required()).all(|&f| has(f));
    Some(Table {
        kind: if utilization { kind } else { Kind::Other },
        line,
        topo,
        values,
        clock: match lead {
            Lead::Clock(c) => Some(c),
            Lead::Average => None,
        },
        average: lead == Lead::Average,
    })
}

/// A row's subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Label {
    All,
    Id(u32),
}

pub(super) fn label(tok: &str) -> Option<Label> {
    match tok {
        "all" | "-1" => Some(Label::All),
        _ if all_digits(tok) => tok.parse().ok().map(Label::Id),
        _ => None,
    }
}

pub(super) fn describe(kind: Kind, label: Label) -> String {
    match (kind, label) {
        (_, Label::All) => "the all line".into(),
        (Kind::Node, Label::Id(n)) => format!("node {n}"),
        (_, Label::Id(n)) => format!("CPU {n}"),
    }
}

/// A percentage as mpstat prints it (`12.34`; `12,34` under a comma locale).
fn number(tok: &str) -> Option<f64> {
    if tok.is_empty() || !tok.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b',') {
        return None;
    }
    let text = if tok.contains('.') { tok.to_string() } else { tok.replace(',', ".") };
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

pub(super) fn check_range(what: &str, field: Field, v: f64) -> Result<f64, String> {
    if (0.0..=100.5).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{what}: {} is {v:.2}, outside 0-100", field.name()))
    }
}

/// A row's label, node (`-T`) and figures.
pub(super) fn row(table: &Table, rest: &str) -> Result<(Label, Option<u32>, Figures), String> {
    let toks: Vec<&str> = rest.split_whitespace().collect();
    let Some((first, values)) = toks.split_first() else {
        return Err("a row with a time and nothing else".into());
    };
    let label = label(first).ok_or_else(|| format!("'{first}' is not a CPU number or 'all'"))?;
    let what = describe(table.kind, label);
    let (topo, values) = if values.len() == table.values.len() + table.topo.len() {
        values.split_at(table.topo.len())
    } else if values.len() == table.values.len() {
        (&values[..0], values)
    } else {
        return Err(format!(
            "{what}: {} figures where the header at line {} has {}",
            values.len(),
            table.line,
            table.values.len()
        ));
    };
    let mut node = None;
    for (col, tok) in table.topo.iter().zip(topo) {
        if *col == Topo::Node {
            node = Some(tok.parse().map_err(|_| format!("{what}: NODE is '{tok}', not a number"))?);
        }
    }
    let mut figures = Figures::default();
    for (col, tok) in table.values.iter().zip(values) {
        if let Some(field) = col {
            let v = number(tok)
                .ok_or_else(|| format!("{what}: {} is '{tok}', not a number", field.name()))?;
            figures.set(*field, check_range(&what, *field, v)?);
        }
    }
    Ok((label, node, figures))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twelve_hour_clocks() {
        assert_eq!(lead("12:00:01 AM  all").unwrap().0, Lead::Clock(1));
        assert_eq!(lead("12:00:01 PM  all").unwrap().0, Lead::Clock(12 * 3600 + 1));
        assert_eq!(lead("09:08:06 PM  CPU").unwrap().0, Lead::Clock(21 * 3600 + 8 * 60 + 6));
        assert_eq!(lead("Moyenne:  all").unwrap().0, Lead::Average);
        assert!(lead("13:00:00 PM all").is_none());
        assert!(lead("hello world").is_none());
    }
}
