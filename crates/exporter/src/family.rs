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

/// A sample's labels, rendered once as both text formats print them between the braces:
/// `name="value",name="value"`, values escaped (`\\`, `\"`, `\n`). Shared, so a collector
/// that gives many samples the same labels (one device's eight counters) renders them once and
/// every sample holds a pointer; rendering a scrape copies them whole.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Labels(Arc<str>);

impl Labels {
    /// Labels from `(name, value)` pairs, in the order to print them.
    pub fn new(pairs: &[(&str, &str)]) -> Self {
        // Sized once: `name="value"` and a comma per pair, escapes aside.
        let mut text =
            String::with_capacity(pairs.iter().map(|(n, v)| n.len() + v.len() + 4).sum());
        for (i, (name, value)) in pairs.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(name);
            text.push_str("=\"");
            if value.contains(['\\', '"', '\n']) {
                for c in value.chars() {
                    match c {
                        '\\' => text.push_str("\\\\"),
                        '"' => text.push_str("\\\""),
                        '\n' => text.push_str("\\n"),
                        c => text.push(c),
                    }
                }
            } else {
                text.push_str(value);
            }
            text.push('"');
        }
        Labels(Arc::from(text))
    }

    /// The rendered pairs, without braces; empty when there are none.
    pub fn rendered(&self) -> &str {
        &self.0
    }

    /// The value of label `name`, unescaped (for readers of a collector's output: tests, and
    /// collectors deriving one figure from another).
    pub fn get(&self, name: &str) -> Option<String> {
        let mut rest = self.rendered();
        while !rest.is_empty() {
            let (key, after) = rest.split_once("=\"")?;
            let mut value = String::new();
            let mut chars = after.char_indices();
            let end = loop {
                match chars.next()? {
                    (i, '"') => break i,
                    (_, '\\') => match chars.next()?.1 {
                        'n' => value.push('\n'),
                        c => value.push(c),
                    },
                    (_, c) => value.push(c),
                }
            };
            if key == name {
                return Some(value);
            }
            rest = after[end + 1..].strip_prefix(',').unwrap_or("");
        }
        None
    }
}

impl std::fmt::Debug for Labels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{{{}}}", self.rendered())
    }
}

/// One labelled sample of a family.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The labels, rendered.
    pub labels: Labels,
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
    pub fn push(&mut self, labels: &[(&str, &str)], value: f64) -> &mut Self {
        self.push_labels(&Labels::new(labels), value)
    }

    /// Adds a numeric sample whose labels are already rendered (shared, not copied).
    pub fn push_labels(&mut self, labels: &Labels, value: f64) -> &mut Self {
        self.samples.push(Sample { labels: labels.clone(), value: Value::Number(value) });
        self
    }

    /// Adds a histogram sample with the given labels.
    pub fn push_histogram(
        &mut self,
        labels: &[(&str, &str)],
        buckets: Vec<(f64, u64)>,
        sum: f64,
    ) -> &mut Self {
        self.samples
            .push(Sample { labels: Labels::new(labels), value: Value::Histogram { buckets, sum } });
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any values render escaped and read back as they were, however many pairs.
    #[test]
    fn labels_read_back_what_they_render() {
        use test_support::fuzz::{self, proptest::prelude::*};
        let pairs = prop::collection::vec(("[a-z_]{1,8}", any::<String>()), 0..5);
        fuzz::check(fuzz::PURE, pairs, |pairs| {
            let borrowed: Vec<(&str, &str)> =
                pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let labels = Labels::new(&borrowed);
            for (name, _) in &pairs {
                // The first pair of that name, as a reader of the exposition would take it.
                let want = pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
                prop_assert_eq!(labels.get(name), want);
            }
            prop_assert_eq!(labels.get("absent name"), None);
            // No line break that would end the sample's line early.
            prop_assert!(!labels.rendered().contains('\n'));
            Ok(())
        });
        assert_eq!(Labels::new(&[("a", "x\"y"), ("b", "")]).rendered(), "a=\"x\\\"y\",b=\"\"");
    }
}
