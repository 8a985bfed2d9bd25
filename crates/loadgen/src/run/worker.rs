//! A run: connect, prepare, start one worker thread per connection on its schedule, print a
//! line per interval, and add up the histograms, counts and CPU at the end.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use measure::hist::Log2Hist;
use serde::{Deserialize, Serialize};

use crate::conn::{Conn, DbError};
use crate::cost::{Cost, CostProbe};
use crate::driver::{ServerKind, Target};
use crate::schedule::{share, Arrivals, Schedule};
use crate::stats::{Hists, Percentiles};
use crate::workload::{builtin, parse_sql_file, Part, TxTemplate, Value, WorkloadKind};
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
    /// What a connection does when the server goes away.
    pub on_disconnect: OnDisconnect,
}

/// What a connection does when the server goes away mid-run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnDisconnect {
    /// Reconnect with bounded backoff and keep the schedule: transactions due while there is
    /// no connection fail, counted by cause (failover testing).
    #[default]
    Reconnect,
    /// End the run there, keeping what was measured (the first lost connection stops all).
    Stop,
}

/// First wait between reconnection attempts; doubled after each failure up to
/// [`RECONNECT_MAX`].
const RECONNECT_FIRST: Duration = Duration::from_millis(10);
const RECONNECT_MAX: Duration = Duration::from_secs(1);

/// Why a transaction failed while its connection was lost.
pub const CONNECTION_LOST: &str = "connection lost";
pub const CONNECTION_REFUSED: &str = "connection refused";

/// A window in which connections were lost: from the first failure to the first transaction
/// that completed after it (merged across connections when they overlap).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outage {
    /// When the first connection was found lost, s after the first intended start.
    pub start_s: f64,
    /// When the last connection lost in the window was open again (`None`: not before the end).
    pub reconnected_s: Option<f64>,
    /// When the last of them completed a transaction again (`None`: not before the end).
    pub first_success_s: Option<f64>,
    /// Connections lost in the window.
    pub connections: u32,
    /// Transactions that failed in the window (the one that found the connection lost, and every
    /// one due while there was none).
    pub failed: u64,
    /// Those failures by cause: `connection lost`, `connection refused`, or the SQLSTATE the
    /// server answered a connection attempt with (`57P03`: starting up).
    pub causes: BTreeMap<String, u64>,
}

impl Outage {
    /// From the loss to the first success after it, s.
    pub fn time_to_first_success_s(&self) -> Option<f64> {
        self.first_success_s.map(|t| t - self.start_s)
    }
}

/// Merges each connection's outages into windows: overlapping ones (one connection lost while
/// another still was) become one; an open one runs to `end_s`.
pub fn merge_outages(mut each: Vec<Outage>, end_s: f64) -> Vec<Outage> {
    each.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    let until = |o: &Outage| o.first_success_s.unwrap_or(end_s);
    let mut out: Vec<Outage> = Vec::new();
    for o in each {
        match out.last_mut() {
            Some(last) if o.start_s <= until(last) => {
                last.first_success_s = match (last.first_success_s, o.first_success_s) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
                last.reconnected_s = match (last.reconnected_s, o.reconnected_s) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
                last.connections += o.connections;
                last.failed += o.failed;
                for (k, v) in o.causes {
                    *last.causes.entry(k).or_insert(0) += v;
                }
            }
            _ => out.push(o),
        }
    }
    out
}

