//! The command line: clap definitions only; each command's work lives in `commands/`.

use clap::{Args, Parser, Subcommand};
use place::{PageSize, PlacementArgs};

pub const VERSION: &str =
    concat!(env!("CARGO_PKG_VERSION"), " (git ", env!("PLATSCOPE_GIT_HASH"), ")");

/// The truth about a Linux server: memory latency and bandwidth per NUMA node, placement,
/// page cache, I/O patterns, NICs and CPU time.
#[derive(Debug, Parser)]
#[command(name = "platscope", version = VERSION, propagate_version = true, arg_required_else_help = true, subcommand_required = true)]
pub struct Cli {
    /// Print machine-readable JSON instead of text (schemas in docs/).
    #[arg(long, global = true, conflicts_with = "csv")]
    pub json: bool,

    /// Print CSV instead of text, for commands whose results are a table.
    #[arg(long, global = true)]
    pub csv: bool,

    /// Also write the run's report sections as a self-contained HTML page.
    #[arg(long, global = true, value_name = "FILE")]
    pub html_out: Option<std::path::PathBuf>,

    /// Results database (default: $XDG_DATA_HOME/platscope/results.db).
    #[arg(long, global = true, value_name = "PATH", conflicts_with = "no_store")]
    pub db: Option<std::path::PathBuf>,

    /// Do not record this run in the results database.
    #[arg(long, global = true)]
    pub no_store: bool,

