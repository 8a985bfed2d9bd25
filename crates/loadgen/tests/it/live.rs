//! Live tier: loadgen against throwaway PostgreSQL 15 and MariaDB servers started here (root).

use std::ops::ControlFlow;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use test_tier::live;

use loadgen::conn::DbError;
use loadgen::workload::Value;
use loadgen::{
    prepare, run, Arrivals, IntervalLine, Plan, PrepareOptions, Protocol, ServerKind, Target,
    WorkloadKind,
};
use testdb::{MariaDb, MariaDbOptions, PgOptions, Postgres};

static NEVER: AtomicBool = AtomicBool::new(false);

/// An interval callback that lets the run go to its end.
fn to_the_end(_: &IntervalLine) -> ControlFlow<()> {
    ControlFlow::Continue(())
}

fn pg_target(pg: &Postgres) -> Target {
    Target { url: Some(pg.conninfo()), ..Target::new(ServerKind::Postgres) }
}

fn maria_target(m: &MariaDb) -> Target {
    Target { socket: Some(m.socket()), ..Target::new(ServerKind::MariaDb) }
}

fn prepared(target: &Target, tables: u32, rows: u64) {
    prepare(target, &PrepareOptions { tables, rows, seed: 7 }, &mut |_| {}).expect("prepare");
}

/// Ticks of CPU of `root` and every descendant, plus what `root` reaped (`/proc/PID/stat`).
fn tree_ticks(root: u32) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some(close) = stat.rfind(')') else { continue };
        let f: Vec<&str> = stat[close + 2..].split_whitespace().collect();
        let ppid: u32 = f[1].parse().unwrap_or(0);
        let num = |i: usize| f[i].parse::<u64>().unwrap_or(0);
        if pid == root {
            total += num(11) + num(12) + num(13) + num(14); // utime stime cutime cstime
        } else if ppid == root {
            total += num(11) + num(12);
        }
    }
    total
}

fn plan(rate: f64, secs: f64) -> Plan {
    Plan { rate, duration: Some(Duration::from_secs_f64(secs)), ..Plan::default() }
}

#[live]
fn postgres_200_per_second_for_5_s_holds_the_schedule_and_costs_agree_with_proc() {
    let pg = Postgres::start(&PgOptions::default()).expect("PostgreSQL starts");
    let target = pg_target(&pg);
    prepared(&target, 1, 1000);
    let before = tree_ticks(pg.pid());
    let mut lines = 0;
    let r = run(&target, &plan(200.0, 5.0), &NEVER, &mut |_| {
        lines += 1;
        ControlFlow::Continue(())
    })
    .expect("run");
    std::thread::sleep(Duration::from_millis(300)); // backends exit, the postmaster reaps them
    let after = tree_ticks(pg.pid());
    assert!(r.interrupted.is_none(), "{r:?}");
    assert!((990..=1010).contains(&r.completed), "1000 ± 1%: {}", r.completed);
    assert_eq!(r.scheduled, r.completed + r.skipped + r.failed);
    assert!((r.achieved_rate - 200.0).abs() <= 2.0, "{}", r.achieved_rate);
    assert!(lines >= 5, "{lines} interval lines");
    // The schedule held: starts within 20 ms of their time for 99%, few late.
    assert!(r.lag.p99_ns < 20_000_000, "lag {:?}", r.lag);
    assert!(r.late <= r.completed / 50, "{} late", r.late);
    assert!(r.latency.p50_ns >= r.service.p50_ns);
    // Server CPU per transaction agrees with the /proc delta of its processes.
    let cost = r.cost.expect("server CPU measured");
    let hz = 100.0; // USER_HZ
    let proc_us = (after - before) as f64 / hz * 1e6 / r.completed as f64;
    let ours = cost.server_us_per_tx;
    assert!(cost.server_processes >= 2, "{cost:?}");
    assert!(
        (ours - proc_us).abs() <= 0.3 * proc_us + 15.0,
        "server µs/tx {ours:.1} vs /proc {proc_us:.1} ({cost:?})"
    );
    assert!(cost.machine_us_per_tx >= ours * 0.9, "{cost:?}");
    assert!(
        cost.driver_us_per_tx > 0.0 && cost.driver_us_per_tx < cost.machine_us_per_tx,
        "{cost:?}"
    );
}

