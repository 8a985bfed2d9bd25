//! CPU and node lists in numactl's vocabulary, validated against the machine.
//!
//! Accepted forms: `0-3,8` (kernel list syntax), `all`, `!LIST` (everything but LIST) and
//! `+LIST` (positions within the CPUs or nodes this process may use, as numactl's relative
//! lists).

use topo::{idlist, Topology};

use crate::PlaceError;

/// Which kind of id a list names: used for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    Cpu,
    Node,
}

impl IdKind {
    fn noun(self) -> &'static str {
        match self {
            IdKind::Cpu => "CPU",
            IdKind::Node => "node",
        }
    }
}

/// Parses `text` as a list of ids out of `valid` (ascending). Every named id must be in
/// `valid`; the error names the valid ones.
fn parse_against(text: &str, kind: IdKind, valid: &[u32]) -> Result<Vec<u32>, PlaceError> {
    let trimmed = text.trim();
    let invalid = |reason: String| PlaceError::InvalidList {
        kind: kind.noun(),
        input: text.to_string(),
        reason,
        valid: idlist::format(valid),
    };
    if trimmed == "all" {
        return if valid.is_empty() {
            Err(invalid("there are none".into()))
        } else {
            Ok(valid.to_vec())
        };
    }
    let ids = |body: &str| idlist::parse(body).map_err(|e| invalid(e.to_string()));
    let list = if let Some(rest) = trimmed.strip_prefix('!') {
        let excluded = ids(rest)?;
        check_known(&excluded, kind, valid)?;
        valid.iter().copied().filter(|id| !excluded.contains(id)).collect()
    } else if let Some(rest) = trimmed.strip_prefix('+') {
        ids(rest)?
            .into_iter()
            .map(|position| {
                valid.get(position as usize).copied().ok_or_else(|| {
                    invalid(format!(
                        "relative position {position} is beyond the {} available",
                        valid.len()
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?
    } else {
        let list = ids(trimmed)?;
        check_known(&list, kind, valid)?;
        list
    };
    if list.is_empty() {
        return Err(invalid("it leaves nothing".into()));
    }
    Ok(list)
}

fn check_known(ids: &[u32], kind: IdKind, valid: &[u32]) -> Result<(), PlaceError> {
    match ids.iter().find(|id| !valid.contains(id)) {
        Some(&id) => {
            Err(PlaceError::NoSuchId { kind: kind.noun(), id, valid: idlist::format(valid) })
        }
        None => Ok(()),
    }
}

/// Parses a list of online CPUs. An offline or unknown CPU is an error naming the online ones.
pub fn parse_cpus(text: &str, topology: &Topology) -> Result<Vec<u32>, PlaceError> {
    let online = topology.online_cpu_ids();
    parse_against(text, IdKind::Cpu, &online).map_err(|e| match e {
        PlaceError::NoSuchId { id, valid, .. } if topology.cpu(id).is_some() => {
            PlaceError::CpuOffline { id, online: valid }
        }
        other => other,
    })
}

/// Parses a list of nodes.
pub fn parse_nodes(text: &str, topology: &Topology) -> Result<Vec<u32>, PlaceError> {
    parse_against(text, IdKind::Node, &topology.node_ids())
}

/// Parses a list of nodes that must have memory (for memory policies).
pub fn parse_memory_nodes(text: &str, topology: &Topology) -> Result<Vec<u32>, PlaceError> {
    let nodes = parse_nodes(text, topology)?;
    let with_memory = topology.nodes_with_memory();
    match nodes.iter().find(|n| !with_memory.contains(n)) {
        Some(&node) => {
            Err(PlaceError::NodeWithoutMemory { node, with_memory: idlist::format(&with_memory) })
        }
        None => Ok(nodes),
    }
}

/// Parses a list of nodes that must have CPUs (for running work on them).
pub fn parse_cpu_nodes(text: &str, topology: &Topology) -> Result<Vec<u32>, PlaceError> {
    let nodes = parse_nodes(text, topology)?;
    let with_cpus: Vec<u32> =
        topology.nodes.iter().filter(|n| !n.cpus.is_empty()).map(|n| n.id).collect();
    match nodes.iter().find(|n| !with_cpus.contains(n)) {
        Some(&node) => {
            Err(PlaceError::NodeWithoutCpus { node, with_cpus: idlist::format(&with_cpus) })
        }
        None => Ok(nodes),
    }
}

/// The online CPUs of the given nodes.
pub fn cpus_of_nodes(nodes: &[u32], topology: &Topology) -> Vec<u32> {
    let mut cpus: Vec<u32> = topology
        .nodes
        .iter()
        .filter(|n| nodes.contains(&n.id))
        .flat_map(|n| n.cpus.iter().copied())
        .collect();
    cpus.sort_unstable();
    cpus
}
