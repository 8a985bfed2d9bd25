//! Live tests: real child processes under real allocators on this machine. They assert what
//! cannot be noise — verification, address-space arithmetic, counts — never which allocator wins.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use test_tier::live;

use allocbench::allocator::{ldconfig_cache, parse_glibc, resolve, Allocator, Kind, KNOWN};
use allocbench::bakeoff::{self, Plan, Workload};
use allocbench::run::{
    run_builtin, run_command, CommandSpec, Outcome, RunRecord, Subject, Throughput, WorkerCommand,
};
use allocbench::workload::BuiltinParams;

fn worker() -> WorkerCommand {
    WorkerCommand { program: PathBuf::from(env!("CARGO_BIN_EXE_allocbench-worker")), args: vec![] }
}

fn small(threads: u32) -> BuiltinParams {
    BuiltinParams { threads, ops_per_thread: 200_000, working_set: 1024, ..Default::default() }
}

fn measured(o: Outcome) -> RunRecord {
    match o {
        Outcome::Measured(r) => r,
        other => panic!("expected a measured run, got {other:?}"),
    }
}

fn run_once(a: &Allocator, p: &BuiltinParams) -> Outcome {
    let cache = ldconfig_cache();
    run_builtin(&worker(), p, &Subject::new(a, &cache), 0, &AtomicBool::new(false)).unwrap()
}

#[live]
fn every_installed_preload_is_seen_in_the_maps_of_the_measured_process() {
    let cache = ldconfig_cache();
    let names: Vec<String> = KNOWN.iter().map(|k| k.name.to_string()).collect();
    let r = resolve(&names, &[], &cache).unwrap();
    assert!(
        r.missing.is_empty(),
        "install the Debian allocators (scripts/setup.sh): {:?}",
        r.missing
    );
    for a in &r.allocators {
        let rec = measured(run_once(a, &small(2)));
        let Kind::Preload { library } = &a.kind else { unreachable!() };
        let file = library.file_name().unwrap().to_string_lossy().into_owned();
        assert!(rec.verified.contains(&file), "{}: {}", a.name, rec.verified);
        assert_eq!(rec.ops, 400_000.0);
    }
}

#[live]
fn a_library_that_cannot_be_preloaded_is_refused() {
    // An existing file that is not a shared library: ld.so prints "cannot be preloaded ...
    // ignored" and the program runs under glibc — exactly what the check must catch.
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir.path().join("libbogus.so");
    std::fs::write(&bogus, "not an ELF file\n").unwrap();
    let a = Allocator { name: "bogus".into(), kind: Kind::Preload { library: bogus.clone() } };
    match run_once(&a, &small(1)) {
        Outcome::Refused(r) => {
            assert!(r.reason.contains("not mapped"), "{}", r.reason);
            assert!(r.reason.contains("libbogus.so"), "{}", r.reason);
        }
        other => panic!("a bogus preload was not refused: {other:?}"),
    }
    // The same through a command workload.
    let spec =
        CommandSpec { argv: vec!["sleep".into(), "0.3".into()], throughput: Throughput::Ops(1) };
    let cache = ldconfig_cache();
    let o = run_command(&spec, 1, &Subject::new(&a, &cache), 0, &AtomicBool::new(false)).unwrap();
    assert!(matches!(o, Outcome::Refused(_)), "{o:?}");
}

/// A real library that is mapped but is not an allocator (libz, libm) is refused before measuring,
/// naming where malloc resolved (glibc's libc); a real allocator still counts.
#[live]
fn a_mapped_library_that_is_not_an_allocator_is_refused_naming_where_malloc_went() {
    let cache = ldconfig_cache();
    let find = |name: &str| {
        cache
            .iter()
            .find(|e| e.name == name)
            .map(|e| e.path.clone())
            .unwrap_or_else(|| panic!("{name} is not in the linker cache (apt-get install it)"))
    };
    for lib in ["libz.so.1", "libm.so.6"] {
        let a = Allocator { name: "x".into(), kind: Kind::Preload { library: find(lib) } };
        match run_once(&a, &small(1)) {
            Outcome::Refused(r) => {
                assert!(r.reason.starts_with("malloc resolves to "), "{lib}: {}", r.reason);
                assert!(r.reason.contains("libc.so"), "{lib}: {}", r.reason);
                assert!(r.reason.contains(lib), "{lib}: {}", r.reason);
            }
            other => panic!("{lib} was measured as an allocator: {other:?}"),
        }
    }
    let je = Allocator {
        name: "jemalloc".into(),
        kind: Kind::Preload { library: find("libjemalloc.so.2") },
    };
    let rec = measured(run_once(&je, &small(1)));
    assert!(rec.verified.contains("posix_memalign resolve to"), "{}", rec.verified);
    assert!(rec.verified.contains("libjemalloc"), "{}", rec.verified);
    let glibc = measured(run_once(&Allocator::glibc(), &small(1)));
    assert!(glibc.verified.contains("libc.so"), "{}", glibc.verified);
}

