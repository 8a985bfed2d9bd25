//! Compression runs and scaling steps as labelled metrics, for the results store.

use measure::{Metric, ToMetrics, Unit};

use crate::result::{Operation, RunResult};
use crate::scale::ScaleReport;

/// Uncompressed MB (10^6) per second of one run.
pub const THROUGHPUT: &str = "compress_throughput";
/// Compressed size over uncompressed size.
pub const RATIO: &str = "compress_ratio";
/// CPU seconds (user + system) per uncompressed MB.
pub const CPU_PER_MB: &str = "compress_cpu_seconds_per_mb";
/// Uncompressed MB per second of one `cpu scale` step, all units together.
pub const SCALE_THROUGHPUT: &str = "cpu_scale_throughput";

impl ToMetrics for RunResult {
    fn to_metrics(&self) -> Vec<Metric> {
        let operation = match self.operation {
            Operation::Compress => "compress",
            Operation::Decompress => "decompress",
        };
        let label = |m: Metric| {
            let m = m
                .label("operation", operation)
                .label("format", &self.format)
                .label("threads", self.threads);
            match self.level {
                Some(level) => m.label("level", level),
                None => m,
            }
        };
        // One sample per round (`compress --rounds N`), so a comparison can test them.
        let mut out = vec![
            label(Metric::new(THROUGHPUT, Unit::MegabytesPerSecond, self.mb_per_s_samples())),
            label(Metric::new(RATIO, Unit::Ratio, vec![self.ratio])),
        ];
        let cpu_per_mb = self.cpu_s_per_mb_samples();
        if !cpu_per_mb.is_empty() {
            out.push(label(Metric::new(CPU_PER_MB, Unit::Seconds, cpu_per_mb)));
        }
        out
    }
}

impl ToMetrics for ScaleReport {
    fn to_metrics(&self) -> Vec<Metric> {
        self.steps
            .iter()
            .map(|s| {
                Metric::new(SCALE_THROUGHPUT, Unit::MegabytesPerSecond, s.mb_per_s_samples())
                    .label("codec", &self.codec)
                    .label("units", s.units)
                    .label("threads", s.threads)
            })
            .collect()
    }
}