/// A caller that answers `Break` to an interval line ends the run there, as its duration
/// would have: not an interruption, and the rate is over the time it ran, not the duration
/// planned.
#[live]
fn the_caller_ends_an_open_ended_run_at_an_interval() {
    let pg = Postgres::start(&PgOptions::default()).expect("PostgreSQL starts");
    let target = pg_target(&pg);
    prepared(&target, 1, 1000);
    let long = Plan { interval: Duration::from_millis(500), ..plan(200.0, 60.0) };
    let mut lines = 0;
    let r = run(&target, &long, &NEVER, &mut |_| {
        lines += 1;
        if lines == 3 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .expect("run");
    assert!(r.interrupted.is_none(), "{r:?}");
    assert!((1.4..5.0).contains(&r.elapsed_s), "ran {} s of a 60 s plan", r.elapsed_s);
    assert!((r.achieved_rate - 200.0).abs() <= 20.0, "{} tx/s", r.achieved_rate);
}

#[live]
fn a_stalled_server_shows_in_p99_and_late_counts_where_service_time_hides_it() {
    let pg = Postgres::start(&PgOptions::default()).expect("PostgreSQL starts");
    let target = pg_target(&pg);
    prepared(&target, 1, 1000);
    let root = pg.pid();
    let staller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1200));
        let pids: Vec<i32> = std::fs::read_dir("/proc")
            .expect("/proc")
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|&p| {
                p == root
                    || std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                        s.rfind(')')
                            .and_then(|c| s[c + 2..].split_whitespace().nth(1).map(str::to_string))
                            == Some(root.to_string())
                    })
            })
            .map(|p| p as i32)
            .collect();
        for &p in &pids {
            // SAFETY: kill has no memory preconditions; the PIDs are the test server's.
            unsafe { libc::kill(p, libc::SIGSTOP) };
        }
        std::thread::sleep(Duration::from_millis(300));
        for &p in &pids {
            // SAFETY: as above.
            unsafe { libc::kill(p, libc::SIGCONT) };
        }
    });
    let r = run(&target, &plan(200.0, 3.0), &NEVER, &mut to_the_end).expect("run");
    staller.join().expect("staller");
    assert!((594..=606).contains(&r.completed), "{}", r.completed);
    // ~60 transactions were due during the 300 ms stall: all late, and > 1% of 600.
    assert!(r.late >= 40, "late {}", r.late);
    assert!(r.latency.p99_ns >= 100_000_000, "open-loop p99 {:?}", r.latency);
    // What a closed-loop tool measures (from the actual start) sees one slow transaction.
    assert!(
        r.service.p99_ns * 5 < r.latency.p99_ns,
        "service {:?} vs latency {:?}",
        r.service,
        r.latency
    );
    assert!(r.latency.max_ns >= 280_000_000, "{:?}", r.latency);
}

#[live]
fn prepared_and_simple_work_on_both_servers() {
    let pg = Postgres::start(&PgOptions::default()).expect("PostgreSQL starts");
    let maria = MariaDb::start(&MariaDbOptions::default()).expect("MariaDB starts");
    let sql = std::env::temp_dir().join(format!("loadgen-test-{}.sql", std::process::id()));
    std::fs::write(&sql, "BEGIN;\nSELECT c FROM sbtest2 WHERE id = :rand(1,300);\nUPDATE sbtest1 SET k = k + 1 WHERE id = :rand(1,300);\nCOMMIT;\n")
        .expect("sql file");
    for (target, pid) in [(pg_target(&pg), pg.pid()), (maria_target(&maria), maria.pid())] {
        prepared(&target, 2, 300);
        for workload in
            [WorkloadKind::ReadWrite, WorkloadKind::PointSelect, WorkloadKind::File(sql.clone())]
        {
            for protocol in [Protocol::Simple, Protocol::Prepared] {
                let p = Plan {
                    rate: 100.0,
                    connections: 2,
                    duration: None,
                    transactions: Some(60),
                    workload: workload.clone(),
                    protocol,
                    arrivals: Arrivals::Poisson,
                    ..Plan::default()
                };
                let r = run(&target, &p, &NEVER, &mut to_the_end).expect("run");
                let what = format!("{:?} {} {protocol:?}", target.kind, workload.name());
                assert_eq!(r.completed, 60, "{what}: {r:?}");
                assert_eq!(r.failed, 0, "{what}: {:?}", r.errors);
                assert_eq!(
                    r.cost.map(|c| c.server_pid),
                    Some(pid),
                    "{what}: {:?}",
                    r.cost_unavailable
                );
            }
        }
    }
    std::fs::remove_file(&sql).ok();
    // Bad credentials and a socket nobody listens on: one clear error each.
    let bad = Target { user: Some("nobody_here".into()), ..pg_target(&pg) };
    let e = run(&bad, &plan(10.0, 0.1), &NEVER, &mut to_the_end).expect_err("refused").to_string();
    assert!(e.contains("nobody_here") && e.contains("cannot connect"), "{e}");
    let bad = Target { user: Some("nobody_here".into()), ..maria_target(&maria) };
    let e = run(&bad, &plan(10.0, 0.1), &NEVER, &mut to_the_end).expect_err("refused").to_string();
    assert!(e.contains("Access denied") && e.contains("cannot connect"), "{e}");
}

