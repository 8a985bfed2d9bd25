//! suite: experiments of several steps, designed here so the binary only wires them.
//!
//! - [`characterise`]: `platscope report --quick|--full` — latency by size, the prefetch check,
//!   node×node latency and bandwidth, bandwidth by threads, loaded latency, the SLB by workers
//!   and by placement. Each step is recorded as it finishes; a failing step becomes a note and
//!   the others still run; Ctrl-C keeps what was measured. The whole page's data is recorded
//!   too, so the page can be rebuilt.
//! - [`sections`]: the report's sections beyond memory (contention, CPU, compression,
//!   allocators, a throwaway PostgreSQL, network), each composed of registered experiments.
//! - [`from_db`]: a report rebuilt from stored runs — a whole `report` run, or any mix of
//!   runs, each drawing the sections it belongs to.
//! - [`summary`]: the terminal summary printed after a report.
//!
//! ```
//! use suite::characterise::Mode;
//! assert_eq!(Mode::Quick.name(), "quick");
//! ```

pub mod characterise;
pub mod commands;
pub mod compare;
pub mod from_db;
pub mod sections;
pub mod summary;

/// Why an experiment could not run.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error(transparent)]
    Place(#[from] place::PlaceError),
    #[error(transparent)]
    Record(#[from] results::RecordError),
    #[error(transparent)]
    Store(#[from] results::StoreError),
    #[error(transparent)]
    ReadBack(#[from] experiment::ReadBackError),
    #[error("run {id} ({command}) cannot be shown in a report: {why}")]
    NotReportable { id: i64, command: String, why: String },
}

impl SuiteError {
    /// Whether the request was wrong (exit code 2).
    pub fn is_usage(&self) -> bool {
        match self {
            SuiteError::Place(e) => e.is_usage(),
            SuiteError::Store(e) => e.is_usage(),
            SuiteError::Record(_) => false,
            SuiteError::ReadBack(_) => true,
            SuiteError::NotReportable { .. } => true,
        }
    }
}

impl measure::Usage for SuiteError {
    fn is_usage(&self) -> bool {
        SuiteError::is_usage(self)
    }
}
