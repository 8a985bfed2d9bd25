//! Two reports side by side (`report --baseline REF`): every headline figure of this report
//! against the same figure of the baseline, with the ratio and a verdict tested on the stored
//! samples ([`measure::verdict`]), and the machine settings that differ.
//!
//! A figure is found in both reports by the step that measured it (its label in the report's
//! stored runs) and the metric's key (name and labels), never by its printed text.

use measure::verdict::{judge, MIN_EFFECT};
pub use report::compare::{FigureComparison, ReportComparison, SettingDiff};
use report::html::ReportData;
use results::{ResultStore, StoredMetric, StoredRun};

use crate::SuiteError;

/// A report run and the step runs it names, read back from a store.
#[derive(Debug)]
pub struct StoredReport {
    pub run: StoredRun,
    pub data: ReportData,
    /// (step label, its stored run).
    pub steps: Vec<(String, StoredRun)>,
}

impl StoredReport {
    /// Report run `id` of `store` with its steps.
    pub fn read(store: &dyn ResultStore, id: i64) -> Result<Self, SuiteError> {
        let run = store.run(id)?;
        if run.command != crate::characterise::REPORT_COMMAND {
            return Err(SuiteError::NotReportable {
                id,
                command: run.command.clone(),
                why: "a baseline must be a `report` run (see `platscope results list`)".into(),
            });
        }
        let data: ReportData =
            serde_json::from_value(run.result.clone()).map_err(|e| SuiteError::NotReportable {
                id,
                command: run.command.clone(),
                why: format!("its stored page does not read ({e})"),
            })?;
        let mut steps = Vec::new();
        for (label, step_id) in &data.stored_runs {
            steps.push((label.clone(), store.run(*step_id)?));
        }
        Ok(Self { run, data, steps })
    }

    fn step(&self, label: &str) -> Option<&StoredRun> {
        self.steps.iter().find(|(l, _)| l == label).map(|(_, r)| r)
    }
}

/// How a headline figure is found in a report's steps.
struct FigureSpec {
    name: String,
    step: &'static str,
    key: String,
}

fn size_of(m: &StoredMetric) -> Option<u64> {
    m.labels.get("size").and_then(|s| topo::units::parse_bytes(s).ok())
}

/// The headline figures of `report`, each with the step and metric key that back it.
fn figures(report: &StoredReport) -> Vec<FigureSpec> {
    let mut out = Vec::new();
    let spec = |name: String, step: &'static str, m: &StoredMetric| FigureSpec {
        name,
        step,
        key: m.key(),
    };
    // Idle DRAM latency: a node's CPUs to its own memory, else the sweep's largest size.
    let local = report.step("node×node latency").and_then(|r| {
        r.metrics.iter().find(|m| {
            m.name == "mem_latency" && m.labels.get("cpu_node") == m.labels.get("mem_node")
        })
    });
    let sweep = report.step("latency by size");
    let largest = sweep.and_then(|r| r.metrics.iter().max_by_key(|m| size_of(m).unwrap_or(0)));
    match (local, largest) {
        (Some(m), _) => out.push(spec("Idle DRAM latency".into(), "node×node latency", m)),
        (None, Some(m)) => out.push(spec("Idle DRAM latency".into(), "latency by size", m)),
        _ => {}
    }
    if let Some(m) = sweep.and_then(|r| r.metrics.iter().min_by_key(|m| size_of(m).unwrap_or(0))) {
        out.push(spec("L1 latency".into(), "latency by size", m));
    }
    if let Some(r) = report.step("bandwidth by threads") {
        for m in r.metrics.iter().filter(|m| m.name == "mem_bandwidth") {
            let threads = m.labels.get("threads").cloned().unwrap_or_default();
            let kernel = m.labels.get("kernel").cloned().unwrap_or_default();
            out.push(spec(
                format!("Bandwidth ({kernel}), {threads} thread(s)"),
                "bandwidth by threads",
                m,
            ));
        }
    }
    if let Some(r) = report.step("copy bandwidth") {
        for m in r.metrics.iter().filter(|m| m.name == "mem_bandwidth") {
            let kernel = m.labels.get("kernel").cloned().unwrap_or_default();
            out.push(spec(format!("Copy bandwidth ({kernel})"), "copy bandwidth", m));
        }
    }
    if let Some(r) = report.step("loaded latency") {
        let most_load = r
            .metrics
            .iter()
            .filter(|m| m.name == "mem_loaded_latency")
            .filter_map(|m| Some((m.labels.get("delay")?.parse::<u64>().ok()?, m)))
            .min_by_key(|(delay, _)| *delay);
        if let Some((_, m)) = most_load {
            out.push(spec("Latency at max load".into(), "loaded latency", m));
        }
    }
    if let Some(r) = report.step("SLB by workers") {
        for m in r.metrics.iter().filter(|m| m.labels.get("worker").is_some_and(|w| w == "0")) {
            let workers = m.labels.get("workers").cloned().unwrap_or_default();
            out.push(spec(format!("SLB ns/op, {workers} worker(s)"), "SLB by workers", m));
        }
    }
    out
}