/// Command workloads: a library the command maps but that does not serve malloc is refused before
/// the command runs, by the probe worker started under it; a real allocator and glibc go on to be
/// measured.
#[live]
fn a_command_under_a_library_that_is_not_an_allocator_is_refused_by_the_probe() {
    let cache = ldconfig_cache();
    let libz = cache.iter().find(|e| e.name == "libz.so.1").expect("libz in the linker cache");
    let x = Allocator { name: "x".into(), kind: Kind::Preload { library: libz.path.clone() } };
    let mut allocators =
        resolve(&["glibc".into(), "jemalloc".into()], &[], &cache).unwrap().allocators;
    allocators.push(x);
    let spec =
        CommandSpec { argv: vec!["sleep".into(), "0.2".into()], throughput: Throughput::Ops(1) };
    let plan = Plan {
        allocators,
        missing: vec![],
        threads: vec![1],
        repeat: 1,
        workload: Workload::Command(spec),
        probe: Some(worker()),
    };
    let mut runs = 0;
    let b = bakeoff::run(&plan, &cache, &AtomicBool::new(false), &mut |o| {
        if let Outcome::Measured(_) = o {
            runs += 1;
        }
    })
    .unwrap();
    assert_eq!(runs, 2, "glibc and jemalloc measured");
    let r = b.refused.iter().find(|r| r.allocator == "x").expect("x refused");
    assert!(
        r.reason.contains("malloc resolves to") && r.reason.contains("libc.so"),
        "{}",
        r.reason
    );
    assert!(!b.runs.iter().any(|r| r.allocator == "x"), "x never measured");
    // Without the probe the mapped check alone lets libz through: the probe is what refuses it.
    let Workload::Command(spec) = &plan.workload else { unreachable!() };
    let x = &plan.allocators[2];
    let o = run_command(spec, 1, &Subject::new(x, &cache), 0, &AtomicBool::new(false)).unwrap();
    assert!(matches!(o, Outcome::Measured(_)), "{o:?}");
}

const ARENA: f64 = 64.0 * 1024.0 * 1024.0;

#[live]
fn glibc_grows_one_64_mib_arena_per_thread_and_stays_flat_with_arena_max_1() {
    let glibc = Allocator::glibc();
    let one = parse_glibc("glibc:arena_max=1").unwrap().unwrap();
    let growth = |a: &Allocator, t: u32| measured(run_once(a, &small(t))).total_growth() as f64;
    let (g4, one4, one1) = (growth(&glibc, 4), growth(&one, 4), growth(&one, 1));
    // Thread stacks are the same in both 4-thread runs: the difference is the arenas, one per
    // thread (the main thread stays on the main, brk-based arena).
    let arenas = (g4 - one4) / ARENA;
    assert!((3.5..=4.5).contains(&arenas), "4 threads made {arenas:.2} arenas of 64 MiB");
    // With arena_max=1 four threads cost no more than one thread plus their stacks.
    assert!(one4 - one1 < ARENA / 2.0, "arena_max=1 grew {} MiB", (one4 - one1) / 1048576.0);
    // The arenas are reservations: without PROT_NONE the growth is far below 64 MiB each.
    let rec = measured(run_once(&glibc, &small(4)));
    assert!((rec.accessible_growth() as f64) < 4.0 * ARENA / 2.0, "{rec:?}");
}

