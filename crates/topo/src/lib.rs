//! Machine topology as a memory engineer needs to see it.
//!
//! [`Topology::detect`] combines hwloc (nodes, CPUs, caches, SMT, SLIT distances) with sysfs
//! (per-node memory use, huge page pools, HMAT, offline CPUs) and the [`Environment`] facts that
//! change memory results (THP, NUMA balancing, clocksource, governor, hypervisor).
//! [`Topology::from_synthetic`] and [`Topology::from_xml`] build the same model from hwloc's fake
//! topologies, so logic that depends on the layout can be tested anywhere.
//! [`facts::machine_facts`] turns a topology into the table of machine facts a report shows
//! (CPU, microcode, caches, TLBs from [`cpuid`], page sizes, memory devices, kernel settings,
//! mitigations), and [`facts::config_diff`] lists what differs between two machines.
//!
//! ```
//! let topo = topo::Topology::from_synthetic("pack:2 [numa(memory=1GB)] core:2 pu:2").unwrap();
//! assert_eq!(topo.node_ids(), vec![0, 1]);
//! assert_eq!(topo.node(1).unwrap().cpus, vec![4, 5, 6, 7]);
//! assert_eq!(topo::idlist::format(&topo.online_cpu_ids()), "0-7");
//! ```

pub mod cpuid;
mod discover;
mod environment;
pub mod facts;
pub mod idlist;
mod model;
pub mod render;
pub mod smbios;
pub mod sysfs;
pub mod units;

pub use environment::{hypervisor_name, Bios, Environment, Governor};
pub use facts::{
    config_diff, machine_facts, Difference, Fact, FactValue, MemorySource, MemoryTotal, Unrecorded,
};
pub use model::{
    Cache, CacheKind, Cpu, Distances, HmatAccess, HugePagePool, Machine, Node, NodeMemory, Topology,
};
pub use render::{numactl_hardware, topology_text};

/// Why a topology could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TopoError {
    #[error("hwloc could not read this machine's topology: {0}")]
    Hwloc(String),
    #[error("invalid synthetic topology {0:?}: {1}")]
    Synthetic(String, String),
    #[error("invalid hwloc XML topology: {0}")]
    Xml(String),
}
