//! What the fleet reader (`platscope fleet`) needs of each stored report, kept compact: who ran
//! it and when, the machine and configuration facts it ran under, and its headline figures,
//! each a median with its spread. One row per report and one per headline figure, written when a
//! report is stored or pushed (and for stores written before, on the fleet reader's first read),
//! so a fleet of thousands of hosts × months of daily reports is read without its heavy runs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One report's headline figures and the facts it was measured under.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReportFigures {
    /// The `report` run's UUID: the same in every store the run is pushed to.
    pub uuid: String,
    /// The host that recorded it.
    pub host: String,
    /// As stored: `2026-11-23T21:57:23.123Z` (UTC).
    pub recorded_at: String,
    /// platscope's version line when it ran.
    pub version: String,
    /// The machine table of the report (`topo::machine_facts`: setting → value): the hardware
    /// that classes hosts and the configuration whose changes explain a shift.
    pub facts: BTreeMap<String, String>,
    pub figures: Vec<HeadlineFigure>,
}

/// One headline figure of a report, as its summary names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadlineFigure {
    /// The page's area (`Memory`, `Compression`).
    pub area: String,
    /// The figure's name as the report shows it (`idle DRAM latency`).
    pub name: String,
    /// The stored metric that backs it (`Metric::key`).
    pub metric: String,
    /// The unit's symbol (`ns`, `GB/s`): also which way is better.
    pub unit: String,
    pub median: f64,
    pub p25: f64,
    pub p75: f64,
    /// How many samples the median is of.
    pub samples: u32,
}
