//! A run: connect, prepare, start one worker thread per connection on its schedule, print a
//! line per interval, and add up the histograms, counts and CPU at the end.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use measure::hist::Log2Hist;
use serde::{Deserialize, Serialize};

use crate::cost::{Cost, CostProbe};
use crate::driver::{Conn, DbError, ServerKind, Target};
use crate::schedule::{share, Arrivals, Schedule};
use crate::stats::{Hists, Percentiles};
use crate::workload::{builtin, parse_sql_file, TxTemplate, Value, WorkloadKind};
use crate::Error;
use measure::rng::SplitMix64;

/// Simple (text) or prepared (extended) protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    Simple,
    Prepared,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Simple => "simple",
            Protocol::Prepared => "prepared",
        }
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Offered transactions per second, all connections together.
    pub rate: f64,
    pub arrivals: Arrivals,
    pub connections: u32,
    /// Stop scheduling after this long (from the first intended start).
    pub duration: Option<Duration>,
    /// Or after this many transactions.
    pub transactions: Option<u64>,
    pub workload: WorkloadKind,
    pub protocol: Protocol,
    /// Seconds between interval lines.
    pub interval: Duration,
    /// Skip transactions that could only start this late (counted as skipped).
    pub max_lag: Option<Duration>,
    /// A transaction that starts later than this after its intended start counts as late.
    pub late_after: Duration,
    /// Retries of a transaction that failed with a SQLSTATE of class 40 (serialization failure,
    /// deadlock).
    pub retry: u32,
    /// Seed of the schedule jitter and of the parameters.
    pub seed: u64,
    /// The server's main process, when it cannot be found through the connection.
    pub server_pid: Option<u32>,
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            rate: 100.0,
            arrivals: Arrivals::Fixed,
            connections: 1,
            duration: Some(Duration::from_secs(10)),
            transactions: None,
            workload: WorkloadKind::PointSelect,
            protocol: Protocol::Prepared,
            interval: Duration::from_secs(1),
            max_lag: None,
            late_after: Duration::from_millis(5),
            retry: 0,
            seed: 1,
            server_pid: None,
        }
    }
}

/// One interval's line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalLine {
    /// End of the interval, s after the first intended start.
    pub end_s: f64,
    pub completed: u64,
    /// Completed per second in the interval.
    pub rate: f64,
    pub latency: Percentiles,
    pub late: u64,
    pub skipped: u64,
    pub errors: u64,
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    /// Stored as `postgres` / `maria_db`, as it always was.
    #[serde(serialize_with = "ServerKind::serialize_snake")]
    pub server: ServerKind,
    pub target: String,
    pub workload: String,
    pub protocol: Protocol,
    pub arrivals: Arrivals,
    pub offered_rate: f64,
    pub connections: u32,
    /// From the first intended start to the end of the schedule or the last completion,
    /// whichever is later (to the stop when interrupted), s.
    pub elapsed_s: f64,
    /// Transactions whose intended start came.
    pub scheduled: u64,
    pub completed: u64,
    /// Failed after retries (counted in `errors` by SQLSTATE).
    pub failed: u64,
    pub late: u64,
    pub late_after_ms: f64,
    pub skipped: u64,
    pub max_lag_ms: Option<f64>,
    /// Due before the end of `--duration` but not started by then (the run was behind).
    pub unstarted: u64,
    pub retries: u64,
    /// Statement failures by SQLSTATE (retried ones included).
    pub errors: BTreeMap<String, u64>,
    pub achieved_rate: f64,
    /// Completion − intended start.
    pub latency: Percentiles,
    /// Completion − actual start (what a closed-loop tool reports).
    pub service: Percentiles,
    /// Actual start − intended start.
    pub lag: Percentiles,
    /// Latency, µs, in DTrace's log2 buckets.
    pub latency_log2_us: Log2Hist,
    pub intervals: Vec<IntervalLine>,
    pub cost: Option<Cost>,
    pub cost_unavailable: Option<String>,
    /// Why the run ended early (Ctrl-C, the server went away); what was measured is kept.
    pub interrupted: Option<String>,
}

