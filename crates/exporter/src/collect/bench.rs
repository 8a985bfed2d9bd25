//! `bench`: the latest stored benchmark figures from the local results store — NUMA latency
//! and bandwidth per node pair, latency at the loaded-latency curve's highest load, SLB time
//! per store, page-cache read bandwidth per node — and when each benchmark last ran.
//!
//! Read from the stored typed metrics (the medians), in base units. The store is opened
//! read-only and read again whenever its file or its write-ahead log has changed (identity,
//! size or modification time) since the last read, so a run recorded while `serve` runs shows
//! up at the next scrape, an unchanged store costs a scrape two `stat` calls, and a missing
//! database is simply no families.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use measure::names::{
    BANDWIDTH, LATENCY, LOADED_LATENCY, LOAD_BANDWIDTH, PAGECACHE_READ, SLB_NS_PER_OP,
};
use measure::Unit as MetricUnit;
use results::{LatestMetrics, SqliteStore, StoredMetric};

use measure::UsageError;

use super::{CollectError, Collector, Config};
use crate::{Family, Kind, Unit};

/// Reads the latest benchmark figures from a results database.
#[derive(Debug)]
pub struct BenchCollector {
    db: Option<PathBuf>,
    /// The figures last read, and the state of the files they were read from.
    last: Mutex<Option<(StoreFiles, StoredFigures)>>,
}

/// What says a store has changed: its file's and its write-ahead log's identity, size and
/// modification time (nanoseconds). A commit appends to the log, or rewrites the file when no
/// log is kept; either moves one of these.
#[derive(Debug, Clone, PartialEq, Eq)]
struct StoreFiles {
    db: Option<(u64, u64, u64, i64, i64)>,
    wal: Option<(u64, u64, u64, i64, i64)>,
}

impl StoreFiles {
    fn of(path: &Path) -> Self {
        use std::os::unix::fs::MetadataExt;
        let state = |p: &Path| {
            std::fs::metadata(p)
                .ok()
                .map(|m| (m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
        };
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        StoreFiles { db: state(path), wal: state(Path::new(&wal)) }
    }
}

/// Registry entry: reads `--db`, else the default store.
pub(super) fn factory(config: &Config) -> Result<Box<dyn Collector>, UsageError> {
    Ok(Box::new(BenchCollector::new(config.db.clone())))
}

impl BenchCollector {
    /// Reads `db`, or `results::default_path()` when `None` (no HOME: no families).
    pub fn new(db: Option<PathBuf>) -> Self {
        BenchCollector { db: db.or_else(results::default_path), last: Mutex::new(None) }
    }

    /// The database this collector reads, if any.
    pub fn db(&self) -> Option<&Path> {
        self.db.as_deref()
    }
}

impl Collector for BenchCollector {
    fn name(&self) -> &'static str {
        "bench"
    }

    fn collect(&self, out: &mut Vec<Family>) -> Result<(), CollectError> {
        let Some(path) = self.db.as_deref().filter(|p| p.exists()) else { return Ok(()) };
        let files = StoreFiles::of(path);
        let mut last = self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, figures)) = last.as_ref().filter(|(seen, _)| *seen == files) {
            out.extend(families(figures));
            return Ok(());
        }
        let fail =
            |e: results::StoreError| CollectError { collector: "bench", message: e.to_string() };
        let store = SqliteStore::open_read_only(path).map_err(fail)?;
        let latest = |name: &str, label: Option<&str>| store.latest_metrics(name, label);
        let figures = StoredFigures {
            latency: latest(LATENCY, Some("cpu_node")).map_err(fail)?,
            bandwidth: latest(BANDWIDTH, Some("cpu_node")).map_err(fail)?,
            loaded_latency: latest(LOADED_LATENCY, None).map_err(fail)?,
            load_bandwidth: latest(LOAD_BANDWIDTH, None).map_err(fail)?,
            slb: latest(SLB_NS_PER_OP, None).map_err(fail)?,
            pagecache: latest(PAGECACHE_READ, None).map_err(fail)?,
        };
        out.extend(families(&figures));
        // Kept only when the files did not move while they were read: else the next scrape
        // reads again.
        *last = (StoreFiles::of(path) == files).then_some((files, figures));
        Ok(())
    }
}

