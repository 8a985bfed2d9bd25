//! The numactl-style placement options every command takes, resolved against the topology.

use serde::{Deserialize, Serialize};
use topo::Topology;

use crate::lists::{cpus_of_nodes, parse_cpu_nodes, parse_cpus, parse_memory_nodes};
use crate::{MemPolicy, PlaceError};

/// numactl's placement options as the user typed them, with its list syntax (`0-3,8`, `all`,
/// `!LIST`, `+LIST`); every command that places work flattens them into its arguments. With
/// none given, the caller's policy and affinity apply, so platscope also runs under `numactl`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PlacementArgs {
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

/// Where to run and where to take memory from, validated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacementRequest {
    /// CPUs to run on; `None` keeps the inherited affinity.
    pub cpus: Option<Vec<u32>>,
    pub policy: MemPolicy,
}

impl PlacementRequest {
    /// The CPUs work may run on: the requested ones, else the online CPUs this process may
    /// use (its inherited affinity, so platscope also runs under `taskset` or `numactl`).
    pub fn allowed_cpus(&self, topology: &Topology) -> Result<Vec<u32>, PlaceError> {
        if let Some(cpus) = &self.cpus {
            return Ok(cpus.clone());
        }
        let online = topology.online_cpu_ids();
        Ok(crate::pin::affinity(0)?.into_iter().filter(|c| online.contains(c)).collect())
    }

    /// Checks the options against each other and against the machine.
    pub fn resolve(args: &PlacementArgs, topology: &Topology) -> Result<Self, PlaceError> {
        let chosen: Vec<&str> = [
            ("--membind", args.membind.is_some()),
            ("--interleave", args.interleave.is_some()),
            ("--preferred", args.preferred.is_some()),
            ("--localalloc", args.localalloc),
        ]
        .iter()
        .filter(|(_, set)| *set)
        .map(|(name, _)| *name)
        .collect();
        if chosen.len() > 1 {
            return Err(PlaceError::Conflict(format!(
                "{} each set a memory policy; give one",
                chosen.join(" and ")
            )));
        }
        if args.cpunodebind.is_some() && args.physcpubind.is_some() {
            return Err(PlaceError::Conflict(
                "--cpunodebind and --physcpubind both choose CPUs; give one".into(),
            ));
        }
        let policy = if let Some(list) = &args.membind {
            MemPolicy::Bind(parse_memory_nodes(list, topology)?)
        } else if let Some(list) = &args.interleave {
            MemPolicy::Interleave(parse_memory_nodes(list, topology)?)
        } else if let Some(list) = &args.preferred {
            match parse_memory_nodes(list, topology)?.as_slice() {
                [node] => MemPolicy::Preferred(*node),
                _ => {
                    return Err(PlaceError::Conflict(format!(
                        "--preferred takes one node, got {list:?}"
                    )))
                }
            }
        } else if args.localalloc {
            MemPolicy::Local
        } else {
            MemPolicy::Inherit
        };
        let cpus = match (&args.cpunodebind, &args.physcpubind) {
            (Some(nodes), _) => Some(cpus_of_nodes(&parse_cpu_nodes(nodes, topology)?, topology)),
            (_, Some(cpus)) => Some(parse_cpus(cpus, topology)?),
            _ => None,
        };
        Ok(Self { cpus, policy })
    }
}