/// What a worker shares with the main thread.
#[derive(Debug)]
struct Shared {
    interval: Hists,
    total: Hists,
    log2: Log2Hist,
    scheduled: u64,
    completed: u64,
    failed: u64,
    late: u64,
    skipped: u64,
    retries: u64,
    unstarted: u64,
    interval_counts: [u64; 4], // completed, late, skipped, errors
    errors: BTreeMap<String, u64>,
    last_done_ns: u64,
    gone: Option<String>,
}

impl Shared {
    fn new() -> Result<Self, Error> {
        Ok(Shared {
            interval: Hists::new()?,
            total: Hists::new()?,
            log2: Log2Hist::default(),
            scheduled: 0,
            completed: 0,
            failed: 0,
            late: 0,
            skipped: 0,
            retries: 0,
            unstarted: 0,
            interval_counts: [0; 4],
            errors: BTreeMap::new(),
            last_done_ns: 0,
            gone: None,
        })
    }
}

/// A connection with its statements prepared.
struct Prepared {
    conn: Box<dyn Conn>,
    /// Per template, per statement: the prepared handle (statements without parameters run as
    /// text on either protocol).
    handles: Vec<Vec<Option<usize>>>,
}

/// The templates of a run: built in (tables and rows read from the schema) or from a file.
pub fn templates(
    target: &Target,
    conn: &mut dyn Conn,
    workload: &WorkloadKind,
) -> Result<Vec<TxTemplate>, Error> {
    if let WorkloadKind::File(path) = workload {
        let text = std::fs::read_to_string(path)
            .map_err(|source| Error::Io { path: path.clone(), source })?;
        return Ok(vec![parse_sql_file(&text)?]);
    }
    let schema = match target.kind {
        ServerKind::Postgres => "current_schema()",
        ServerKind::MariaDb => "DATABASE()",
    };
    let not_prepared =
        || Error::NotPrepared { target: target.describe(), server: target.kind.name() };
    let tables = conn
        .query_i64(&format!(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = {schema} \
             AND table_name LIKE 'sbtest%'"
        ))
        .map_err(|e| Error::Sql { what: "reading the schema".into(), message: e.to_string() })?
        .unwrap_or(0);
    if tables < 1 {
        return Err(not_prepared());
    }
    let rows = conn
        .query_i64("SELECT max(id) FROM sbtest1")
        .map_err(|e| Error::Sql { what: "reading sbtest1".into(), message: e.to_string() })?
        .unwrap_or(0);
    if rows < 1 {
        return Err(not_prepared());
    }
    Ok(builtin(workload, u32::try_from(tables).unwrap_or(1), rows.unsigned_abs()))
}

fn prepare_conn(
    target: &Target,
    mut conn: Box<dyn Conn>,
    templates: &[TxTemplate],
    protocol: Protocol,
) -> Result<Prepared, Error> {
    let mut handles = Vec::with_capacity(templates.len());
    for t in templates {
        let mut hs = Vec::with_capacity(t.statements.len());
        for st in &t.statements {
            if protocol == Protocol::Prepared && !st.params().is_empty() {
                let text = st.prepared_text(crate::driver::dialect(target.kind));
                let h = conn.prepare(&text).map_err(|e| Error::Sql {
                    what: format!("preparing {text:?}"),
                    message: e.to_string(),
                })?;
                hs.push(Some(h));
            } else {
                hs.push(None);
            }
        }
        handles.push(hs);
    }
    Ok(Prepared { conn, handles })
}

