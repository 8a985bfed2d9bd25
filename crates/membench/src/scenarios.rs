//! Experiments built from the benchmarks: how many workers, spread over which CPUs, with their
//! memory where (pure: topology in, worker specs out, tested on synthetic topologies), and the
//! loops that run them step by step — a latency sweep, the SLB at 1, 2, 4 … workers, the SLB
//! under each placement — written once for `mem …` and `report` alike. Each loop hands every
//! step to the caller as it is measured (to print a row, count progress) and keeps what was
//! measured when a step fails or Ctrl-C stops it.

use measure::progress::hidden;
use measure::stop;
use place::{MemPolicy, PageSize, PlacementRequest};
use topo::Topology;

use crate::latency::{self, LatencyOptions, LatencyPoint};
use crate::slb::{self, SlbPlan, SlbResult, SlbWorkerSpec};
use crate::BenchError;

/// `count` workers pinned round-robin over `cpus`, all with `policy`.
pub fn spread_workers(count: u64, cpus: &[u32], policy: &MemPolicy) -> Vec<SlbWorkerSpec> {
    (0..count as usize)
        .map(|i| SlbWorkerSpec {
            cpu: cpus.get(i % cpus.len().max(1)).copied(),
            policy: policy.clone(),
        })
        .collect()
}

/// The work every SLB worker does: PAGES × 4 KiB pages, PAGES × LOOPS stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlbWork {
    pub pages: u64,
    pub loops: u64,
    pub page: PageSize,
}

impl SlbWork {
    /// The plan for `workers`, with the fixed generator seed every SLB run uses.
    pub fn plan(&self, workers: Vec<SlbWorkerSpec>) -> SlbPlan {
        SlbPlan { pages: self.pages, loops: self.loops, page: self.page, workers, seed: 0x51B }
    }
}

/// Worker counts for a scaling run: 1, 2, 4 … and the CPU count itself.
pub fn scale_counts(cpus: usize) -> Vec<u64> {
    std::iter::successors(Some(1u64), |n| Some(n * 2))
        .take_while(|&n| n <= cpus as u64)
        .chain((!cpus.is_power_of_two() && cpus > 0).then_some(cpus as u64))
        .collect()
}

/// The node farthest from `node` by SLIT distance (another node), if there is one.
pub fn farthest_node(node: u32, memory_nodes: &[u32], topology: &Topology) -> Option<u32> {
    memory_nodes
        .iter()
        .copied()
        .filter(|&m| m != node)
        .max_by_key(|&m| topology.distances.as_ref().and_then(|d| d.get(node, m)).unwrap_or(0))
}

/// Why the remote scenario cannot run on a machine whose only memory is local.
pub const NO_REMOTE: &str = "skipped: every worker's node is the only node with memory";

