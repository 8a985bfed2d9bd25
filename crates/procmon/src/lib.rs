//! procmon: what `/proc` and `/sys` say about the network and about CPU time, read honestly.
//!
//! Two layers, kept apart so that captured files can be re-parsed anywhere:
//!
//! - **Pure parsers** over text: [`netdev::parse_net_dev`] (`/proc/net/dev`),
//!   [`snmp::ProtoTable::parse`] (`/proc/net/snmp` and `/proc/net/netstat`, read by header name,
//!   never by position), [`softnet::parse_softnet_stat`], the sysfs link facts in [`link`];
//!   [`cpustat::parse_proc_stat`] (`/proc/stat`), [`task::parse_stat`] and
//!   [`task::parse_schedstat`] (`/proc/PID/stat`, `/proc/PID/schedstat` and their per-thread
//!   twins). None of them touches the system; system constants (clock ticks per second) are
//!   passed in ([`clock::ClockTicks`]).
//! - **Monitors** that read those files through an [`FsRoot`] (the live system, or a fixture tree)
//!   and turn two readings into rates: [`nicstat::Monitor`] is nicstat done without the Linux
//!   nicstat 1.95 bugs (16-bit speeds, 65535 for "unknown", unknown duplex taken as half,
//!   positional `/proc/net/netstat`, errors mixed with drops); [`pstime::Sampler`] measures the
//!   exact CPU time of every process over an interval, with the tick-sampled user/system split
//!   labelled as such; [`cpuutil::Monitor`] gives per-CPU utilization as floating-point
//!   percentages, with a slot for event-based busy time next to the tick-sampled figures.
//!
//! Every counter is subtracted through one type, [`CounterDelta`], which knows about 32- and
//! 64-bit wrap and about counters that restart because an interface was removed and re-added,
//! so a rate is never negative and never absurd.
//!
//! ```
//! use procmon::netdev::parse_net_dev;
//! use procmon::nicstat::{utilization_pct, Duplex};
//!
//! let text = "Inter-|   Receive                                                |  Transmit\n \
//!  face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n  \
//!  eth0: 125000000 100000 0 0 0 0 0 0 62500000 50000 0 0 0 0 0 0\n";
//! let devices = parse_net_dev(text).unwrap();
//! assert_eq!(devices[0].rx_bytes, 125_000_000);
//! // 125 MB in 10 s received on a 1000 Mbit/s full-duplex link: 10 % utilized.
//! let rx_bits_per_s = devices[0].rx_bytes as f64 * 8.0 / 10.0;
//! let tx_bits_per_s = devices[0].tx_bytes as f64 * 8.0 / 10.0;
//! let util = utilization_pct(rx_bits_per_s, tx_bits_per_s, Some(1000), Duplex::Full);
//! assert_eq!(util, Some(10.0));
//! ```

pub mod args;
pub mod clock;
pub mod counter;
pub mod cpustat;
pub mod cpuutil;
pub mod fsroot;
pub mod ioctl;
pub mod link;
pub mod netdev;
pub mod nicstat;
pub mod pstime;
pub mod snmp;
pub mod softnet;
pub mod task;

use std::path::PathBuf;

pub use counter::{CounterDelta, Step};
pub use fsroot::FsRoot;

/// A parse failure in one of the kernel's text formats: which line and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// 1-based line number in the text that was parsed (0 when the whole text is at fault).
    pub line: usize,
    pub message: String,
}

impl ParseError {
    pub(crate) fn new(line: usize, message: impl Into<String>) -> Self {
        Self { line, message: message.into() }
    }
}

/// A request the user can fix: bad flags or operands. The binary exits with status 2 for these.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsageError {
    #[error("unknown interface '{name}' (this network namespace has: {known})")]
    UnknownInterface { name: String, known: String },
    #[error("malformed -S '{spec}': {reason} (expected IF:SPEED[fd|hd], SPEED in Mbit/s, e.g. eth0:1000fd)")]
    BadSpeed { spec: String, reason: String },
    #[error("malformed interval '{text}': {reason}")]
    BadInterval { text: String, reason: String },
    #[error("malformed count '{text}': {reason}")]
    BadCount { text: String, reason: String },
    #[error("malformed process ID '{text}': {reason}")]
    BadPid { text: String, reason: String },
    #[error("no such process: {pid}")]
    NoSuchProcess { pid: u32 },
    #[error("{tid} is a thread of process {tgid}, not a process (give {tgid})")]
    NotAProcess { tid: u32, tgid: u32 },
}

/// Everything procmon can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: {source}")]
    Parse { path: PathBuf, source: ParseError },
    #[error(transparent)]
    Usage(#[from] UsageError),
}

impl Error {
    /// True when the command line was at fault (exit status 2), false when the system was.
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::Usage(_))
    }
}
