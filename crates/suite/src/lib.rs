//! suite: experiments of several steps, designed here so the binary only wires them.
//!
//! - [`plan`]: the report's steps — each a registered experiment with its arguments as on its
//!   command line — in page order, for the sections asked for and the mode (quick or full).
//! - [`runner`]: how a step runs (quietly, stored as it finishes, its sections on the page) and
//!   the two that need something first (a corpus file, a throwaway PostgreSQL); a step that
//!   cannot run says why in one line.
//! - [`characterise`]: `platscope report --quick|--full` — runs the plan; Ctrl-C keeps what was
//!   measured. The page's own data (the steps' run ids) is recorded too, so it can be rebuilt.
//! - [`from_db`]: a report rebuilt from stored runs — a whole `report` run, or any mix of
//!   runs, each drawing the sections it belongs to.
//! - [`figures`]: each stored report's headline figures and facts, kept compact for the fleet
//!   reader, and the backfill of stores written before they were kept.
//! - [`compare`]: two reports side by side, figure by figure; no verdict on a figure that
//!   depends on where the CPUs sit when the two were taken in different placements.
//! - [`placement`]: where the CPUs sat in each step, classified over the whole report, and the
//!   figures labelled with it.
//! - [`summary`]: the terminal summary printed after a report.
//!
//! ```
//! use suite::plan::Mode;
//! assert_eq!(Mode::Quick.name(), "quick");
//! ```

pub mod characterise;
pub mod commands;
pub mod compare;
pub mod figures;
pub mod from_db;
pub mod placement;
pub mod plan;
pub mod runner;
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
