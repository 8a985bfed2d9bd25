//! Building a [`Topology`] from hwloc, completed with what sysfs knows and hwloc does not.

use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::{CacheType, ObjectType};
use hwlocality::object::TopologyObject;
use hwlocality::Topology as Hwloc;

use crate::model::{Cache, CacheKind, Cpu, Distances, Machine, Node, Topology};
use crate::sysfs::SysRoot;
use crate::{Environment, TopoError};

impl Topology {
    /// The running machine: hwloc's view completed with sysfs, plus the environment facts.
    pub fn detect() -> Result<Self, TopoError> {
        let hwloc = Hwloc::new().map_err(|e| TopoError::Hwloc(e.to_string()))?;
        let mut topology = build(&hwloc, Some(&SysRoot::live()), "live");
        topology.environment = Some(Environment::detect(&topology.online_cpu_ids()));
        topology.machine.cpuid = crate::cpuid::read_live();
        Ok(topology)
    }

    /// A topology from an hwloc synthetic description, e.g.
    /// `pack:2 [numa(memory=1GB)] core:2 pu:2` — for tests without the hardware.
    pub fn from_synthetic(description: &str) -> Result<Self, TopoError> {
        let invalid = |e: String| TopoError::Synthetic(description.to_string(), e);
        let hwloc = Hwloc::builder()
            .from_synthetic(description)
            .map_err(|e| invalid(e.to_string()))?
            .build()
            .map_err(|e| invalid(e.to_string()))?;
        Ok(build(&hwloc, None, &format!("synthetic: {description}")))
    }

    /// A topology from hwloc XML (as written by `lstopo --of xml`), e.g. a captured machine.
    pub fn from_xml(xml: &str) -> Result<Self, TopoError> {
        let hwloc = Hwloc::builder()
            .from_xml(xml)
            .map_err(|e| TopoError::Xml(e.to_string()))?
            .build()
            .map_err(|e| TopoError::Xml(e.to_string()))?;
        Ok(build(&hwloc, None, "xml"))
    }
}

fn ids(object: &TopologyObject) -> Vec<u32> {
    object
        .cpuset()
        .map(|set| set.iter_set().filter_map(|i| u32::try_from(usize::from(i)).ok()).collect())
        .unwrap_or_default()
}

fn os_index(object: &TopologyObject) -> Option<u32> {
    object.os_index().and_then(|i| u32::try_from(i).ok())
}

fn info(object: &TopologyObject, key: &str) -> Option<String> {
    object.info(key).map(|v| v.to_string_lossy().into_owned())
}

/// hwloc gives a memory-only node the CPU set of the place it hangs from, so a CPU can be inside
/// several nodes' sets. The kernel puts each CPU in exactly one node: the one with the smallest
/// set containing it, the lowest id on a tie (Linux numbers nodes with CPUs first).
fn kernel_node_of(cpu: u32, numa: &[(u32, Vec<u32>, u64)]) -> Option<u32> {
    numa.iter()
        .filter(|(_, cpus, _)| cpus.contains(&cpu))
        .min_by_key(|(id, cpus, _)| (cpus.len(), *id))
        .map(|(id, _, _)| *id)
}