#[live]
fn cpu_per_op_is_the_cpu_delta_over_the_count_in_real_runs() {
    let rec = measured(run_once(&Allocator::glibc(), &small(2)));
    assert!(rec.cpu.process_s > 0.0);
    let expected = rec.cpu.process_s / rec.ops * 1e6;
    assert!((rec.cpu_per_op_us - expected).abs() <= expected * 1e-12, "{rec:?}");
    assert!((rec.machine_cpu_per_op_us - rec.cpu.machine_busy_s / rec.ops * 1e6).abs() < 1e-9);
    assert!(rec.memory.hwm_bytes.unwrap() >= rec.memory.rss_bytes.unwrap() / 2);
    assert!(rec.memory.pss_bytes.is_some() && rec.minor_faults > 0);
}

#[live]
fn a_failing_command_or_one_without_the_metric_is_a_clear_error() {
    let cache = ldconfig_cache();
    let glibc = Subject::new(&Allocator::glibc(), &cache);
    let stop = AtomicBool::new(false);
    let fail = CommandSpec {
        argv: vec!["sh".into(), "-c".into(), "echo broken >&2; exit 3".into()],
        throughput: Throughput::Ops(1),
    };
    let e = run_command(&fail, 1, &glibc, 0, &stop).unwrap_err().to_string();
    assert!(e.contains("exited with status 3") && e.contains("broken"), "{e}");
    let quiet = CommandSpec {
        argv: vec!["sh".into(), "-c".into(), "sleep 0.2; echo done".into()],
        throughput: Throughput::Metric(regex::Regex::new(r"rate=(\d+)").unwrap()),
    };
    let e = run_command(&quiet, 1, &glibc, 0, &stop).unwrap_err().to_string();
    assert!(e.contains("rate=") && e.contains("--ops"), "{e}");
    let ok = CommandSpec {
        argv: vec!["sh".into(), "-c".into(), "sleep 0.2; echo rate=250".into()],
        throughput: Throughput::Metric(regex::Regex::new(r"rate=(\d+)").unwrap()),
    };
    let rec = measured(run_command(&ok, 1, &glibc, 0, &stop).unwrap());
    assert_eq!(rec.throughput, 250.0);
    let e = run_command(
        &CommandSpec { argv: vec!["/nonexistent/x".into()], throughput: Throughput::Ops(1) },
        1,
        &glibc,
        0,
        &stop,
    )
    .unwrap_err();
    assert!(e.is_usage(), "{e}");
}

#[live]
fn a_bakeoff_interleaves_and_summarizes() {
    let cache = ldconfig_cache();
    let r = resolve(&["glibc".into(), "jemalloc".into()], &[], &cache).unwrap();
    let plan = Plan {
        allocators: r.allocators,
        missing: r.missing,
        threads: vec![1, 2],
        repeat: 3,
        workload: Workload::Builtin { worker: worker(), params: small(1) },
        probe: None,
    };
    let mut order = Vec::new();
    let b = bakeoff::run(&plan, &cache, &AtomicBool::new(false), &mut |o| {
        if let Outcome::Measured(r) = o {
            order.push((r.round, r.threads, r.allocator.clone()));
        }
    })
    .unwrap();
    assert_eq!(b.runs.len(), 12);
    // Round 2 starts with the other allocator (rotation).
    assert_ne!(order[0].2, order[4].2);
    assert_eq!(b.groups.len(), 4);
    assert!(b.groups.iter().all(|g| g.throughput.samples.len() == 3));
    let text = allocbench::render::render(&b);
    assert!(text.contains("threads 2") && text.contains("jemalloc"), "{text}");
    // jemalloc judged against glibc on its runs at each thread count, one family of two.
    for g in b.groups.iter().filter(|g| g.allocator == "jemalloc") {
        let j = g.judgement.expect("judged against glibc");
        assert_eq!((j.this_replicates, j.baseline_replicates), (3, 3), "{g:?}");
        assert_eq!(g.rests_on, "3 runs each");
    }
    assert!(text.contains("Holm's adjustment over the 2 comparison(s)"), "{text}");
    assert!(text.matches(", 3 runs each, adjusted p ").count() == 2, "{text}");
    let metrics = measure::ToMetrics::to_metrics(&b);
    assert!(metrics.iter().any(|m| m.key() == "alloc_throughput{allocator=jemalloc,threads=2}"));
}
