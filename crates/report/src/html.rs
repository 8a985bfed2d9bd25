//! The self-contained HTML report of `platscope report`: inline SVG charts, no scripts from the
//! network, opens from a file.

use membench::bandwidth::{BandwidthMatrix, Scaling};
use membench::latency::{LatencyMatrix, LatencyPoint, PrefetchCheck};
use membench::loaded::LoadedCurve;
use membench::slb::SlbResult;
use serde::{Deserialize, Serialize};
use topo::Topology;

/// Everything one `platscope report` run measured. Sections that were skipped are `None` (or
/// empty) and explained in `notes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportData {
    /// `quick` or `full`.
    pub mode: String,
    /// UTC, RFC 3339.
    pub generated_at: String,
    /// platscope version and git commit.
    pub version: String,
    pub topology: Topology,
    /// Latency vs working-set size, smallest first, measured from `sweep_cpu`.
    pub latency_sweep: Vec<LatencyPoint>,
    pub sweep_cpu: Option<u32>,
    pub prefetch_check: Option<PrefetchCheck>,
    pub latency_matrix: Option<LatencyMatrix>,
    pub bandwidth_matrix: Option<BandwidthMatrix>,
    pub bandwidth_scaling: Option<Scaling>,
    pub loaded_latency: Option<LoadedCurve>,
    /// SLB at 1, 2, 4 … workers.
    pub slb_scaling: Vec<SlbResult>,
    /// SLB under (policy name, result or why it was skipped).
    pub slb_policies: Vec<(String, Result<SlbResult, String>)>,
    /// (what, run id in the results database).
    pub stored_runs: Vec<(String, i64)>,
    /// Where the results database is, if runs were stored.
    pub database: Option<String>,
    /// Sections skipped or caveats, one sentence each.
    pub notes: Vec<String>,
}
