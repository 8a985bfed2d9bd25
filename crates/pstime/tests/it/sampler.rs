//! pstime without the live system: the `/proc/PID/stat` and `schedstat` parsers over captured
//! files (tests/fixtures/README.md), and the sampler over captured and hand-made `proc/` trees
//! (vanished, new and reused PIDs, zombies, exited threads, exit records).

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::path::{Path, PathBuf};

use measure::time::ClockTicks;
use measure::{Error, UsageError};
use pstime::render::{render_report, Layout, UserNames, PSTIME_COMMAND_WIDTH};
use pstime::task::{parse_schedstat, parse_stat, Comm};
use pstime::{compare, CpuSource, ExitedTask, Lifetime, Options, Report, Sampler, Snapshot, Split};
use test_support::Tree;

fn hz() -> ClockTicks {
    ClockTicks::new(100)
}

fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn fixture(name: &str) -> Vec<u8> {
    let path = fixture_path(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

// ----------------------------------------------------------------------------------------------
// Parsers over captured files

#[test]
fn task_stat_linux_6_18_captured() {
    let bytes = fixture("task_stat_linux_6_18_captured.txt");
    let s = parse_stat(&bytes).unwrap();
    assert_eq!((s.pid, s.comm, s.state, s.ppid), (3163, &b"cat"[..], b'R', 3160));
    assert_eq!((s.utime_ticks, s.stime_ticks, s.num_threads), (0, 0, 1));
    assert_eq!((s.start_ticks, s.minflt, s.processor), (1_081_870, 124, Some(1)));
    assert_eq!(s.blkio_ticks, Some(0));
}

#[test]
fn task_stat_odd_comm_linux_6_18_captured() {
    let bytes = fixture("task_stat_odd_comm_linux_6_18_captured.txt");
    let s = parse_stat(&bytes).unwrap();
    assert_eq!(s.comm, b"a) (b c) d)");
    assert_eq!((s.pid, s.state, s.ppid), (3165, b'R', 3160));
    assert_eq!((s.utime_ticks, s.stime_ticks, s.cutime_ticks, s.cstime_ticks), (4, 1, 3, 4));
    assert_eq!((s.num_threads, s.start_ticks), (1, 1_081_871));
}

#[test]
fn task_schedstat_linux_6_18_captured() {
    let s = parse_schedstat(&fixture("task_schedstat_linux_6_18_captured.txt")).unwrap();
    assert_eq!((s.cpu_ns, s.run_delay_ns, s.timeslices), (413_820, 0, 1));
    assert!(s.is_kept());
}

// ----------------------------------------------------------------------------------------------
// pstime over proc/ trees

/// A `proc/` tree with four online CPUs, removed afterwards.
fn proc_tree(name: &str) -> Tree {
    let t = Tree::new(name);
    t.mkdir("proc");
    t.write("sys/devices/system/cpu/online", "0-3\n");
    t
}

/// The files of processes in a fixture tree.
trait ProcFiles {
    /// A process: `threads` are (TID, on-CPU ns); times in ticks.
    #[allow(clippy::too_many_arguments)]
    fn process(
        &self,
        pid: u32,
        comm: &str,
        state: char,
        start: u64,
        utime: u64,
        stime: u64,
        threads: &[(u32, u64)],
    );
    /// Removes a process that must be there.
    fn remove_process(&self, pid: u32);
    /// Replaces the tree's `proc/` and `sys/` with a copy of `from`'s.
    fn load(&self, from: &Path);
}

impl ProcFiles for Tree {
    fn process(
        &self,
        pid: u32,
        comm: &str,
        state: char,
        start: u64,
        utime: u64,
        stime: u64,
        threads: &[(u32, u64)],
    ) {
        let d = self.join(format!("proc/{pid}"));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let n = threads.len();
        let stat = format!(
            "{pid} ({comm}) {state} 1 {pid} {pid} 0 -1 4194304 0 0 0 0 {utime} {stime} 0 0 20 0 {n} 0 {start} 0 0\n"
        );
        std::fs::write(d.join("stat"), &stat).unwrap();
        std::fs::write(d.join("status"), format!("Name:\t{comm}\nTgid:\t{pid}\nPid:\t{pid}\n"))
            .unwrap();
        std::fs::write(d.join("cmdline"), format!("{comm}\0--flag\0")).unwrap();
        let leader = threads.iter().find(|t| t.0 == pid).map_or(0, |t| t.1);
        std::fs::write(d.join("schedstat"), format!("{leader} 0 1\n")).unwrap();
        for (tid, ns) in threads {
            let t = d.join(format!("task/{tid}"));
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("schedstat"), format!("{ns} 5 2\n")).unwrap();
            let tstat = format!(
                "{tid} ({comm}) {state} 1 {pid} {pid} 0 -1 4194304 0 0 0 0 {utime} {stime} 0 0 20 0 {n} 0 {start} 0 0\n"
            );
            std::fs::write(t.join("stat"), tstat).unwrap();
        }
    }

    fn remove_process(&self, pid: u32) {
        std::fs::remove_dir_all(self.join(format!("proc/{pid}"))).unwrap();
    }

    fn load(&self, from: &Path) {
        self.remove("proc");
        self.remove("sys");
        copy_dir(from, self.path());
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn sampler(tree: &Tree, pids: &[u32], threads: bool) -> Sampler {
    Sampler::new(tree.root(), Options { pids: pids.to_vec(), threads }, hz()).unwrap()
}

fn row(report: &Report, pid: u32) -> &pstime::ProcessCpu {
    report
        .processes
        .iter()
        .find(|p| p.pid == pid)
        .unwrap_or_else(|| panic!("no {pid}: {report:#?}"))
}

#[test]
fn pstime_linux_6_18_captured_sums_threads_exactly() {
    let tree = proc_tree("captured");
    tree.load(&fixture_path("pstime_linux_6_18_captured/before"));
    let mut s = sampler(&tree, &[], true);
    assert_eq!(s.basis().source, CpuSource::Schedstat);
    let before = s.snapshot().unwrap();
    tree.load(&fixture_path("pstime_linux_6_18_captured/after"));
    let after = s.snapshot().unwrap();
    assert_eq!(after.online_cpus, 2);
    let mut report = compare(&before, &after, None, s.basis(), s.options());
    s.describe(&mut report);
    assert_eq!(report.counts.whole, 2);
    let py = row(&report, 3233);
    assert_eq!(py.comm, Comm::new(b"a) (b c) d)"));
    assert_eq!(py.lifetime, Lifetime::Whole);
    // Three threads: (117258329-99744516) + (1113492430-341090106) + (1129611707-364035583).
    assert_eq!(py.cpu_ns, Some(1_555_492_261));
    assert!(!py.cpu_lower_bound);
    assert_eq!((py.utime_ticks, py.stime_ticks, py.split), (162, 2, Split::Interval));
    // The exact time split 162:2 by the ticks.
    assert_eq!(py.user_ns, Some((1_555_492_261f64 * 162.0 / 164.0).round() as u64));
    assert_eq!(py.user_ns.unwrap() + py.system_ns.unwrap(), 1_555_492_261);
    assert_eq!(py.threads.iter().map(|t| t.tid).collect::<Vec<_>>(), [3233, 3274, 3275]);
    assert_eq!(py.threads[1].cpu_ns, Some(1_113_492_430 - 341_090_106));
    assert_eq!(py.threads[1].comm, Comm::new(b"a) (b c) d)"));
    assert_eq!((py.threads_started, py.threads_exited), (Some(0), Some(0)));
    assert_eq!(py.command.as_deref(), Some("/root/.pyenv/versions/3.11.7/bin/python3 -"));
    let sleep = row(&report, 3276);
    assert_eq!((sleep.cpu_ns, sleep.split), (Some(0), Split::Interval));
    assert_eq!(sleep.command.as_deref(), Some("sleep 30"));
    assert_eq!(report.processes[0].pid, 3233, "highest CPU first");

    // The original pstime's layout: header, then UID PID %USR %SYS COMMAND, four significant
    // digits.
    let users = UserNames::parse("root:x:0:0::/:/bin/sh\n");
    let layout = Layout { exact: false, command_width: Some(PSTIME_COMMAND_WIDTH) };
    for p in &mut report.processes {
        p.uid = Some(0);
        p.usr_pct = p.usr_pct.map(|_| 44.1749);
    }
    let text = render_report(&report, &layout, &users);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "  UID    PID  %USR  %SYS COMMAND");
    assert!(lines[1].starts_with(" root   3233 44.17 "), "{text}");
    assert!(lines[1].ends_with(" /root/.pyenv/versions/3.11.7/bin/python3 -"), "{text}");
}

#[test]
fn processes_that_vanish_appear_or_reuse_a_pid() {
    let tree = proc_tree("churn");
    tree.process(10, "stays", 'S', 100, 5, 5, &[(10, 1_000_000)]);
    tree.process(11, "leaves", 'R', 100, 5, 5, &[(11, 2_000_000)]);
    tree.process(12, "zombie", 'Z', 100, 5, 5, &[(12, 3_000_000)]);
    tree.process(13, "old13", 'S', 100, 5, 5, &[(13, 4_000_000)]);
    let mut s = sampler(&tree, &[], false);
    let before = s.snapshot().unwrap();
    tree.process(10, "stays", 'S', 100, 8, 6, &[(10, 41_000_000)]);
    tree.remove_process(11);
    tree.remove_process(12);
    tree.process(13, "new13", 'R', 900, 1, 0, &[(13, 7_000_000)]);
    tree.process(20, "arrives", 'R', 950, 2, 1, &[(20, 30_000_000), (21, 5_000_000)]);
    let after = s.snapshot().unwrap();
    let r = compare(&before, &after, None, s.basis(), s.options());
    assert_eq!(r.counts.whole, 1);
    assert_eq!(r.counts.started, 2);
    assert_eq!(r.counts.exited, 3);
    assert_eq!(r.counts.exited_unmeasured, 2, "11 and old 13; the zombie ran no more");
    let stays = row(&r, 10);
    assert_eq!((stays.cpu_ns, stays.utime_ticks, stays.stime_ticks), (Some(40_000_000), 3, 1));
    assert_eq!(stays.user_ns, Some(30_000_000));
    let leaves = row(&r, 11);
    assert_eq!((leaves.lifetime, leaves.cpu_ns), (Lifetime::Exited, None));
    assert_eq!(row(&r, 12).cpu_ns, Some(0));
    // PID 13 was reused: the old one exited, the new one counts from zero.
    let thirteen: Vec<_> = r.processes.iter().filter(|p| p.pid == 13).collect();
    assert_eq!(thirteen.len(), 2);
    let new13 = thirteen.iter().find(|p| p.lifetime == Lifetime::Started).unwrap();
    assert_eq!((new13.cpu_ns, new13.comm), (Some(7_000_000), Comm::new(b"new13")));
    // A two-thread newcomer: both threads from zero.
    let arrives = row(&r, 20);
    assert_eq!((arrives.lifetime, arrives.cpu_ns), (Lifetime::Started, Some(35_000_000)));
    // Unknown figures sort last; the notes name the unmeasured and the missing exit tracing.
    assert!(r.processes.last().unwrap().cpu_ns.is_none());
    let notes = pstime::render::notes(&r);
    assert!(notes[0].starts_with("short-lived processes"), "{notes:?}");
    assert!(notes[1].contains("11 (leaves)") && notes[1].contains("13 (old13)"), "{notes:?}");
}

fn record(
    tid: u32,
    tgid: u32,
    cpu_ns: u64,
    group: Option<u64>,
    start: u64,
    group_start: u64,
    exit: u64,
) -> ExitedTask {
    ExitedTask {
        tid,
        tgid,
        ppid: 1,
        uid: 1000,
        comm: Comm::new(b"short"),
        cpu_ns,
        group_cpu_ns: group,
        utime_ns: 30,
        stime_ns: 10,
        start_boottime_ns: start,
        group_start_boottime_ns: group_start,
        exit_boottime_ns: exit,
    }
}

/// Boot-time ns of a start time in ticks (what BPF would see for a task `stat` shows so).
fn ticks_ns(ticks: u64) -> u64 {
    ticks * 10_000_000
}

fn two_snapshots(tree: &Tree, s: &mut Sampler, change: impl FnOnce(&Tree)) -> (Snapshot, Snapshot) {
    let before = s.snapshot().unwrap();
    change(tree);
    let after = s.snapshot().unwrap();
    (before, after)
}

#[test]
fn exit_records_complete_exited_threads_and_processes() {
    let tree = proc_tree("exits");
    // A process whose thread 31 exits in the interval, and one that exits altogether.
    tree.process(30, "pool", 'S', 100, 10, 0, &[(30, 1_000_000), (31, 2_000_000)]);
    tree.process(40, "gone", 'R', 200, 10, 0, &[(40, 5_000_000)]);
    let mut s = sampler(&tree, &[], true);
    let (before, after) = two_snapshots(&tree, &mut s, |t| {
        t.process(30, "pool", 'S', 100, 12, 0, &[(30, 1_500_000)]);
        t.remove_process(40);
    });
    let window = before.end_boottime_ns;
    let in_interval = before.end_boottime_ns; // started after the first scan began
    let records = [
        // Thread 31 of pool: 2.0 ms at the first sample, 2.25 ms at exit.
        record(31, 30, 2_250_000, None, ticks_ns(100), ticks_ns(100), window),
        // Thread 32 of pool started and exited in between.
        record(32, 30, 400_000, None, in_interval, ticks_ns(100), window),
        // Process 40's only thread: 5 ms at the first sample, 5.5 ms at exit.
        record(40, 40, 5_500_000, None, ticks_ns(200), ticks_ns(200), window),
        // Process 50 started and exited in between, two threads.
        record(50, 50, 700_000, None, in_interval, in_interval, window),
        record(51, 50, 300_000, Some(1_000_000), in_interval, in_interval, window),
        // Process 60 started long before the first scan (it was missed): not counted from zero.
        record(60, 60, 9_000_000, Some(9_000_000), ticks_ns(5), ticks_ns(5), window),
        // An exit before the interval is outside it.
        record(70, 70, 1, Some(1), 0, 0, 0),
    ];
    let r = compare(&before, &after, Some(&records), s.basis(), s.options());
    assert!(r.exits_traced);
    let pool = row(&r, 30);
    assert_eq!(pool.cpu_ns, Some(500_000 + 250_000 + 400_000));
    assert!(!pool.cpu_lower_bound);
    assert_eq!((pool.threads_started, pool.threads_exited), (Some(1), Some(2)));
    let lifetimes: Vec<(u32, Lifetime)> =
        pool.threads.iter().map(|t| (t.tid, t.lifetime)).collect();
    assert_eq!(
        lifetimes,
        [(30, Lifetime::Whole), (31, Lifetime::Exited), (32, Lifetime::StartedAndExited)]
    );
    let gone = row(&r, 40);
    assert_eq!((gone.lifetime, gone.cpu_ns), (Lifetime::Exited, Some(500_000)));
    let short = row(&r, 50);
    assert_eq!(
        (short.lifetime, short.cpu_ns, short.uid),
        (Lifetime::StartedAndExited, Some(1_000_000), Some(1000))
    );
    assert_eq!((short.split, short.user_ns), (Split::Interval, Some(750_000)));
    assert!(r.processes.iter().all(|p| p.pid != 60 && p.pid != 70));
    assert_eq!((r.counts.short_lived, r.counts.exited_unmeasured), (1, 0));
    assert!(pstime::render::notes(&r).is_empty(), "{:?}", pstime::render::notes(&r));

    // Without the records, pool's exited thread leaves a lower bound and 40 is unknown.
    let r = compare(&before, &after, None, s.basis(), s.options());
    assert!(row(&r, 30).cpu_lower_bound);
    assert_eq!(row(&r, 30).cpu_ns, Some(500_000));
    assert_eq!(row(&r, 40).cpu_ns, None);
}

#[test]
fn listed_pids_only() {
    let tree = proc_tree("listed");
    tree.process(10, "a", 'S', 100, 0, 0, &[(10, 1)]);
    tree.process(11, "b", 'S', 100, 0, 0, &[(11, 1)]);
    let mut s = sampler(&tree, &[11, 11], false);
    let (before, after) = two_snapshots(&tree, &mut s, |_| {});
    let in_interval = before.end_boottime_ns;
    let records = [record(50, 50, 7, Some(7), in_interval, in_interval, in_interval)];
    let r = compare(&before, &after, Some(&records), s.basis(), s.options());
    assert_eq!(r.processes.iter().map(|p| p.pid).collect::<Vec<_>>(), [11]);
}

#[test]
fn a_missing_pid_or_a_thread_id_is_a_usage_error() {
    let tree = proc_tree("usage");
    tree.process(10, "a", 'S', 100, 0, 0, &[(10, 1), (11, 1)]);
    // /proc/11 exists for a thread (hidden from readdir): its status names process 10.
    let t = tree.join("proc/11");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(t.join("stat"), "11 (a) S 1 10 10 0 -1 0 0 0 0 0 0 0 0 0 20 0 2 0 100 0 0\n")
        .unwrap();
    std::fs::write(t.join("status"), "Name:\ta\nTgid:\t10\nPid:\t11\n").unwrap();
    let err = |pids: &[u32]| match Sampler::new(
        tree.root(),
        Options { pids: pids.to_vec(), threads: false },
        hz(),
    ) {
        Err(e) => e,
        Ok(_) => panic!("{pids:?} accepted"),
    };
    let e = err(&[10, 99]);
    assert!(e.is_usage());
    assert!(matches!(e, Error::Usage(UsageError::NoSuchProcess { pid: 99 })), "{e}");
    let e = err(&[11]);
    assert!(matches!(e, Error::Usage(UsageError::NotAProcess { tid: 11, tgid: 10 })), "{e}");
    assert_eq!(e.to_string(), "11 is a thread of process 10, not a process (give 10)");
}

#[test]
fn a_pid_that_vanishes_mid_interval_is_not_an_error() {
    let tree = proc_tree("vanish");
    tree.process(10, "brief", 'R', 100, 1, 0, &[(10, 1_000)]);
    let mut s = sampler(&tree, &[10], false);
    let (before, after) = two_snapshots(&tree, &mut s, |t| t.remove_process(10));
    let r = compare(&before, &after, None, s.basis(), s.options());
    assert_eq!((r.counts.exited, r.counts.exited_unmeasured), (1, 1));
    let text = render_report(&r, &Layout::default(), &UserNames::default());
    assert_eq!(
        text, "  UID    PID  %USR  %SYS COMMAND\n",
        "unknown rows are in the notes, not the table"
    );
}
