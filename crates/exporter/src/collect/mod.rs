//! Collectors: each computes its families at scrape time.

pub mod bench;

use crate::Family;

/// What went wrong collecting one source. A failing collector does not fail the scrape: its
/// error is counted in `platscope_scrape_collector_success{collector}` and the others answer.
#[derive(Debug, thiserror::Error)]
#[error("{collector}: {message}")]
pub struct CollectError {
    /// The collector's name.
    pub collector: &'static str,
    /// What failed, one line.
    pub message: String,
}

/// A source of metric families, asked at every scrape.
pub trait Collector: Send + Sync + std::fmt::Debug {
    /// Short name, as given to `--collect` (`nic`, `cpu`, `process`, `io`, `pagecache`, `bench`).
    fn name(&self) -> &'static str;
    /// Appends this source's families to `out`.
    fn collect(&self, out: &mut Vec<Family>) -> Result<(), CollectError>;
}
