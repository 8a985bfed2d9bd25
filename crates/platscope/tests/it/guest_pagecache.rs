//! Page-cache placement against a real kernel's NUMA code, in a two-node QEMU guest
//! (crates/numa-vm): the lop-sided page cache (the "cyclops" of the Nehalem NUMA versus
//! interleaved memory article) and its `numactl --interleave` cure.
//!
//! The guest's own filesystems are tmpfs (rootfs and /tmp): tmpfs pages are shared memory, not
//! a cache — they are placed when written and cannot be dropped. A real page cache needs a
//! block-backed filesystem, and the guest kernel has block devices and disk filesystems only as
//! modules. So the guest gets, from the same Debian package as its kernel
//! (tests/numa-vm/modules.sh), `brd` (a RAM block device) and the ext4 driver with its
//! dependencies; the test makes an ext2 filesystem on /dev/ram0 with busybox `mke2fs` and
//! mounts it. Pages of files there are ordinary page cache: allocated under the reading or
//! writing task's policy, dropped by `posix_fadvise(DONTNEED)`. (brd keeps its own copy of the
//! blocks; those pages are the "disk" and are not counted.)
//!
//! tmpfs is checked too: a file written by `dd` under `numactl --interleave=0,1` is spread
//! evenly, and `--evict` says why it drops nothing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use test_tier::guest;

use crate::common;

use common::json;
use numa_vm::{CommandResult, GuestRun, GuestSpec};

/// Modules to load, in dependency order, as paths under lib/modules/<version>/kernel/.
const MODULES: &[&str] = &[
    "drivers/block/brd.ko",
    "lib/crc16.ko",
    "fs/mbcache.ko",
    "crypto/crc32c_generic.ko",
    "fs/jbd2/jbd2.ko",
    "fs/ext4/ext4.ko",
];

/// Host paths of [`MODULES`], fetched by tests/numa-vm/modules.sh for the guest's kernel.
fn modules() -> Vec<PathBuf> {
    let setup = numa_vm::prepare().unwrap_or_else(|e| panic!("numa-vm prepare: {e}"));
    let script = numa_vm::prepare_script().with_file_name("modules.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(&setup.cache_dir)
        .arg(&setup.kernel_package)
        .args(MODULES)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} failed:\n{}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let paths: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("NUMA_VM_MODULE="))
        .map(PathBuf::from)
        .collect();
    assert_eq!(paths.len(), MODULES.len(), "{}", String::from_utf8_lossy(&out.stdout));
    paths
}

fn boot(spec: &GuestSpec, extra: &[PathBuf], commands: &[&str]) -> GuestRun {
    let extra: Vec<&Path> = extra.iter().map(PathBuf::as_path).collect();
    common::boot(spec, &extra, commands)
}

