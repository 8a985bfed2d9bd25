//! Bandwidth kernels and loaded latency on this machine: sane, verified, and ordered as physics
//! says (no timing thresholds beyond physical bounds).

use std::time::Duration;
use test_tier::live;

use membench::bandwidth::{run, trial_candidates, trial_winner, BandwidthOptions, ThreadSpec};
use membench::kernels::bandwidth::{Isa, Kernel, Walk, KERNELS};
use membench::latency::LatencyOptions;
use membench::loaded::{self, LoadMix, LoadedOptions};
use place::{MemPolicy, PageSize};
use topo::Topology;

use crate::common;

use common::serial;

fn topology() -> Topology {
    Topology::detect().expect("topology")
}

#[live]
fn every_kernel_isa_and_walk_gives_a_sane_figure_with_verified_memory() {
    let _serial = serial();
    let t = topology();
    let cpu = t.online_cpu_ids()[0];
    let node = t.node_of_cpu(cpu).expect("node");
    // Every ISA front to back; the four-page walk with the widest (the walk is the same code
    // around each ISA's body, and the kernels' unit tests check every pair's results).
    let runs = Isa::available()
        .into_iter()
        .map(|isa| (isa, Walk::Sequential))
        .chain([(Isa::best(), Walk::FourPages)]);
    for (isa, walk) in runs {
        for k in KERNELS {
            let opts = BandwidthOptions {
                kernel: k.kernel,
                isa: Some(isa),
                walk: Some(walk),
                bytes_per_thread: 32 << 20,
                page: PageSize::Base,
                duration: Duration::from_millis(100),
                rounds: 5,
            };
            let spec = ThreadSpec { cpu: Some(cpu), policy: MemPolicy::Bind(vec![node]) };
            let r = run(&[spec], &opts, &t).expect("runs");
            let gbs = r.aggregate_gbs.median;
            println!("{} {isa} {walk}: {gbs:.2} GB/s", k.name);
            assert_eq!((r.isa, r.walk), (isa, walk), "as asked");
            assert!(r.isa_trial.is_empty(), "both given: no trial");
            // Above a floppy disk, below any memory system a single core can drive.
            assert!(gbs > 0.05 && gbs < 1000.0, "{} {isa} {walk}: {gbs}", k.name);
            assert_eq!(r.threads[0].placements.len(), k.buffers);
            assert!(r.threads[0].placements.iter().all(|p| p.all_on(&[node])));
            assert!(!r.accounting.is_empty());
        }
    }
}

#[live]
fn with_neither_isa_nor_walk_asked_every_thread_runs_the_trial_winner() {
    let _serial = serial();
    let t = topology();
    let cpus = t.online_cpu_ids();
    let opts = BandwidthOptions {
        kernel: Kernel::Copy,
        isa: None,
        walk: None,
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
    // Read-line has no vector ISA to choose: only its walk is tried.
    for kernel in [Kernel::Copy, Kernel::ReadLine] {
        let r = run(&specs, &BandwidthOptions { kernel, ..opts.clone() }, &t).expect("runs");
        let tried: Vec<(Isa, Walk)> = r.isa_trial.iter().map(|f| (f.isa, f.walk)).collect();
        let candidates = trial_candidates(kernel, None, None);
        assert_eq!(tried, candidates, "{kernel}: every candidate tried, in order");
        assert!(candidates.contains(&(Isa::best(), Walk::FourPages)), "{candidates:?}");
        assert!(r.isa_trial.iter().all(|f| f.gbs > 0.05 && f.gbs < 1000.0), "{:?}", r.isa_trial);
        // The one the margin rule picks from the figures the run reports (the rule itself is
        // unit-tested with fixed figures).
        assert_eq!(
            Some((r.isa, r.walk)),
            trial_winner(&r.isa_trial),
            "{kernel}: {:?}",
            r.isa_trial
        );
    }
}

#[live]
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

#[live]
fn a_buffer_sized_from_the_cache_is_checked_at_twice_its_size() {
    use membench::bandwidth::{
        default_bytes_per_thread, run_checked, SIZE_CHECK_GROWTH, SIZE_CHECK_TOLERANCE,
    };
    let _serial = serial();
    let t = topology();
    let cpu = t.online_cpu_ids()[0];
    let opts = BandwidthOptions {
        kernel: Kernel::Read,
        isa: Some(Isa::best()),
        walk: Some(Walk::Sequential),
        // Replaced by the size the check starts from.
        bytes_per_thread: 0,
        page: PageSize::Base,
        duration: Duration::from_millis(100),
        rounds: 5,
    };
    let spec = ThreadSpec { cpu: Some(cpu), policy: MemPolicy::Local };
    let (r, check) = run_checked(&[spec], &opts, &t).expect("runs");
    println!("{}", check.sentence());
    // On this host's own last-level cache: one thread streams 4× it, then twice that.
    assert_eq!(check.tried[0].0, default_bytes_per_thread(&t, 1));
    assert!(check.tried.len() >= 2 && check.tried.len() <= 1 + SIZE_CHECK_GROWTH as usize);
    for pair in check.tried.windows(2) {
        assert_eq!(pair[1].0, 2 * pair[0].0, "each try doubles the buffer: {check:?}");
    }
    // The verdict follows the rule on the figures it measured: every doubling but the last
    // read slower by more than the tolerance, and the last agreed exactly when it did not.
    let slower = |(small, large): (f64, f64)| large < small * (1.0 - SIZE_CHECK_TOLERANCE);
    let pairs: Vec<(f64, f64)> = check.tried.windows(2).map(|w| (w[0].1, w[1].1)).collect();
    assert!(pairs[..pairs.len() - 1].iter().all(|&p| slower(p)), "{check:?}");
    assert_eq!(check.agreed, !slower(pairs[pairs.len() - 1]), "{check:?}");
    // The figure kept is the one at the size the check settled on, and carries the check.
    let settled = if check.agreed { check.tried.len() - 2 } else { check.tried.len() - 1 };
    assert_eq!(r.bytes_per_thread, check.tried[settled].0);
    assert_eq!(r.size_check.as_ref(), Some(&check));
}
