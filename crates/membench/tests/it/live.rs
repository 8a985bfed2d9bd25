//! Kernels on this machine give physically sensible numbers. No timing thresholds beyond
//! orderings and physical bounds: these machines are shared and noisy.

use std::time::Duration;
use test_tier::live;

use membench::latency::{measure_on, prefetch_check, LatencyOptions};
use membench::slb::{run, SlbPlan, SlbWorkerSpec};
use place::{MemPolicy, PageSize};
use topo::Topology;

use crate::common;

use common::serial;

fn topology() -> Topology {
    Topology::detect().expect("topology")
}

#[live]
fn latency_rises_from_l1_to_l2_to_dram() {
    let _serial = serial();
    let t = topology();
    let cpu = t.online_cpu_ids().first().copied();
    let opts = LatencyOptions { duration: Duration::from_millis(200), ..Default::default() };
    let at = |bytes: u64| measure_on(cpu, bytes, &opts, &t).expect("measures");
    let l1 = at(16 << 10);
    let l2 = at(256 << 10);
    let dram = at(256 << 20);
    println!(
        "L1 {:.2} ns ({:.1} cycles), L2 {:.2} ns, DRAM {:.1} ns (p99 {:.1})",
        l1.ns.median,
        l1.cycles.unwrap_or(f64::NAN),
        l2.ns.median,
        dram.ns.median,
        dram.ns.p99
    );
    assert!(l1.ns.median < l2.ns.median, "L1 below L2");
    assert!(l2.ns.median < dram.ns.median, "L2 below DRAM");
    assert!(dram.ns.median > 20.0 && dram.ns.median < 2000.0, "DRAM latency {} ns", dram.ns.median);
    // Every x86-64 and Arm core of the last decade documents 3-5 cycles load-to-use for L1.
    let cycles = l1.cycles.expect("core clock measured");
    assert!((2.5..=7.0).contains(&cycles), "L1 at {cycles:.1} cycles");
    assert!(dram.placement.not_present == 0);
}

#[live]
fn random_chase_is_not_prefetched() {
    let _serial = serial();
    let t = topology();
    let cpu = t.online_cpu_ids().first().copied();
    let opts = LatencyOptions { duration: Duration::from_millis(200), ..Default::default() };
    let random = measure_on(cpu, 128 << 20, &opts, &t).expect("random");
    let check = prefetch_check(cpu, &random, &opts, &t).expect("sequential");
    println!("{check:?}");
    assert!(
        check.defeated,
        "sequential {:.1} ns vs random {:.1} ns",
        check.sequential_ns, check.random_ns
    );
}

#[live]
fn slb_workers_run_and_report_verified_memory() {
    let _serial = serial();
    let t = topology();
    let cpus = t.online_cpu_ids();
    let plan = SlbPlan {
        pages: 4096,
        loops: 64,
        page: PageSize::Base,
        workers: cpus
            .iter()
            .map(|&c| SlbWorkerSpec { cpu: Some(c), policy: MemPolicy::Local })
            .collect(),
        seed: 42,
    };
    let result = run(&plan, &t, &measure::progress::hidden()).expect("runs");
    assert!(!result.interrupted);
    assert_eq!(result.workers.len(), cpus.len());
    for w in &result.workers {
        println!("{}", w.memhammer_line());
        assert_eq!(w.ops, 4096 * 64);
        assert_eq!(w.cpu, Some(cpus[w.worker]));
        assert_eq!(w.placement.total_pages(), 4096);
        let node = t.node_of_cpu(cpus[w.worker]).expect("node");
        assert!(w.placement.all_on(&[node]));
        assert!(w.ns_per_op() > 0.1 && w.ns_per_op() < 10_000.0);
    }
    let s = result.summary();
    assert!(s.min_ns <= s.median_ns && s.median_ns <= s.max_ns);
}

#[live]
fn slb_refuses_more_than_memory_before_allocating() {
    let _serial = serial();
    let t = topology();
    let plan = SlbPlan {
        pages: 1 << 31,
        loops: 1,
        page: PageSize::Base,
        workers: vec![SlbWorkerSpec { cpu: None, policy: MemPolicy::Inherit }; 4],
        seed: 1,
    };
    let err = run(&plan, &t, &measure::progress::hidden()).expect_err("8 TiB × 4 refused");
    println!("{err}");
    assert!(err.is_usage());
}