/// Runs `plan` on another thread while `restart` takes the server down and up again; the
/// interval lines are kept.
fn ride_through(
    target: &Target,
    plan: &Plan,
    restart: impl FnOnce(),
) -> (loadgen::LoadReport, Vec<loadgen::IntervalLine>) {
    std::thread::scope(|scope| {
        let runner = scope.spawn(|| {
            let mut lines = Vec::new();
            let r = run(target, plan, &NEVER, &mut |l| {
                lines.push(l.clone());
                ControlFlow::Continue(())
            })
            .expect("run");
            (r, lines)
        });
        restart();
        runner.join().expect("runner")
    })
}

/// What a run that rode through one restart must show: nothing dropped, one window with its
/// failures by cause, the lines marking it, and success after it.
fn assert_rode_through(
    what: &str,
    r: &loadgen::LoadReport,
    lines: &[loadgen::IntervalLine],
    due: u64,
) {
    let text = loadgen::render::render_report(r);
    assert!(r.interrupted.is_none(), "{what}: {text}");
    // Every transaction whose time came is accounted for: completed, failed or skipped; the
    // rest were due before the end but could not start.
    assert_eq!(r.scheduled, r.completed + r.failed + r.skipped, "{what}: {text}");
    assert_eq!(r.scheduled + r.unstarted, due, "{what}: {text}");
    assert_eq!(r.outages.len(), 1, "{what}: {text}");
    let o = &r.outages[0];
    let back = o.first_success_s.unwrap_or_else(|| panic!("{what}: never back: {text}"));
    assert!(o.reconnected_s.is_some_and(|t| t > o.start_s && t <= back), "{what}: {o:?}");
    // The server was down for 1 s: transactions due then failed, by cause.
    assert!(back - o.start_s >= 0.9, "{what}: {o:?}");
    assert!(o.failed > 0 && o.failed <= r.failed, "{what}: {o:?}");
    assert_eq!(o.causes.values().sum::<u64>(), o.failed, "{what}: {o:?}");
    assert!(o.causes.contains_key("connection lost"), "{what}: {o:?}");
    assert!(o.causes.len() >= 2, "{what}: failed while down, not only at the loss: {o:?}");
    for (cause, n) in &o.causes {
        assert!(r.errors.get(cause).is_some_and(|&m| m >= *n), "{what}: {cause} {:?}", r.errors);
    }
    assert!(lines.iter().any(|l| l.down > 0), "{what}: no interval line shows the outage");
    // Transactions completed after it, at the offered rate again by the last interval.
    let last = lines.iter().rev().find(|l| l.end_s <= r.elapsed_s - 0.5).expect("lines");
    assert!(last.down == 0 && last.completed > 0, "{what}: {last:?}");
    assert!(text.contains("outage  from"), "{what}: {text}");
    assert!(
        r.cost_unavailable.as_deref().is_some_and(|w| w.contains("restarted")),
        "{what}: the old server's CPU is not the run's: {:?}",
        r.cost_unavailable
    );
    println!("{what}:\n{text}");
}

#[live]
fn postgres_restarted_mid_run_is_ridden_through_immediate_and_fast() {
    for (signal, shutdown) in [(libc::SIGQUIT, "immediate"), (libc::SIGINT, "fast")] {
        let mut pg = Postgres::start(&PgOptions::default()).expect("PostgreSQL starts");
        let target = pg_target(&pg);
        prepared(&target, 1, 1000);
        let p = Plan { connections: 2, ..plan(100.0, 6.0) };
        let (r, lines) = ride_through(&target, &p, || {
            std::thread::sleep(Duration::from_secs(2));
            pg.restart(signal, Duration::from_secs(1)).expect("PostgreSQL restarts");
        });
        assert_rode_through(&format!("PostgreSQL, {shutdown} shutdown"), &r, &lines, 600);
        assert!(r.completed >= 300, "{shutdown}: {}", r.completed);
    }
}

#[live]
fn mariadb_restarted_mid_run_is_ridden_through() {
    let mut maria = MariaDb::start(&MariaDbOptions::default()).expect("MariaDB starts");
    let target = maria_target(&maria);
    prepared(&target, 1, 1000);
    let p = Plan { connections: 2, ..plan(100.0, 7.0) };
    let (r, lines) = ride_through(&target, &p, || {
        std::thread::sleep(Duration::from_secs(2));
        maria.restart(libc::SIGTERM, Duration::from_secs(1)).expect("MariaDB restarts");
    });
    assert_rode_through("MariaDB, clean shutdown", &r, &lines, 700);
}

