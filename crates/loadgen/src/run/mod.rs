//! A run: connect, prepare, start one worker thread per connection on its schedule, print a
//! line per interval, and add up the histograms, counts and CPU at the end.
//!
//! By concern: `plan` (what to run), `tx` (a run's transaction templates, a connection with
//! its statements prepared, one transaction), `worker` (one connection on its schedule,
//! riding through outages), `outage` and `cause` (windows without a server, and why a
//! transaction failed in one), `report` (the interval lines and the whole run's figures).

mod cause;
mod outage;
mod plan;
mod report;
mod tx;
mod worker;

pub use cause::{connect_cause, CONNECTION_LOST, CONNECTION_REFUSED};
pub use outage::{merge_outages, Outage};
pub use plan::{OnDisconnect, Plan, Protocol};
pub use report::{IntervalLine, LoadReport};
pub use tx::templates;

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use measure::hist::Log2Hist;

use crate::cost::CostProbe;
use crate::driver::Target;
use crate::schedule::{share, Schedule};
use crate::stats::{Hists, Percentiles};
use crate::Error;
use measure::rng::SplitMix64;
use tx::{prepare_conn, Prepared};
use worker::{lock, Shared, Worker, RECONNECT_FIRST};

/// Runs `plan` against `target`; `on_interval` gets each interval's line as it ends, and
/// ends the run there by answering `Break` (as the plan's duration would: not an interruption).
/// `user_stop` (the Ctrl-C flag) ends the run early, keeping what was measured.
pub fn run(
    target: &Target,
    plan: &Plan,
    user_stop: &'static AtomicBool,
    on_interval: &mut dyn FnMut(&IntervalLine) -> ControlFlow<()>,
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
    let mut ended_by_caller = false;
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
                if on_interval(&line).is_break() {
                    ended_by_caller = true;
                    stop.store(true, Ordering::Relaxed);
                }
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
    let mut woke_late = crate::stats::histogram()?;
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
        let _ = woke_late.add(&s.woke_late);
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
    let elapsed_s = if interrupted.is_some() || ended_by_caller {
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
        driver_late: Percentiles::of(&woke_late),
        latency_log2_us: log2,
        intervals,
        cost,
        cost_unavailable,
        interrupted,
        outages,
    })
}
