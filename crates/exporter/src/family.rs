//! The metric model every collector fills and every rendering reads.

use std::sync::Arc;

/// The type of a metric family, as Prometheus understands it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A monotonically increasing count; rendered with a `_total` suffix.
    Counter,
    /// A value that goes up and down.
    Gauge,
    /// Constant labels describing something (value 1); rendered as a gauge in 0.0.4 text,
    /// which has no info type (node_exporter's textfile collector rejects it).
    Info,
    /// A distribution in buckets.
    Histogram,
}

/// Base units (OpenMetrics `# UNIT`); the family name must end with the unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes.
    Bytes,
    /// Seconds.
    Seconds,
    /// A fraction, 0 to 1 (or above, for over-subscribed ratios).
    Ratio,
    /// Bytes per second (link speeds, bandwidth figures).
    BytesPerSecond,
}

impl Unit {
    /// The unit's name as it appears in the metric name and in `# UNIT`.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Bytes => "bytes",
            Unit::Seconds => "seconds",
            Unit::Ratio => "ratio",
            Unit::BytesPerSecond => "bytes_per_second",
        }
    }
}

/// One sample's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A counter, gauge or info value.
    Number(f64),
    /// A histogram: `(upper bound, count in this bucket only)` in increasing bound order —
    /// per-slot counts as BPF log2 maps hold them; the rendering makes them cumulative and adds
    /// the `+Inf` bucket.
    Histogram {
        /// Per-bucket (not cumulative) counts by upper bound.
        buckets: Vec<(f64, u64)>,
        /// Sum of all observed values.
        sum: f64,
    },
}

/// One labelled sample of a family.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Label names and values, in the order to print them.
    /// Values are shared: a collector naming one device in many samples makes its name once.
    pub labels: Vec<(&'static str, Arc<str>)>,
    /// The value.
    pub value: Value,
}

/// A metric family: one name, one type, many labelled samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// The name without `_total` (counters) or bucket suffixes, e.g.
    /// `platscope_nic_receive_bytes`.
    pub name: String,
    /// One line of help text.
    pub help: String,
    /// The base unit, when the value has one; the name must end with it.
    pub unit: Option<Unit>,
    /// The type.
    pub kind: Kind,
    /// The samples.
    pub samples: Vec<Sample>,
}

impl Family {
    /// An empty family.
    pub fn new(name: &str, kind: Kind, unit: Option<Unit>, help: &str) -> Self {
        Family { name: name.to_string(), help: help.to_string(), unit, kind, samples: Vec::new() }
    }

    /// Adds a numeric sample with the given labels.
    pub fn push(&mut self, labels: &[(&'static str, &str)], value: f64) -> &mut Self {
        self.samples.push(Sample {
            labels: labels.iter().map(|&(k, v)| (k, Arc::from(v))).collect(),
            value: Value::Number(value),
        });
        self
    }

    /// Adds a numeric sample whose label values are already shared (no copy of them).
    pub fn push_shared(&mut self, labels: &[(&'static str, &Arc<str>)], value: f64) -> &mut Self {
        self.samples.push(Sample {
            labels: labels.iter().map(|&(k, v)| (k, Arc::clone(v))).collect(),
            value: Value::Number(value),
        });
        self
    }

    /// Adds a histogram sample with the given labels.
    pub fn push_histogram(
        &mut self,
        labels: &[(&'static str, &str)],
        buckets: Vec<(f64, u64)>,
        sum: f64,
    ) -> &mut Self {
        self.samples.push(Sample {
            labels: labels.iter().map(|&(k, v)| (k, Arc::from(v))).collect(),
            value: Value::Histogram { buckets, sum },
        });
        self
    }
}