/// A named placement scenario's workers, `None` where the machine cannot do it.
pub type Scenario = (&'static str, Option<Vec<SlbWorkerSpec>>);

/// The SLB placement scenarios: local, interleave over all memory nodes, and remote (each
/// worker's memory on the node farthest from it), `None` where impossible.
pub fn policy_scenarios(
    count: u64,
    topology: &Topology,
) -> Result<Vec<Scenario>, place::PlaceError> {
    let cpus =
        PlacementRequest { cpus: None, policy: MemPolicy::Inherit }.allowed_cpus(topology)?;
    let memory_nodes = topology.nodes_with_memory();
    let local = spread_workers(count, &cpus, &MemPolicy::Local);
    let interleave = spread_workers(count, &cpus, &MemPolicy::Interleave(memory_nodes.clone()));
    let remote: Option<Vec<SlbWorkerSpec>> = local
        .iter()
        .map(|w| {
            let node = w.cpu.and_then(|c| topology.node_of_cpu(c))?;
            let far = farthest_node(node, &memory_nodes, topology)?;
            Some(SlbWorkerSpec { cpu: w.cpu, policy: MemPolicy::Bind(vec![far]) })
        })
        .collect();
    Ok(vec![("local", Some(local)), ("interleave", Some(interleave)), ("remote", remote)])
}

/// A shared-SLB scenario: the workers' CPUs and the shared region's policy, `None` where the
/// machine cannot do it (one node).
pub type SharedScenario = (&'static str, Option<(Vec<Option<u32>>, MemPolicy)>);

/// The lock-word scenarios for `count` workers, placed as the SLB's NUMA articles placed their
/// runs: workers packed on the first node with CPUs and the shared region (lock word, counters,
/// pages) on that node, on the node farthest from it, or interleaved over all memory nodes; and
/// workers spread round-robin over the nodes with the region on the first node.
pub fn shared_scenarios(count: usize, topology: &Topology) -> Vec<SharedScenario> {
    let with_cpus: Vec<&topo::Node> = topology
        .nodes
        .iter()
        .filter(|n| n.cpus.iter().any(|c| topology.online_cpu_ids().contains(c)))
        .collect();
    let memory_nodes = topology.nodes_with_memory();
    let Some(home) = with_cpus.first() else { return Vec::new() };
    let packed: Vec<Option<u32>> = home.cpus.iter().take(count).map(|&c| Some(c)).collect();
    let packed = (packed.len() == count).then_some(packed);
    let local = MemPolicy::Bind(vec![home.id]);
    let far = farthest_node(home.id, &memory_nodes, topology);
    // Round-robin over nodes: the first CPU of each node, then the second, ...
    let mut spread = Vec::new();
    for i in 0.. {
        let round: Vec<u32> = with_cpus.iter().filter_map(|n| n.cpus.get(i).copied()).collect();
        if round.is_empty() || spread.len() >= count {
            break;
        }
        spread.extend(round.into_iter().map(Some));
    }
    spread.truncate(count);
    let spread = (with_cpus.len() > 1 && spread.len() == count).then_some(spread);
    vec![
        ("line local", packed.clone().map(|w| (w, local.clone()))),
        ("line remote", packed.clone().zip(far).map(|(w, far)| (w, MemPolicy::Bind(vec![far])))),
        (
            "line interleaved",
            packed
                .filter(|_| memory_nodes.len() > 1)
                .map(|w| (w, MemPolicy::Interleave(memory_nodes.clone()))),
        ),
        ("workers spread", spread.map(|w| (w, local))),
    ]
}

/// What a loop measured, and the step that failed (its size or worker count) if one did; a
/// stop (Ctrl-C) is not a failure: the loop just ends.
#[derive(Debug)]
pub struct Steps<T> {
    pub done: Vec<T>,
    pub failed: Option<(u64, BenchError)>,
}

/// Latency at each of `sizes` from `cpu`, smallest first; `each` sees every point as it is
/// measured (an error from it ends the loop and is returned).
pub fn latency_sweep<E>(
    cpu: Option<u32>,
    sizes: &[u64],
    opts: &LatencyOptions,
    topology: &Topology,
    mut each: impl FnMut(&LatencyPoint) -> Result<(), E>,
) -> Result<Steps<LatencyPoint>, E> {
    let mut steps = Steps { done: Vec::new(), failed: None };
    for &bytes in sizes {
        match latency::measure_on(cpu, bytes, opts, topology) {
            Ok(point) => {
                each(&point)?;
                steps.done.push(point);
            }
            Err(BenchError::Interrupted) => break,
            Err(e) => {
                steps.failed = Some((bytes, e));
                break;
            }
        }
        if stop::requested() {
            break;
        }
    }
    Ok(steps)
}

/// The SLB with each of `counts` workers spread over `cpus` under `policy`; `each` sees every
/// run as it ends. A run cut short by Ctrl-C is kept and ends the loop.
pub fn slb_scale<E>(
    work: &SlbWork,
    counts: &[u64],
    cpus: &[u32],
    policy: &MemPolicy,
    topology: &Topology,
    mut each: impl FnMut(&SlbResult) -> Result<(), E>,
) -> Result<Steps<SlbResult>, E> {
    let mut steps = Steps { done: Vec::new(), failed: None };
    for &count in counts {
        match slb::run(&work.plan(spread_workers(count, cpus, policy)), topology, &hidden()) {
            Ok(result) => {
                each(&result)?;
                let stop = result.interrupted || stop::requested();
                steps.done.push(result);
                if stop {
                    break;
                }
            }
            Err(e) => {
                steps.failed = Some((count, e));
                break;
            }
        }
    }
    Ok(steps)
}

/// Why a placement scenario has no SLB result.
#[derive(Debug)]
pub enum NotRun {
    /// The machine cannot do it (one node has no remote memory).
    Skipped(&'static str),
    Failed(BenchError),
}

/// The SLB with `count` workers under each placement of [`policy_scenarios`], in the order of
/// round `round` ([`crate::slb_rounds::rotated`]); `each` gets every scenario's outcome as it
/// ends and says whether to go on. Ends early when Ctrl-C stops the run.
pub fn slb_policies<E: From<place::PlaceError>>(
    work: &SlbWork,
    count: u64,
    round: usize,
    topology: &Topology,
    mut each: impl FnMut(&'static str, Result<SlbResult, NotRun>) -> Result<bool, E>,
) -> Result<(), E> {
    let scenarios = crate::slb_rounds::rotated(&policy_scenarios(count, topology)?, round);
    for (name, workers) in scenarios {
        if stop::requested() {
            break;
        }
        let outcome = match workers {
            Some(w) => slb::run(&work.plan(w), topology, &hidden()).map_err(NotRun::Failed),
            None => Err(NotRun::Skipped(NO_REMOTE)),
        };
        if !each(name, outcome)? {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_scenarios_place_the_line_and_the_workers() {
        let two =
            Topology::from_synthetic("pack:2 [numa(memory=1GiB)] core:2 pu:1").expect("2 nodes");
        let s = shared_scenarios(2, &two);
        let get = |name: &str| s.iter().find(|(n, _)| *n == name).and_then(|(_, x)| x.clone());
        let (w, p) = get("line local").expect("local");
        assert_eq!((w, p), (vec![Some(0), Some(1)], MemPolicy::Bind(vec![0])));
        assert_eq!(get("line remote").map(|(_, p)| p), Some(MemPolicy::Bind(vec![1])));
        assert_eq!(
            get("line interleaved").map(|(_, p)| p),
            Some(MemPolicy::Interleave(vec![0, 1]))
        );
        assert_eq!(get("workers spread").map(|(w, _)| w), Some(vec![Some(0), Some(2)]));
        let one =
            Topology::from_synthetic("pack:1 [numa(memory=1GiB)] core:2 pu:1").expect("1 node");
        let s = shared_scenarios(2, &one);
        let present: Vec<&str> = s.iter().filter(|(_, x)| x.is_some()).map(|(n, _)| *n).collect();
        assert_eq!(present, ["line local"]);
        // More workers than the node has CPUs: no packed scenario.
        assert!(shared_scenarios(3, &one).iter().all(|(_, x)| x.is_none()));
    }

    #[test]
    fn counts_double_then_end_at_the_cpu_count() {
        assert_eq!(scale_counts(1), vec![1]);
        assert_eq!(scale_counts(2), vec![1, 2]);
        assert_eq!(scale_counts(6), vec![1, 2, 4, 6]);
        assert_eq!(scale_counts(8), vec![1, 2, 4, 8]);
    }

    #[test]
    fn remote_is_the_farthest_node_and_absent_on_one_node() {
        let two =
            Topology::from_synthetic("pack:2 [numa(memory=1GiB)] core:1 pu:1").expect("2 nodes");
        let scenarios = policy_scenarios(2, &two).expect("scenarios");
        let remote = scenarios[2].1.as_ref().expect("two nodes have a remote scenario");
        for w in remote {
            let node = w.cpu.and_then(|c| two.node_of_cpu(c)).expect("pinned to a node");
            assert_eq!(w.policy, MemPolicy::Bind(vec![1 - node]));
        }
        let one =
            Topology::from_synthetic("pack:1 [numa(memory=1GiB)] core:2 pu:1").expect("1 node");
        assert!(policy_scenarios(2, &one).expect("scenarios")[2].1.is_none());
        let spread = spread_workers(3, &[4, 5], &MemPolicy::Local);
        assert_eq!(spread.iter().map(|w| w.cpu).collect::<Vec<_>>(), [Some(4), Some(5), Some(4)]);
    }
}
