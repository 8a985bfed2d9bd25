//! The Silly Little Benchmark's commands, one file each: `mem slb` (threads, `--processes`,
//! `--shared` with a lock), `mem scale` (1, 2, 4 … workers, "times slower"), `mem
//! compare-policies` (local, interleaved, remote memory), `mem locks` (each lock at 1, 2, 4 …
//! workers, then the spinlock's placements) and the hidden `mem slb-worker` that
//! `--processes` starts; `legacy` reads back the steps earlier versions' reports stored.

mod compare_policies;
mod legacy;
mod locks;
mod mem_slb;
mod scale;
mod slb_worker;

pub use compare_policies::{ComparePolicies, PoliciesOutcome, PolicyRow};
pub use locks::{Locks, LocksArgs, LocksOutcome};
pub use mem_slb::{Slb, SlbArgs, SlbOutcome};
pub use scale::{Scale, ScaleArgs, ScaleOutcome};
pub use slb_worker::{SlbWorker, SlbWorkerArgs};

use measure::args::parse_count;
use place::{parse_page, PageSize};

use crate::scenarios::SlbWork;

// PAGES, LOOPS and page size: the work every SLB worker does (`mem compare-policies`' own
// arguments; a doc comment here would replace its ABOUT).
#[derive(Debug, clap::Args)]
pub struct SlbWorkArgs {
    /// 4 KiB pages each worker allocates and initializes.
    #[arg(long, value_parser = parse_count, allow_hyphen_values = true)]
    pub pages: u64,
    /// Passes: each worker does PAGES × LOOPS random stores.
    #[arg(long, value_parser = parse_count, allow_hyphen_values = true)]
    pub loops: u64,
    /// Number of workers, pinned one per CPU over the allowed CPUs (default 1).
    #[arg(long, value_parser = parse_count, allow_hyphen_values = true)]
    pub workers: Option<u64>,
    /// Page size backing each worker's memory.
    #[arg(long, default_value = "4k", value_parser = parse_page)]
    pub page: PageSize,
}

impl SlbWorkArgs {
    fn work(&self) -> SlbWork {
        SlbWork { pages: self.pages, loops: self.loops, page: self.page }
    }
}