fn run_tx(
    p: &mut Prepared,
    index: usize,
    t: &TxTemplate,
    values: &[Value],
    refs: &mut Vec<usize>,
) -> Result<(), DbError> {
    for (si, st) in t.statements.iter().enumerate() {
        let handle = p.handles.get(index).and_then(|h| h.get(si)).copied().flatten();
        let r = match handle {
            Some(h) => {
                refs.clear();
                refs.extend(st.params());
                let vals: Vec<&Value> = refs.iter().filter_map(|&i| values.get(i)).collect();
                p.conn.exec(h, &vals)
            }
            None => p.conn.simple(&st.literal_text(values)),
        };
        if let Err(e) = r {
            if t.explicit && matches!(e, DbError::Sql { .. }) {
                if let Err(DbError::Gone(m)) = p.conn.simple("ROLLBACK") {
                    return Err(DbError::Gone(m));
                }
            }
            return Err(e);
        }
    }
    Ok(())
}

struct Worker {
    prepared: Prepared,
    templates: Arc<Vec<TxTemplate>>,
    schedule: Schedule,
    limit: Option<u64>,
    end_ns: Option<u64>,
    t0: Instant,
    plan: Plan,
    rng: SplitMix64,
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
    user_stop: &'static AtomicBool,
    done: Arc<AtomicUsize>,
}

