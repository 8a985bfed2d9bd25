//! membench's commands as experiments (`experiment::Experiment`): their arguments, how each
//! runs, and what each outcome prints, stores and draws. One registry line in the binary each.

pub mod bandwidth;
pub mod c2c;
pub mod latency;
pub mod slb;
pub mod timer;

use place::{MemPolicy, PlacementArgs, PlacementRequest};
use topo::Topology;

/// The first `count` CPUs a run may use under `placement` (`None`: its inherited affinity),
/// when that is at least two: what its figures depend on the placement of
/// (`Experiment::placement_cpus`). `None` for one CPU, or a request the run itself will refuse.
pub(crate) fn several_cpus(
    placement: Option<&PlacementArgs>,
    topology: &Topology,
    count: usize,
) -> Option<Vec<u32>> {
    let request = match placement {
        Some(args) => PlacementRequest::resolve(args, topology).ok()?,
        None => PlacementRequest { cpus: None, policy: MemPolicy::Inherit },
    };
    let cpus: Vec<u32> = request.allowed_cpus(topology).ok()?.into_iter().take(count).collect();
    (cpus.len() >= 2).then_some(cpus)
}
