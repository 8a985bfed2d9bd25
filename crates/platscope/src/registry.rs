//! Every command, one line each: the command line is built from this list, a parsed command
//! line is dispatched through it, and stored runs are read back through it
//! (`report --from-db`, `results`). Adding a capability = its crate + one line here
//! (docs/architecture.md).

use experiment::{experiment, tool, Registry};
use membench::experiments::{bandwidth, c2c, latency, slb, timer};

/// The registry of this binary.
#[rustfmt::skip]
pub static REGISTRY: Registry = Registry {
    entries: &[
        tool::<place::tools::Topo>(),
        tool::<place::tools::Place>(),
        tool::<suite::commands::report::Report>(),
        experiment::<timer::Timer>(),
        experiment::<latency::Latency>(),
        experiment::<slb::Slb>(),
        experiment::<slb::Scale>(),
        experiment::<c2c::C2c>(),
        experiment::<slb::ComparePolicies>(),
        experiment::<slb::Locks>(),
        experiment::<bandwidth::Bandwidth>(),
        experiment::<bandwidth::LoadedLatency>(),
        tool::<slb::SlbWorker>(),
        experiment::<tamp::experiments::CpuScale>(),
        experiment::<tamp::experiments::Compress>(),
        experiment::<allocbench::experiments::Alloc>(),
        tool::<allocbench::experiments::AllocWorker>(),
        experiment::<querystat::experiments::Querystat>(),
        experiment::<loadgen::experiments::Load>(),
        tool::<loadgen::experiments::Prepare>(),
        experiment::<nicstat::links::Links>(),
        experiment::<ab::Ab>(),
        tool::<suite::commands::results::List>(),
        tool::<suite::commands::results::Show>(),
        tool::<suite::commands::results::Compare>(),
        tool::<suite::commands::results::Export>(),
        tool::<suite::commands::results::Push>(),
        tool::<fleet::command::FleetCommand>(),
        tool::<exporter::commands::Textfile>(),
        tool::<exporter::commands::Serve>(),
        tool::<nicstat::command::NetStat>(),
        tool::<iopattern::command::IoPattern>(),
        experiment::<place::experiments::pagecache::Pagecache>(),
        tool::<cpuacct::command::Pstime>(),
        tool::<cpuacct::command::Util>(),
    ],
    groups: &[
        ("mem", "Memory benchmarks: latency, the Silly Little Benchmark, scaling, placement comparison"),
        ("db", "Databases: query latency, cache hits and pre-emption of PostgreSQL and MariaDB servers"),
        ("results", "Stored runs: list, show, compare, export, push, textfile"),
        ("net", "Network interfaces: nicstat's throughput, utilization and saturation"),
        ("cpu", "CPU time: exact per-process CPU over an interval (pstime) and per-CPU utilization as floating-point percentages, over an interval or exactly one command's lifetime"),
        ("io", "File I/O: how much is sequential and how much random, per filesystem (eBPF)"),
    ],
};
