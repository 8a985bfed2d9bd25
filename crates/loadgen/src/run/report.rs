//! What a run reports: one line per interval and the whole run's figures (what is stored).

use std::collections::BTreeMap;

use measure::hist::Log2Hist;
use serde::{Deserialize, Serialize};

use super::{Outage, Protocol};
use crate::cost::Cost;
use crate::driver::ServerKind;
use crate::schedule::Arrivals;
use crate::stats::Percentiles;

/// One interval's line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalLine {
    /// End of the interval, s after the first intended start.
    pub end_s: f64,
    pub completed: u64,
    /// Completed per second in the interval.
    pub rate: f64,
    pub latency: Percentiles,
    pub late: u64,
    pub skipped: u64,
    pub errors: u64,
    /// Connections without a working connection at the end of the interval.
    #[serde(default)]
    pub down: u32,
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    /// Stored as `postgres` / `maria_db`, as it always was.
    #[serde(serialize_with = "ServerKind::serialize_snake")]
    pub server: ServerKind,
    pub target: String,
    pub workload: String,
    pub protocol: Protocol,
    pub arrivals: Arrivals,
    pub offered_rate: f64,
    pub connections: u32,
    /// From the first intended start to the end of the schedule or the last completion,
    /// whichever is later (to the stop when interrupted), s.
    pub elapsed_s: f64,
    /// Transactions whose intended start came.
    pub scheduled: u64,
    pub completed: u64,
    /// Failed after retries (counted in `errors` by SQLSTATE).
    pub failed: u64,
    pub late: u64,
    pub late_after_ms: f64,
    pub skipped: u64,
    pub max_lag_ms: Option<f64>,
    /// Due before the end of `--duration` but not started by then (the run was behind).
    pub unstarted: u64,
    pub retries: u64,
    /// Statement failures by SQLSTATE (retried ones included).
    pub errors: BTreeMap<String, u64>,
    pub achieved_rate: f64,
    /// Completion − intended start.
    pub latency: Percentiles,
    /// Completion − actual start (what a closed-loop tool reports).
    pub service: Percentiles,
    /// Actual start − intended start.
    pub lag: Percentiles,
    /// How late the driver itself was: of the transactions whose connection was idle, waiting
    /// for their intended start, how long after it the driver woke and sent (its timer and the
    /// scheduler). The schedule lag beyond this is queueing behind the connection's previous
    /// transaction, the server's time. Zero in runs stored before it was measured.
    #[serde(default)]
    pub driver_late: Percentiles,
    /// Latency, µs, in DTrace's log2 buckets.
    pub latency_log2_us: Log2Hist,
    pub intervals: Vec<IntervalLine>,
    pub cost: Option<Cost>,
    pub cost_unavailable: Option<String>,
    /// Why the run ended early (Ctrl-C, the server went away); what was measured is kept.
    pub interrupted: Option<String>,
    /// Windows in which the server was away and the run rode through (reconnecting).
    #[serde(default)]
    pub outages: Vec<Outage>,
}