/// Compares `this` report with `baseline`, headline figure by headline figure.
pub fn compare(
    this: &StoredReport,
    baseline: &StoredReport,
    baseline_name: String,
) -> ReportComparison {
    let mut comparison = Vec::new();
    for spec in figures(this) {
        let find = |r: &StoredReport| {
            r.step(spec.step)
                .and_then(|run| run.metrics.iter().find(|m| m.key() == spec.key))
                .cloned()
        };
        let (Some(a), Some(b)) = (find(this), find(baseline)) else { continue };
        let lower = measure::Unit::from_symbol(&a.unit).is_some_and(measure::Unit::lower_is_better);
        let judged = judge(&a.samples, &b.samples, lower, MIN_EFFECT);
        comparison.push(FigureComparison {
            figure: spec.name,
            unit: a.unit.clone(),
            this: a.median,
            baseline: b.median,
            ratio: judged.ratio,
            verdict: judged.verdict,
            p_value: judged.p_value,
        });
    }
    let this_machine = topo::machine_facts(&this.data.topology);
    let baseline_machine = topo::machine_facts(&baseline.data.topology);
    let config_diff = topo::config_diff(&this_machine, &baseline_machine)
        .into_iter()
        .map(|d| SettingDiff { setting: d.setting, this: d.this, baseline: d.baseline })
        .collect();
    ReportComparison { baseline: baseline_name, comparison, config_diff, baseline_machine }
}

/// Where `--baseline REF` points: a run id in `--db`, `FILE.db` (its newest report run),
/// `FILE.db#ID`, or `postgresql://…#HOST` (HOST's newest report run in a shared store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaselineRef {
    Id(i64),
    File { path: std::path::PathBuf, id: Option<i64> },
    Host { url: String, host: String },
}

impl BaselineRef {
    pub fn parse(text: &str) -> Result<Self, measure::Classified> {
        let text = text.trim();
        if let Ok(id) = text.parse::<i64>() {
            return Ok(Self::Id(id));
        }
        let postgres = text.starts_with("postgresql://")
            || text.starts_with("postgres://")
            || text.contains("host=")
            || text.contains("dbname=");
        if postgres {
            let Some((url, host)) = text.rsplit_once('#').filter(|(_, h)| !h.is_empty()) else {
                return Err(measure::Classified::usage(format!(
                    "--baseline {text:?}: name the host whose newest report to compare with, as \
                     postgresql://…#HOST"
                )));
            };
            return Ok(Self::Host { url: url.to_string(), host: host.to_string() });
        }
        match text.rsplit_once('#') {
            Some((path, id)) => {
                let id = id.parse::<i64>().map_err(|_| {
                    measure::Classified::usage(format!(
                        "--baseline {text:?}: after # comes a run id (FILE.db#ID)"
                    ))
                })?;
                Ok(Self::File { path: path.into(), id: Some(id) })
            }
            None => Ok(Self::File { path: text.into(), id: None }),
        }
    }
}

/// The newest `report` run of a store (of `host`, when given).
fn newest_report(store: &dyn ResultStore, host: Option<&str>) -> Result<Option<i64>, SuiteError> {
    let command = crate::characterise::REPORT_COMMAND;
    if let Some(host) = host {
        return Ok(store.latest_of_host(host, command)?);
    }
    Ok(store.list(usize::MAX)?.into_iter().find(|r| r.command == command).map(|r| r.id))
}

/// Reads the baseline `reference` names; `local` is this run's store (for a bare run id).
pub fn read_baseline(
    reference: &BaselineRef,
    local: &dyn ResultStore,
) -> Result<(StoredReport, String), measure::Classified> {
    let describe = |r: &StoredReport, location: &str| {
        format!(
            "run {} of {} ({}, {})",
            r.run.id,
            if r.run.host.is_empty() { "this host" } else { r.run.host.as_str() },
            r.run.recorded_at,
            location
        )
    };
    let none = |location: &str| {
        measure::Classified::usage(format!(
            "--baseline: no report run in {location} (run `platscope report` there first)"
        ))
    };
    match reference {
        BaselineRef::Id(id) => {
            let r = StoredReport::read(local, *id)?;
            let name = describe(&r, &local.location());
            Ok((r, name))
        }
        BaselineRef::File { path, id } => {
            if !path.exists() {
                return Err(measure::Classified::usage(format!(
                    "--baseline: no results database at {}",
                    path.display()
                )));
            }
            let store = results::SqliteStore::open_read_only(path)?;
            let id = match id {
                Some(id) => *id,
                None => newest_report(&store, None)?.ok_or_else(|| none(&store.location()))?,
            };
            let r = StoredReport::read(&store, id)?;
            let name = describe(&r, &store.location());
            Ok((r, name))
        }
        BaselineRef::Host { url, host } => {
            let store = results::PgStore::connect(url)?;
            let id = newest_report(&store, Some(host))?
                .ok_or_else(|| none(&format!("{} for host {host}", store.location())))?;
            let r = StoredReport::read(&store, id)?;
            let name = describe(&r, &store.location());
            Ok((r, name))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baseline_references_parse() {
        assert_eq!(BaselineRef::parse("12").ok(), Some(BaselineRef::Id(12)));
        assert_eq!(
            BaselineRef::parse("/tmp/a.db").ok(),
            Some(BaselineRef::File { path: "/tmp/a.db".into(), id: None })
        );
        assert_eq!(
            BaselineRef::parse("b.db#7").ok(),
            Some(BaselineRef::File { path: "b.db".into(), id: Some(7) })
        );
        assert_eq!(
            BaselineRef::parse("postgresql://u@pg/fleet#db2").ok(),
            Some(BaselineRef::Host { url: "postgresql://u@pg/fleet".into(), host: "db2".into() })
        );
        assert!(BaselineRef::parse("postgresql://u@pg/fleet").is_err_and(|e| e.is_usage()));
        assert!(BaselineRef::parse("b.db#x").is_err_and(|e| e.is_usage()));
    }
}
