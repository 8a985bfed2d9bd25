//! The topology as platscope reports it: plain data, serializable, independent of hwloc.

use serde::{Deserialize, Serialize};

/// Everything platscope knows about the machine's layout and the settings that change memory
/// results. Built by [`crate::Topology::detect`] on a live system, or from a synthetic or XML
/// description in tests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// Where the description came from: `live`, `synthetic: …` or `xml`.
    pub source: String,
    pub machine: Machine,
    /// NUMA nodes, ascending by id.
    pub nodes: Vec<Node>,
    /// Every CPU the kernel knows, online or not, ascending by id.
    pub cpus: Vec<Cpu>,
    /// Data and unified caches (instruction caches are left out), by level then first CPU.
    pub caches: Vec<Cache>,
    /// The firmware's relative node distances (ACPI SLIT): 10 means local.
    pub distances: Option<Distances>,
    /// Measured-by-firmware access figures (ACPI HMAT) when the kernel exposes them.
    pub hmat: Vec<HmatAccess>,
    /// The settings that change memory results; absent for synthetic and XML topologies.
    pub environment: Option<crate::Environment>,
}

/// CPU identity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    pub architecture: Option<String>,
    pub cpu_vendor: Option<String>,
    pub cpu_model: Option<String>,
    pub packages: usize,
    pub cores: usize,
    /// Family, model and stepping as `/proc/cpuinfo` gives them (x86); `None` elsewhere and in
    /// topologies stored before platscope recorded them.
    #[serde(default)]
    pub family: Option<u32>,
    #[serde(default)]
    pub model_number: Option<u32>,
    #[serde(default)]
    pub stepping: Option<u32>,
    /// The microcode revision the kernel reports (`/proc/cpuinfo` `microcode`, e.g. `0x1000065`);
    /// hypervisors often hide or fake it.
    #[serde(default)]
    pub microcode: Option<String>,
    /// What CPUID says (x86-64 only): identity, cache geometry, TLB entries.
    #[serde(default)]
    pub cpuid: Option<crate::cpuid::CpuidInfo>,
}

/// One NUMA node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub id: u32,
    /// Online CPUs local to this node; empty for a memory-only node (CXL, HBM, PMEM, …).
    pub cpus: Vec<u32>,
    pub memory_only: bool,
    /// Memory the node holds (`MemTotal`); 0 for a node without memory.
    pub total_bytes: u64,
    /// How that memory is used now; `None` when it could not be read (synthetic input).
    pub memory: Option<NodeMemory>,
    /// Huge page pools reserved on this node, one entry per supported size.
    pub hugepages: Vec<HugePagePool>,
}

/// A node's memory split, from `/sys/devices/system/node/nodeN/meminfo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeMemory {
    pub free_bytes: u64,
    /// Page cache and other file-backed pages (`FilePages`).
    pub file_bytes: u64,
    /// Anonymous pages: process heaps and stacks (`AnonPages`).
    pub anon_bytes: u64,
    /// Transparent huge pages among the anonymous pages (`AnonHugePages`).
    pub anon_huge_bytes: u64,
    /// Shared memory and tmpfs (`Shmem`), counted inside `file_bytes`.
    pub shmem_bytes: u64,
}

/// A hugetlb pool of one page size, on one node or machine-wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HugePagePool {
    pub page_bytes: u64,
    pub total: u64,
    pub free: u64,
}

/// One logical CPU (a hardware thread).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cpu {
    pub id: u32,
    pub online: bool,
    /// The node whose memory is local to this CPU; `None` when offline.
    pub node: Option<u32>,
    pub package: Option<u32>,
    pub core: Option<u32>,
    /// All hardware threads of this CPU's core, itself included.
    pub smt_siblings: Vec<u32>,
}

/// What a cache holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheKind {
    Data,
    Unified,
}

/// One cache instance and the CPUs that share it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cache {
    pub level: u8,
    pub kind: CacheKind,
    pub size_bytes: u64,
    pub line_bytes: Option<u64>,
    pub associativity: Option<u32>,
    pub cpus: Vec<u32>,
    /// Number of sets (sysfs `number_of_sets`); `None` when not read (hwloc-only input, or a
    /// topology stored before platscope recorded it).
    #[serde(default)]
    pub sets: Option<u32>,
}

