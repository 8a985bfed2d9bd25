//! Putting work and memory somewhere, and checking where they went.
//!
//! - [`lists`]: CPU and node lists in numactl's syntax, validated against the [`Topology`];
//! - [`pin`]: thread and process CPU affinity;
//! - [`MemPolicy`]: bind, interleave, preferred, local, or inherit (the default, so platscope
//!   also runs under `numactl`);
//! - [`PageSize`]: 4 KiB (no THP), THP, hugetlb 2 MiB and 1 GiB; [`describe_pages`]: what a
//!   run got, THP read back per page (root) or from `smaps`, not what it asked for;
//! - [`Arena`]: memory with a policy and page size, first-touched by its owner, refusing to
//!   take more than its nodes have, and reporting its [`Placement`] as the kernel sees it;
//! - [`pages_nodes`]: the node of the page at any mapped address (`move_pages` as a query);
//! - [`pagecache`]: where a file's page cache is, loading it under a policy, dropping it, and
//!   reading it from a chosen CPU;
//! - [`PlacementArgs`] and [`parse_page`]: numactl's options and page sizes as command-line
//!   arguments;
//! - [`experiments::pagecache`]: `platscope pagecache` behind the experiment seam;
//! - [`tools`]: the `topo` and `place` views.
//!
//! ```no_run
//! use place::{Arena, ArenaSpec, MemPolicy, PageSize};
//! let topology = topo::Topology::detect()?;
//! let spec = ArenaSpec { bytes: 64 << 20, policy: MemPolicy::Bind(vec![0]), page: PageSize::Base };
//! let arena = Arena::new(spec, &topology)?;
//! let placement = arena.placement()?;
//! assert!(placement.all_on(&[0]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod arena;
pub mod experiments;
mod huge;
pub mod limits;
pub mod lists;
pub mod pagecache;
mod pagenodes;
mod pages;
pub mod pin;
mod policy;
pub mod render;
pub mod render_pagecache;
mod request;
pub mod tools;

pub use arena::{anon_huge_bytes_in, pages_label_of, Arena, ArenaSpec, NodePages, Placement};
pub use huge::{describe_pages, HugeSource};
pub use pagenodes::{merge_node_pages, pages_nodes, tally_nodes};
pub use pages::{parse_page, PageSize};
pub use policy::{thread_policy, MemPolicy, ThreadPolicy};
pub use render::placement_text;
pub use request::{PlacementArgs, PlacementRequest};
pub use topo::Topology;

/// Why placement failed. [`PlaceError::is_usage`] tells a bad request from a runtime failure.
#[derive(Debug, thiserror::Error)]
pub enum PlaceError {
    #[error("invalid {kind} list {input:?}: {reason} (valid {kind}s: {valid})")]
    InvalidList { kind: &'static str, input: String, reason: String, valid: String },
    #[error("{kind} {id} does not exist (valid {kind}s: {valid})")]
    NoSuchId { kind: &'static str, id: u32, valid: String },
    #[error("CPU {id} is offline (online CPUs: {online})")]
    CpuOffline { id: u32, online: String },
    #[error("node {node} has no memory (nodes with memory: {with_memory})")]
    NodeWithoutMemory { node: u32, with_memory: String },
    #[error("node {node} has no CPUs to run on (nodes with CPUs: {with_cpus})")]
    NodeWithoutCpus { node: u32, with_cpus: String },
    #[error("conflicting options: {0}")]
    Conflict(String),
    #[error("{requested} requested but node(s) {nodes} have only {available} available (free plus reclaimable page cache); use a smaller size or other nodes")]
    InsufficientMemory { requested: String, available: String, nodes: String },
    #[error("{requested} requested (and {headroom} the run needs besides the buffer) but {limit}; use a smaller size or {fix}")]
    OverLimit { requested: String, headroom: String, limit: String, fix: &'static str },
    #[error(transparent)]
    Interrupted(#[from] measure::stop::Interrupted),
    #[error("size {0} bytes is too large for this machine's address space")]
    TooLarge(u64),
    #[error("not enough free {page} huge pages ({detail}); as root, reserve them with `echo N > {}` (per node: /sys/devices/system/node/nodeN/hugepages/hugepages-{}kB/nr_hugepages)", page.pool_sysctl(), page.bytes() >> 10)]
    HugePages { page: PageSize, detail: String },
    #[error("process {0} does not exist")]
    NoSuchProcess(i32),
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    #[error("{call} failed: {source}")]
    Syscall {
        call: &'static str,
        #[source]
        source: std::io::Error,
    },
}

impl PlaceError {
    /// Whether the request itself was wrong (exit code 2) rather than the system refusing
    /// something (exit code 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            PlaceError::InvalidList { .. }
                | PlaceError::NoSuchId { .. }
                | PlaceError::CpuOffline { .. }
                | PlaceError::NodeWithoutMemory { .. }
                | PlaceError::NodeWithoutCpus { .. }
                | PlaceError::Conflict(_)
                | PlaceError::InsufficientMemory { .. }
                | PlaceError::OverLimit { .. }
                | PlaceError::TooLarge(_)
        )
    }
}

impl measure::Usage for PlaceError {
    fn is_usage(&self) -> bool {
        PlaceError::is_usage(self)
    }
}
