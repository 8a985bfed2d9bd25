//! The SLB kit and `mem slb` against a real kernel's NUMA code, in QEMU guests with several
//! nodes (crates/numa-vm): `membind_example.4` from the Silly Little Benchmark's NUMA versus
//! interleaved (SUMA) experiments, run unchanged but for its sizes, with Debian's numactl inside
//! the guest, and `mem slb` placement verified per node. Timing means nothing under TCG: only
//! the line format and the placement are checked.

use std::path::Path;
use std::time::Duration;
use test_tier::guest;

use crate::common;

use common::json;
use numa_vm::{GuestRun, GuestSpec};
use serde_json::Value;

/// The SLB's `membind_example.4`: one memhammer per node under `numactl --membind N --cpubind N`
/// (the blog's typography turned `--` into `–`; the script has `--`).
const MEMBIND_EXAMPLE_4: &str = "\
./create_sem
numactl --membind 3 --cpubind 3 ./memhammer 262144 6000 &
numactl --membind 2 --cpubind 2 ./memhammer 262144 6000 &
numactl --membind 1 --cpubind 1 ./memhammer 262144 6000 &
numactl --membind 0 --cpubind 0 ./memhammer 262144 6000 &
./trigger
wait
";

const NUMACTL: &str = "/usr/bin/numactl";

fn boot(spec: &GuestSpec, commands: &[&str]) -> GuestRun {
    assert!(
        Path::new(NUMACTL).is_file(),
        "{NUMACTL} is needed for this test (scripts/setup.sh installs the numactl package)"
    );
    common::boot(spec, &[Path::new(NUMACTL)], commands)
}

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

/// Checks memhammer's line format and arithmetic; returns the ops count.
fn memhammer_line_ops(line: &str) -> u64 {
    let t: Vec<&str> = line.split(' ').collect();
    assert_eq!(t.len(), 12, "{line:?}");
    assert_eq!(
        [t[0], t[1], t[3], t[4], t[6], t[7], t[9], t[10]],
        ["Total", "ops", "Avg", "nsec/op", "gettimeofday", "usec", "TPUT", "ops/sec"],
        "{line:?}"
    );
    let ops: u64 = t[2].parse().expect("ops");
    let usec: u64 = t[8].parse().expect("usec");
    assert_eq!(t[5], format!("{:.1}", usec as f64 * 1000.0 / ops as f64), "{line:?}");
    assert_eq!(t[11], format!("{:.1}", ops as f64 / (usec.max(1) as f64 / 1e6)), "{line:?}");
    ops
}

#[guest]
fn membind_example_4_in_a_four_node_guest() {
    let distances = vec![
        vec![10, 16, 16, 22],
        vec![16, 10, 22, 16],
        vec![16, 22, 10, 16],
        vec![22, 16, 16, 10],
    ];
    let spec = GuestSpec::new(&[(1, 256), (1, 256), (1, 256), (1, 256)], distances)
        .with_kernel_arg("numa_balancing=disable")
        .with_timeout(Duration::from_secs(180));
    let script = MEMBIND_EXAMPLE_4.replace("262144 6000", "1024 10");
    let run_script = format!(
        "mkdir -p /tmp/slb && cd /tmp/slb || exit 99\n\
         for t in create_sem memhammer trigger cpu_bind; do ln -s /bin/platscope $t; done\n\
         cat > membind_example.4 <<'SCRIPT'\n{script}SCRIPT\n\
         sh ./membind_example.4"
    );
    let run = boot(
        &spec,
        &[
            &run_script,
            // memhammer allocates under the policy numactl gives it, as `place` does without
            // placement options: every page on the bound node, touched from another node's CPU.
            "numactl --membind 2 --cpubind 0 platscope place --size 4MiB --json",
        ],
    );
    let r = &run.results;
    assert_eq!(r[0].exit_code, 0, "{}", r[0].stderr);
    assert!(r[0].stderr.is_empty(), "{}", r[0].stderr);
    let lines: Vec<&str> = r[0].stdout.lines().collect();
    assert_eq!(lines.len(), 4, "one line per memhammer:\n{}", r[0].stdout);
    for line in lines {
        assert_eq!(memhammer_line_ops(line), 1024 * 10, "{line}");
    }
    let place = json(&r[1]);
    assert_eq!(place["touched_from_cpu"], 0);
    assert_eq!(per_node(&place["placement"]), vec![(2, 1024)], "inherited --membind 2");
}

#[guest]
fn mem_slb_verifies_memory_on_the_bound_node() {
    let spec = GuestSpec::new(&[(1, 512), (1, 512)], vec![vec![10, 20], vec![20, 10]])
        .with_kernel_arg("numa_balancing=disable")
        .with_timeout(Duration::from_secs(180));
    let run = boot(
        &spec,
        &[
            "platscope mem slb --pages 1024 --loops 10 --membind 1 --physcpubind 0 --json",
            "platscope mem slb --processes --pages 1024 --loops 10 --membind 1 --cpus 0,1 --json",
            "platscope mem slb --processes --pages 1024 --loops 10 --localalloc --cpus 0,1 --json",
        ],
    );
    let r = &run.results;
    let threads = json(&r[0]);
    let workers = threads["workers"].as_array().expect("workers");
    assert_eq!(workers.len(), 1);
    assert_eq!(workers[0]["cpu"], 0);
    assert_eq!(workers[0]["ops"], 10_240);
    assert_eq!(per_node(&workers[0]["placement"]), vec![(1, 1024)], "all memory on node 1");

    let processes = json(&r[1]);
    let workers = processes["workers"].as_array().expect("workers");
    assert_eq!(workers.len(), 2);
    for (i, w) in workers.iter().enumerate() {
        assert_eq!(w["cpu"], i, "worker {i} pinned to CPU {i}");
        assert_eq!(w["ops"], 10_240);
        assert_eq!(per_node(&w["placement"]), vec![(1, 1024)], "worker {i}: bound to node 1");
    }

    // Local allocation in each worker process lands on its own CPU's node.
    let local = json(&r[2]);
    let workers = local["workers"].as_array().expect("workers");
    for (i, w) in workers.iter().enumerate() {
        assert_eq!(per_node(&w["placement"]), vec![(i as u64, 1024)], "worker {i}: local");
    }
}
