//! Bandwidth kernels and loaded latency on this machine: sane, verified, and ordered as physics
//! says (no timing thresholds beyond physical bounds).

use std::time::Duration;

use membench::bandwidth::{isa_candidates, run, BandwidthOptions, ThreadSpec, TRIAL_MARGIN};
use membench::kernels::bandwidth::{Isa, Kernel, KERNELS};
use membench::latency::LatencyOptions;
use membench::loaded::{self, LoadMix, LoadedOptions};
use place::{MemPolicy, PageSize};
use topo::Topology;

mod common;

use common::serial;

fn topology() -> Topology {
    Topology::detect().expect("topology")
}

#[test]
#[ignore = "live tier: runs on this machine (root for BPF, veth, huge pages); scripts/test.sh runs it"]
fn every_kernel_and_isa_gives_a_sane_figure_with_verified_memory() {
    let _serial = serial();
    let t = topology();
    let cpu = t.online_cpu_ids()[0];
    let node = t.node_of_cpu(cpu).expect("node");
    for isa in Isa::available() {
        for k in KERNELS {
            let opts = BandwidthOptions {
                kernel: k.kernel,
                isa: Some(isa),
                bytes_per_thread: 32 << 20,
                page: PageSize::Base,
                duration: Duration::from_millis(100),
                rounds: 5,
            };
            let spec = ThreadSpec { cpu: Some(cpu), policy: MemPolicy::Bind(vec![node]) };
            let r = run(&[spec], &opts, &t).expect("runs");
            let gbs = r.aggregate_gbs.median;
            println!("{} {isa}: {gbs:.2} GB/s", k.name);
            // Above a floppy disk, below any memory system a single core can drive.
            assert!(gbs > 0.05 && gbs < 1000.0, "{} {isa}: {gbs}", k.name);
            assert_eq!(r.threads[0].placements.len(), k.buffers);
            assert!(r.threads[0].placements.iter().all(|p| p.all_on(&[node])));
            assert!(!r.accounting.is_empty());
        }
    }
}

#[test]
#[ignore = "live tier: runs on this machine (root for BPF, veth, huge pages); scripts/test.sh runs it"]
fn with_no_isa_asked_every_thread_runs_the_trial_winner() {
    let _serial = serial();
    let t = topology();
    let cpus = t.online_cpu_ids();
    let candidates = isa_candidates(Kernel::Copy);
    let opts = BandwidthOptions {
        kernel: Kernel::Copy,
        isa: None,
        bytes_per_thread: 32 << 20,
        page: PageSize::Base,
        duration: Duration::from_millis(200),
        rounds: 4,
    };
    let specs: Vec<ThreadSpec> = cpus
        .iter()
        .take(2)
        .map(|&cpu| ThreadSpec { cpu: Some(cpu), policy: MemPolicy::Inherit })
        .collect();
    let r = run(&specs, &opts, &t).expect("runs");
    let tried: Vec<Isa> = r.isa_trial.iter().map(|f| f.isa).collect();
    if candidates.len() < 2 {
        assert!(tried.is_empty(), "one candidate ({candidates:?}): nothing to try");
        assert_eq!(r.isa, Isa::best());
        return;
    }
    assert_eq!(tried, candidates, "every candidate tried, widest first");
    assert!(r.isa_trial.iter().all(|f| f.gbs > 0.05 && f.gbs < 1000.0), "{:?}", r.isa_trial);
    let widest = &r.isa_trial[0];
    let chosen = r.isa_trial.iter().find(|f| f.isa == r.isa).expect("the ISA run is a candidate");
    // The wider unless the narrower beat it by more than the margin.
    let bar = widest.gbs * (1.0 + TRIAL_MARGIN);
    if r.isa == widest.isa {
        assert!(r.isa_trial.iter().all(|f| f.gbs <= bar), "{:?}", r.isa_trial);
    } else {
        assert!(chosen.gbs > bar, "{:?}", r.isa_trial);
    }
    // Read-line has no vector ISA to choose.
    let line =
        run(&specs, &BandwidthOptions { kernel: Kernel::ReadLine, ..opts }, &t).expect("runs");
    assert!(line.isa_trial.is_empty());
}

#[test]
#[ignore = "live tier: runs on this machine (root for BPF, veth, huge pages); scripts/test.sh runs it"]
fn loaded_latency_rises_with_load() {
    let _serial = serial();
    let t = topology();
    let cpus = t.online_cpu_ids();
    assert!(cpus.len() >= 2, "this test needs two CPUs");
    let opts = LoadedOptions {
        chase: LatencyOptions::default(),
        chase_bytes: 128 << 20,
        mix: LoadMix::Reads,
        isa: Isa::best(),
        load_bytes_per_thread: 64 << 20,
        load_policy: MemPolicy::Inherit,
        delays: vec![0, 100_000],
        point_duration: Duration::from_millis(200),
    };
    let curve =
        loaded::run(cpus[0], &cpus[1..], &opts, &t, &measure::progress::hidden()).expect("runs");
    for p in &curve.points {
        println!(
            "delay {:?}: {:.2} GB/s, {:.1} ns",
            p.delay_cycles, p.load_gbs, p.latency_ns.median
        );
    }
    assert_eq!(curve.points.len(), 3);
    let (full, light, idle) = (&curve.points[0], &curve.points[1], &curve.points[2]);
    assert_eq!(idle.delay_cycles, None);
    assert!(full.load_gbs > light.load_gbs, "no delay moves more than a long delay");
    assert!(idle.load_gbs < full.load_gbs / 10.0, "paused load threads move (almost) nothing");
    assert_eq!(curve.kernel, Kernel::Read);
    // The delays are core cycles exactly when the core clock is trusted.
    assert_eq!(curve.delay_caveat.is_none(), measure::core_clock::core_ghz().is_some());
}
