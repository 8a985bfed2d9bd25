//! The run loop the CLI calls: a throughput line every interval, slow queries as they
//! complete, and the report at the end.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::report::{
    cache_label, render_interval, render_slow, render_started, CacheStats, EndReason, Interval,
    Latency, OffCpu, Preemptor, Report, SlowQuery, Stamp,
};
use crate::server::{is_alive, ServerKind};
use crate::tracer::{Hist, Totals, Tracer};

/// How long to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOptions {
    /// Time between throughput lines (the DTrace querystat script printed one every 3 s).
    pub interval: Duration,
    /// Stop after this many intervals (`None`: until the stop flag or the server exits).
    pub count: Option<u64>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { interval: Duration::from_secs(3), count: None }
    }
}

/// How often the loop looks at the stop flag, the server and slow-query events.
const TICK: Duration = Duration::from_millis(100);

/// Traces until `count` intervals pass, `stop` is set (Ctrl-C), or the server exits, writing
/// "Tracing started at", one throughput line per interval and `--slower` lines to `out` as
/// they happen; returns the report (render it with [`crate::render_report`] or serialize it).
/// A server that exits mid-run is not an error: the report says so and holds what was
/// measured until then.
pub fn run(
    tracer: &Tracer,
    options: &RunOptions,
    stop: &AtomicBool,
    out: &mut dyn Write,
) -> Result<Report> {
    let by = tracer.by();
    let started = Stamp::now();
    let t0 = Instant::now();
    out.write_all(render_started(&started).as_bytes()).map_err(Error::Output)?;
    let interval = options.interval.max(Duration::from_millis(10));
    let mut intervals = Vec::new();
    let mut slow = Vec::new();
    let first = tracer.totals()?;
    let (mut last_completed, mut last_sum_ns) =
        (first.completed(), first.sum_ns[Hist::All as usize]);
    let mut last_tick = t0;
    let end = 'run: loop {
        let due = last_tick + interval;
        loop {
            if stop.load(Ordering::Relaxed) {
                break 'run EndReason::Stopped;
            }
            if !is_alive(tracer.server().pid) {
                break 'run EndReason::ServerExited;
            }
            let now = Instant::now();
            if now >= due {
                break;
            }
            for q in tracer.poll_slow(TICK.min(due - now))? {
                out.write_all(render_slow(&q, by).as_bytes()).map_err(Error::Output)?;
                slow.push(q);
            }
        }
        let now = Instant::now();
        let totals = tracer.totals()?;
        let (completed, sum_ns) = (totals.completed(), totals.sum_ns[Hist::All as usize]);
        let elapsed = now.duration_since(last_tick).as_secs_f64();
        let i = Interval {
            at: Stamp::now(),
            completed: completed - last_completed,
            per_sec: (completed - last_completed) as f64 / elapsed.max(1e-9),
            mean_us: interval_mean_us(
                completed - last_completed,
                sum_ns.saturating_sub(last_sum_ns),
            ),
        };
        out.write_all(render_interval(&i, by).as_bytes()).map_err(Error::Output)?;
        intervals.push(i);
        (last_completed, last_sum_ns) = (completed, sum_ns);
        last_tick = now;
        if options.count.is_some_and(|c| intervals.len() as u64 >= c) {
            break EndReason::Count;
        }
    };
    // Events already in the ring buffer.
    slow.extend(tracer.poll_slow(Duration::ZERO)?);
    let totals = tracer.totals()?;
    let preemptors = tracer.preemptors()?;
    Ok(build_report(tracer, &totals, preemptors, started, t0.elapsed(), end, intervals, slow))
}

/// The mean latency, µs, of `completed` queries whose latencies sum to `sum_ns` (the kernel's
/// counters' growth over one interval); `None` when none completed.
fn interval_mean_us(completed: u64, sum_ns: u64) -> Option<f64> {
    (completed > 0).then(|| sum_ns as f64 / completed as f64 / 1e3)
}

#[allow(clippy::too_many_arguments)]
fn build_report(
    tracer: &Tracer,
    t: &Totals,
    preemptors: Vec<Preemptor>,
    started: Stamp,
    duration: Duration,
    end: EndReason,
    intervals: Vec<Interval>,
    slow: Vec<SlowQuery>,
) -> Report {
    let lat = |h: Hist| {
        let i = h as usize;
        Latency::new(t.count[i], t.sum_ns[i], t.hist[i].clone())
    };
    let server = tracer.server().clone();
    let pg = server.kind == ServerKind::Postgres;
    Report {
        by: tracer.by(),
        started,
        ended: Stamp::now(),
        duration_s: duration.as_secs_f64(),
        end,
        intervals,
        all: lat(Hist::All),
        cache: CacheStats {
            label: cache_label(server.kind).to_string(),
            hit: lat(Hist::Hit),
            miss: lat(Hist::Miss),
            buffer_hits: tracer.counts_buffer_hits().then_some(t.buffer_hits),
            buffer_reads: pg.then_some(t.buffer_reads),
        },
        preempted: lat(Hist::Preempted),
        not_preempted: lat(Hist::NotPreempted),
        off_cpu: OffCpu {
            run_queue: lat(Hist::OffRunQueue),
            io_wait: lat(Hist::OffIo),
            sleep: lat(Hist::OffSleep),
        },
        preemptions: t.preemptions,
        involuntary_switches: t.involuntary,
        preemptors,
        slow,
        slow_dropped: t.slow_dropped,
        server,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_s_mean_is_its_growth_in_sum_over_its_growth_in_count() {
        // 400 queries that took 124 ms together: 310 µs each.
        assert_eq!(interval_mean_us(400, 124_000_000), Some(310.0));
        assert_eq!(interval_mean_us(0, 0), None);
    }
}
