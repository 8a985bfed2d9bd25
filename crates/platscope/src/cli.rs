//! The command line: clap definitions only; each command's work lives in `commands/`.

use clap::{Args, Parser, Subcommand};
use place::{PageSize, PlacementArgs};

pub const VERSION: &str =
    concat!(env!("CARGO_PKG_VERSION"), " (git ", env!("PLATSCOPE_GIT_HASH"), ")");

/// The truth about a Linux server: memory latency and bandwidth per NUMA node, placement,
/// page cache, I/O patterns, NICs and CPU time.
#[derive(Debug, Parser)]
#[command(name = "platscope", version = VERSION, propagate_version = true)]
pub struct Cli {
    /// Print machine-readable JSON instead of text (schemas in docs/).
    #[arg(long, global = true)]
    pub json: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show NUMA nodes, CPUs, memory per node, distances, caches and the environment facts
    /// that change memory results.
    Topo(TopoArgs),
    /// Allocate memory under a placement, first-touch it, and show on which nodes its pages
    /// really are.
    Place(PlaceArgs),
}

#[derive(Debug, Args)]
pub struct TopoArgs {
    /// Print the same layout as `numactl --hardware`.
    #[arg(long, conflicts_with = "json")]
    pub hardware: bool,
}

#[derive(Debug, Args)]
pub struct PlaceArgs {
    /// How much to allocate: bytes or a binary unit (64MiB, 1GiB, 4k).
    #[arg(long, value_parser = parse_size, allow_hyphen_values = true)]
    pub size: u64,

    /// Page size: 4k (THP kept out), thp, 2m or 1g (hugetlb pools).
    #[arg(long, default_value = "4k", value_parser = parse_page)]
    pub page: PageSize,

    #[command(flatten)]
    pub placement: PlacementOptions,
}

/// numactl's placement options, with its list syntax (`0-3,8`, `all`, `!LIST`, `+LIST`).
/// With none given, the caller's policy and affinity apply, so platscope also runs under
/// `numactl`.
#[derive(Debug, Args, Default)]
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
    /// Run only on the CPUs of these nodes.
    #[arg(long, value_name = "NODES", conflicts_with = "physcpubind")]
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

fn parse_size(text: &str) -> Result<u64, String> {
    topo::units::parse_bytes(text).map_err(|e| e.to_string())
}

fn parse_page(text: &str) -> Result<PageSize, String> {
    text.parse()
}
