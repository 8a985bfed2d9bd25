//! numactl-style lists and placement options against synthetic topologies.

use place::lists::{cpus_of_nodes, parse_cpu_nodes, parse_cpus, parse_memory_nodes, parse_nodes};
use place::{MemPolicy, PlaceError, PlacementArgs, PlacementRequest};
use topo::Topology;

fn two_nodes() -> Topology {
    Topology::from_synthetic("pack:2 [numa(memory=1GiB)] core:2 pu:2").expect("synthetic")
}

fn four_nodes_memory_only_offline() -> Topology {
    let xml = include_str!("../../../topo/tests/fixtures/four_nodes_memory_only_offline.xml");
    Topology::from_xml(xml).expect("fixture")
}

#[test]
fn cpu_lists_in_numactl_syntax() {
    let t = two_nodes();
    assert_eq!(parse_cpus("0-3,6", &t).expect("valid"), vec![0, 1, 2, 3, 6]);
    assert_eq!(parse_cpus("all", &t).expect("valid"), (0..8).collect::<Vec<_>>());
    assert_eq!(parse_cpus("!0-5", &t).expect("valid"), vec![6, 7]);
    assert_eq!(parse_cpus("+1,3", &t).expect("valid"), vec![1, 3]);
}

#[test]
fn invalid_ids_name_the_valid_range() {
    let t = two_nodes();
    let err = parse_cpus("9", &t).expect_err("no CPU 9");
    assert!(matches!(err, PlaceError::NoSuchId { id: 9, .. }));
    assert_eq!(err.to_string(), "CPU 9 does not exist (valid CPUs: 0-7)");
    let err = parse_nodes("2", &t).expect_err("no node 2");
    assert_eq!(err.to_string(), "node 2 does not exist (valid nodes: 0-1)");
    assert!(err.is_usage());
}

#[test]
fn malformed_lists_are_usage_errors() {
    let t = two_nodes();
    for bad in ["", "3-1", "a", "1,,2", "1-", "-1", "!all", "+8", "!0-7"] {
        let err = parse_cpus(bad, &t).expect_err(bad);
        assert!(err.is_usage(), "{bad}: {err}");
        assert!(err.to_string().contains("0-7"), "{bad}: message names the valid CPUs: {err}");
    }
}

#[test]
fn offline_cpu_is_named_as_offline() {
    let t = four_nodes_memory_only_offline();
    let err = parse_cpus("11", &t).expect_err("offline");
    assert_eq!(err.to_string(), "CPU 11 is offline (online CPUs: 0-9)");
    assert_eq!(parse_cpus("all", &t).expect("valid"), (0..10).collect::<Vec<_>>());
}

#[test]
fn memory_only_nodes_take_memory_but_not_work() {
    let t = four_nodes_memory_only_offline();
    assert_eq!(parse_memory_nodes("3", &t).expect("has memory"), vec![3]);
    let err = parse_cpu_nodes("3", &t).expect_err("no CPUs on node 3");
    assert_eq!(err.to_string(), "node 3 has no CPUs to run on (nodes with CPUs: 0-2)");
    assert_eq!(cpus_of_nodes(&[1, 2], &t), vec![4, 5, 6, 7, 8, 9]);
}

#[test]
fn resolves_placement_options() {
    let t = four_nodes_memory_only_offline();
    let args = PlacementArgs {
        interleave: Some("0,3".into()),
        cpunodebind: Some("1".into()),
        ..Default::default()
    };
    let request = PlacementRequest::resolve(&args, &t).expect("valid");
    assert_eq!(request.policy, MemPolicy::Interleave(vec![0, 3]));
    assert_eq!(request.cpus, Some(vec![4, 5, 6, 7]));

    let none = PlacementRequest::resolve(&PlacementArgs::default(), &t).expect("valid");
    assert_eq!(none, PlacementRequest { cpus: None, policy: MemPolicy::Inherit });

    let preferred = PlacementArgs { preferred: Some("2".into()), ..Default::default() };
    assert_eq!(
        PlacementRequest::resolve(&preferred, &t).expect("ok").policy,
        MemPolicy::Preferred(2)
    );
}

#[test]
fn contradicting_options_are_refused() {
    let t = two_nodes();
    let both = PlacementArgs {
        membind: Some("0".into()),
        interleave: Some("0,1".into()),
        ..Default::default()
    };
    let err = PlacementRequest::resolve(&both, &t).expect_err("conflict");
    assert!(err.is_usage());
    assert!(err.to_string().contains("--membind and --interleave"), "{err}");

    let cpus = PlacementArgs {
        cpunodebind: Some("0".into()),
        physcpubind: Some("1".into()),
        ..Default::default()
    };
    assert!(matches!(PlacementRequest::resolve(&cpus, &t), Err(PlaceError::Conflict(_))));

    let many = PlacementArgs { preferred: Some("0-1".into()), ..Default::default() };
    assert!(matches!(PlacementRequest::resolve(&many, &t), Err(PlaceError::Conflict(_))));
}