/// The stored runs each family is made from; `None` where no run holds the metric.
#[derive(Debug, Default, Clone)]
pub struct StoredFigures {
    /// `mem latency --matrix`.
    pub latency: Option<LatestMetrics>,
    /// `mem bandwidth --matrix`.
    pub bandwidth: Option<LatestMetrics>,
    /// `mem loaded-latency`: chase latency per delay.
    pub loaded_latency: Option<LatestMetrics>,
    /// `mem loaded-latency`: load bandwidth per delay.
    pub load_bandwidth: Option<LatestMetrics>,
    /// `mem slb`.
    pub slb: Option<LatestMetrics>,
    /// `pagecache` read rates.
    pub pagecache: Option<LatestMetrics>,
}

/// A stored median in base units: seconds for times, bytes/s for rates, as is otherwise.
/// `None` for a unit with no base-unit meaning here or a value that is not finite.
fn base_value(m: &StoredMetric) -> Option<f64> {
    let factor = match MetricUnit::from_symbol(&m.unit)? {
        MetricUnit::Nanoseconds => 1e-9,
        MetricUnit::Seconds | MetricUnit::Ratio | MetricUnit::Bytes => 1.0,
        MetricUnit::GigabytesPerSecond => 1e9,
        MetricUnit::MegabytesPerSecond => 1e6,
        MetricUnit::Percent => 0.01,
        MetricUnit::Cycles | MetricUnit::Count | MetricUnit::PerSecond => return None,
    };
    Some(m.median * factor).filter(|v| v.is_finite())
}

fn label<'a>(m: &'a StoredMetric, name: &str) -> &'a str {
    m.labels.get(name).map_or("", String::as_str)
}

