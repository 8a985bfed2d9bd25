//! The pinned measurement of core to core: two threads ping-pong the line, batches timed
//! from outside the loop, and the run over every pair.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use measure::stop;
use place::{pin, Arena, ArenaSpec, MemPolicy, PageSize};
use topo::Topology;

use super::{
    check, fold_classes, fold_nodes, fold_pair_lines, line_address, pair_class, visits, C2cMode,
    C2cOptions, C2cPair, C2cResult, PairSamples,
};
use crate::kernels::c2c::STOP;
use crate::timers::{cheapest_trustworthy_clock, ClockChoice};
use crate::{BenchError, PAGE};

/// Padding so each thread's flag sits alone on its lines.
#[repr(align(128))]
#[derive(Debug, Default)]
struct Padded<T>(T);

/// Warm-up sizes the batches to about this long (shorter when a visit is short).
const BATCH_TARGET: Duration = Duration::from_micros(500);
const WARMUP_ROUNDS: u64 = 2000;

/// Measures one pair on `lines`, visiting them in [`visits`] order: a pinger thread pinned to
/// `a` times batches, a ponger thread pinned to `b` answers. Each visit warms the line up
/// (2000 round trips), then times batches for its share of `duration` (at least one batch).
/// `Ok(None)` when Ctrl-C came before a batch was measured.
fn measure_pair(
    mode: C2cMode,
    lines: &[&AtomicU64],
    (a, b): (u32, u32),
    duration: Duration,
    clock: &ClockChoice,
) -> Result<Option<PairSamples>, BenchError> {
    let (ping, pong) = mode.loops();
    let order = visits(lines.len());
    if order.is_empty() {
        return Ok(None);
    }
    let per_visit = duration / order.len() as u32;
    // Every line starts at turn 0; a line visited again is reset by the pinger before the
    // ponger can arrive at it (below).
    for line in lines {
        line.store(0, Ordering::Release);
    }
    let ready = Padded(AtomicBool::new(false));
    let failed = Padded(AtomicBool::new(false));
    let stop_all = || {
        for line in lines {
            line.store(STOP, Ordering::Release);
        }
    };
    std::thread::scope(|s| {
        let ponger = s.spawn(|| {
            let pinned = pin::pin_current_thread(&[b]);
            if pinned.is_err() {
                failed.0.store(true, Ordering::Release);
            }
            ready.0.store(true, Ordering::Release);
            if pinned.is_ok() {
                // One visit per line in the pinger's order; STOP on a line ends its visit.
                for &v in &order {
                    pong(lines[v], 1);
                }
            }
            pinned
        });
        let pinger = s.spawn(|| -> Result<Option<PairSamples>, BenchError> {
            let pinned = pin::pin_current_thread(&[a]);
            while !ready.0.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
            let mut per_visit_samples = Vec::with_capacity(order.len());
            let mut rounds = 0;
            if pinned.is_ok() && !failed.0.load(Ordering::Acquire) {
                for (k, &v) in order.iter().enumerate() {
                    let line = lines[v];
                    // Warm-up: both threads spinning, the line in their caches; the first
                    // visit's sizes the batches of all.
                    let t = clock.read();
                    let mut turn = ping(line, 0, WARMUP_ROUNDS);
                    let warm =
                        clock.ticks_to_ns(clock.read().wrapping_sub(t)) / WARMUP_ROUNDS as f64;
                    if rounds == 0 {
                        let target = BATCH_TARGET.min(per_visit / 4).as_nanos() as f64;
                        rounds = ((target / warm.max(1.0)) as u64).max(100);
                    }
                    let mut samples = Vec::new();
                    let end = Instant::now() + per_visit;
                    while !stop::requested() {
                        let t = clock.read();
                        turn = ping(line, turn, rounds);
                        samples
                            .push(clock.ticks_to_ns(clock.read().wrapping_sub(t)) / rounds as f64);
                        if Instant::now() >= end {
                            break;
                        }
                    }
                    // The ponger's answer to the last round, then move it on.
                    while line.load(Ordering::Acquire) != turn {
                        std::hint::spin_loop();
                    }
                    per_visit_samples.push(samples);
                    match order.get(k + 1) {
                        Some(&next) if !stop::requested() => {
                            // The next line is reset before the ponger can see this one's STOP
                            // (release), so it never reads a STOP left by an earlier pass.
                            lines[next].store(0, Ordering::Release);
                            line.store(STOP, Ordering::Release);
                        }
                        _ => break,
                    }
                }
            }
            // Ends the ponger's current visit and every visit left.
            stop_all();
            pinned?;
            let any = per_visit_samples.iter().any(|s| !s.is_empty());
            Ok(any.then_some(PairSamples { per_visit: per_visit_samples, batch_rounds: rounds }))
        });
        let measured =
            pinger.join().unwrap_or_else(|_| Err(BenchError::Worker("c2c pinger panicked".into())));
        let pinned = ponger
            .join()
            .unwrap_or_else(|_| Err(place::PlaceError::Conflict("c2c ponger panicked".into())));
        pinned?;
        measured
    })
}

/// Runs every pair of `options.cpus` (a < b) in order; `progress` is told after each pair.
/// Ctrl-C keeps the pairs measured so far. Batches are timed with the cheapest trustworthy
/// clock (calibrated once per process).
pub fn run(
    options: &C2cOptions,
    topology: &Topology,
    progress: impl FnMut(usize, usize),
) -> Result<C2cResult, BenchError> {
    // Before the clock's calibration, so a bad option is refused at once.
    check(options, topology)?;
    run_checked(options, topology, cheapest_trustworthy_clock(), progress)
}

