//! The allocator bake-off's own experiment: a database server started per allocator (a throwaway
//! `scratchdb` server, `LD_PRELOAD` / `GLIBC_TUNABLES` in its environment), verified in its maps,
//! and driven at a number of connections by the Debian-packaged load generators: `pgbench -S` for
//! PostgreSQL, `sysbench oltp_read_only` for MariaDB — full speed or at a fixed rate. The server's
//! CPU is its whole process tree's (live processes and the reaped backends).

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use measure::time::ClockTicks;
use serde::Serialize;

use crate::allocator::Kind;
use crate::procfs::Verdict;
use crate::run::{self, CpuUse, Outcome, Refusal, RunRecord, Subject};
use crate::Error;

/// Which server (the workspace's one kind).
pub use measure::database::ServerKind;

/// A server workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerSpec {
    #[serde(serialize_with = "ServerKind::serialize_snake")]
    pub kind: ServerKind,
    /// Seconds of load per run.
    pub seconds: u32,
    /// Transactions per second in total (`pgbench -R`, `sysbench --rate`); `None`: full speed.
    pub rate: Option<u32>,
}

impl ServerSpec {
    pub fn describe(&self) -> String {
        let (server, load) = match self.kind {
            ServerKind::Postgres => ("PostgreSQL 15", "pgbench -S (select-only)"),
            ServerKind::MariaDb => ("MariaDB", "sysbench oltp_read_only"),
        };
        let rate = self.rate.map_or("full speed".to_string(), |r| format!("at {r} tx/s"));
        format!("server: {server} started per run, {load} for {} s, {rate}", self.seconds)
    }
}

/// A started server and how to load it.
enum Server {
    Pg(scratchdb::Postgres),
    Maria(scratchdb::MariaDb),
}

impl Server {
    fn pid(&self) -> u32 {
        match self {
            Server::Pg(s) => s.pid(),
            Server::Maria(s) => s.pid(),
        }
    }
}

fn server_err(what: &str) -> impl FnOnce(scratchdb::Error) -> Error + '_ {
    move |e| Error::Server(format!("{what}: {e}"))
}

/// The environment the server starts with: the allocator's, and an empty `LD_PRELOAD` for glibc
/// runs (so a preload of the caller's does not leak in).
fn server_env(subject: &Subject) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> =
        subject.allocator.environment().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    if matches!(subject.allocator.kind, Kind::Glibc { .. }) {
        env.push(("LD_PRELOAD".into(), String::new()));
    }
    env
}

fn start(spec: &ServerSpec, subject: &Subject) -> Result<Server, Error> {
    let env = server_env(subject);
    match spec.kind {
        ServerKind::Postgres => {
            let mut o = scratchdb::PgOptions::default()
                .setting("max_connections", "200")
                .setting("autovacuum", "off");
            o.env = env;
            let pg = scratchdb::Postgres::start(&o).map_err(server_err("starting PostgreSQL"))?;
            let mut init = pg.command("pgbench");
            init.args(["-i", "-q", "-s", "1"]);
            check(init, "pgbench -i")?;
            Ok(Server::Pg(pg))
        }
        ServerKind::MariaDb => {
            let mut o = scratchdb::MariaDbOptions::default().option("--max-connections=200");
            o.env = env;
            let db = scratchdb::MariaDb::start(&o).map_err(server_err("starting MariaDB"))?;
            db.sql("CREATE DATABASE sbtest").map_err(server_err("creating sbtest"))?;
            let mut prep = sysbench(&db, 1);
            prep.args(["--tables=1", "--table-size=10000", "prepare"]);
            check(prep, "sysbench prepare")?;
            Ok(Server::Maria(db))
        }
    }
}

fn sysbench(db: &scratchdb::MariaDb, threads: u32) -> Command {
    let mut cmd = Command::new("sysbench");
    cmd.arg("oltp_read_only")
        .arg(format!("--mysql-socket={}", db.socket().display()))
        .args(["--mysql-user=root", "--mysql-db=sbtest", "--db-driver=mysql"])
        .arg(format!("--threads={threads}"));
    cmd
}

fn check(mut cmd: Command, what: &str) -> Result<String, Error> {
    let out = cmd.output().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::Server(format!(
            "{what}: not installed (apt-get install postgresql-contrib-15 sysbench)"
        )),
        _ => Error::Server(format!("{what}: {e}")),
    })?;
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        let tail = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").to_string();
        return Err(Error::Server(format!("{what} failed ({}): {tail}", out.status)));
    }
    Ok(text)
}

/// Every process whose ancestry reaches `root`, `root` included (from `/proc/*/stat`).
fn tree(root: u32) -> Vec<u32> {
    let mut parent = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let stat = std::fs::read(format!("/proc/{pid}/stat")).unwrap_or_default();
            if let Ok(s) = measure::procstat::parse_stat(&stat) {
                parent.push((pid, s.ppid));
            }
        }
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(parent.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    out
}

/// CPU ticks (user, system) of a process tree: each live process's own and its reaped
/// children's, so backends that came and went are counted once, in their parent.
fn tree_ticks(root: u32) -> (u64, u64, u64) {
    let (mut u, mut s, mut minflt) = (0, 0, 0);
    for pid in tree(root) {
        let stat = std::fs::read(format!("/proc/{pid}/stat")).unwrap_or_default();
        if let Ok(t) = measure::procstat::parse_stat(&stat) {
            u += t.utime_ticks + t.cutime_ticks;
            s += t.stime_ticks + t.cstime_ticks;
            minflt += t.minflt;
        }
    }
    (u, s, minflt)
}

