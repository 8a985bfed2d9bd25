//! Typed metrics: a stable name, a unit and labels, never a formatted sentence.
//!
//! Stores compare runs by [`Metric::key`] (name plus sorted labels) and exporters turn labels into
//! Prometheus labels, so rewording a table heading can never break a comparison across versions.
//! Names are `snake_case` without the unit (`mem_latency`, `mem_bandwidth`); the unit is a
//! [`Unit`]; labels say which instance of the measurement (`size`, `kernel`, `cpu`, `node_from`,
//! `node_to`, `worker`, …).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::summary::{summarize, Summary};

/// The unit of a metric's samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Nanoseconds,
    Seconds,
    Cycles,
    /// 10^9 bytes per second.
    GigabytesPerSecond,
    /// 10^6 bytes per second.
    MegabytesPerSecond,
    Bytes,
    Percent,
    Ratio,
    Count,
    PerSecond,
}

impl Unit {
    /// The short form tables print (`ns`, `GB/s`, …).
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Nanoseconds => "ns",
            Unit::Seconds => "s",
            Unit::Cycles => "cycles",
            Unit::GigabytesPerSecond => "GB/s",
            Unit::MegabytesPerSecond => "MB/s",
            Unit::Bytes => "B",
            Unit::Percent => "%",
            Unit::Ratio => "ratio",
            Unit::Count => "count",
            Unit::PerSecond => "/s",
        }
    }

    /// The unit from its short form, for stored runs that kept only the symbol.
    pub fn from_symbol(symbol: &str) -> Option<Unit> {
        Some(match symbol {
            "ns" => Unit::Nanoseconds,
            "s" => Unit::Seconds,
            "cycles" => Unit::Cycles,
            "GB/s" => Unit::GigabytesPerSecond,
            "MB/s" => Unit::MegabytesPerSecond,
            "B" => Unit::Bytes,
            "%" => Unit::Percent,
            "ratio" => Unit::Ratio,
            "count" => Unit::Count,
            "/s" => Unit::PerSecond,
            _ => return None,
        })
    }

    /// Whether a smaller value is the better one (latency) or a larger one (bandwidth).
    pub fn lower_is_better(self) -> bool {
        matches!(self, Unit::Nanoseconds | Unit::Seconds | Unit::Cycles)
    }
}

/// One measured series: name, unit, labels and every sample in the order taken.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub unit: Unit,
    pub labels: BTreeMap<String, String>,
    pub samples: Vec<f64>,
}

impl Metric {
    pub fn new(name: impl Into<String>, unit: Unit, samples: Vec<f64>) -> Self {
        Self { name: name.into(), unit, labels: BTreeMap::new(), samples }
    }

    /// The same metric with one more label.
    #[must_use]
    pub fn label(mut self, key: impl Into<String>, value: impl ToString) -> Self {
        self.labels.insert(key.into(), value.to_string());
        self
    }

    /// `name{k1=v1,k2=v2}` with labels sorted: what identifies the metric across runs.
    pub fn key(&self) -> String {
        metric_key(&self.name, &self.labels)
    }

    /// The samples' summary; `None` when there are none or one is not finite.
    pub fn summary(&self) -> Option<Summary> {
        summarize(&self.samples)
    }
}

/// `name{k1=v1,…}` from a name and sorted labels (`name` alone without labels).
pub fn metric_key(name: &str, labels: &BTreeMap<String, String>) -> String {
    if labels.is_empty() {
        return name.to_string();
    }
    let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{name}{{{}}}", inner.join(","))
}

/// Requested and verified placement of one worker, as recorded beside its metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerPlacement {
    /// Which worker (`cpu 3`, `node 0 to node 1`, `worker 2 cpu 1`).
    pub worker: String,
    pub requested: serde_json::Value,
    /// Pages per node as the kernel reported them.
    pub verified: serde_json::Value,
}

impl WorkerPlacement {
    pub fn new(
        worker: impl Into<String>,
        requested: &impl Serialize,
        verified: &impl Serialize,
    ) -> Self {
        // A value that cannot be serialized is recorded as null rather than losing the run.
        let value = |v: serde_json::Result<serde_json::Value>| v.unwrap_or_default();
        Self {
            worker: worker.into(),
            requested: value(serde_json::to_value(requested)),
            verified: value(serde_json::to_value(verified)),
        }
    }
}

/// A result that can say what it measured as labelled metrics, and where its workers' memory was.
pub trait ToMetrics {
    fn to_metrics(&self) -> Vec<Metric>;

    fn placements(&self) -> Vec<WorkerPlacement> {
        Vec::new()
    }
}

impl ToMetrics for Metric {
    fn to_metrics(&self) -> Vec<Metric> {
        vec![self.clone()]
    }
}

impl<T: ToMetrics + ?Sized> ToMetrics for &T {
    fn to_metrics(&self) -> Vec<Metric> {
        (**self).to_metrics()
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        (**self).placements()
    }
}

impl<T: ToMetrics> ToMetrics for [T] {
    fn to_metrics(&self) -> Vec<Metric> {
        self.iter().flat_map(ToMetrics::to_metrics).collect()
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        self.iter().flat_map(ToMetrics::placements).collect()
    }
}

impl<T: ToMetrics> ToMetrics for Vec<T> {
    fn to_metrics(&self) -> Vec<Metric> {
        self.as_slice().to_metrics()
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        self.as_slice().placements()
    }
}

/// A result measured as one step of a larger experiment (a thread count, a policy): every metric
/// gains the label `key=value` and every worker's name is prefixed with `value: `.
#[derive(Debug)]
pub struct Step<'a, T: ?Sized> {
    pub key: &'a str,
    pub value: String,
    pub inner: &'a T,
}

impl<'a, T: ToMetrics + ?Sized> Step<'a, T> {
    pub fn new(key: &'a str, value: impl ToString, inner: &'a T) -> Self {
        Self { key, value: value.to_string(), inner }
    }
}

impl<T: ToMetrics + ?Sized> ToMetrics for Step<'_, T> {
    fn to_metrics(&self) -> Vec<Metric> {
        self.inner.to_metrics().into_iter().map(|m| m.label(self.key, &self.value)).collect()
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        self.inner
            .placements()
            .into_iter()
            .map(|p| WorkerPlacement { worker: format!("{}: {}", self.value, p.worker), ..p })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_sorts_labels_and_units_round_trip() {
        let m = Metric::new("mem_bandwidth", Unit::GigabytesPerSecond, vec![1.0])
            .label("kernel", "triad")
            .label("cpu", 3);
        assert_eq!(m.key(), "mem_bandwidth{cpu=3,kernel=triad}");
        assert_eq!(Metric::new("x", Unit::Count, vec![]).key(), "x");
        for unit in [Unit::Nanoseconds, Unit::GigabytesPerSecond, Unit::Percent, Unit::PerSecond] {
            assert_eq!(Unit::from_symbol(unit.symbol()), Some(unit));
        }
        assert!(Unit::Nanoseconds.lower_is_better());
        assert!(!Unit::GigabytesPerSecond.lower_is_better());
    }
}