fn build(hwloc: &Hwloc, sys: Option<&SysRoot>, source: &str) -> Topology {
    // (node id, hwloc locality CPUs, hwloc memory size)
    let mut numa: Vec<(u32, Vec<u32>, u64)> = hwloc
        .objects_with_type(ObjectType::NUMANode)
        .filter_map(|obj| {
            let memory = match obj.attributes() {
                Some(ObjectAttributes::NUMANode(attrs)) => {
                    attrs.local_memory().map_or(0, |m| m.get())
                }
                _ => 0,
            };
            Some((os_index(obj)?, ids(obj), memory))
        })
        .collect();
    numa.sort_by_key(|(id, _, _)| *id);

    let mut cpus: Vec<Cpu> = hwloc
        .objects_with_type(ObjectType::PU)
        .filter_map(|pu| {
            let id = os_index(pu)?;
            let core = pu.first_ancestor_with_type(ObjectType::Core);
            let sysfs_node = sys.and_then(|s| sysfs_node_of_cpu(s, id));
            Some(Cpu {
                id,
                online: true,
                node: sysfs_node.or_else(|| kernel_node_of(id, &numa)),
                package: pu.first_ancestor_with_type(ObjectType::Package).and_then(os_index),
                core: core.and_then(os_index),
                smt_siblings: core.map(ids).unwrap_or_else(|| vec![id]),
            })
        })
        .collect();
    let complete: Vec<u32> = hwloc
        .root_object()
        .complete_cpuset()
        .map(|set| set.iter_set().filter_map(|i| u32::try_from(usize::from(i)).ok()).collect())
        .unwrap_or_default();
    let sysfs_offline = sys.and_then(|s| s.cpu_mask("offline")).unwrap_or_default();
    for id in complete.into_iter().chain(sysfs_offline) {
        if !cpus.iter().any(|c| c.id == id) {
            cpus.push(Cpu {
                id,
                online: false,
                node: None,
                package: None,
                core: None,
                smt_siblings: Vec::new(),
            });
        }
    }
    cpus.sort_by_key(|c| c.id);

    let nodes = numa
        .iter()
        .map(|&(id, _, hwloc_memory)| {
            let node_cpus: Vec<u32> =
                cpus.iter().filter(|c| c.online && c.node == Some(id)).map(|c| c.id).collect();
            let meminfo = sys.and_then(|s| s.node_memory(id));
            Node {
                id,
                memory_only: node_cpus.is_empty(),
                cpus: node_cpus,
                total_bytes: meminfo.map_or(hwloc_memory, |(total, _)| total),
                memory: meminfo.map(|(_, usage)| usage),
                hugepages: sys.map(|s| s.node_hugepages(id)).unwrap_or_default(),
            }
        })
        .collect();

    let mut caches: Vec<Cache> = hwloc
        .objects()
        .filter_map(|obj| match obj.attributes() {
            Some(ObjectAttributes::Cache(attrs)) => {
                let kind = match attrs.cache_type() {
                    CacheType::Unified => CacheKind::Unified,
                    CacheType::Data => CacheKind::Data,
                    _ => return None, // instruction caches do not hold data
                };
                Some(Cache {
                    level: u8::try_from(attrs.depth()).ok()?,
                    kind,
                    size_bytes: attrs.size().map_or(0, |s| s.get()),
                    line_bytes: attrs.line_size().map(|l| l.get() as u64),
                    associativity: match attrs.associativity() {
                        hwlocality::object::attributes::CacheAssociativity::Ways(w) => {
                            u32::try_from(w.get()).ok()
                        }
                        _ => None,
                    },
                    cpus: ids(obj),
                    sets: None,
                })
            }
            _ => None,
        })
        .collect();
    caches.sort_by_key(|c| (c.level, c.cpus.first().copied()));
    if let Some(sys) = sys {
        let online: Vec<u32> = cpus.iter().filter(|c| c.online).map(|c| c.id).collect();
        merge_sysfs_caches(&mut caches, sys.cpu_caches(&online));
    }

    let node_ids: Vec<u32> = numa.iter().map(|(id, _, _)| *id).collect();
    let distances =
        hwloc_distances(hwloc).or_else(|| sys.and_then(|s| sysfs_distances(s, &node_ids)));
    let hmat =
        sys.map(|s| node_ids.iter().flat_map(|&n| s.node_hmat(n)).collect()).unwrap_or_default();

    let packages: Vec<&TopologyObject> = hwloc.objects_with_type(ObjectType::Package).collect();
    let package_info = |key: &str| packages.iter().find_map(|p| info(p, key));
    let cpuinfo = sys
        .and_then(|s| s.read("proc/cpuinfo"))
        .map(|text| crate::sysfs::parse_cpuinfo(&text))
        .unwrap_or_default();
    let machine = Machine {
        architecture: info(hwloc.root_object(), "Architecture"),
        cpu_vendor: package_info("CPUVendor").or(cpuinfo.vendor_id),
        cpu_model: package_info("CPUModel").or(cpuinfo.model_name),
        packages: packages.len(),
        cores: hwloc.objects_with_type(ObjectType::Core).count(),
        family: cpuinfo.family,
        model_number: cpuinfo.model,
        stepping: cpuinfo.stepping,
        microcode: cpuinfo.microcode,
        cpuid: None,
    };

    Topology {
        source: source.to_string(),
        machine,
        nodes,
        cpus,
        caches,
        distances,
        hmat,
        environment: None,
    }
}

