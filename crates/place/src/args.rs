//! The command-line form of placement: numactl's options ([`PlacementOptions`]) and page sizes
//! ([`parse_page`]), shared by every command that places work or memory.

use clap::Args;

use crate::{PageSize, PlacementArgs};

/// numactl's placement options, with its list syntax (`0-3,8`, `all`, `!LIST`, `+LIST`).
/// With none given, the caller's policy and affinity apply, so platscope also runs under
/// `numactl`.
#[derive(Debug, Args, Default, Clone)]
pub struct PlacementOptions {
    /// Allocate only from these nodes.
    #[arg(long, value_name = "NODES", group = "mempolicy")]
    pub membind: Option<String>,
    /// Interleave pages across these nodes.
    #[arg(long, value_name = "NODES", group = "mempolicy")]
    pub interleave: Option<String>,
    /// Prefer this node, fall back to others when it is full.
    #[arg(long, value_name = "NODE", group = "mempolicy")]
    pub preferred: Option<String>,
    /// Allocate on the node of the CPU that first touches each page.
    #[arg(long, group = "mempolicy")]
    pub localalloc: bool,
    /// Run only on the CPUs of these nodes (numactl's older name --cpubind works too).
    #[arg(long, value_name = "NODES", conflicts_with = "physcpubind", visible_alias = "cpubind")]
    pub cpunodebind: Option<String>,
    /// Run only on these CPUs.
    #[arg(long, value_name = "CPUS")]
    pub physcpubind: Option<String>,
}

impl PlacementOptions {
    pub fn to_args(&self) -> PlacementArgs {
        PlacementArgs {
            membind: self.membind.clone(),
            interleave: self.interleave.clone(),
            preferred: self.preferred.clone(),
            localalloc: self.localalloc,
            cpunodebind: self.cpunodebind.clone(),
            physcpubind: self.physcpubind.clone(),
        }
    }
}

/// A page size for `--page`: 4k, thp, 2m or 1g.
pub fn parse_page(text: &str) -> Result<PageSize, String> {
    text.parse()
}
