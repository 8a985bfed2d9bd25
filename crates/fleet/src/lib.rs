//! fleet: many hosts, one store — *which of my servers is slower than its siblings, since
//! when, and what changed on it then?* (`platscope fleet`).
//!
//! It reads the compact record every stored report leaves ([`results::fleet::ReportFigures`]:
//! who, when, the machine facts, the headline figures) and answers from them alone:
//!
//! - [`facts`]: hosts grouped by the hardware that makes their figures comparable;
//! - [`series`]: one series per host and figure, in time order;
//! - [`noise`]: each figure's run-to-run noise in each class, from the hosts' own histories;
//! - [`outliers`]: a host's current value off its class by more than that noise and more than
//!   the class's own spread;
//! - [`edivisive`]: change points per host and figure by E-divisive means with a permutation
//!   test (as Apache Otava and MongoDB's signal-processing-algorithms do), and [`changes`]:
//!   the configuration facts that changed at each, and the changes of facts that moved nothing;
//! - [`analysis`]: all of it, as the JSON `--json` prints; [`text`] and [`page`] draw it;
//! - [`command`]: `platscope fleet`.
//!
//! With the feature `synthetic` (for tests and benches only), `fleet::synthetic` builds a
//! fleet from a few real reports of one host, with known shifts.
//!
//! ```
//! use fleet::analysis::{analyse, Options};
//! use fleet::synthetic::{generate, Plan};
//! # let real = fleet::synthetic::made_up_machine(
//! #     &[("Idle DRAM latency", "ns", 100.0, 1.0), ("Peak bandwidth", "GB/s", 20.0, -0.2)],
//! #     &[("Kernel", "6.1")]);
//! // `real`: a few real reports of one host (their spread is its noise).
//! let (reports, truth) = generate(&real, &Plan::new(12, 20, 2, 1)).unwrap();
//! let analysis = analyse(&reports, &Options::default());
//! assert_eq!(analysis.report.hosts, 12);
//! assert_eq!(analysis.report.classes.len(), 2);
//! let steady = truth.steady.as_ref().unwrap();
//! assert!(analysis.report.outliers.iter().any(|o| o.host == steady.host));
//! ```

pub mod analysis;
pub mod changes;
pub mod command;
pub mod edivisive;
pub mod facts;
pub mod noise;
pub mod outliers;
pub mod page;
pub mod series;
#[cfg(feature = "synthetic")]
pub mod synthetic;
pub mod text;
pub mod window;

/// What the fleet reader refuses, each in one line that names the fix.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error(
        "{flag} {value:?} is not a date: give YYYY-MM-DD (UTC), an RFC 3339 time \
         (2026-03-01T12:00:00Z) or an age (30d, 12h)"
    )]
    BadDate { flag: &'static str, value: String },
    #[error("--since {since} is not before --until {until}: no report can be in between")]
    EmptyWindow { since: String, until: String },
    #[error("--hosts {pattern:?}: {why}; give shell patterns separated by commas (db-*,web-0?)")]
    BadPattern { pattern: String, why: String },
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Runtime(String),
}

impl measure::Usage for FleetError {
    fn is_usage(&self) -> bool {
        !matches!(self, FleetError::Runtime(_))
    }
}