#[live]
fn on_disconnect_stop_ends_the_run_at_the_first_lost_connection() {
    let mut pg = Postgres::start(&PgOptions::default()).expect("PostgreSQL starts");
    let target = pg_target(&pg);
    prepared(&target, 1, 1000);
    let p = Plan { on_disconnect: loadgen::run::OnDisconnect::Stop, ..plan(100.0, 5.0) };
    let (r, _) = ride_through(&target, &p, || {
        std::thread::sleep(Duration::from_secs(1));
        pg.restart(libc::SIGQUIT, Duration::from_millis(200)).expect("PostgreSQL restarts");
    });
    assert!(r.interrupted.as_deref().is_some_and(|w| w.contains("went away")), "{r:?}");
    assert!(r.outages.is_empty(), "{:?}", r.outages);
    assert!(r.elapsed_s < 3.0, "stopped at the loss, not at the end: {}", r.elapsed_s);
}

/// A role per password method (scram-sha-256, md5, cleartext `password`) over TCP: the right
/// password connects, a wrong one is the server's refusal without the password in it, none is
/// one line naming where a password comes from.
#[live]
fn postgres_password_roles_scram_md5_and_cleartext() {
    let pg = Postgres::start(&PgOptions::default()).expect("PostgreSQL starts");
    pg.sql(
        "SET password_encryption = 'scram-sha-256'; CREATE ROLE s_app LOGIN PASSWORD 'ScramPw7x'; \
         CREATE ROLE c_app LOGIN PASSWORD 'ClearPw7x'; \
         SET password_encryption = 'md5'; CREATE ROLE m_app LOGIN PASSWORD 'Md5Pw7x'",
    )
    .expect("roles");
    let stored = pg
        .sql("SELECT string_agg(rolname || ':' || left(rolpassword, 6), ',' ORDER BY rolname) FROM pg_authid WHERE rolname LIKE '%_app'")
        .expect("pg_authid");
    assert!(stored.contains("m_app:md5") && stored.contains("s_app:SCRAM-"), "{stored}");
    std::fs::write(
        pg.data_dir().join("pg_hba.conf"),
        "local all all trust\nhost all s_app 127.0.0.1/32 scram-sha-256\n\
         host all m_app 127.0.0.1/32 md5\nhost all c_app 127.0.0.1/32 password\n",
    )
    .expect("hba");
    pg.sql("SELECT pg_reload_conf()").expect("reload");
    std::thread::sleep(Duration::from_millis(300));
    let target = |user: &str, password: Option<&str>| {
        let pw = password.map(|p| format!(" password={p}")).unwrap_or_default();
        Target {
            url: Some(format!("host=127.0.0.1 port={} user={user} dbname=postgres{pw}", pg.port())),
            ..Target::new(ServerKind::Postgres)
        }
    };
    for (user, pw) in [("s_app", "ScramPw7x"), ("m_app", "Md5Pw7x"), ("c_app", "ClearPw7x")] {
        let mut c = target(user, Some(pw)).connect().unwrap_or_else(|e| panic!("{user}: {e}"));
        assert_eq!(c.query_text("SELECT current_user").expect("query").as_deref(), Some(user));
        let e = target(user, Some("WrongPw7x")).connect().err().expect("refused").to_string();
        assert!(e.contains("28P01") && !e.contains("WrongPw7x"), "{user}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
        let e = target(user, None).connect().err().expect("refused").to_string();
        assert!(e.contains("PGPASSWORD") && e.contains(".pgpass"), "{user}: {e}");
    }
    // sslmode=require is refused, not quietly ignored.
    let e = Target {
        url: Some(format!("{} sslmode=require", pg.conninfo())),
        ..Target::new(ServerKind::Postgres)
    }
    .connect()
    .err()
    .expect("refused")
    .to_string();
    assert!(e.contains("sslmode=require"), "{e}");
}

/// Statements that fail now and then (division by zero, a value out of a parameter's range):
/// counted by SQLSTATE, the connection goes on, no outage.
#[live]
fn postgres_statement_errors_mid_run_leave_the_connection_usable() {
    let pg = Postgres::start(&PgOptions::default()).expect("PostgreSQL starts");
    let target = pg_target(&pg);
    prepared(&target, 1, 100);
    let sql = std::env::temp_dir().join(format!("loadgen-errors-{}.sql", std::process::id()));
    std::fs::write(
        &sql,
        "BEGIN;\nSELECT c FROM sbtest1 WHERE id = :rand(1,100);\nSELECT 1 / (:rand(0,2) - 1);\nCOMMIT;\n",
    )
    .expect("sql file");
    for protocol in [Protocol::Prepared, Protocol::Simple] {
        let p = Plan {
            rate: 200.0,
            connections: 2,
            duration: None,
            transactions: Some(150),
            workload: WorkloadKind::File(sql.clone()),
            protocol,
            ..Plan::default()
        };
        let r = run(&target, &p, &NEVER, &mut to_the_end).expect("run");
        let what = format!("{protocol:?}");
        assert_eq!(r.scheduled, 150, "{what}: {r:?}");
        assert_eq!(r.scheduled, r.completed + r.failed + r.skipped, "{what}: {r:?}");
        assert!(r.failed >= 10 && r.completed >= 50, "{what}: {r:?}");
        assert_eq!(r.errors.get("22012"), Some(&r.failed), "{what}: {:?}", r.errors);
        assert!(r.outages.is_empty() && r.interrupted.is_none(), "{what}: {r:?}");
    }
    std::fs::remove_file(&sql).ok();
    // One connection by hand: errors inside and outside a transaction, then it still works.
    let mut c = target.connect().expect("connect");
    let div = c.prepare("SELECT 1 / $1::int").expect("prepare");
    let small = c.prepare("SELECT $1::int2 + 0").expect("prepare");
    let e = c.exec(div, &[&Value::Int(0)]).expect_err("division by zero");
    assert!(matches!(&e, DbError::Sql { sqlstate, .. } if sqlstate == "22012"), "{e:?}");
    let e = c.exec(small, &[&Value::Int(1 << 20)]).expect_err("out of range");
    assert!(matches!(&e, DbError::Sql { sqlstate, .. } if sqlstate == "22003"), "{e:?}");
    c.exec(small, &[&Value::Int(-7)]).expect("in range");
    c.simple("BEGIN").expect("begin");
    assert!(matches!(c.simple("SELECT nope"), Err(DbError::Sql { .. })));
    let e = c.exec(div, &[&Value::Int(1)]).expect_err("aborted transaction");
    assert!(matches!(&e, DbError::Sql { sqlstate, .. } if sqlstate == "25P02"), "{e:?}");
    c.simple("ROLLBACK").expect("rollback");
    c.exec(div, &[&Value::Int(1)]).expect("usable again");
    assert_eq!(c.query_i64("SELECT 6 * 7").expect("query"), Some(42));
    let e = c.simple("SELECT 1; SELECT nope; SELECT 2").expect_err("second fails");
    assert!(e.to_string().ends_with("(SQLSTATE 42703)"), "{e}");
    assert_eq!(c.query_text("SELECT 'after'").expect("query").as_deref(), Some("after"));
}

/// The server process under a statement is terminated (SQLSTATE 57P01) or killed (end of
/// stream): the statement fails as Gone at once, and so does the next.
#[live]
fn postgres_backend_killed_mid_statement_is_gone() {
    let pg = Postgres::start(&PgOptions::default()).expect("PostgreSQL starts");
    let target = pg_target(&pg);
    for how in ["terminate", "kill"] {
        let mut c = target.connect().expect("connect");
        let pid = c.query_i64("SELECT pg_backend_pid()").expect("pid").expect("a pid");
        let sleep = c.prepare("SELECT pg_sleep($1)").expect("prepare");
        let mut admin = target.connect().expect("connect");
        let killer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            if how == "terminate" {
                admin.simple(&format!("SELECT pg_terminate_backend({pid})")).expect("terminate");
            } else {
                // SAFETY: kill has no memory preconditions; the PID is the test server's backend.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
        });
        let started = std::time::Instant::now();
        let e = c.exec(sleep, &[&Value::Int(30)]).expect_err("gone");
        killer.join().expect("killer");
        assert!(started.elapsed() < Duration::from_secs(20), "{how}: waited the sleep out");
        let DbError::Gone(m) = &e else { panic!("{how}: {e:?}") };
        if how == "terminate" {
            assert!(m.contains("57P01"), "{how}: {m}");
        }
        assert!(matches!(c.simple("SELECT 1"), Err(DbError::Gone(_))), "{how}");
        drop(c);
        // After a killed backend the server resets every connection and recovers: wait.
        let back = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(100));
            target.connect().is_ok_and(|mut c| c.simple("SELECT 1").is_ok())
        });
        assert!(back, "{how}: the server came back");
    }
}