/// The cause of a failed connection attempt, from its message: the SQLSTATE the server
/// answered with, or what the socket said.
pub fn connect_cause(message: &str) -> String {
    if let Some(at) = message.find("SQLSTATE ") {
        let code: String =
            message[at + 9..].chars().take_while(char::is_ascii_alphanumeric).collect();
        if code.len() == 5 {
            return code;
        }
    }
    let m = message.to_ascii_lowercase();
    if m.contains("refused") || m.contains("no such file") {
        CONNECTION_REFUSED.to_string()
    } else if m.contains("timed out") || m.contains("timeout") {
        "connect timeout".to_string()
    } else {
        "connect failed".to_string()
    }
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
            on_disconnect: OnDisconnect::Reconnect,
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
    /// Connections without a working connection at the end of the interval.
    #[serde(default)]
    pub down: u32,
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
    /// Windows in which the server was away and the run rode through (reconnecting).
    #[serde(default)]
    pub outages: Vec<Outage>,
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
    outages: Vec<Outage>,
    /// This connection is lost right now.
    down: bool,
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
            outages: Vec::new(),
            down: false,
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

/// Values bound to one statement that [`run_tx`] passes without allocating.
const INLINE_VALUES: usize = 8;

fn run_tx(p: &mut Prepared, index: usize, t: &TxTemplate, values: &[Value]) -> Result<(), DbError> {
    static UNUSED: Value = Value::Int(0);
    for (si, st) in t.statements.iter().enumerate() {
        let handle = p.handles.get(index).and_then(|h| h.get(si)).copied().flatten();
        let r = match handle {
            Some(h) => {
                // The statement's values, on the stack when they fit (no allocation per
                // statement: the driver's CPU per transaction is measured against pgbench's).
                let params = st.parts.iter().filter_map(|part| match part {
                    Part::Param(i) => values.get(*i),
                    Part::Text(_) => None,
                });
                let mut inline = [&UNUSED; INLINE_VALUES];
                let mut n = 0;
                for v in params.clone() {
                    if let Some(slot) = inline.get_mut(n) {
                        *slot = v;
                    }
                    n += 1;
                }
                if n <= INLINE_VALUES {
                    p.conn.exec(h, &inline[..n])
                } else {
                    p.conn.exec(h, &params.collect::<Vec<_>>())
                }
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
    /// `None` while the connection is lost and not open again.
    prepared: Option<Prepared>,
    target: Target,
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
    /// The outage this connection is in, and when to try to reconnect next.
    outage: Option<Outage>,
    next_attempt: Instant,
    backoff: Duration,
    /// Why the last reconnection attempt failed (what transactions due now fail with).
    cause: String,
}

fn lock(m: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Worker {
    fn secs(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.t0).as_secs_f64()
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.user_stop.load(Ordering::Relaxed)
    }

    /// The connection is gone: with `--on-disconnect stop` the run ends (false); otherwise the
    /// outage starts and the transaction that found it fails.
    fn lost(&mut self, message: String) -> bool {
        self.prepared = None;
        if self.plan.on_disconnect == OnDisconnect::Stop {
            lock(&self.shared).gone = Some(message);
            self.stop.store(true, Ordering::Relaxed);
            return false;
        }
        let now = Instant::now();
        self.outage = Some(Outage {
            start_s: self.secs(now),
            reconnected_s: None,
            first_success_s: None,
            connections: 1,
            failed: 0,
            causes: BTreeMap::new(),
        });
        self.cause = CONNECTION_LOST.to_string();
        self.fail_in_outage();
        self.cause.clear();
        (self.next_attempt, self.backoff) = (now, RECONNECT_FIRST);
        lock(&self.shared).down = true;
        true
    }

    /// A transaction that could not run for want of a connection: failed, by cause.
    fn fail_in_outage(&mut self) {
        let cause = if self.cause.is_empty() { CONNECTION_LOST } else { self.cause.as_str() };
        if let Some(o) = &mut self.outage {
            o.failed += 1;
            *o.causes.entry(cause.to_string()).or_insert(0) += 1;
        }
        let mut s = lock(&self.shared);
        s.failed += 1;
        *s.errors.entry(cause.to_string()).or_insert(0) += 1;
        s.interval_counts[3] += 1;
    }

    /// One reconnection attempt if its time has come (bounded exponential backoff).
    fn try_reconnect(&mut self) {
        if self.prepared.is_some() || Instant::now() < self.next_attempt {
            return;
        }
        let attempt = self
            .target
            .connect()
            .and_then(|c| prepare_conn(&self.target, c, &self.templates, self.plan.protocol));
        let now = Instant::now();
        match attempt {
            Ok(p) => {
                self.prepared = Some(p);
                let at = self.secs(now);
                if let Some(o) = &mut self.outage {
                    o.reconnected_s = Some(at);
                }
                lock(&self.shared).down = false;
            }
            Err(e) => {
                self.cause = connect_cause(&e.to_string());
                self.next_attempt = now + self.backoff;
                self.backoff = (self.backoff * 2).min(RECONNECT_MAX);
            }
        }
    }

    /// Returns the worker's connection, still open, so the server's CPU can be read while its
    /// backends are alive (a backend that exits and is reaped between two `/proc` reads
    /// would be lost from both).
    fn run(mut self) -> Option<Prepared> {
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
            // Sleep to the intended start in slices, so a stop is seen quickly; reconnect
            // meanwhile when the connection is lost.
            loop {
                if self.stopped() {
                    return self.finish();
                }
                self.try_reconnect();
                let now = Instant::now();
                if now >= due {
                    break;
                }
                let mut nap = (due - now).min(Duration::from_millis(50));
                if self.prepared.is_none() {
                    nap = nap.min(self.next_attempt.saturating_duration_since(now));
                }
                std::thread::sleep(nap);
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
            if self.prepared.is_none() {
                // Due while the connection is lost: failed, never dropped.
                self.fail_in_outage();
                continue;
            }
            let index = if self.templates.len() > 1 {
                self.rng.range(0, self.templates.len() as i64 - 1) as usize
            } else {
                0
            };
            let Some(t) = self.templates.get(index) else { break };
            let Some(prepared) = self.prepared.as_mut() else { continue };
            let mut attempt = 0u32;
            let outcome = loop {
                let values = t.values(&mut self.rng);
                match run_tx(prepared, index, t, &values) {
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
            match outcome {
                Ok(()) => {
                    let back = self.outage.take().map(|mut o| {
                        o.first_success_s = Some(self.secs(end));
                        o
                    });
                    let latency = (end - due).as_nanos() as u64;
                    let service = (end - start).as_nanos() as u64;
                    let mut s = lock(&self.shared);
                    s.outages.extend(back);
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
                Err(DbError::Sql { .. }) => lock(&self.shared).failed += 1,
                Err(DbError::Gone(m)) => {
                    if !self.lost(m) {
                        return self.finish();
                    }
                }
            }
        }
        self.finish()
    }

    /// Ends the worker: an outage still open is kept as one with no success after it.
    fn finish(mut self) -> Option<Prepared> {
        if let Some(o) = self.outage.take() {
            lock(&self.shared).outages.push(o);
        }
        self.done.fetch_add(1, Ordering::SeqCst);
        self.prepared.take()
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
            prepared: Some(p),
            target: target.clone(),
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
            outage: None,
            next_attempt: t0,
            backoff: RECONNECT_FIRST,
            cause: String::new(),
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
            let mut down = 0;
            for s in &shares {
                let mut s = lock(s);
                down += u32::from(s.down);
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
                    down,
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
    // Kept open until the server's CPU is read below.
    let open: Vec<Prepared> = handles.into_iter().filter_map(|h| h.join().ok().flatten()).collect();

    let mut total = Hists::new()?;
    let mut log2 = Log2Hist::default();
    let mut errors = BTreeMap::new();
    let (mut scheduled, mut completed, mut failed, mut late, mut skipped, mut retries) =
        (0, 0, 0, 0, 0, 0);
    let mut unstarted = 0;
    let mut last_done_ns = 0;
    let mut gone = None;
    let mut outages = Vec::new();
    for s in &shares {
        let mut s = lock(s);
        outages.append(&mut s.outages);
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
    let outages = merge_outages(outages, elapsed_s);
    // A server restarted in the run is another process tree: the probe's root is gone.
    let restarted = server_pid
        .filter(|&pid| !outages.is_empty() && crate::driver::proc_comm_ppid(pid).is_none());
    let (cost, cost_unavailable) = match (probe, restarted) {
        (Some(_), Some(pid)) => (
            None,
            Some(format!(
                "the server restarted during the run (PID {pid} is gone): its CPU cannot be added up"
            )),
        ),
        (Some(p), None) => match p.finish(completed) {
            Ok(c) => (Some(c), cost_unavailable),
            Err(e) => (None, Some(e.to_string())),
        },
        (None, _) => (None, cost_unavailable),
    };
    drop(open);
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
        outages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each `exec`'s handle and values.
    type Execs = std::sync::Arc<Mutex<Vec<(usize, Vec<Value>)>>>;

    /// Records what each `exec` was given.
    struct Recorder(Execs);

    impl Conn for Recorder {
        fn simple(&mut self, _: &str) -> Result<(), DbError> {
            Ok(())
        }
        fn prepare(&mut self, _: &str) -> Result<usize, DbError> {
            Ok(0)
        }
        fn exec(&mut self, handle: usize, values: &[&Value]) -> Result<(), DbError> {
            let mut seen = self.0.lock().map_err(|e| DbError::Gone(e.to_string()))?;
            seen.push((handle, values.iter().map(|v| (*v).clone()).collect()));
            Ok(())
        }
        fn query_text(&mut self, _: &str) -> Result<Option<String>, DbError> {
            Ok(None)
        }
    }

    #[test]
    fn run_tx_binds_each_statements_values_in_order_few_or_many() {
        use crate::workload::{Gen, Statement};
        let text = |s: &str| Part::Text(s.into());
        let many: Vec<Part> = (0..11).rev().flat_map(|i| [text(","), Part::Param(i)]).collect();
        let t = TxTemplate {
            statements: vec![
                Statement {
                    parts: vec![text("SELECT "), Part::Param(2), text(", "), Part::Param(0)],
                },
                Statement { parts: many },
                Statement { parts: vec![text("SELECT 1")] },
            ],
            gens: vec![Gen::Rand { lo: 0, hi: 0 }; 11],
            explicit: false,
        };
        let values: Vec<Value> = (0..11).map(|i| Value::Int(i * 10)).collect();
        let seen: Execs = std::sync::Arc::new(Mutex::new(Vec::new()));
        let mut p = Prepared {
            conn: Box::new(Recorder(seen.clone())),
            handles: vec![vec![Some(4), Some(5), Some(6)]],
        };
        run_tx(&mut p, 0, &t, &values).expect("runs");
        let seen = seen.lock().expect("lock").clone();
        let ints = |v: &[i64]| v.iter().map(|&i| Value::Int(i)).collect::<Vec<_>>();
        assert_eq!(seen[0], (4, ints(&[20, 0])));
        let all: Vec<i64> = (0..11).rev().map(|i| i * 10).collect();
        assert_eq!(seen[1], (5, ints(&all)), "more values than fit on the stack");
        assert_eq!(seen[2], (6, Vec::new()));
    }

    fn o(start_s: f64, first: Option<f64>, failed: u64) -> Outage {
        Outage {
            start_s,
            reconnected_s: first.map(|t| t - 0.05),
            first_success_s: first,
            connections: 1,
            failed,
            causes: [(CONNECTION_REFUSED.to_string(), failed)].into(),
        }
    }

    #[test]
    fn overlapping_connection_outages_merge_into_one_window() {
        let merged = merge_outages(
            vec![o(5.0, Some(6.0), 3), o(1.0, Some(2.0), 10), o(1.5, Some(2.5), 12)],
            10.0,
        );
        assert_eq!(merged.len(), 2, "{merged:?}");
        let first = &merged[0];
        assert_eq!((first.start_s, first.first_success_s), (1.0, Some(2.5)));
        assert_eq!((first.connections, first.failed), (2, 22));
        assert_eq!(first.causes[CONNECTION_REFUSED], 22);
        assert_eq!(first.reconnected_s, Some(2.45));
        assert_eq!(first.time_to_first_success_s(), Some(1.5));
        assert_eq!(merged[1].start_s, 5.0);
        // One connection never back: the window is open to the end and swallows later losses.
        let open = merge_outages(vec![o(1.0, None, 4), o(7.0, Some(8.0), 1)], 10.0);
        assert_eq!(open.len(), 1, "{open:?}");
        assert_eq!((open[0].first_success_s, open[0].reconnected_s), (None, None));
        assert_eq!(open[0].time_to_first_success_s(), None);
        assert!(merge_outages(Vec::new(), 1.0).is_empty());
    }

    #[test]
    fn connection_failures_are_named_by_cause() {
        let pg_starting = "error connecting to PostgreSQL at /tmp port 5: the database system is \
                           starting up (SQLSTATE 57P03)";
        assert_eq!(connect_cause(pg_starting), "57P03");
        assert_eq!(
            connect_cause("error connecting to server: Connection refused (os error 111)"),
            CONNECTION_REFUSED
        );
        assert_eq!(
            connect_cause("error connecting: No such file or directory (os error 2)"),
            CONNECTION_REFUSED
        );
        assert_eq!(connect_cause("connect timed out"), "connect timeout");
        assert_eq!(connect_cause("(SQLSTATE 5)"), "connect failed", "a SQLSTATE is 5 characters");
        assert_eq!(connect_cause("MySqlError { ERROR 1040 (HY000): Too many connections } (error 1040, SQLSTATE HY000)"), "HY000");
    }
}