/// The families for what is stored (a family is left out when nothing feeds it).
pub fn families(f: &StoredFigures) -> Vec<Family> {
    let mut out = Vec::new();
    let mut last_run = Family::new(
        "platscope_bench_last_run_timestamp_seconds",
        Kind::Gauge,
        Some(Unit::Seconds),
        "When the run behind each benchmark's exported figures was recorded (Unix time).",
    );
    let mut stamp = |benchmark: &str, l: &LatestMetrics| {
        last_run.push(&[("benchmark", benchmark)], l.recorded_at_unix);
    };

    if let Some(l) = &f.latency {
        let mut fam = Family::new(
            "platscope_bench_memory_latency_seconds",
            Kind::Gauge,
            Some(Unit::Seconds),
            "Idle memory load-to-use latency (median) from CPUs of cpu_node to memory of mem_node.",
        );
        for m in &l.metrics {
            if let Some(v) = base_value(m) {
                fam.push(
                    &[("cpu_node", label(m, "cpu_node")), ("mem_node", label(m, "mem_node"))],
                    v,
                );
            }
        }
        push_nonempty(&mut out, fam);
        stamp("memory_latency", l);
    }

    if let Some(l) = &f.bandwidth {
        let mut fam = Family::new(
            "platscope_bench_memory_bandwidth_bytes_per_second",
            Kind::Gauge,
            Some(Unit::BytesPerSecond),
            "Aggregate memory bandwidth (median) from CPUs of cpu_node to memory of mem_node, by kernel.",
        );
        for m in &l.metrics {
            if let Some(v) = base_value(m) {
                fam.push(
                    &[
                        ("cpu_node", label(m, "cpu_node")),
                        ("mem_node", label(m, "mem_node")),
                        ("kernel", label(m, "kernel")),
                    ],
                    v,
                );
            }
        }
        push_nonempty(&mut out, fam);
        stamp("memory_bandwidth", l);
    }

    if let Some(l) = &f.loaded_latency {
        // The curve's headline point: the most load bandwidth among the loaded points (as the
        // report's headline picks it), read from the same run's load bandwidth figures.
        let bandwidths =
            f.load_bandwidth.as_ref().filter(|b| b.run_id == l.run_id).map(|b| &b.metrics);
        let max_load = bandwidths.and_then(|bs| {
            bs.iter()
                .filter(|b| label(b, "delay") != "idle")
                .max_by(|a, b| a.median.total_cmp(&b.median))
        });
        if let Some(load) = max_load {
            let delay = label(load, "delay");
            let latency = l.metrics.iter().find(|m| label(m, "delay") == delay);
            if let (Some(lat), Some(bw)) = (latency.and_then(base_value), base_value(load)) {
                let mut fam = Family::new(
                    "platscope_bench_memory_loaded_latency_seconds",
                    Kind::Gauge,
                    Some(Unit::Seconds),
                    "Memory latency (median) at the loaded-latency curve's highest load.",
                );
                fam.push(&[], lat);
                out.push(fam);
                let mut fam = Family::new(
                    "platscope_bench_memory_loaded_bandwidth_bytes_per_second",
                    Kind::Gauge,
                    Some(Unit::BytesPerSecond),
                    "Load bandwidth at the loaded-latency curve's highest load.",
                );
                fam.push(&[], bw);
                out.push(fam);
                stamp("memory_loaded_latency", l);
            }
        }
    }

    if let Some(l) = &f.slb {
        let mut fam = Family::new(
            "platscope_bench_slb_store_seconds",
            Kind::Gauge,
            Some(Unit::Seconds),
            "Silly Little Benchmark: time per random 8-byte store (median), per worker.",
        );
        for m in &l.metrics {
            if let Some(v) = base_value(m) {
                fam.push(&[("worker", label(m, "worker"))], v);
            }
        }
        push_nonempty(&mut out, fam);
        stamp("slb", l);
    }

    if let Some(l) = &f.pagecache {
        let mut fam = Family::new(
            "platscope_bench_pagecache_read_bandwidth_bytes_per_second",
            Kind::Gauge,
            Some(Unit::BytesPerSecond),
            "Read bandwidth (median) of a cached file from CPUs of node.",
        );
        for m in &l.metrics {
            if let Some(v) = base_value(m) {
                fam.push(&[("file", label(m, "file")), ("node", label(m, "node"))], v);
            }
        }
        push_nonempty(&mut out, fam);
        stamp("pagecache", l);
    }

    push_nonempty(&mut out, last_run);
    out
}

