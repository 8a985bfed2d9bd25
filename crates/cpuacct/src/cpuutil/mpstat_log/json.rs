//! mpstat -o JSON, scanned a character at a time so a truncated document still gives the
//! intervals it holds, and memory stays one entry deep.

use std::collections::BTreeSet;

use serde_json::Value;

use super::text::{check_range, describe, label, lead, Kind, Label, Lead};
use super::{Field, Figures, MAX_JSON_ENTRY};

#[derive(Debug)]
pub(super) struct Capture {
    text: String,
    pub(super) line: usize,
    depth: usize,
    overflow: bool,
}

#[derive(Debug, Default)]
pub(super) struct JsonScan {
    depth: usize,
    in_string: bool,
    escaped: bool,
    string: String,
    last_string: Option<String>,
    key: Option<String>,
    stats_depth: Option<usize>,
    pub(super) capture: Option<Capture>,
    /// The `"sysstat"` key was seen.
    pub(super) sysstat: bool,
    /// The host's `"date"`.
    pub(super) date: Option<String>,
}

/// What one character did.
pub(super) enum JsonEvent {
    None,
    /// A statistics entry is complete.
    Entry(Capture),
    /// The document's outermost value closed.
    End,
}

impl JsonScan {
    pub(super) fn feed(&mut self, c: char, line: usize) -> JsonEvent {
        if let Some(cap) = &mut self.capture {
            if cap.text.len() < MAX_JSON_ENTRY {
                cap.text.push(c);
            } else {
                cap.overflow = true;
            }
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if c == '\\' {
                self.escaped = true;
                return JsonEvent::None;
            } else if c == '"' {
                self.in_string = false;
                let s = std::mem::take(&mut self.string);
                if self.key.take().as_deref() == Some("date") {
                    self.date = Some(s);
                } else {
                    self.last_string = Some(s);
                }
                return JsonEvent::None;
            }
            if self.string.len() < 256 {
                self.string.push(c);
            }
            return JsonEvent::None;
        }
        match c {
            '"' => {
                self.in_string = true;
                self.string.clear();
            }
            ':' => {
                self.key = self.last_string.take();
                self.sysstat |= self.key.as_deref() == Some("sysstat");
            }
            ',' => {
                self.key = None;
                self.last_string = None;
            }
            '{' | '[' => {
                self.depth += 1;
                if c == '[' && self.key.as_deref() == Some("statistics") {
                    self.stats_depth = Some(self.depth);
                }
                if c == '{' && self.capture.is_none() && self.stats_depth == Some(self.depth - 1) {
                    self.capture = Some(Capture {
                        text: "{".into(),
                        line,
                        depth: self.depth,
                        overflow: false,
                    });
                }
                self.key = None;
                self.last_string = None;
            }
            '}' | ']' => {
                let depth = self.depth;
                self.depth = depth.saturating_sub(1);
                if self.stats_depth.is_some_and(|d| self.depth < d) {
                    self.stats_depth = None;
                }
                self.key = None;
                if c == '}' && self.capture.as_ref().is_some_and(|cap| cap.depth == depth) {
                    if let Some(cap) = self.capture.take() {
                        return JsonEvent::Entry(cap);
                    }
                }
                if self.depth == 0 {
                    return JsonEvent::End;
                }
            }
            _ => {}
        }
        JsonEvent::None
    }
}

/// Rows of one JSON entry; `Ok(None)` for an entry without utilization (interrupts only).
type JsonRows = (Option<u32>, Vec<(Kind, Result<(Label, Option<u32>, Figures), String>)>);

pub(super) fn json_rows(
    cap: &Capture,
    missing: &mut BTreeSet<&'static str>,
) -> Result<Option<JsonRows>, String> {
    if cap.overflow {
        return Err(format!("a JSON entry longer than {} MiB", MAX_JSON_ENTRY >> 20));
    }
    let v: Value = serde_json::from_str(&cap.text).map_err(|e| format!("not valid JSON ({e})"))?;
    let clock = match v.get("timestamp") {
        Some(Value::String(ts)) => match lead(ts) {
            Some((Lead::Clock(c), rest)) if rest.trim().is_empty() => Some(c),
            _ => return Err(format!("timestamp '{ts}' is not a time of day")),
        },
        _ => None,
    };
    let mut rows = Vec::new();
    let mut any = false;
    for (key, kind, id_key) in [("cpu-load", Kind::Cpu, "cpu"), ("node-load", Kind::Node, "node")] {
        let Some(list) = v.get(key) else { continue };
        let Some(list) = list.as_array() else {
            return Err(format!("\"{key}\" is not a list"));
        };
        any = true;
        for entry in list {
            rows.push((kind, json_row(entry, kind, id_key, missing)));
        }
    }
    Ok(any.then_some((clock, rows)))
}

fn json_row(
    entry: &Value,
    kind: Kind,
    id_key: &str,
    missing: &mut BTreeSet<&'static str>,
) -> Result<(Label, Option<u32>, Figures), String> {
    let id = match entry.get(id_key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return Err(format!("an entry without \"{id_key}\"")),
    };
    let label =
        label(&id).ok_or_else(|| format!("\"{id_key}\": \"{id}\" is not a number or 'all'"))?;
    let what = describe(kind, label);
    // -T adds "node" to each CPU's entry ("" on the all line).
    let node = match (kind, entry.get("node")) {
        (Kind::Cpu, Some(Value::String(s))) if !s.is_empty() => {
            Some(s.parse().map_err(|_| format!("{what}: \"node\": \"{s}\" is not a number"))?)
        }
        _ => None,
    };
    let mut figures = Figures::default();
    for field in Field::ALL {
        match entry.get(field.json_key()) {
            Some(v) => {
                let n = v.as_f64().filter(|n| n.is_finite()).ok_or_else(|| {
                    format!("{what}: \"{}\" is {v}, not a number", field.json_key())
                })?;
                figures.set(field, check_range(&what, field, n)?);
            }
            None if field.required() => {
                return Err(format!("{what}: no \"{}\"", field.json_key()));
            }
            None => {
                missing.insert(field.name());
            }
        }
    }
    Ok((label, node, figures))
}