/// (pages, resident, [(node, pages)]) of the one file in a `pagecache --json` answer.
fn residency(result: &CommandResult) -> (u64, u64, Vec<(u64, u64)>) {
    let v = json(result);
    let r = &v[0]["result"]["residency"];
    let nodes = r["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| (n["node"].as_u64().expect("node"), n["pages"].as_u64().expect("pages")))
        .collect();
    (r["pages"].as_u64().expect("pages"), r["resident"].as_u64().expect("resident"), nodes)
}

fn on(nodes: &[(u64, u64)], node: u64) -> u64 {
    nodes.iter().find(|(n, _)| *n == node).map_or(0, |(_, p)| *p)
}

/// Asserts an even split over nodes 0 and 1, within 10% of half each.
fn assert_even(what: &str, resident: u64, nodes: &[(u64, u64)]) {
    let half = resident as f64 / 2.0;
    for node in [0, 1] {
        let pages = on(nodes, node) as f64;
        assert!(
            (pages - half).abs() <= 0.1 * half,
            "{what}: node {node} has {pages} of {resident} pages: {nodes:?}"
        );
    }
}

const FILE_PAGES: u64 = 64 << 8; // 64 MiB in 4 KiB pages

#[guest]
fn page_cache_placement_on_two_nodes() {
    let mut extra = modules();
    extra.push(PathBuf::from("/usr/bin/numactl"));
    let spec = GuestSpec::new(&[(1, 1024), (1, 512)], vec![vec![10, 20], vec![20, 10]])
        .with_kernel_arg("numa_balancing=disable")
        .with_timeout(Duration::from_secs(240));
    let run = boot(
        &spec,
        &extra,
        &[
            "insmod /bin/brd.ko rd_nr=1 rd_size=196608 && for m in crc16 mbcache crc32c_generic jbd2 ext4; do insmod /bin/$m.ko || exit 1; done && mke2fs -q /dev/ram0 && mkdir -p /mnt && mount -t ext2 /dev/ram0 /mnt && grep ' /mnt ' /proc/mounts",
            // The cyclops: dd on node 0's CPU caches everything on node 0.
            "taskset -c 0 dd if=/dev/zero of=/mnt/f bs=1M count=64 2>&1 && sync",
            "taskset -c 0 platscope pagecache --json /mnt/f",
            "taskset -c 0 platscope pagecache --evict --json /mnt/f",
            "taskset -c 0 platscope pagecache --load --interleave 0,1 --json /mnt/f",
            "taskset -c 0 platscope pagecache --evict --load --membind 1 --json /mnt/f",
            "platscope pagecache --read-from 0,1 --passes 1 /mnt/f",
            "taskset -c 0 platscope pagecache --evict --json /mnt/f",
            // The article's cure, by an unmodified tool: dd under numactl --interleave.
            "taskset -c 0 numactl --interleave=0,1 dd if=/dev/zero of=/mnt/g bs=1M count=64 2>&1 && sync",
            "platscope pagecache --json /mnt/g",
            // tmpfs: shared memory placed at write time, not a droppable cache.
            "taskset -c 0 numactl --interleave=0,1 dd if=/dev/zero of=/tmp/shm bs=1M count=32 2>&1",
            "platscope pagecache --evict --json /tmp/shm",
            "platscope pagecache --read-from 2 /mnt/f",
        ],
    );
    let r = &run.results;
    assert_eq!(r[0].exit_code, 0, "setting up ext2 on /dev/ram0: {}{}", r[0].stdout, r[0].stderr);
    assert_eq!(r[1].exit_code, 0, "{}", r[1].stdout);

    let (pages, resident, nodes) = residency(&r[2]);
    assert_eq!(pages, FILE_PAGES);
    assert!(resident * 100 >= pages * 95, "written file is cached: {resident} of {pages}");
    assert!(on(&nodes, 0) * 100 >= resident * 95, "dd on node 0 caches on node 0: {nodes:?}");

    let v = json(&r[3]);
    let after = v[0]["result"]["evict"]["resident_after"].as_u64().expect("after");
    assert!(after * 20 < FILE_PAGES, "evict leaves {after} of {FILE_PAGES} pages: 5% or more");

    let (_, resident, nodes) = residency(&r[4]);
    assert!(resident * 100 >= FILE_PAGES * 95, "--load caches the file: {resident}");
    assert_even("--load --interleave 0,1", resident, &nodes);

    let (_, resident, nodes) = residency(&r[5]);
    assert!(resident * 100 >= FILE_PAGES * 95, "--load caches the file: {resident}");
    assert!(on(&nodes, 1) * 100 >= resident * 95, "--membind 1 from a node-0 CPU: {nodes:?}");

    assert_eq!(r[6].exit_code, 0, "{}", r[6].stderr);
    for row in ["    0 ", "    1 "] {
        assert!(
            r[6].stdout.lines().any(|l| l.starts_with(row) && l.contains('x')),
            "{row}: {}",
            r[6].stdout
        );
    }

    let (_, resident, _) = residency(&r[7]);
    assert!(resident * 20 < FILE_PAGES, "evicted: {resident} pages still cached");

    assert_eq!(r[8].exit_code, 0, "{}", r[8].stdout);
    let (_, resident, nodes) = residency(&r[9]);
    assert!(resident * 100 >= FILE_PAGES * 95, "written under interleave: {resident}");
    assert_even("dd under numactl --interleave=0,1", resident, &nodes);

    assert_eq!(r[10].exit_code, 0, "{}", r[10].stdout);
    let v = json(&r[11]);
    let res = &v[0]["result"]["residency"];
    assert_eq!(res["backing"], "shmem");
    assert_eq!(res["filesystem"], "tmpfs");
    let nodes: Vec<(u64, u64)> = res["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| (n["node"].as_u64().expect("node"), n["pages"].as_u64().expect("pages")))
        .collect();
    assert_even(
        "tmpfs written under interleave",
        res["resident"].as_u64().expect("resident"),
        &nodes,
    );
    let evict = &v[0]["result"]["evict"];
    assert_eq!(evict["resident_after"], evict["resident_before"], "tmpfs pages are not dropped");
    assert!(evict["not_a_cache"].as_str().expect("reason").contains("tmpfs"));

    assert_eq!(r[12].exit_code, 2, "node 2 does not exist");
    assert!(r[12].stderr.contains("node 2 does not exist (valid nodes: 0-1)"), "{}", r[12].stderr);
}
