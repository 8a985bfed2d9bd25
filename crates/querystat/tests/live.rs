//! querystat against real servers started by `testdb` (root: these fail, saying why, when not
//! run as root, as CI runs them as root). The counts must match what the drivers issued,
//! exactly; pre-emption and involuntary switches are checked against CPU burners and
//! /proc; the bad-input paths return their typed errors.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use test_tier::live;

use querystat::report::EndReason;
use querystat::tracer::Totals;
use querystat::{
    find_server, render_report, run, By, Error, Options, RunOptions, Selector, Server, ServerKind,
    Tracer,
};
use testdb::{MariaDb, MariaDbOptions, PgOptions, Postgres};

/// One at a time: the burners of one test would disturb the counts of another, and these
/// machines have two CPUs.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn require_root() {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "these tests attach BPF programs and start database servers: run them as root"
    );
}

/// autovacuum off: its workers could run statements of their own during a count.
fn start_postgres() -> Postgres {
    Postgres::start(&PgOptions::default().setting("autovacuum", "off")).unwrap()
}

fn server_of(pid: u32) -> Server {
    find_server(&Selector { pid: Some(pid), ..Selector::default() }).unwrap()
}

fn pgbench(pg: &Postgres, args: &[&str]) -> String {
    let out = pg.command("pgbench").args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "pgbench {args:?}: {}{}",
        text,
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Waits until the traced count stops moving (a uretprobe fires after the reply has gone to
/// the client, so the client can be done a moment before the count is), bounded.
fn settled(tracer: &Tracer) -> Totals {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut last = tracer.totals().unwrap();
    loop {
        std::thread::sleep(Duration::from_millis(150));
        let now = tracer.totals().unwrap();
        if now == last || Instant::now() > deadline {
            return now;
        }
        last = now;
    }
}

/// pgbench issues two statements of its own per run before the transactions: the scale
/// (`select count(*) from pgbench_branches`) and the partitioning of pgbench_accounts.
const PGBENCH_STARTUP_STATEMENTS: u64 = 2;

#[live]
fn pg_counts_match_pgbench_in_every_protocol_root() {
    require_root();
    let _serial = serial();
    let pg = start_postgres();
    pgbench(&pg, &["-i", "-s", "1", "-q"]);
    let server = server_of(pg.pid());
    assert_eq!(server.kind, ServerKind::Postgres);
    assert!(server.version.contains("PostgreSQL) 15"), "{}", server.version);

    let tracer = Tracer::attach(&server, &Options::default()).unwrap();
    for mode in ["simple", "extended", "prepared"] {
        let before = settled(&tracer);
        // Two clients: one connection each, both forked after the probes were attached.
        pgbench(&pg, &["-n", "-S", "-M", mode, "-c", "2", "-j", "2", "-t", "150"]);
        let after = settled(&tracer);
        let traced = after.completed() - before.completed();
        assert_eq!(traced, 2 * 150 + PGBENCH_STARTUP_STATEMENTS, "pgbench -M {mode}");
    }
    drop(tracer);

    // With buffer hits counted: every pgbench -S statement looks up a pgbench_accounts row
    // through its index, all in shared buffers since pgbench -i wrote them.
    let with_hits = Options { buffer_hits: true, ..Options::default() };
    let tracer = Tracer::attach(&server, &with_hits).unwrap();
    let before = settled(&tracer);
    pgbench(&pg, &["-n", "-S", "-t", "100"]);
    let after = settled(&tracer);
    assert!(after.buffer_hits - before.buffer_hits >= 2 * 100, "{after:?}");
    // Hit or miss, every query is one of the two.
    let (hit, miss) =
        (querystat::tracer::Hist::Hit as usize, querystat::tracer::Hist::Miss as usize);
    let split = after.count[hit] + after.count[miss] - before.count[hit] - before.count[miss];
    assert_eq!(split, 100 + PGBENCH_STARTUP_STATEMENTS);
    drop(tracer);

    // The floor the overhead bench measures: empty programs at the same probes attach (the
    // postgres binary's USDT notes and sched_switch) and count nothing.
    let floor = Options { empty_programs: true, ..Options::default() };
    let tracer = Tracer::attach(&server, &floor).unwrap();
    pgbench(&pg, &["-n", "-S", "-t", "50"]);
    let floor_totals = tracer.totals().unwrap();
    assert_eq!(floor_totals.completed(), 0, "{floor_totals:?}");
    assert_eq!(floor_totals.preemptions + floor_totals.involuntary, 0, "{floor_totals:?}");
    drop(tracer);

    // --by transaction: every statement outside BEGIN/COMMIT is its own transaction, and each
    // new backend runs one transaction of its own at start-up (InitPostgres reads the
    // catalogs); a one-client pgbench run connects twice (its setup connection, its client).
    let startup_tx = PGBENCH_STARTUP_STATEMENTS + 2;
    let by_tx = Options { by: By::Transaction, ..Options::default() };
    let tracer = Tracer::attach(&server, &by_tx).unwrap();
    let before = settled(&tracer);
    pgbench(&pg, &["-n", "-S", "-t", "100"]);
    let after = settled(&tracer);
    assert_eq!(after.completed() - before.completed(), 100 + startup_tx);
    // A transaction of several statements is one: the default script is BEGIN; 5 statements;
    // END per transaction.
    let before = settled(&tracer);
    pgbench(&pg, &["-n", "-t", "50"]);
    let after = settled(&tracer);
    assert_eq!(after.completed() - before.completed(), 50 + startup_tx);
}

/// A statement that fails leaves PostgreSQL's query by a long jump, past the probe that ends
/// it: the connection's later queries must still be counted, every one. Failed at run time (a
/// division by a count of zero rows: constant folding would fail it before it ran), once on
/// its own and once inside a savepoint; an EXECUTE, which runs its statement in a portal of its
/// own, counts once.
#[live]
fn pg_queries_after_a_failed_one_are_all_counted_root() {
    require_root();
    let _serial = serial();
    let pg = start_postgres();
    let tracer = Tracer::attach(&server_of(pg.pid()), &Options::default()).unwrap();
    let fails = "SELECT 1 / count(*) FROM pg_class WHERE false;\n";
    let mut script = String::from(fails);
    // Completing: BEGIN, SAVEPOINT, ROLLBACK TO, SELECT, COMMIT, PREPARE, EXECUTE.
    script.push_str("BEGIN;\nSAVEPOINT s;\n");
    script.push_str(fails);
    script.push_str("ROLLBACK TO s;\nSELECT 1;\nCOMMIT;\nPREPARE p AS SELECT 2;\nEXECUTE p;\n");
    script.push_str(&"SELECT 1;\n".repeat(200));
    let before = settled(&tracer);
    let mut psql = pg
        .command("psql")
        .args(["-X", "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    psql.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    let out = psql.wait_with_output().unwrap();
    let errors = String::from_utf8_lossy(&out.stderr);
    assert_eq!(errors.matches("division by zero").count(), 2, "{errors}");
    let after = settled(&tracer);
    assert_eq!(after.completed() - before.completed(), 7 + 200);
}

/// The probes are attached to the postgres binary system-wide; only the traced server's
/// process tree may be counted. Two servers of the same binary take statements at the same
/// time: the count is the traced one's, exactly, and the other's threads never get a record.
#[live]
fn pg_only_the_traced_servers_queries_are_counted_root() {
    require_root();
    let _serial = serial();
    let traced_pg = start_postgres();
    let other_pg = start_postgres();
    pgbench(&traced_pg, &["-i", "-s", "1", "-q"]);
    pgbench(&other_pg, &["-i", "-s", "1", "-q"]);
    let tracer = Tracer::attach(&server_of(traced_pg.pid()), &Options::default()).unwrap();
    let before = settled(&tracer);
    std::thread::scope(|s| {
        s.spawn(|| pgbench(&other_pg, &["-n", "-S", "-c", "2", "-j", "2", "-t", "300"]));
        pgbench(&traced_pg, &["-n", "-S", "-t", "120"]);
    });
    let after = settled(&tracer);
    assert_eq!(after.completed() - before.completed(), 120 + PGBENCH_STARTUP_STATEMENTS);
}

/// Shared-buffer misses: a table twice the size of shared buffers, read at random. The blocks
/// traced as read inside queries are what pg_stat_database counts as read, less the reads
/// outside any query (catalogs read while each backend starts); with `--buffer-hits`, the same
/// for the buffers found.
#[live]
fn pg_buffer_reads_agree_with_pg_stat_database_root() {
    require_root();
    let _serial = serial();
    let pg = Postgres::start(
        &PgOptions::default().setting("autovacuum", "off").setting("shared_buffers", "16MB"),
    )
    .unwrap();
    pgbench(&pg, &["-i", "-s", "2", "-q"]);
    let server = server_of(pg.pid());
    let with_hits = Options { buffer_hits: true, ..Options::default() };
    let tracer = Tracer::attach(&server, &with_hits).unwrap();
    // (blocks read, buffers found) as pg_stat_database counts them, and the buffers found in
    // the user tables and their indexes (which only queries look up).
    let blks = || -> (u64, u64, u64) {
        // Statistics are flushed when a backend exits; pgbench's have, by the time this runs.
        let out = pg
            .sql(
                "SELECT pg_stat_force_next_flush(); \
                 SELECT blks_read || ' ' || blks_hit || ' ' || \
                   (SELECT sum(heap_blks_hit + coalesce(idx_blks_hit, 0)) FROM pg_statio_user_tables) \
                 FROM pg_stat_database WHERE datname = 'postgres'",
            )
            .unwrap();
        let line = out.lines().last().unwrap().to_string();
        let n: Vec<u64> = line.split(' ').map(|n| n.parse().unwrap()).collect();
        (n[0], n[1], n[2])
    };
    let (read_before, hit_before, user_hit_before) = blks();
    let before = settled(&tracer);
    pgbench(&pg, &["-n", "-S", "-c", "2", "-t", "500"]);
    let after = settled(&tracer);
    std::thread::sleep(Duration::from_millis(300));
    let (read_after, hit_after, user_hit_after) = blks();
    let traced = after.buffer_reads - before.buffer_reads;
    let counted = read_after - read_before;
    let (traced_hits, counted_hits) =
        (after.buffer_hits - before.buffer_hits, hit_after - hit_before);
    let user_hits = user_hit_after - user_hit_before;
    eprintln!(
        "buffers found: traced in queries {traced_hits}, pg_stat_database {counted_hits}, \
         in user tables {user_hits}"
    );
    // Every buffer of the user tables found is found inside a query, and few others are (the
    // catalogs planning looks up; the backends' start-up lookups are outside queries). Were
    // the found flag misread, the misses (the blocks read) would count as found too.
    assert!(traced_hits <= counted_hits, "traced {traced_hits} > pg_stat_database {counted_hits}");
    assert!(
        traced_hits >= user_hits && traced_hits - user_hits <= 200,
        "traced {traced_hits}, in user tables {user_hits}"
    );
    eprintln!("blocks read: traced in queries {traced}, pg_stat_database {counted}");
    assert!(traced > 100, "random lookups over 2x shared buffers must miss: {traced}");
    assert!(traced <= counted, "traced {traced} > pg_stat_database {counted}");
    // Three backends start (pgbench's setup connection, two clients, and the stats query's):
    // a few dozen catalog blocks each at most.
    assert!(counted - traced <= 200, "traced {traced}, pg_stat_database {counted}");
    let miss = querystat::tracer::Hist::Miss as usize;
    assert!(after.count[miss] - before.count[miss] > 0);
}

/// A process that spins on one CPU until dropped (killed by its PID).
struct Burner(Child);

impl Burner {
    fn on(cpu: usize) -> Self {
        // `yes` execs under taskset, so its command name, the pre-emptor's, is "yes".
        let child = Command::new("taskset")
            .args(["-c", &cpu.to_string(), "yes"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        Burner(child)
    }
}

impl Drop for Burner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn nonvoluntary_switches(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("nonvoluntary_ctxt_switches:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn pin(pid: u32, cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is empty; the calls only read it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(pid as libc::pid_t, size_of::<libc::cpu_set_t>(), &set),
            0
        );
    }
}

/// A psql session kept open, so its backend lives across the /proc readings.
struct Session {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Session {
    fn open(pg: &Postgres) -> Self {
        let mut child = pg
            .command("psql")
            .args(["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        Session { child, out }
    }

    /// Sends statements, then reads lines up to the one that says they are done.
    fn run(&mut self, sql: &str) -> Vec<String> {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{sql}\nSELECT 'qs-done';").unwrap();
        stdin.flush().unwrap();
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            assert!(self.out.read_line(&mut line).unwrap() > 0, "psql exited");
            if line.trim() == "qs-done" {
                return lines;
            }
            lines.push(line.trim().to_string());
        }
    }
}

/// A session and its backend's PID.
fn session_with_backend(pg: &Postgres) -> (Session, u32) {
    let mut session = Session::open(pg);
    let backend = session.run("SELECT pg_backend_pid();")[0].parse().unwrap();
    (session, backend)
}

impl Drop for Session {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

#[live]
fn pg_preemption_by_burners_and_involuntary_switches_agree_with_proc_root() {
    require_root();
    let _serial = serial();
    let pg = start_postgres();
    let server = server_of(pg.pid());
    let tracer = Tracer::attach(&server, &Options::default()).unwrap();
    let (mut session, backend) = session_with_backend(&pg);
    // --pid of a backend leads to its postmaster.
    assert_eq!(server_of(backend), server);
    pin(backend, 0);
    let _burners = [Burner::on(0), Burner::on(1)];
    std::thread::sleep(Duration::from_millis(100));

    // The backend waits for its client (asleep) at both readings, so BPF and /proc count the
    // same stretch of its life.
    let bpf_before = tracer.involuntary_by_pid().unwrap();
    let proc_before = nonvoluntary_switches(backend);
    let totals_before = tracer.totals().unwrap();
    session.run(&"SELECT count(*) FROM generate_series(1, 1000000);\n".repeat(4));
    let proc_after = nonvoluntary_switches(backend);
    let bpf_after = tracer.involuntary_by_pid().unwrap();
    let totals = tracer.totals().unwrap();
    let preemptors = tracer.preemptors().unwrap();

    let get = |m: &BTreeMap<u32, u64>| *m.get(&backend).expect("the backend is in the traced tree");
    let bpf = get(&bpf_after) - get(&bpf_before);
    let proc = proc_after - proc_before;
    eprintln!("backend {backend}: involuntary switches BPF {bpf}, /proc {proc}; pre-emptors {preemptors:?}");
    // Sharing CPU 0 with a spinning process for ~1 s at HZ=250 gives dozens of switches.
    assert!(proc >= 10, "the backend was hardly pre-empted ({proc}): were the burners running?");
    // Equal but for one corner: a task switched out with a signal pending is counted as a
    // voluntary switch by the kernel while the tracepoint shows it still runnable. Allow 2%.
    assert!(bpf.abs_diff(proc) <= (proc / 50).max(1), "BPF {bpf} vs /proc {proc}");

    let preempted = totals.count[querystat::tracer::Hist::Preempted as usize]
        - totals_before.count[querystat::tracer::Hist::Preempted as usize];
    assert!(preempted >= 4, "each of the 4 long queries was pre-empted; traced {preempted}");
    assert!(totals.preemptions > totals_before.preemptions);
    assert!(preemptors.iter().any(|p| p.comm == "yes"), "{preemptors:?}");
    // Pre-empted queries waited on the run queue.
    assert!(totals.sum_ns[querystat::tracer::Hist::OffRunQueue as usize] > 0);
}

/// sched_switch leaves at once when a switch concerns no query (the thread leaving is not inside
/// one, none is off CPU waiting to come back): that must never skip one that does. Counted the
/// other way, from each query's thread's own counters at the query's start and end (nivcsw,
/// sched_info.run_delay; `Options::task_counters`), the same queries show the same pre-emptions
/// and run-queue wait. The backend exists before the tracer attaches (so user space, not the
/// fork program, counts it as the server's), shares CPU 0 with a spinning process, and runs
/// CPU-bound queries that never sleep, so each of its waits is a pre-emption's.
#[live]
fn pg_preemptions_per_switch_agree_with_the_threads_own_counters_root() {
    require_root();
    let _serial = serial();
    let pg = start_postgres();
    let server = server_of(pg.pid());
    let (mut session, backend) = session_with_backend(&pg);
    let options = Options { task_counters: true, ..Options::default() };
    let tracer = Tracer::attach(&server, &options).unwrap();
    pin(backend, 0);
    let _burner = Burner::on(0);
    std::thread::sleep(Duration::from_millis(100));

    let (preempted, off_runq) = (
        querystat::tracer::Hist::Preempted as usize,
        querystat::tracer::Hist::OffRunQueue as usize,
    );
    let preemptors_total =
        |t: &Tracer| t.preemptors().unwrap().iter().map(|p| p.count).sum::<u64>();
    let before = tracer.totals().unwrap();
    let (named_before, bpf_before, proc_before) = (
        preemptors_total(&tracer),
        tracer.involuntary_by_pid().unwrap().get(&backend).copied().unwrap_or(0),
        nonvoluntary_switches(backend),
    );
    // Short queries between the long ones: switches of the backend outside any query too.
    let mut script = String::new();
    for _ in 0..4 {
        script.push_str("SELECT count(*) FROM generate_series(1, 1000000);\n");
        script.push_str(&"SELECT 1;\n".repeat(50));
    }
    session.run(&script);
    let after = tracer.totals().unwrap();
    let named = preemptors_total(&tracer) - named_before;
    let bpf_involuntary = tracer.involuntary_by_pid().unwrap()[&backend] - bpf_before;
    let proc_involuntary = nonvoluntary_switches(backend) - proc_before;

    let per_switch = after.preemptions - before.preemptions;
    let counted = after.task_preemptions - before.task_preemptions;
    let queries_preempted = after.count[preempted] - before.count[preempted];
    let runq_per_switch = after.sum_ns[off_runq] - before.sum_ns[off_runq];
    let runq_counted = after.task_run_delay_ns - before.task_run_delay_ns;
    eprintln!(
        "pre-emptions inside queries: per switch {per_switch} (pre-emptors named {named}), \
         the threads' nivcsw {counted}; queries pre-empted {queries_preempted} of {}; run-queue \
         wait per switch {:.1} ms, the threads' run_delay {:.1} ms; the backend's involuntary \
         switches: BPF {bpf_involuntary}, /proc {proc_involuntary}",
        after.completed() - before.completed(),
        runq_per_switch as f64 / 1e6,
        runq_counted as f64 / 1e6,
    );
    // Sharing CPU 0 with a spinning process for a second or more gives dozens of pre-emptions.
    assert!(
        counted >= 10,
        "the backend was hardly pre-empted ({counted}): was the burner running?"
    );
    // Equal but for one corner: a task switched out with a signal pending is counted as a
    // voluntary switch by the kernel while the tracepoint shows it still runnable. Allow 2%.
    assert!(
        per_switch.abs_diff(counted) <= (counted / 50).max(1),
        "per switch {per_switch}, the threads' own count {counted}"
    );
    // Every pre-emption inside a query names its pre-emptor.
    assert_eq!(named, per_switch);
    assert!(tracer.preemptors().unwrap().iter().any(|p| p.comm == "yes"));
    assert!(queries_preempted >= 4, "each long query was pre-empted: {queries_preempted}");
    // The same waits, from two clocks (the program's at each switch, the scheduler's run-queue
    // clock) whose ends differ by the scheduler's few steps around the tracepoint. Allow 5%.
    assert!(runq_counted > 0, "no run-queue wait at all");
    assert!(
        runq_per_switch.abs_diff(runq_counted) <= runq_counted / 20,
        "run-queue wait per switch {runq_per_switch} ns, the threads' own {runq_counted} ns"
    );
    // The backend counted as the server's by user space: its involuntary switches, inside
    // queries or not, as /proc counts them (the same 2% corner).
    assert!(
        bpf_involuntary.abs_diff(proc_involuntary) <= (proc_involuntary / 50).max(1),
        "BPF {bpf_involuntary} vs /proc {proc_involuntary}"
    );
}

#[live]
fn pg_server_exiting_mid_run_ends_the_run_with_what_was_measured_root() {
    require_root();
    let _serial = serial();
    let pg = start_postgres();
    pgbench(&pg, &["-i", "-s", "1", "-q"]);
    let server = server_of(pg.pid());
    let tracer = Tracer::attach(
        &server,
        &Options {
            slower: Some(Duration::from_millis(50)),
            buffer_hits: true,
            ..Options::default()
        },
    )
    .unwrap();
    let stop = AtomicBool::new(false);
    let mut out = Vec::new();
    let report = std::thread::scope(|s| {
        s.spawn(|| {
            pgbench(&pg, &["-n", "-S", "-t", "200"]);
            pg.sql("SELECT pg_sleep(0.1)").unwrap();
            std::thread::sleep(Duration::from_millis(700));
            // Fast shutdown of the postmaster, by PID (testdb's stop).
            let pid = pg.pid();
            drop(pg);
            assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
        });
        // Fallback so a broken exit check cannot hang the test.
        s.spawn(|| {
            std::thread::sleep(Duration::from_secs(30));
            stop.store(true, Ordering::Relaxed);
        });
        let options = RunOptions { interval: Duration::from_millis(500), count: None };
        let report = run(&tracer, &options, &stop, &mut out).unwrap();
        stop.store(true, Ordering::Relaxed);
        report
    });
    assert_eq!(report.end, EndReason::ServerExited);
    assert_eq!(report.all.count, 200 + PGBENCH_STARTUP_STATEMENTS + 1);
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("Tracing started at "), "{text}");
    assert!(text.contains(" queries/sec\n"), "{text}");
    // The pg_sleep(0.1) is reported as slow, with its text, as it completes.
    assert_eq!(report.slow.len(), 1, "{:?}", report.slow);
    assert_eq!(report.slow[0].text, "SELECT pg_sleep(0.1)");
    assert!(report.slow[0].off_cpu_us[2] >= 90_000.0, "{:?}", report.slow[0]);
    // Printed as it happened: at least the 100 ms slept (more on a loaded machine).
    assert!(text.contains("slow query ") && text.contains("SELECT pg_sleep(0.1)"), "{text}");
    assert!(report.slow[0].latency_us >= 100_000.0, "{:?}", report.slow[0]);
    let summary = render_report(&report);
    assert!(summary.contains("exited during the run"), "{summary}");
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["end"], "server_exited");
    assert_eq!(json["all"]["count"], 203);
    // The buffer statistics count every lookup of the run.
    assert!(report.cache.buffer_hits.unwrap() + report.cache.buffer_reads.unwrap() >= 200);
}

#[live]
fn mariadb_counts_and_query_cache_hits_match_the_server_root() {
    require_root();
    let _serial = serial();
    let db = MariaDb::start(&MariaDbOptions::default().query_cache(16 << 20)).unwrap();
    db.sql("CREATE DATABASE sbtest; CREATE TABLE sbtest.t (id INT PRIMARY KEY, v INT); INSERT INTO sbtest.t VALUES (1, 10), (2, 20), (3, 30)").unwrap();
    let socket = db.socket();
    let sysbench = |cmd: &str| {
        let out = Command::new("sysbench")
            .arg("--db-driver=mysql")
            .arg(format!("--mysql-socket={}", socket.display()))
            .args(["--mysql-user=root", "--mysql-db=sbtest", "--tables=1", "--table-size=1000"])
            .args(["--threads=2", "--events=200", "--time=0", "oltp_read_only", cmd])
            .output()
            .unwrap();
        assert!(out.status.success(), "sysbench {cmd}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    sysbench("prepare");
    let server = server_of(db.pid());
    assert_eq!(server.kind, ServerKind::MariaDb);
    let tracer = Tracer::attach(&server, &Options::default()).unwrap();
    let hit = querystat::tracer::Hist::Hit as usize;

    // A client loop: 20 identical SELECTs (1 miss, then cache hits), 10 distinct ones, 5 that
    // bypass the cache, and a SET (a query, not cacheable).
    let mut script = "SELECT v FROM sbtest.t WHERE id = 1;\n".repeat(20);
    for i in 0..10 {
        script.push_str(&format!("SELECT v + {i} FROM sbtest.t WHERE id = 2;\n"));
    }
    script.push_str(&"SELECT SQL_NO_CACHE v FROM sbtest.t WHERE id = 3;\n".repeat(5));
    script.push_str("SET @x = 1;\n");
    let statements = 36;
    let hits_before = db.status("Qcache_hits").unwrap();
    let before = settled(&tracer);
    let mut client = db.client().stdin(Stdio::piped()).stdout(Stdio::null()).spawn().unwrap();
    client.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    assert!(client.wait().unwrap().success());
    let after = settled(&tracer);
    let hits_after = db.status("Qcache_hits").unwrap();
    assert_eq!(after.completed() - before.completed(), statements);
    assert_eq!(after.count[hit] - before.count[hit], hits_after - hits_before);
    assert!(hits_after - hits_before >= 19, "the repeated SELECT came from the cache");

    // sysbench: prepared statements (COM_STMT_EXECUTE); it reports what it sent.
    let hits_before = db.status("Qcache_hits").unwrap();
    let before = settled(&tracer);
    let out = sysbench("run");
    let after = settled(&tracer);
    let hits_after = db.status("Qcache_hits").unwrap();
    let total: u64 = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("total:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no total in sysbench's output:\n{out}"));
    assert_eq!(total, 200 * 16, "oltp_read_only sends 16 statements per transaction");
    assert_eq!(after.completed() - before.completed(), total);
    assert_eq!(after.count[hit] - before.count[hit], hits_after - hits_before);
    assert!(tracer.preemptors().is_ok());
}

#[live]
fn bad_input_is_refused_with_typed_errors_root() {
    require_root();
    // --pid of a process that is not a database server: this test.
    let me = std::process::id();
    let err = find_server(&Selector { pid: Some(me), ..Selector::default() }).unwrap_err();
    assert!(matches!(err, Error::NotAServer { pid, .. } if pid == me), "{err}");
    assert!(err.is_usage());
    // --pid of nothing.
    let err = find_server(&Selector { pid: Some(0x3fff_fff0), ..Selector::default() }).unwrap_err();
    assert!(matches!(err, Error::NoProcess(_)), "{err}");
    // --exe of a binary no server runs.
    let err = find_server(&Selector {
        exe: Some("/nonexistent/bin/postgres".into()),
        ..Selector::default()
    })
    .unwrap_err();
    assert!(matches!(err, Error::ExeNotRunning(_)), "{err}");

    // A "server" whose binary lacks the probes / symbols: this test binary under each name.
    for kind in [ServerKind::Postgres, ServerKind::MariaDb] {
        let fake = Server { pid: me, kind, exe: "/fake/server".into(), version: "fake 0.1".into() };
        let err = Tracer::attach(&fake, &Options::default()).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::Untraceable { .. }), "{text}");
        assert!(text.contains("fake 0.1"), "the message names the version: {text}");
        let missing =
            if kind == ServerKind::Postgres { "query__execute__start" } else { "dispatch_command" };
        assert!(text.contains(missing), "{text}");
    }
    let fake =
        Server { pid: me, kind: ServerKind::MariaDb, exe: "/x".into(), version: String::new() };
    let by_tx = Options { by: By::Transaction, ..Options::default() };
    assert!(matches!(Tracer::attach(&fake, &by_tx).unwrap_err(), Error::ByTransactionOnMariaDb));

    // Not root: a thread with its own credentials (the raw syscall changes only the calling
    // thread's; glibc's wrapper would change every thread's).
    let err = std::thread::spawn(move || {
        // SAFETY: setresuid on this thread only; it ends with the thread.
        let rc = unsafe { libc::syscall(libc::SYS_setresuid, 65534, 65534, 65534) };
        assert_eq!(rc, 0);
        let fake = Server {
            pid: me,
            kind: ServerKind::Postgres,
            exe: "/x".into(),
            version: String::new(),
        };
        Tracer::attach(&fake, &Options::default()).unwrap_err()
    })
    .join()
    .unwrap();
    assert!(matches!(err, Error::NotRoot), "{err}");
    assert!(err.to_string().contains("needs root"));
}