impl Cache {
    /// `L1d`, `L2`, `L3` — the names people use.
    pub fn name(&self) -> String {
        match self.kind {
            CacheKind::Data => format!("L{}d", self.level),
            CacheKind::Unified => format!("L{}", self.level),
        }
    }
}

/// A node distance matrix: `matrix[i][j]` is the distance from `nodes[i]` to `nodes[j]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Distances {
    pub nodes: Vec<u32>,
    pub matrix: Vec<Vec<u32>>,
}

impl Distances {
    /// Distance from node `from` to node `to`, if both are in the matrix.
    pub fn get(&self, from: u32, to: u32) -> Option<u32> {
        let i = self.nodes.iter().position(|&n| n == from)?;
        let j = self.nodes.iter().position(|&n| n == to)?;
        self.matrix.get(i)?.get(j).copied()
    }
}

/// HMAT figures for reaching one memory node from its best initiators.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HmatAccess {
    /// The memory (target) node.
    pub target: u32,
    /// `0`: best initiators of any kind; `1`: best CPU initiators (kernel's `access0`/`access1`).
    pub access_class: u8,
    /// The initiator nodes these figures apply to.
    pub initiators: Vec<u32>,
    pub read_latency_ns: Option<u64>,
    pub write_latency_ns: Option<u64>,
    /// MB/s as the kernel reports it.
    pub read_bandwidth_mbps: Option<u64>,
    pub write_bandwidth_mbps: Option<u64>,
}

impl Topology {
    /// The node with this id.
    pub fn node(&self, id: u32) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The CPU with this id, online or not.
    pub fn cpu(&self, id: u32) -> Option<&Cpu> {
        self.cpus.iter().find(|c| c.id == id)
    }

    /// Ids of all nodes.
    pub fn node_ids(&self) -> Vec<u32> {
        self.nodes.iter().map(|n| n.id).collect()
    }

    /// Ids of online CPUs.
    pub fn online_cpu_ids(&self) -> Vec<u32> {
        self.cpus.iter().filter(|c| c.online).map(|c| c.id).collect()
    }

    /// Ids of CPUs the kernel knows but that are offline.
    pub fn offline_cpu_ids(&self) -> Vec<u32> {
        self.cpus.iter().filter(|c| !c.online).map(|c| c.id).collect()
    }

    /// The node local to an online CPU.
    pub fn node_of_cpu(&self, cpu: u32) -> Option<u32> {
        self.cpu(cpu).and_then(|c| c.node)
    }

    /// Nodes that have memory. Memory-only nodes are included.
    pub fn nodes_with_memory(&self) -> Vec<u32> {
        self.nodes.iter().filter(|n| n.total_bytes > 0).map(|n| n.id).collect()
    }

    /// Cache levels as (name, size of one instance, instances), smallest level first: what a
    /// page lists and a latency chart marks.
    pub fn cache_levels(&self) -> Vec<(String, u64, usize)> {
        let mut levels: Vec<(u8, String, u64, usize)> = Vec::new();
        for c in self.caches.iter().filter(|c| c.size_bytes > 0) {
            let name = c.name();
            match levels.iter_mut().find(|l| l.1 == name) {
                Some(l) => {
                    l.2 = l.2.max(c.size_bytes);
                    l.3 += 1;
                }
                None => levels.push((c.level, name, c.size_bytes, 1)),
            }
        }
        levels.sort_by_key(|l| l.0);
        levels.into_iter().map(|(_, name, size, n)| (name, size, n)).collect()
    }

    /// The largest data or unified cache level's total size across the machine (all instances),
    /// the figure benchmarks size their buffers against.
    pub fn last_level_cache_bytes(&self) -> u64 {
        let Some(level) = self.caches.iter().map(|c| c.level).max() else { return 0 };
        self.caches.iter().filter(|c| c.level == level).map(|c| c.size_bytes).sum()
    }
}
