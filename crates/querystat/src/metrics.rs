//! A querystat run as labelled metrics for the results store: throughput per interval (every
//! sample), and mean latency overall (one sample an interval), pre-empted and not.

use measure::{Metric, ToMetrics, Unit};

use crate::report::Report;
use crate::By;

/// Completed queries (or transactions) per second, one sample per interval.
pub const THROUGHPUT: &str = "db_throughput";
/// Mean latency in µs → stored in ns, labelled `preempted=all|yes|no`.
pub const LATENCY_MEAN: &str = "db_latency_mean";

impl ToMetrics for Report {
    fn to_metrics(&self) -> Vec<Metric> {
        let server = self.server.kind.name();
        let by = match self.by {
            By::Query => "query",
            By::Transaction => "transaction",
        };
        let label = |m: Metric| m.label("server", server).label("by", by);
        let per_sec: Vec<f64> = self.intervals.iter().map(|i| i.per_sec).collect();
        let mut out = vec![label(Metric::new(THROUGHPUT, Unit::PerSecond, per_sec))];
        // Mean latency of all queries: one sample an interval where the intervals have it, so
        // a comparison can test it; the run's mean where they do not (runs stored before).
        let by_interval: Vec<f64> =
            self.intervals.iter().filter_map(|i| i.mean_us).map(|us| us * 1e3).collect();
        for (which, latency) in
            [("all", &self.all), ("yes", &self.preempted), ("no", &self.not_preempted)]
        {
            if let Some(avg) = latency.avg_us {
                let samples = if which == "all" && !by_interval.is_empty() {
                    by_interval.clone()
                } else {
                    vec![avg * 1e3]
                };
                out.push(label(
                    Metric::new(LATENCY_MEAN, Unit::Nanoseconds, samples).label("preempted", which),
                ));
            }
        }
        out
    }
}