/// Completes hwloc's caches with what sysfs adds (the set count, and line size or ways hwloc
/// left out); takes the sysfs list whole when hwloc found no caches.
fn merge_sysfs_caches(caches: &mut Vec<Cache>, sysfs: Vec<Cache>) {
    if caches.is_empty() {
        *caches = sysfs;
        return;
    }
    for cache in caches.iter_mut() {
        let same =
            |s: &&Cache| s.level == cache.level && s.kind == cache.kind && s.cpus == cache.cpus;
        if let Some(s) = sysfs.iter().find(same) {
            cache.sets = cache.sets.or(s.sets);
            cache.line_bytes = cache.line_bytes.or(s.line_bytes);
            cache.associativity = cache.associativity.or(s.associativity);
        }
    }
}

/// The kernel's own word on a CPU's node: the `nodeN` link in its sysfs directory.
fn sysfs_node_of_cpu(sys: &SysRoot, cpu: u32) -> Option<u32> {
    sys.list_dir(&format!("sys/devices/system/cpu/cpu{cpu}"))
        .iter()
        .find_map(|name| name.strip_prefix("node")?.parse().ok())
}

fn hwloc_distances(hwloc: &Hwloc) -> Option<Distances> {
    let all = hwloc.distances(None).ok()?;
    all.iter().find_map(|d| {
        let nodes: Option<Vec<u32>> = d
            .objects()
            .map(|o| o.filter(|o| o.object_type() == ObjectType::NUMANode).and_then(os_index))
            .collect();
        let nodes = nodes?;
        let n = nodes.len();
        let flat = d.distances();
        if n == 0 || flat.len() != n * n {
            return None;
        }
        // hwloc lists objects in no particular order: sort rows and columns by node id.
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| nodes[i]);
        let matrix = order
            .iter()
            .map(|&i| {
                order.iter().map(|&j| u32::try_from(flat[i * n + j]).unwrap_or(u32::MAX)).collect()
            })
            .collect();
        Some(Distances { nodes: order.iter().map(|&i| nodes[i]).collect(), matrix })
    })
}

fn sysfs_distances(sys: &SysRoot, node_ids: &[u32]) -> Option<Distances> {
    let matrix: Option<Vec<Vec<u32>>> =
        node_ids.iter().map(|&n| sys.node_distance_row(n)).collect();
    let matrix = matrix?;
    matrix
        .iter()
        .all(|row| row.len() == node_ids.len())
        .then(|| Distances { nodes: node_ids.to_vec(), matrix })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(level: u8, kind: CacheKind, cpus: Vec<u32>, sets: Option<u32>) -> Cache {
        Cache {
            level,
            kind,
            size_bytes: 32 << 10,
            line_bytes: Some(64),
            associativity: Some(8),
            cpus,
            sets,
        }
    }

    #[test]
    fn sysfs_completes_hwloc_caches() {
        let mut caches = vec![
            cache(1, CacheKind::Data, vec![0], None),
            cache(1, CacheKind::Data, vec![1], None),
            cache(3, CacheKind::Unified, vec![0, 1], None),
        ];
        let mut l1_no_line = cache(1, CacheKind::Data, vec![0], None);
        l1_no_line.line_bytes = None;
        caches[0] = l1_no_line;
        let sysfs = vec![
            cache(1, CacheKind::Data, vec![0], Some(64)),
            cache(1, CacheKind::Data, vec![1], Some(64)),
            // Different sharing than hwloc's L3: not the same instance, not merged.
            cache(3, CacheKind::Unified, vec![0], Some(32768)),
        ];
        merge_sysfs_caches(&mut caches, sysfs.clone());
        assert_eq!(
            caches.iter().map(|c| c.sets).collect::<Vec<_>>(),
            vec![Some(64), Some(64), None]
        );
        assert_eq!(caches[0].line_bytes, Some(64));
        let mut none = Vec::new();
        merge_sysfs_caches(&mut none, sysfs.clone());
        assert_eq!(none, sysfs);
    }
}