    /// A command not (yet) in the registry; registry commands are dispatched before this is
    /// read (see `registry.rs`).
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show NUMA nodes, CPUs, memory per node, distances, caches and the environment facts
    /// that change memory results.
    Topo(TopoArgs),
    /// Allocate memory under a placement, first-touch it, and show on which nodes its pages
    /// really are.
    Place(PlaceArgs),
    /// Characterise this machine: topology, latency by size and node, bandwidth, loaded
    /// latency, SLB scaling and placement; writes report.html and records every run.
    Report(crate::commands::report::ReportArgs),
    /// Stored runs: list, show, compare, export.
    #[command(arg_required_else_help = true)]
    Results {
        #[command(subcommand)]
        command: crate::commands::results::ResultsCommand,
    },
    /// Memory benchmarks: latency, the Silly Little Benchmark, scaling, placement comparison.
    #[command(arg_required_else_help = true)]
    Mem {
        #[command(subcommand)]
        command: MemCommand,
    },
    /// Network interfaces: nicstat's throughput, utilization and saturation.
    #[command(arg_required_else_help = true)]
    Net {
        #[command(subcommand)]
        command: NetCommand,
    },
    /// CPU time: exact per-process CPU over an interval (pstime) and per-CPU utilization as
    /// floating-point percentages, over an interval or exactly one command's lifetime.
    #[command(arg_required_else_help = true)]
    Cpu {
        #[command(subcommand)]
        command: crate::commands::cpu::CpuCommand,
    },
    /// File I/O: how much is sequential and how much random, per filesystem (eBPF).
    #[command(arg_required_else_help = true)]
    Io {
        #[command(subcommand)]
        command: IoCommand,
    },
    /// Where a file's page cache is, per NUMA node; load it under a policy, evict it, and read
    /// it from each node's CPUs.
    Pagecache(crate::commands::pagecache::PagecacheArgs),
    /// Serve the figures as an OpenMetrics endpoint for Prometheus (/metrics, computed at
    /// scrape time), on localhost unless --listen says otherwise.
    Serve(crate::commands::serve::ServeArgs),
    /// Run a compatibility tool by name (as if invoked through a link of that name):
    /// memhammer, create_sem, trigger, cpu_bind, thread_read, nicstat, pstime.
    Compat {
        /// The tool's name.
        name: String,
        /// Its arguments, exactly as the original tool takes them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
}

#[derive(Debug, Subcommand)]
pub enum IoCommand {
    /// Reads and writes per filesystem split into sequential, random and page (mmap) I/O,
    /// with lookups, readdir, getattr/setattr, create/remove and other calls per second
    /// (seed 004's table). Needs root: BPF on tracepoints.
    Pattern(crate::commands::io::PatternArgs),
}

#[derive(Debug, Subcommand)]
pub enum NetCommand {
    /// nicstat: KB/s, packets/s, %Util and Sat per interface; -x errors, drops and softnet,
    /// -t TCP, -u UDP, -l list (the same flags as the `nicstat` compat name).
    Stat(crate::commands::net::NetStatArgs),
}

#[derive(Debug, Subcommand)]
pub enum MemCommand {
    /// Idle load-to-use latency by pointer chasing: one size, a size sweep, or a node×node
    /// matrix.
    Latency(LatencyArgs),
    /// The Silly Little Benchmark: random 8-byte stores to 4 KiB pages, workers released
    /// together; prints memhammer's line per worker.
    Slb(SlbArgs),
    /// The SLB at 1, 2, 4 … workers with the "times slower" column against one worker.
    Scale(ScaleArgs),
    /// Core to core: the round trip of one cache line handed back and forth between every pair
    /// of CPUs, as a CPU×CPU matrix folded to SMT sibling / same L3 / same node / other node
    /// and node×node, median and p99, with the line's home node placed and verified.
    C2c(C2cArgs),
    /// The same SLB scenario under local, interleaved and remote memory, side by side.
    ComparePolicies(SlbWorkArgs),
    /// Bandwidth: read, read-line, write, write-nt, copy, triad; per node pair (--matrix) or
    /// by thread count (--scale).
    Bandwidth(crate::commands::bandwidth::BandwidthArgs),
    /// Latency under load: one chasing CPU, the others streaming with a delay swept from none
    /// to idle — the latency-versus-bandwidth curve.
    LoadedLatency(crate::commands::bandwidth::LoadedLatencyArgs),
    /// Internal: one worker process of `mem slb --processes`, started by the parent.
    #[command(hide = true)]
    SlbWorker(SlbWorkerArgs),
}

#[derive(Debug, Args)]
pub struct LatencyArgs {
    /// Buffer to chase through (default: 4× the last-level cache, at least 256 MiB).
    #[arg(long, value_parser = parse_size, allow_hyphen_values = true, conflicts_with = "sweep")]
    pub size: Option<u64>,
    /// Sweep sizes from --from to --to (powers of two and midpoints) to show each cache level.
    #[arg(long)]
    pub sweep: bool,
    #[arg(long, value_parser = parse_size, default_value = "16KiB", requires = "sweep")]
    pub from: u64,
    #[arg(long, value_parser = parse_size, default_value = "1GiB", requires = "sweep")]
    pub to: u64,
    /// Every (CPU node, memory node) pair, as a node×node table.
    #[arg(long, conflicts_with = "sweep")]
    pub matrix: bool,
    /// Page size: 4k (THP kept out), thp, 2m or 1g; larger pages remove page-walk cost.
    #[arg(long, default_value = "4k", value_parser = parse_page)]
    pub page: PageSize,
    /// Bytes between chased slots (a multiple of 8; 64 = one per cache line; wider slots keep
    /// their pointer in a cache line picked at random within the slot, so every cache set is used).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(8..=1 << 20))]
    pub stride: u64,
    /// TLB-locality window in pages: the chase stays within a random group of this many pages
    /// before moving on; 0 = fully random over the whole buffer (every load may miss the TLB).
    #[arg(long, default_value_t = 64)]
    pub tlb_group: u64,
    /// Sampling time per figure, in milliseconds.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(10..=600_000))]
    pub duration_ms: u64,
    #[command(flatten)]
    pub placement: PlacementOptions,
}

/// PAGES, LOOPS and page size: the work every SLB worker does.
#[derive(Debug, Args)]
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

#[derive(Debug, Args)]
pub struct SlbArgs {
    #[command(flatten)]
    pub work: SlbWorkArgs,
    /// One worker per listed CPU (numactl list syntax), instead of --workers.
    #[arg(long, value_name = "LIST", conflicts_with = "workers")]
    pub cpus: Option<String>,
    /// One process per worker, as the original memhammer runs were, instead of one thread
    /// each; released together by a private System V semaphore.
    #[arg(long, conflicts_with = "shared")]
    pub processes: bool,
    /// All workers store into one shared memory region (System V, placed with the placement
    /// options and verified) instead of their own: the seed's "Shared Memory".
    #[arg(long)]
    pub shared: bool,
    /// With --shared: the lock taken in shared memory around every store (and the shared
    /// counter bumped under it): spin, ticket, mutex (futex) or none.
    #[arg(long, requires = "shared", default_value = "none", value_parser = parse_lock)]
    pub lock: membench::slb_shared::LockKind,
    /// With --shared: hot counters in the shared region, each alone on its cache line; every
    /// operation adds one to a pseudo-random one of them.
    #[arg(long, requires = "shared", default_value_t = 1, value_parser = parse_count)]
    pub counters: u64,
    #[command(flatten)]
    pub placement: PlacementOptions,
}

#[derive(Debug, Args)]
pub struct C2cArgs {
    /// CPUs whose every pair is measured (numactl list syntax; default: the allowed CPUs).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// How the line is polled and handed over: read (loads, then a store; multichase -u),
    /// write (locked read-modify-write polls), cas (compare-and-swap; multichase -l), xchg.
    #[arg(long, default_value = "read", value_parser = parse_c2c_mode)]
    pub mode: membench::c2c::C2cMode,
    /// Bind the line's page to this node (it must have CPUs and memory); default: first
    /// touched by the first CPU's thread.
    #[arg(long, value_name = "NODE")]
    pub line_on: Option<u32>,
    /// Sampling time per pair, in milliseconds.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(10..=600_000))]
    pub duration_ms: u64,
}

/// Parses a lock name for `--lock`.
pub fn parse_lock(text: &str) -> Result<membench::slb_shared::LockKind, String> {
    membench::slb_shared::LockKind::parse(text).map_err(|e| e.to_string())
}

fn parse_c2c_mode(text: &str) -> Result<membench::c2c::C2cMode, String> {
    membench::c2c::C2cMode::parse(text).map_err(|e| e.to_string())
}

/// The request a `mem slb --processes` parent gives each worker process.
#[derive(Debug, Args)]
pub struct SlbWorkerArgs {
    /// The worker's request, as JSON (`membench::slb::SlbChildRequest`).
    pub request: String,
}

#[derive(Debug, Args)]
pub struct ScaleArgs {
    /// 4 KiB pages each worker allocates and initializes.
    #[arg(long, value_parser = parse_count, allow_hyphen_values = true)]
    pub pages: u64,
    /// Passes: each worker does PAGES × LOOPS random stores.
    #[arg(long, value_parser = parse_count, allow_hyphen_values = true)]
    pub loops: u64,
    /// Worker counts to run (default 1, 2, 4 … up to the allowed CPUs).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_count)]
    pub workers: Option<Vec<u64>>,
    #[arg(long, default_value = "4k", value_parser = parse_page)]
    pub page: PageSize,
    #[command(flatten)]
    pub placement: PlacementOptions,
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

pub fn parse_size(text: &str) -> Result<u64, String> {
    topo::units::parse_bytes(text).map_err(|e| e.to_string())
}

/// A positive whole number; the message says what was wrong.
pub fn parse_count(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!("{t:?} is negative; give a whole number of at least 1"));
    }
    match t.parse::<u64>() {
        Ok(0) => Err("0 is not allowed; give a whole number of at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => {
            Err(format!("{t:?} is too large (at most {})", u64::MAX))
        }
        Err(_) => Err(format!("{t:?} is not a whole number")),
    }
}

pub fn parse_page(text: &str) -> Result<PageSize, String> {
    text.parse()
}

impl Cli {
    /// Where this invocation's results go.
    pub fn store_options(&self) -> results::StoreOptions {
        results::StoreOptions { db: self.db.clone(), no_store: self.no_store }
    }

    /// What every registry command gets from the global flags.
    pub fn globals(&self) -> experiment::Globals {
        let format = match (self.json, self.csv) {
            (true, _) => experiment::Format::Json,
            (_, true) => experiment::Format::Csv,
            _ => experiment::Format::Text,
        };
        experiment::Globals {
            format,
            store: self.store_options(),
            html_out: self.html_out.clone(),
            version: VERSION,
            // The clock every batch in this run was timed with, and why it was trusted.
            late_parameters: Some(
                || serde_json::json!({ "clock": membench::timers::clock_in_use() }),
            ),
        }
    }
}