/// PSS summed over the tree (PSS adds up; RSS would count shared buffers once per process).
fn tree_pss(root: u32) -> Option<u64> {
    let mut sum = 0;
    for pid in tree(root) {
        let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
        sum += crate::procfs::parse_memory("", &rollup).pss_bytes?;
    }
    Some(sum)
}

/// The load generator's transactions per second from its output.
pub fn parse_tps(kind: ServerKind, output: &str) -> Option<f64> {
    let re = match kind {
        ServerKind::Postgres => r"tps = ([\d.]+) \(without initial connection time\)",
        ServerKind::MariaDb => r"transactions:\s+\d+\s+\(([\d.]+) per sec",
    };
    let re = regex::Regex::new(re).ok()?;
    run::metric_from_output(&re, output, "")
}

/// One run: start the server under the allocator, verify, load it with `connections`, measure,
/// stop it. Returns the outcome and a note on how the load was driven.
pub fn run_server(
    spec: &ServerSpec,
    connections: u32,
    subject: &Subject,
    round: u32,
    stop: &AtomicBool,
) -> Result<(Outcome, Option<String>), Error> {
    let server = start(spec, subject)?;
    let pid = server.pid();
    let note = Some(
        "`platscope load` is not available yet: the load comes from pgbench / sysbench, whose \
         CPU counts only in the machine-wide figure"
            .to_string(),
    );
    let verified = match subject.verify(pid)? {
        Verdict::Verified(v) => format!("{v} in server PID {pid}"),
        Verdict::Refused(reason) => {
            drop(server);
            let refusal = Refusal {
                allocator: subject.allocator.name.clone(),
                threads: connections,
                round,
                reason,
            };
            return Ok((Outcome::Refused(refusal), note));
        }
    };
    if stop.load(Ordering::Relaxed) {
        return Ok((Outcome::Interrupted, note));
    }
    let (_, space_start, _) = run::snapshot(pid)?;
    let ticks = ClockTicks::system();
    let (u0, s0, f0) = tree_ticks(pid);
    let busy0 = run::machine_busy()?;
    let t0 = Instant::now();
    let secs = spec.seconds.to_string();
    let mut load = match &server {
        Server::Pg(pg) => {
            let mut cmd = pg.command("pgbench");
            let c = connections.to_string();
            cmd.args(["-n", "-S", "-c", &c, "-j", &c, "-T", &secs]);
            if let Some(rate) = spec.rate {
                cmd.arg("-R").arg(rate.to_string());
            }
            cmd
        }
        Server::Maria(db) => {
            let mut cmd = sysbench(db, connections);
            cmd.args(["--tables=1", "--table-size=10000"]).arg(format!("--time={secs}"));
            if let Some(rate) = spec.rate {
                cmd.arg(format!("--rate={rate}"));
            }
            cmd.arg("run");
            cmd
        }
    };
    load.stdin(std::process::Stdio::null());
    // Ctrl-C reaches the load generator and the server too (one process group): a failure
    // after a stop request is the stop, not an error.
    let output = match check(load, "the load generator") {
        Err(_) if stop.load(Ordering::Relaxed) => return Ok((Outcome::Interrupted, note)),
        other => other?,
    };
    let seconds = t0.elapsed().as_secs_f64();
    let busy1 = run::machine_busy()?;
    let (u1, s1, f1) = tree_ticks(pid);
    let (mut memory, space_end, _) = run::snapshot(pid)?;
    memory.pss_bytes = tree_pss(pid).or(memory.pss_bytes);
    drop(server);
    if stop.load(Ordering::Relaxed) {
        return Ok((Outcome::Interrupted, note));
    }
    let tps = parse_tps(spec.kind, &output).ok_or_else(|| {
        Error::Server("no transactions-per-second line in the load generator's output".into())
    })?;
    let user_s = ticks.to_secs(u1.saturating_sub(u0));
    let system_s = ticks.to_secs(s1.saturating_sub(s0));
    let cpu = CpuUse {
        process_s: user_s + system_s,
        user_s,
        system_s,
        machine_busy_s: run::busy_seconds(&busy0, &busy1, ticks),
    };
    let ops = tps * seconds;
    Ok((
        Outcome::Measured(RunRecord {
            allocator: subject.allocator.name.clone(),
            threads: connections,
            round,
            pid,
            verified,
            ops,
            seconds,
            throughput: tps,
            cpu,
            cpu_per_op_us: run::cpu_per_op_us(cpu.process_s, ops),
            machine_cpu_per_op_us: run::cpu_per_op_us(cpu.machine_busy_s, ops),
            memory,
            space_start,
            space_end,
            minor_faults: f1.saturating_sub(f0),
        }),
        note,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_generator_rates_parse() {
        // pgbench 15 and sysbench 1.0.20 summary lines.
        let pg = "number of transactions actually processed: 3000\n\
                  tps = 1234.567890 (without initial connection time)\n";
        assert_eq!(parse_tps(ServerKind::Postgres, pg), Some(1234.56789));
        let sb = "    transactions:                        4114   (411.25 per sec.)\n";
        assert_eq!(parse_tps(ServerKind::MariaDb, sb), Some(411.25));
        assert_eq!(parse_tps(ServerKind::MariaDb, pg), None);
    }
}
