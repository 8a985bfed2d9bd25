//! Placement against a real kernel's NUMA code: platscope runs inside QEMU guests with several
//! NUMA nodes (crates/numa-vm). Each test boots one guest, runs several commands, and prints
//! what it saw. Memory is requested from a CPU of another node than the target, so a policy
//! that is not applied shows up as pages on the wrong node.

use std::time::Duration;
use test_tier::guest;

use crate::common;

use common::{boot, json};
use numa_vm::{CommandResult, GuestSpec};
use serde_json::Value;

const MIB: u64 = 1 << 20;

/// Pages on each node from `platscope place --json`.
fn pages_by_node(result: &CommandResult) -> Vec<(u64, u64)> {
    let v = json(result);
    assert_eq!(v["placement"]["not_present"], 0, "{}", result.command);
    v["placement"]["per_node"]
        .as_array()
        .expect("per_node")
        .iter()
        .map(|n| (n["node"].as_u64().expect("node"), n["pages"].as_u64().expect("pages")))
        .collect()
}

fn ids(value: &Value) -> Vec<u64> {
    value.as_array().expect("array").iter().map(|v| v.as_u64().expect("id")).collect()
}

/// Checks `topo --json` against what the harness configured: node ids, CPU lists, sizes within
/// 5% and the exact distance matrix.
fn check_topology(topo: &Value, spec: &GuestSpec) {
    let nodes = topo["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), spec.nodes.len());
    let mut next_cpu = 0u64;
    for (i, (node, configured)) in nodes.iter().zip(&spec.nodes).enumerate() {
        assert_eq!(node["id"], i as u64);
        let expected: Vec<u64> = (next_cpu..next_cpu + u64::from(configured.cpus)).collect();
        next_cpu += u64::from(configured.cpus);
        assert_eq!(ids(&node["cpus"]), expected, "node {i} CPUs");
        assert_eq!(node["memory_only"], configured.cpus == 0, "node {i} memory_only");
        let total = node["total_bytes"].as_u64().expect("total");
        let want = configured.mem_mib * MIB;
        let ratio = total as f64 / want as f64;
        println!(
            "node {i}: {} MiB of {} MiB configured ({:.1}%)",
            total / MIB,
            configured.mem_mib,
            ratio * 100.0
        );
        assert!((0.95..=1.05).contains(&ratio), "node {i} size {total} vs {want}");
    }
    let d = &topo["distances"];
    assert_eq!(ids(&d["nodes"]), (0..spec.nodes.len() as u64).collect::<Vec<_>>());
    let matrix: Vec<Vec<u64>> = d["matrix"].as_array().expect("matrix").iter().map(ids).collect();
    let want: Vec<Vec<u64>> =
        spec.distances.iter().map(|row| row.iter().map(|&v| u64::from(v)).collect()).collect();
    assert_eq!(matrix, want, "SLIT distances");
}

#[guest]
fn two_node_guest_placement() {
    let spec = GuestSpec::new(&[(1, 2048), (1, 512)], vec![vec![10, 20], vec![20, 10]])
        .with_kernel_arg("numa_balancing=disable")
        .with_timeout(Duration::from_secs(180));
    let run = boot(
        &spec,
        &[],
        &[
            "platscope topo --json",
            "platscope place --size 64MiB --membind 1 --physcpubind 0 --json",
            "platscope place --size 64MiB --interleave 0,1 --physcpubind 0 --json",
            "platscope place --size 64MiB --preferred 1 --physcpubind 0 --json",
            "platscope place --size 32MiB --physcpubind 1 --localalloc --json",
            "platscope place --size 32MiB --cpunodebind 1 --json",
            "platscope place --size 1GiB --membind 1",
            "platscope topo --hardware",
            "platscope mem latency --matrix --size 4MiB --duration-ms 20 --json --no-store",
            "platscope mem bandwidth --matrix --size 4MiB --duration-ms 30 --json --no-store",
            "platscope compat thread_read 1 1 0",
        ],
    );
    let r = &run.results;
    check_topology(&json(&r[0]), &spec);

    assert_eq!(pages_by_node(&r[1]), vec![(1, 16_384)], "bound to node 1: every page on node 1");

    let interleaved = pages_by_node(&r[2]);
    assert_eq!(interleaved.len(), 2, "interleave uses both nodes: {interleaved:?}");
    for (node, pages) in &interleaved {
        assert!(
            pages.abs_diff(8192) <= 819,
            "node {node} has {pages} of 16384: not within 10% of even"
        );
    }

    assert_eq!(pages_by_node(&r[3]), vec![(1, 16_384)], "preferred 1 lands on 1 while it has room");

    let local = json(&r[4]);
    assert_eq!(local["touched_from_cpu"], 1);
    assert_eq!(pages_by_node(&r[4]), vec![(1, 8192)], "local policy on a node-1 CPU");
    assert_eq!(pages_by_node(&r[5]), vec![(1, 8192)], "default policy, CPUs of node 1");

    assert_eq!(r[6].exit_code, 2, "over-asking node 1 is a usage error");
    assert!(r[6].stderr.contains("node(s) 1 have only"), "{}", r[6].stderr);
    assert!(r[6].stderr.contains("use a smaller size"), "{}", r[6].stderr);
    assert_eq!(r[6].stderr.trim_end().lines().count(), 1);

    assert!(
        r[7].stdout.starts_with("available: 2 nodes (0-1)\nnode 0 cpus: 0\n"),
        "{}",
        r[7].stdout
    );
    assert!(
        r[7].stdout.ends_with("node   0   1 \n  0:  10  20 \n  1:  20  10 \n"),
        "{}",
        r[7].stdout
    );
}

#[guest]
fn four_node_guest_with_memory_only_node() {
    let distances = vec![
        vec![10, 16, 22, 30],
        vec![17, 10, 16, 28],
        vec![23, 15, 10, 26],
        vec![31, 29, 27, 10],
    ];
    let spec = GuestSpec::new(&[(2, 2048), (1, 256), (1, 256), (0, 256)], distances)
        .with_kernel_arg("numa_balancing=disable")
        .with_timeout(Duration::from_secs(180));
    let run = boot(
        &spec,
        &[],
        &[
            "platscope topo --json",
            "platscope place --size 32MiB --membind 3 --physcpubind 0 --json",
            "platscope place --size 32MiB --interleave 1-3 --physcpubind 0 --json",
            "platscope place --size 1MiB --cpunodebind 3",
            "platscope place --size 512MiB --membind 3",
        ],
    );
    let r = &run.results;
    let topo = json(&r[0]);
    check_topology(&topo, &spec);
    assert_eq!(topo["nodes"][3]["memory_only"], true);

    assert_eq!(pages_by_node(&r[1]), vec![(3, 8192)], "bound to the memory-only node");
    let spread = pages_by_node(&r[2]);
    assert_eq!(spread.iter().map(|(n, _)| *n).collect::<Vec<_>>(), vec![1, 2, 3]);
    for (node, pages) in &spread {
        assert!(pages.abs_diff(8192 / 3) <= 8192 / 30, "node {node}: {pages} pages");
    }

    assert_eq!(r[3].exit_code, 2);
    assert!(r[3].stderr.contains("node 3 has no CPUs"), "{}", r[3].stderr);
    assert_eq!(r[4].exit_code, 2, "512 MiB does not fit in the 256 MiB node");
    assert!(r[4].stderr.contains("node(s) 3 have only"), "{}", r[4].stderr);
}
