//! One connection's worker: its thread sleeps to each intended start, runs the transaction,
//! records it in what it shares with the main thread, and rides through outages
//! (reconnecting with bounded backoff) or ends the run, as the plan says.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use measure::hist::Log2Hist;

use super::tx::{prepare_conn, run_tx, Prepared};
use super::{connect_cause, OnDisconnect, Outage, Plan, CONNECTION_LOST};
use crate::conn::DbError;
use crate::driver::Target;
use crate::schedule::Schedule;
use crate::stats::Hists;
use crate::workload::TxTemplate;
use crate::Error;
use measure::rng::SplitMix64;

/// First wait between reconnection attempts; doubled after each failure up to
/// [`RECONNECT_MAX`].
pub(super) const RECONNECT_FIRST: Duration = Duration::from_millis(10);
const RECONNECT_MAX: Duration = Duration::from_secs(1);

/// What a worker shares with the main thread.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) interval: Hists,
    pub(super) total: Hists,
    pub(super) log2: Log2Hist,
    pub(super) scheduled: u64,
    pub(super) completed: u64,
    pub(super) failed: u64,
    pub(super) late: u64,
    pub(super) skipped: u64,
    pub(super) retries: u64,
    pub(super) unstarted: u64,
    pub(super) interval_counts: [u64; 4], // completed, late, skipped, errors
    pub(super) errors: BTreeMap<String, u64>,
    pub(super) last_done_ns: u64,
    pub(super) gone: Option<String>,
    pub(super) outages: Vec<Outage>,
    /// This connection is lost right now.
    pub(super) down: bool,
    /// The driver's own lateness: for each transaction whose connection was waiting for its
    /// time, how long after it the thread woke and sent (timer and scheduler, not the server).
    pub(super) woke_late: Histogram<u64>,
}

impl Shared {
    pub(super) fn new() -> Result<Self, Error> {
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
            woke_late: crate::stats::histogram()?,
        })
    }
}

pub(super) struct Worker {
    /// `None` while the connection is lost and not open again.
    pub(super) prepared: Option<Prepared>,
    pub(super) target: Target,
    pub(super) templates: Arc<Vec<TxTemplate>>,
    pub(super) schedule: Schedule,
    pub(super) limit: Option<u64>,
    pub(super) end_ns: Option<u64>,
    pub(super) t0: Instant,
    pub(super) plan: Plan,
    pub(super) rng: SplitMix64,
    pub(super) shared: Arc<Mutex<Shared>>,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) user_stop: &'static AtomicBool,
    pub(super) done: Arc<AtomicUsize>,
    /// The outage this connection is in, and when to try to reconnect next.
    pub(super) outage: Option<Outage>,
    pub(super) next_attempt: Instant,
    pub(super) backoff: Duration,
    /// Why the last reconnection attempt failed (what transactions due now fail with).
    pub(super) cause: String,
}

pub(super) fn lock(m: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
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
    pub(super) fn run(mut self) -> Option<Prepared> {
        set_timer_slack_ns(1);
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
            // meanwhile when the connection is lost. Whether it waited at all tells the
            // driver's own lateness (it woke late) from queueing (it was still busy).
            let mut waited = false;
            loop {
                if self.stopped() {
                    return self.finish();
                }
                self.try_reconnect();
                let now = Instant::now();
                if now >= due {
                    break;
                }
                waited = true;
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
            {
                let mut s = lock(&self.shared);
                s.scheduled += 1;
                if waited {
                    s.woke_late.saturating_record(lag_ns.clamp(1, crate::stats::MAX_NS));
                }
            }
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

/// Lets this thread's sleeps end within `ns` of their time. The kernel's default slack for a
/// thread is 50 µs (wake-ups batched to save power): a driver that must send on schedule would
/// add up to that to every transaction it sends after waiting. A failure leaves the default.
fn set_timer_slack_ns(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes its value by argument and changes only the calling thread;
    // no pointer is passed.
    let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}