fn lock(m: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Worker {
    fn run(mut self) {
        let mut refs = Vec::new();
        let mut n = 0u64;
        let late_ns = self.plan.late_after.as_nanos() as u64;
        let max_lag_ns = self.plan.max_lag.map(|d| d.as_nanos() as u64);
        loop {
            if self.limit.is_some_and(|l| n >= l) {
                break;
            }
            let due_ns = self.schedule.next_ns();
            if self.end_ns.is_some_and(|e| due_ns >= e) {
                break;
            }
            n += 1;
            let due = self.t0 + Duration::from_nanos(due_ns);
            // Sleep to the intended start in slices, so a stop is seen quickly.
            loop {
                if self.stop.load(Ordering::Relaxed) || self.user_stop.load(Ordering::Relaxed) {
                    self.finish();
                    return;
                }
                let now = Instant::now();
                if now >= due {
                    break;
                }
                std::thread::sleep((due - now).min(Duration::from_millis(50)));
            }
            let start = Instant::now();
            // The run's time is over: transactions due before the end that could not start
            // (the server or driver fell behind) are counted, not run.
            if let Some(e) = self.end_ns {
                if start.saturating_duration_since(self.t0).as_nanos() as u64 >= e {
                    let mut left = 1u64;
                    while self.schedule.next_ns() < e && self.limit.is_none_or(|l| n + left <= l) {
                        left += 1;
                    }
                    lock(&self.shared).unstarted += left;
                    break;
                }
            }
            let lag_ns = (start - due).as_nanos() as u64;
            lock(&self.shared).scheduled += 1;
            if max_lag_ns.is_some_and(|m| lag_ns > m) {
                let mut s = lock(&self.shared);
                s.skipped += 1;
                s.interval_counts[2] += 1;
                continue;
            }
            let index = if self.templates.len() > 1 {
                self.rng.range(0, self.templates.len() as i64 - 1) as usize
            } else {
                0
            };
            let Some(t) = self.templates.get(index) else { break };
            let mut attempt = 0u32;
            let outcome = loop {
                let values = t.values(&mut self.rng);
                match run_tx(&mut self.prepared, index, t, &values, &mut refs) {
                    Ok(()) => break Ok(()),
                    Err(DbError::Sql { sqlstate, message }) => {
                        let retry = sqlstate.starts_with("40") && attempt < self.plan.retry;
                        let mut s = lock(&self.shared);
                        *s.errors.entry(sqlstate.clone()).or_insert(0) += 1;
                        s.interval_counts[3] += 1;
                        if retry {
                            s.retries += 1;
                            attempt += 1;
                            continue;
                        }
                        break Err(DbError::Sql { sqlstate, message });
                    }
                    Err(gone) => break Err(gone),
                }
            };
            let end = Instant::now();
            let mut s = lock(&self.shared);
            match outcome {
                Ok(()) => {
                    let latency = (end - due).as_nanos() as u64;
                    let service = (end - start).as_nanos() as u64;
                    s.interval.record(latency, service, lag_ns);
                    s.total.record(latency, service, lag_ns);
                    s.log2.add(latency / 1000);
                    s.completed += 1;
                    s.interval_counts[0] += 1;
                    if lag_ns > late_ns {
                        s.late += 1;
                        s.interval_counts[1] += 1;
                    }
                    s.last_done_ns = s.last_done_ns.max((end - self.t0).as_nanos() as u64);
                }
                Err(DbError::Sql { .. }) => s.failed += 1,
                Err(DbError::Gone(m)) => {
                    s.gone = Some(m);
                    self.stop.store(true, Ordering::Relaxed);
                    drop(s);
                    self.finish();
                    return;
                }
            }
        }
        self.finish();
    }

    fn finish(&self) {
        self.done.fetch_add(1, Ordering::SeqCst);
    }
}

/// Runs `plan` against `target`; `on_interval` gets each interval's line as it ends.
/// `user_stop` (the Ctrl-C flag) ends the run early, keeping what was measured.
pub fn run(
    target: &Target,
    plan: &Plan,
    user_stop: &'static AtomicBool,
    on_interval: &mut dyn FnMut(&IntervalLine),
) -> Result<LoadReport, Error> {
    if !(plan.rate.is_finite() && plan.rate > 0.0) {
        return Err(measure::UsageError::Message(format!(
            "--rate {} must be a positive number of transactions per second",
            plan.rate
        ))
        .into());
    }
    let connections = plan.connections.max(1);
    let mut first = target.connect()?;
    let templates = Arc::new(templates(target, first.as_mut(), &plan.workload)?);
    let server_pid = plan.server_pid.or_else(|| target.server_pid(first.as_mut()));
    let mut conns = vec![first];
    for _ in 1..connections {
        conns.push(target.connect()?);
    }
    let mut prepared = Vec::with_capacity(conns.len());
    for c in conns {
        prepared.push(prepare_conn(target, c, &templates, plan.protocol)?);
    }

    let (mut probe, mut cost_unavailable) = (None, None);
    match server_pid {
        Some(pid) => match CostProbe::start(pid) {
            Ok(p) => probe = Some(p),
            Err(e) => cost_unavailable = Some(e.to_string()),
        },
        None => {
            cost_unavailable = Some(
                "the server is not a process on this machine (or its PID could not be read): \
                 give --server-pid"
                    .into(),
            );
        }
    }

    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now() + Duration::from_millis(20);
    let end_ns = plan.duration.map(|d| d.as_nanos() as u64);
    let mut shares = Vec::new();
    let mut handles = Vec::new();
    for (i, p) in prepared.into_iter().enumerate() {
        let index = i as u32;
        let shared = Arc::new(Mutex::new(Shared::new()?));
        shares.push(Arc::clone(&shared));
        let worker = Worker {
            prepared: p,
            templates: Arc::clone(&templates),
            schedule: Schedule::new(plan.rate, connections, index, plan.arrivals, plan.seed),
            limit: plan.transactions.map(|n| share(n, connections, index)),
            end_ns,
            t0,
            plan: plan.clone(),
            rng: SplitMix64::new(
                plan.seed.wrapping_mul(0x9E37_79B9).wrapping_add(u64::from(index)),
            ),
            shared,
            stop: Arc::clone(&stop),
            user_stop,
            done: Arc::clone(&done),
        };
        let h = std::thread::Builder::new()
            .name(format!("load-{i}"))
            .spawn(move || worker.run())
            .map_err(|source| Error::Io { path: "thread".into(), source })?;
        handles.push(h);
    }

    // Interval lines until every worker is done.
    let mut intervals = Vec::new();
    let mut agg = Hists::new()?;
    let step = plan.interval.max(Duration::from_millis(10));
    let mut next = t0 + step;
    let mut last_end = t0;
    loop {
        let all_done = done.load(Ordering::SeqCst) >= handles.len();
        let now = Instant::now();
        if now >= next || all_done {
            let end = if all_done { now } else { next };
            agg.reset();
            let mut counts = [0u64; 4];
            for s in &shares {
                let mut s = lock(s);
                agg.add(&s.interval);
                s.interval.reset();
                for (c, v) in counts.iter_mut().zip(s.interval_counts) {
                    *c += v;
                }
                s.interval_counts = [0; 4];
            }
            let secs = end.saturating_duration_since(last_end).as_secs_f64();
            if counts.iter().any(|&c| c > 0) || !all_done {
                let line = IntervalLine {
                    end_s: end.saturating_duration_since(t0).as_secs_f64(),
                    completed: counts[0],
                    rate: if secs > 0.0 { counts[0] as f64 / secs } else { 0.0 },
                    latency: Percentiles::of(&agg.latency),
                    late: counts[1],
                    skipped: counts[2],
                    errors: counts[3],
                };
                on_interval(&line);
                intervals.push(line);
            }
            last_end = end;
            next += step;
            if all_done {
                break;
            }
        }
        std::thread::sleep(
            next.saturating_duration_since(Instant::now()).min(Duration::from_millis(20)),
        );
    }
    let stopped_at = Instant::now();
    for h in handles {
        let _ = h.join();
    }

    let mut total = Hists::new()?;
    let mut log2 = Log2Hist::default();
    let mut errors = BTreeMap::new();
    let (mut scheduled, mut completed, mut failed, mut late, mut skipped, mut retries) =
        (0, 0, 0, 0, 0, 0);
    let mut unstarted = 0;
    let mut last_done_ns = 0;
    let mut gone = None;
    for s in &shares {
        let s = lock(s);
        total.add(&s.total);
        log2.merge(&s.log2);
        scheduled += s.scheduled;
        completed += s.completed;
        failed += s.failed;
        late += s.late;
        skipped += s.skipped;
        retries += s.retries;
        unstarted += s.unstarted;
        last_done_ns = last_done_ns.max(s.last_done_ns);
        for (k, v) in &s.errors {
            *errors.entry(k.clone()).or_insert(0) += v;
        }
        if gone.is_none() {
            gone.clone_from(&s.gone);
        }
    }
    let interrupted = match (&gone, user_stop.load(Ordering::Relaxed)) {
        (Some(m), _) => Some(format!("the server went away: {m}")),
        (None, true) => Some("stopped (signal)".to_string()),
        _ => None,
    };
    let elapsed_s = if interrupted.is_some() {
        stopped_at.saturating_duration_since(t0).as_secs_f64()
    } else {
        let last = last_done_ns as f64 / 1e9;
        plan.duration.map_or(last, |d| d.as_secs_f64().max(last))
    };
    let (cost, cost_unavailable) = match probe {
        Some(p) => match p.finish(completed) {
            Ok(c) => (Some(c), cost_unavailable),
            Err(e) => (None, Some(e.to_string())),
        },
        None => (None, cost_unavailable),
    };
    Ok(LoadReport {
        server: target.kind,
        target: target.describe(),
        workload: plan.workload.name(),
        protocol: plan.protocol,
        arrivals: plan.arrivals,
        offered_rate: plan.rate,
        connections,
        elapsed_s,
        scheduled,
        completed,
        failed,
        late,
        late_after_ms: plan.late_after.as_secs_f64() * 1e3,
        skipped,
        max_lag_ms: plan.max_lag.map(|d| d.as_secs_f64() * 1e3),
        unstarted,
        retries,
        errors,
        achieved_rate: if elapsed_s > 0.0 { completed as f64 / elapsed_s } else { 0.0 },
        latency: Percentiles::of(&total.latency),
        service: Percentiles::of(&total.service),
        lag: Percentiles::of(&total.lag),
        latency_log2_us: log2,
        intervals,
        cost,
        cost_unavailable,
        interrupted,
    })
}