/// [`run`], timing the batches with `clock`.
pub fn run_timed(
    options: &C2cOptions,
    topology: &Topology,
    clock: &ClockChoice,
    progress: impl FnMut(usize, usize),
) -> Result<C2cResult, BenchError> {
    check(options, topology)?;
    run_checked(options, topology, clock, progress)
}

/// [`run_timed`] once `options` have passed [`check`].
fn run_checked(
    options: &C2cOptions,
    topology: &Topology,
    clock: &ClockChoice,
    mut progress: impl FnMut(usize, usize),
) -> Result<C2cResult, BenchError> {
    let mut cpus = options.cpus.clone();
    cpus.sort_unstable();
    cpus.dedup();
    let policy = options.line_on.map_or(MemPolicy::Inherit, |n| MemPolicy::Bind(vec![n]));
    // The lines' pages: made (and first touched) on the first CPU unless bound elsewhere.
    let first = cpus[0];
    let arena = std::thread::scope(|s| {
        s.spawn(|| -> Result<Arena, BenchError> {
            pin::pin_current_thread(&[first])?;
            let bytes = (options.lines * PAGE) as u64;
            let spec = ArenaSpec { bytes, policy: policy.clone(), page: PageSize::Base };
            Ok(Arena::new(spec, topology)?)
        })
        .join()
        .unwrap_or_else(|_| Err(BenchError::Worker("c2c line allocation panicked".into())))
    })?;
    let line_placement = arena.placement()?;
    let lines: Vec<&AtomicU64> = (0..options.lines)
        .map(|i| {
            let (page, offset) = line_address(i);
            debug_assert!(page * PAGE + offset + 8 <= arena.len());
            // SAFETY: the arena is page-aligned and `options.lines` pages long (check() bounds
            // the count), the offset is a multiple of 64 below 4096, so the word is 8-byte
            // aligned and inside the mapping; the mapping is zero-filled, lives until the end
            // of this function, and each word is only ever accessed through this atomic.
            unsafe { &*arena.as_ptr().add(page * PAGE + offset).cast::<AtomicU64>() }
        })
        .collect();
    let all: Vec<(u32, u32)> = cpus
        .iter()
        .enumerate()
        .flat_map(|(i, &a)| cpus[i + 1..].iter().map(move |&b| (a, b)))
        .collect();
    let mut pairs = Vec::with_capacity(all.len());
    for (done, &(a, b)) in all.iter().enumerate() {
        if stop::requested() {
            break;
        }
        let measured = measure_pair(options.mode, &lines, (a, b), options.duration, clock)?;
        if let Some(samples) = measured {
            if let Some((round_trip_ns, lines, line_spread)) =
                fold_pair_lines(&samples, options.lines)
            {
                let class = pair_class(topology, a, b);
                let batch_rounds = samples.batch_rounds;
                pairs.push(C2cPair {
                    a,
                    b,
                    class,
                    round_trip_ns,
                    batch_rounds,
                    lines,
                    line_spread,
                });
            }
        }
        progress(done + 1, all.len());
    }
    if pairs.is_empty() {
        return Err(BenchError::Interrupted);
    }
    // A pair cut short by Ctrl-C keeps its batches but the run is marked interrupted.
    let interrupted = pairs.len() < all.len() || stop::requested();
    Ok(C2cResult {
        mode: options.mode,
        cpus,
        line_on: options.line_on,
        line: line_placement,
        classes: fold_classes(&pairs),
        nodes: fold_nodes(&pairs, topology),
        pairs,
        interrupted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::c2c::{DEFAULT_LINES, PASSES};
    use test_tier::live;

    #[live]
    fn live_every_pair_is_measured_and_slower_than_an_l1_hit() {
        let t = Topology::detect().expect("topology");
        let cpus = place::PlacementRequest { cpus: None, policy: MemPolicy::Inherit }
            .allowed_cpus(&t)
            .expect("cpus");
        if cpus.len() < 2 {
            eprintln!("skipped: one CPU allowed");
            return;
        }
        for mode in C2cMode::ALL {
            let opts = C2cOptions {
                cpus: cpus.clone(),
                mode,
                line_on: None,
                duration: Duration::from_millis(50),
                lines: DEFAULT_LINES,
            };
            let r = run(&opts, &t, |_, _| {}).expect("c2c run");
            let n = cpus.len();
            assert_eq!(r.pairs.len(), n * (n - 1) / 2, "{mode:?}: every pair");
            assert!(r.pairs.iter().all(|p| p.a != p.b), "no diagonal");
            for p in &r.pairs {
                let s = &p.round_trip_ns;
                assert!(s.median.is_finite() && s.p99.is_finite());
                // An L1 hit is a few ns; a hand-off across cores is tens at least.
                assert!(s.median > 5.0, "{mode:?} {}-{}: {} ns", p.a, p.b, s.median);
                assert!(s.median < 1e6, "{mode:?} {}-{}: {} ns", p.a, p.b, s.median);
            }
            assert_eq!(r.line.total_pages(), DEFAULT_LINES as u64, "one page per line");
            for p in &r.pairs {
                assert_eq!(p.lines.len(), DEFAULT_LINES, "{mode:?}: every line measured");
                for l in &p.lines {
                    assert_eq!(l.pass_medians_ns.len(), PASSES, "{mode:?}: {l:?}");
                    assert!(l.median_ns > 5.0 && l.median_ns < 1e6, "{mode:?}: {l:?}");
                }
                let spread = p.line_spread.as_ref().expect("spread over 8 lines");
                assert!(spread.min_ns <= spread.median_ns && spread.median_ns <= spread.max_ns);
                assert!(spread.noise_ns.is_some());
            }
        }
    }
}
