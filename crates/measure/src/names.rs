//! The stored metric names that crates other than the one measuring them key on: the exporter
//! reads the latest of each from the results store and turns it into a Prometheus family.
//!
//! They live here, not in the benchmark crates, so a reader needs no benchmark to name them;
//! `membench::metrics` and `place::pagecache` re-export them and write metrics under them. The
//! names are a contract (stored runs, comparisons across versions, the exported families): never
//! rename one.

/// Idle latency of a dependent-load chase (`membench`).
pub const LATENCY: &str = "mem_latency";
/// Aggregate bandwidth of all threads (`membench`).
pub const BANDWIDTH: &str = "mem_bandwidth";
/// Chase latency while load threads run (`membench`).
pub const LOADED_LATENCY: &str = "mem_loaded_latency";
/// Bandwidth the load threads achieved at that point (`membench`).
pub const LOAD_BANDWIDTH: &str = "mem_load_bandwidth";
/// One SLB worker's nanoseconds per store (`membench`).
pub const SLB_NS_PER_OP: &str = "slb_ns_per_op";
/// Read rates per file and node, labelled; the file's cached pages per node as its placement
/// (`place`'s page-cache experiment).
pub const PAGECACHE_READ: &str = "pagecache_read_bandwidth";