fn push_nonempty(out: &mut Vec<Family>, fam: Family) {
    if !fam.samples.is_empty() {
        out.push(fam);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Value;

    fn metric(name: &str, unit: &str, median: f64, labels: &[(&str, &str)]) -> StoredMetric {
        StoredMetric::single(name, unit, labels, median)
    }

    fn latest(run_id: i64, metrics: Vec<StoredMetric>) -> Option<LatestMetrics> {
        Some(LatestMetrics {
            run_id,
            command: "x".into(),
            recorded_at: "2026-01-01T00:00:00.000Z".into(),
            recorded_at_unix: 1_767_225_600.0,
            metrics,
        })
    }

    fn value(fams: &[Family], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let fam = fams.iter().find(|f| f.name == name)?;
        let want = crate::Labels::new(labels);
        fam.samples.iter().find(|s| s.labels == want).and_then(|s| match s.value {
            Value::Number(v) => Some(v),
            Value::Histogram { .. } => None,
        })
    }

    #[test]
    fn nothing_stored_is_no_families() {
        assert!(families(&StoredFigures::default()).is_empty());
    }

    #[test]
    fn units_become_base_units() {
        let f = StoredFigures {
            latency: latest(
                1,
                vec![metric(LATENCY, "ns", 90.0, &[("cpu_node", "0"), ("mem_node", "1")])],
            ),
            bandwidth: latest(
                2,
                vec![metric(
                    BANDWIDTH,
                    "GB/s",
                    12.5,
                    &[("cpu_node", "0"), ("mem_node", "0"), ("kernel", "read"), ("isa", "avx2")],
                )],
            ),
            slb: latest(3, vec![metric(SLB_NS_PER_OP, "ns", 4.0, &[("worker", "0")])]),
            ..StoredFigures::default()
        };
        let fams = families(&f);
        let lat = value(
            &fams,
            "platscope_bench_memory_latency_seconds",
            &[("cpu_node", "0"), ("mem_node", "1")],
        );
        assert!((lat.unwrap() - 90e-9).abs() < 1e-15);
        let bw = value(
            &fams,
            "platscope_bench_memory_bandwidth_bytes_per_second",
            &[("cpu_node", "0"), ("mem_node", "0"), ("kernel", "read")],
        );
        assert_eq!(bw, Some(12.5e9));
        assert!(value(&fams, "platscope_bench_slb_store_seconds", &[("worker", "0")]).is_some());
        let stamp = value(
            &fams,
            "platscope_bench_last_run_timestamp_seconds",
            &[("benchmark", "memory_latency")],
        );
        assert_eq!(stamp, Some(1_767_225_600.0));
    }

    #[test]
    fn loaded_latency_at_the_highest_load() {
        let f = StoredFigures {
            loaded_latency: latest(
                5,
                vec![
                    metric(LOADED_LATENCY, "ns", 100.0, &[("delay", "idle")]),
                    metric(LOADED_LATENCY, "ns", 300.0, &[("delay", "0")]),
                    metric(LOADED_LATENCY, "ns", 150.0, &[("delay", "1000")]),
                ],
            ),
            load_bandwidth: latest(
                5,
                vec![
                    metric(LOAD_BANDWIDTH, "GB/s", 0.0, &[("delay", "idle")]),
                    metric(LOAD_BANDWIDTH, "GB/s", 20.0, &[("delay", "0")]),
                    metric(LOAD_BANDWIDTH, "GB/s", 5.0, &[("delay", "1000")]),
                ],
            ),
            ..StoredFigures::default()
        };
        let fams = families(&f);
        let lat = value(&fams, "platscope_bench_memory_loaded_latency_seconds", &[]).unwrap();
        assert!((lat - 300e-9).abs() < 1e-15);
        assert_eq!(
            value(&fams, "platscope_bench_memory_loaded_bandwidth_bytes_per_second", &[]),
            Some(20e9)
        );
    }

    #[test]
    fn a_run_recorded_between_scrapes_shows_at_the_next_and_an_unchanged_store_is_not_reread() {
        use results::{NewRun, ResultStore};
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("results.db");
        let record = |ns: f64| {
            let mut store = SqliteStore::open(&path).unwrap();
            let latency = measure::Metric::new(LATENCY, MetricUnit::Nanoseconds, vec![ns])
                .label("cpu_node", "0")
                .label("mem_node", "0");
            store
                .record(&NewRun {
                    command: "mem latency".into(),
                    parameters: serde_json::json!({}),
                    version: "test".into(),
                    environment: serde_json::json!({}),
                    topology: serde_json::json!({}),
                    metrics: vec![latency],
                    placements: Vec::new(),
                    result: serde_json::json!({}),
                    interrupted: false,
                })
                .unwrap();
        };
        let c = BenchCollector::new(Some(path.clone()));
        let scrape = || {
            let mut out = Vec::new();
            c.collect(&mut out).unwrap();
            let name = "platscope_bench_memory_latency_seconds";
            value(&out, name, &[("cpu_node", "0"), ("mem_node", "0")]).unwrap()
        };
        record(100.0);
        assert!((scrape() - 100e-9).abs() < 1e-15);
        // Unchanged: served from what was read (the kept figures are the ones shown).
        assert!((scrape() - 100e-9).abs() < 1e-15);
        assert!(c.last.lock().unwrap().is_some(), "figures kept for an unchanged store");
        record(250.0);
        assert!((scrape() - 250e-9).abs() < 1e-15, "the new run at the next scrape");
    }

    #[test]
    fn missing_database_is_no_families() {
        let c = BenchCollector::new(Some("/nonexistent/platscope/results.db".into()));
        let mut out = Vec::new();
        c.collect(&mut out).unwrap();
        assert!(out.is_empty());
    }
}
