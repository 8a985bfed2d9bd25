//! Topology logic on hwloc synthetic and XML topologies: no special hardware needed.

use topo::{CacheKind, Topology};

const GIB: u64 = 1 << 30;

fn synthetic(description: &str) -> Topology {
    Topology::from_synthetic(description).expect("valid synthetic topology")
}

#[test]
fn two_nodes_with_smt_and_caches() {
    let t = synthetic(
        "pack:2 [numa(memory=4GiB)] l3:1(size=32MiB) l2:1(size=1MiB) l1d:1(size=48KiB) core:1 pu:2",
    );
    assert_eq!(t.node_ids(), vec![0, 1]);
    assert_eq!(t.node(0).expect("node 0").cpus, vec![0, 1]);
    assert_eq!(t.node(1).expect("node 1").cpus, vec![2, 3]);
    assert_eq!(t.node(1).expect("node 1").total_bytes, 4 * GIB);
    assert!(t.nodes.iter().all(|n| !n.memory_only));
    assert_eq!(t.machine.packages, 2);
    assert_eq!(t.machine.cores, 2);
    // SMT 2: each CPU's siblings are the two threads of its core.
    assert_eq!(t.cpu(3).expect("cpu 3").smt_siblings, vec![2, 3]);
    assert_eq!(t.node_of_cpu(2), Some(1));
    // One L3, L2 and L1d per package, each shared by that package's two threads.
    let l3: Vec<_> = t.caches.iter().filter(|c| c.level == 3).collect();
    assert_eq!(l3.len(), 2);
    assert_eq!(l3[1].cpus, vec![2, 3]);
    assert_eq!(l3[0].size_bytes, 32 << 20);
    let l1 = t.caches.iter().find(|c| c.level == 1).expect("an L1");
    assert_eq!((l1.kind, l1.name(), l1.size_bytes), (CacheKind::Data, "L1d".into(), 48 << 10));
    assert_eq!(t.last_level_cache_bytes(), 64 << 20);
    // Synthetic input has no live facts.
    assert!(t.environment.is_none());
    assert!(t.nodes.iter().all(|n| n.memory.is_none()));
}

#[test]
fn four_and_eight_nodes() {
    let four = synthetic("pack:4 [numa(memory=1GiB)] core:4 pu:1");
    assert_eq!(four.node_ids(), vec![0, 1, 2, 3]);
    assert_eq!(four.node(3).expect("node 3").cpus, vec![12, 13, 14, 15]);
    assert_eq!(four.online_cpu_ids().len(), 16);

    // Two packages of four sub-NUMA clusters each (SNC4/NPS4-like).
    let eight = synthetic("pack:2 group:4 [numa(memory=1GiB)] core:2 pu:2");
    assert_eq!(eight.node_ids(), (0..8).collect::<Vec<_>>());
    for node in &eight.nodes {
        let first = node.id * 4;
        assert_eq!(node.cpus, (first..first + 4).collect::<Vec<_>>(), "node {}", node.id);
    }
    assert_eq!(eight.machine.packages, 2);
    assert_eq!(eight.nodes_with_memory().len(), 8);
}

fn four_node_fixture() -> Topology {
    let xml = include_str!("../fixtures/four_nodes_memory_only_offline.xml");
    Topology::from_xml(xml).expect("fixture loads")
}

#[test]
fn memory_only_node_gets_no_cpus() {
    let t = four_node_fixture();
    assert_eq!(t.node_ids(), vec![0, 1, 2, 3]);
    let mem_only = t.node(3).expect("node 3");
    assert!(mem_only.memory_only);
    assert!(mem_only.cpus.is_empty());
    assert_eq!(mem_only.total_bytes, GIB);
    assert_eq!(t.nodes.iter().filter(|n| n.memory_only).count(), 1);
    // CPUs keep their package's node even though node 3's locality covers them too.
    assert_eq!(t.node(0).expect("node 0").cpus, vec![0, 1, 2, 3]);
    assert_eq!(t.node(2).expect("node 2").cpus, vec![8, 9]);
    assert_eq!(t.nodes_with_memory(), vec![0, 1, 2, 3]);
}

#[test]
fn offline_cpus_are_listed_without_a_node() {
    let t = four_node_fixture();
    assert_eq!(t.online_cpu_ids(), (0..10).collect::<Vec<_>>());
    assert_eq!(t.offline_cpu_ids(), vec![10, 11]);
    let offline = t.cpu(11).expect("cpu 11 known");
    assert!(!offline.online);
    assert_eq!(offline.node, None);
}

#[test]
fn asymmetric_distances_come_through_in_node_order() {
    let t = four_node_fixture();
    let d = t.distances.as_ref().expect("SLIT present");
    assert_eq!(d.nodes, vec![0, 1, 2, 3]);
    assert_eq!(d.matrix[0], vec![10, 16, 22, 30]);
    assert_eq!(d.get(3, 1), Some(28));
    assert_eq!(d.get(1, 3), Some(28));
    assert_eq!(d.get(2, 0), Some(22));
    assert_eq!(d.get(0, 9), None);
}

#[test]
fn json_round_trips() {
    let t = four_node_fixture();
    let json = serde_json::to_string(&t).expect("serializes");
    let back: Topology = serde_json::from_str(&json).expect("deserializes");
    assert_eq!(back, t);
}

#[test]
fn bad_synthetic_description_is_an_error() {
    let err = Topology::from_synthetic("pack:two pu:1").expect_err("rejected");
    assert!(err.to_string().contains("pack:two"), "{err}");
}
