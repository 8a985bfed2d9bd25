//! `mem c2c --line-on` and `mem slb --shared` against a real kernel's NUMA code in a two-node
//! QEMU guest (crates/numa-vm): the line's page and the shared region's pages are verified on
//! the requested node. Timing means nothing under TCG: only placement, counts and errors are
//! checked.

use std::time::Duration;
use test_tier::guest;

use crate::common;

use common::json;
use numa_vm::GuestSpec;
use serde_json::Value;

/// (node, pages) of a placement, checking every page was resident.
fn per_node(placement: &Value) -> Vec<(u64, u64)> {
    assert_eq!(placement["not_present"], 0, "{placement}");
    placement["per_node"]
        .as_array()
        .expect("per_node")
        .iter()
        .map(|n| (n["node"].as_u64().expect("node"), n["pages"].as_u64().expect("pages")))
        .collect()
}

#[guest]
fn shared_region_and_c2c_line_are_placed_on_the_requested_node() {
    let spec = GuestSpec::new(&[(1, 512), (1, 512)], vec![vec![10, 20], vec![20, 10]])
        .with_kernel_arg("numa_balancing=disable")
        .with_timeout(Duration::from_secs(240));
    let run = common::boot(
        &spec,
        &[],
        &[
            "platscope --no-store mem slb --shared --lock spin --workers 2 --pages 256 --loops 4 --membind 1 --json",
            "platscope --no-store mem slb --shared --lock ticket --cpus 0,1 --pages 256 --loops 4 --interleave 0,1 --json",
            "platscope --no-store mem c2c --line-on 1 --duration-ms 50 --json",
            "platscope --no-store mem c2c --line-on 0 --mode cas --duration-ms 50 --json",
            "platscope --no-store mem c2c --line-on 2",
            "platscope --no-store mem slb --shared --workers 3 --pages 16 --loops 1",
        ],
    );
    let r = &run.results;
    // The region: one control page (lock and counter slots) and 256 SLB pages, all on node 1.
    let bound = json(&r[0]);
    assert_eq!(per_node(&bound["region"]), vec![(1, 257)], "bound to node 1");
    assert_eq!(bound["ops_total"], 2 * 256 * 4);
    assert_eq!(bound["counters_total"], bound["ops_total"], "the spinlock lost no update");
    let shares = bound["fairness"]["shares"].as_array().expect("shares");
    assert_eq!(shares.len(), 2);

    let interleaved = json(&r[1]);
    let split = per_node(&interleaved["region"]);
    assert_eq!(split.len(), 2, "{split:?}");
    assert!(split.iter().all(|&(_, pages)| (128..=129).contains(&pages)), "{split:?}");
    assert_eq!(interleaved["counters_total"], interleaved["ops_total"]);

    for (i, node) in [(2, 1u64), (3, 0)] {
        let c2c = json(&r[i]);
        // The default 8 lines, each on its own page.
        assert_eq!(per_node(&c2c["line"]), vec![(node, 8)], "lines on node {node}");
        let pairs = c2c["pairs"].as_array().expect("pairs");
        assert_eq!(pairs.len(), 1);
        assert_eq!(pairs[0]["class"], "other-node", "CPUs 0 and 1 are on different nodes");
        // One CPU per node: the only pair is across nodes, so only 0→1 and 1→0 have a figure.
        let cells = c2c["nodes"].as_array().expect("node cells");
        let ends: Vec<(u64, u64)> = cells
            .iter()
            .map(|c| (c["from"].as_u64().expect("from"), c["to"].as_u64().expect("to")))
            .collect();
        assert_eq!(ends, [(0, 1), (1, 0)], "{cells:?}");
    }

    assert_eq!(r[4].exit_code, 2, "{}", r[4].stderr);
    assert!(r[4].stderr.contains("node 2 does not exist"), "{}", r[4].stderr);
    assert_eq!(r[5].exit_code, 2, "{}", r[5].stderr);
    assert!(r[5].stderr.contains("only 2 CPUs allowed"), "{}", r[5].stderr);
}
