//! What to run: the rate, the connections, the workload and protocol, when to stop, and what
//! a connection does when the server goes away.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::schedule::Arrivals;
use crate::workload::WorkloadKind;

/// Simple (text) or prepared (extended) protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    Simple,
    Prepared,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Simple => "simple",
            Protocol::Prepared => "prepared",
        }
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Offered transactions per second, all connections together.
    pub rate: f64,
    pub arrivals: Arrivals,
    pub connections: u32,
    /// Stop scheduling after this long (from the first intended start).
    pub duration: Option<Duration>,
    /// Or after this many transactions.
    pub transactions: Option<u64>,
    pub workload: WorkloadKind,
    pub protocol: Protocol,
    /// Seconds between interval lines.
    pub interval: Duration,
    /// Skip transactions that could only start this late (counted as skipped).
    pub max_lag: Option<Duration>,
    /// A transaction that starts later than this after its intended start counts as late.
    pub late_after: Duration,
    /// Retries of a transaction that failed with a SQLSTATE of class 40 (serialization failure,
    /// deadlock).
    pub retry: u32,
    /// Seed of the schedule jitter and of the parameters.
    pub seed: u64,
    /// The server's main process, when it cannot be found through the connection.
    pub server_pid: Option<u32>,
    /// What a connection does when the server goes away.
    pub on_disconnect: OnDisconnect,
}

/// What a connection does when the server goes away mid-run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnDisconnect {
    /// Reconnect with bounded backoff and keep the schedule: transactions due while there is
    /// no connection fail, counted by cause (failover testing).
    #[default]
    Reconnect,
    /// End the run there, keeping what was measured (the first lost connection stops all).
    Stop,
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            rate: 100.0,
            arrivals: Arrivals::Fixed,
            connections: 1,
            duration: Some(Duration::from_secs(10)),
            transactions: None,
            workload: WorkloadKind::PointSelect,
            protocol: Protocol::Prepared,
            interval: Duration::from_secs(1),
            max_lag: None,
            late_after: Duration::from_millis(5),
            retry: 0,
            seed: 1,
            server_pid: None,
            on_disconnect: OnDisconnect::Reconnect,
        }
    }
}
