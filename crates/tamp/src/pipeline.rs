//! The engine: one reader thread, N worker threads, one writer thread restoring order, and a fixed
//! pool of slots (an input and an output buffer each) circulating between them.
//!
//! Memory is bounded by construction: the number of slots follows the workers and the unit size
//! ([`slots_for`]), every queue can hold all of them, so no send ever blocks and nothing queues
//! without bound. Threads only wait in `recv`, and each wait is timed: a thread's *busy* time is
//! its lifetime minus its waits.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::clock::thread_cpu;
use crate::queue::{queue, Receiver};
use crate::TampError;

/// Produces the units of work, in order, on the reader thread.
pub(crate) trait Source: Send {
    /// What the worker and the writer need to know about one unit.
    type Meta: Send;
    /// Puts the next unit in `buf` (growing it if needed; only its first `len` bytes count) and
    /// returns its meta and `len`, or `None` at the end of the input.
    fn fill(&mut self, buf: &mut Vec<u8>) -> Result<Option<(Self::Meta, usize)>, TampError>;
    /// Bytes consumed from the input so far.
    fn bytes_read(&self) -> u64;
}

/// Turns one unit into its output, on a worker thread. One per worker (holds its context).
pub(crate) trait Worker<M>: Send {
    /// Writes the output of `input` into `out` (growing it if needed) and returns its length.
    fn work(&mut self, meta: &M, input: &[u8], out: &mut Vec<u8>) -> Result<usize, TampError>;
}

/// Consumes the outputs in input order, on the writer thread.
pub(crate) trait Sink<M>: Send {
    /// Called once, before the first unit.
    fn start(&mut self) -> Result<(), TampError>;
    /// One unit's output, in order.
    fn put(&mut self, meta: &M, data: &[u8]) -> Result<(), TampError>;
    /// Called once after the last unit when nothing failed and no stop was asked for.
    fn finish(&mut self) -> Result<(), TampError>;
}

/// Where one thread's time went.
#[derive(Debug, Clone)]
pub(crate) struct ThreadTimes {
    pub role: String,
    pub wall: Duration,
    pub wait: Duration,
    pub cpu: Duration,
}

/// What a pipeline run did.
#[derive(Debug)]
pub(crate) struct Outcome<K> {
    pub threads: Vec<ThreadTimes>,
    pub units: u64,
    pub interrupted: bool,
    pub bytes_in: u64,
    pub sink: K,
}

struct Slot<M> {
    seq: u64,
    meta: Option<M>,
    in_len: usize,
    out_len: usize,
    input: Vec<u8>,
    output: Vec<u8>,
}

/// Grows `buf` to hold `len` bytes from a 64-byte boundary and returns where that boundary is.
/// Buffers the kernel reads into start there: its copy into a destination 16 bytes off a line
/// boundary (where a heap block starts) ran at a third of the speed of the same copy into an
/// aligned one (tmpfs, AMD EPYC guest: 0.34–0.40 against 0.10–0.12 CPU-s per 512 MiB).
pub(crate) fn line_aligned(buf: &mut Vec<u8>, len: usize) -> usize {
    if buf.len() < len + 64 {
        buf.resize(len + 64, 0);
    }
    // Always possible for bytes; the bound only keeps the window inside `buf`.
    buf.as_ptr().align_offset(64).min(63)
}

/// Times the waits of one thread.
struct Stopwatch {
    start: Instant,
    cpu0: Duration,
    wait: Duration,
}

impl Stopwatch {
    fn new() -> Self {
        Self { start: Instant::now(), cpu0: thread_cpu(), wait: Duration::ZERO }
    }
    fn recv<T>(&mut self, rx: &Receiver<T>, gather: usize) -> Option<T> {
        let t = Instant::now();
        let r = rx.recv_gathered(gather);
        self.wait += t.elapsed();
        r
    }
    fn done(self, role: String) -> ThreadTimes {
        ThreadTimes {
            role,
            wall: self.start.elapsed(),
            wait: self.wait,
            cpu: thread_cpu().saturating_sub(self.cpu0),
        }
    }
}

/// Keeps the first error; later ones are consequences of it.
struct Failure {
    flag: AtomicBool,
    first: Mutex<Option<TampError>>,
}

impl Failure {
    fn set(&self, e: TampError) {
        if let Ok(mut g) = self.first.lock() {
            if g.is_none() {
                *g = Some(e);
            }
        }
        self.flag.store(true, Ordering::SeqCst);
    }
    fn is_set(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }
}

/// Input bytes queued per worker when units are small. A worker whose block is late (pre-empted
/// by the reader or the writer, which share the CPUs) holds up the in-order writer, and the
/// other workers keep going only while free slots last: with 2 slots per worker, lz4's 256 KiB
/// blocks kept two workers about 80% busy on 2 vCPUs, with 16 the median -t 2 ÷ -t 1 rose from
/// 1.52 to 1.61 (6 paired rounds, 512 MiB on tmpfs, 2-vCPU EPYC VM, load 0.3–1.1).
const QUEUED_PER_WORKER: usize = 4 << 20;

/// Input bytes queued in all, so a machine with hundreds of CPUs does not hold gigabytes.
const QUEUED_AT_MOST: usize = 256 << 20;

/// Slots for `workers` workers on units of about `unit` bytes (`None`: not known before
/// reading). Each slot holds an input and an output buffer of about `unit` bytes; a worker gets
/// enough to queue [`QUEUED_PER_WORKER`] (less when [`QUEUED_AT_MOST`] is shared by many), at
/// least 2 and at most 16; one more each for the reader and the writer.
fn slots_for(workers: usize, unit: Option<usize>) -> usize {
    let workers = workers.max(1);
    let queued = QUEUED_PER_WORKER.min(QUEUED_AT_MOST / workers);
    let per_worker = unit.map_or(2, |u| (queued / u.max(1)).clamp(2, 16));
    per_worker * workers + 2
}

/// Runs `source` → `workers` × `make_worker()` → `sink` until the source ends, an error happens or
/// `stop` is set; `unit` is the size of a unit of work when it is known before reading (it sets
/// how many slots circulate, [`slots_for`]). Returns the first error, or the outcome (with the sink, so the caller can
/// commit or discard its output).
pub(crate) fn run<S, W, K, F>(
    mut source: S,
    make_worker: F,
    mut sink: K,
    workers: usize,
    unit: Option<usize>,
    stop: &AtomicBool,
) -> Result<Outcome<K>, TampError>
where
    S: Source,
    W: Worker<S::Meta>,
    K: Sink<S::Meta>,
    F: Fn() -> Result<W, TampError> + Sync,
{
    let workers = workers.max(1);
    let slots = slots_for(workers, unit);
    let (free_tx, free_rx) = queue::<Slot<S::Meta>>(slots);
    let (work_tx, work_rx) = queue::<Slot<S::Meta>>(slots);
    let (done_tx, done_rx) = queue::<Slot<S::Meta>>(slots);
    // The reader, out of free slots, sleeps until a quarter of them are back: it fills one in a
    // moment (a position, for a file the workers read), and a wake-up per block cost it more
    // CPU than that. Every slot comes back once the blocks in flight are written.
    let refill = (slots / 4).max(1);
    for _ in 0..slots {
        let slot = Slot {
            seq: 0,
            meta: None,
            in_len: 0,
            out_len: 0,
            input: Vec::new(),
            output: Vec::new(),
        };
        // Cannot fail: the channel holds `slots` items and its receiver is alive.
        let _ = free_tx.send(slot);
    }
    let failure = Failure { flag: AtomicBool::new(false), first: Mutex::new(None) };
    let read_units = AtomicU64::new(0);
    let was_interrupted = AtomicBool::new(false);

    let (reader, worker_times, writer) = std::thread::scope(|s| {
        let failure = &failure;
        let (read_units, was_interrupted) = (&read_units, &was_interrupted);
        let make_worker = &make_worker;

        let reader = s.spawn({
            let free_rx = free_rx.clone();
            move || {
                let mut sw = Stopwatch::new();
                let mut seq = 0u64;
                let mut interrupted = false;
                loop {
                    if failure.is_set() {
                        break;
                    }
                    if stop.load(Ordering::Relaxed) {
                        interrupted = true;
                        break;
                    }
                    let Some(mut slot) = sw.recv(&free_rx, refill) else { break };
                    let filled = catch_unwind(AssertUnwindSafe(|| source.fill(&mut slot.input)))
                        .unwrap_or(Err(TampError::Panicked("reader")));
                    match filled {
                        Ok(Some((meta, len))) => {
                            slot.seq = seq;
                            slot.meta = Some(meta);
                            slot.in_len = len;
                            seq += 1;
                            // Never blocks (capacity = all slots); fails only if workers are gone.
                            if work_tx.send(slot).is_err() {
                                break;
                            }
                        }
                        Ok(None) => break,
                        // A silent input gave up on the stop request.
                        Err(e) if e.is_stop() => {
                            interrupted = true;
                            break;
                        }
                        Err(e) => {
                            failure.set(e);
                            break;
                        }
                    }
                }
                read_units.store(seq, Ordering::SeqCst);
                was_interrupted.store(interrupted, Ordering::SeqCst);
                drop(work_tx);
                (sw.done("reader".into()), seq, interrupted, source.bytes_read())
            }
        });

        let mut handles = Vec::with_capacity(workers);
        for i in 0..workers {
            let work_rx = work_rx.clone();
            let done_tx = done_tx.clone();
            let free_tx = free_tx.clone();
            handles.push(s.spawn(move || {
                let mut sw = Stopwatch::new();
                let mut worker = match make_worker() {
                    Ok(w) => Some(w),
                    Err(e) => {
                        failure.set(e);
                        None
                    }
                };
                while let Some(mut slot) = sw.recv(&work_rx, 1) {
                    let (Some(w), Some(meta), false) =
                        (worker.as_mut(), slot.meta.as_ref(), failure.is_set())
                    else {
                        // After a failure the slot only goes back to the pool, so the reader
                        // (waiting for one) sees the failure and ends.
                        let _ = free_tx.send(slot);
                        continue;
                    };
                    let input = slot.input.get(..slot.in_len).unwrap_or(&[]);
                    // A panicking codec must not strand its slot (the reader would wait forever).
                    let r =
                        catch_unwind(AssertUnwindSafe(|| w.work(meta, input, &mut slot.output)))
                            .unwrap_or(Err(TampError::Panicked("worker")));
                    match r {
                        Ok(n) => {
                            slot.out_len = n;
                            let _ = done_tx.send(slot);
                        }
                        Err(e) => {
                            failure.set(e);
                            let _ = free_tx.send(slot);
                        }
                    }
                }
                sw.done(format!("worker {i}"))
            }));
        }
        drop(done_tx);

        let writer = s.spawn({
            let free_tx = free_tx.clone();
            let sink = &mut sink;
            move || {
                let mut sw = Stopwatch::new();
                // Slots that arrived early, at seq % slots: every seq in flight lies in
                // [next, next + slots), so they never collide (and nothing is allocated per block).
                let mut pending: Vec<Option<Slot<S::Meta>>> = (0..slots).map(|_| None).collect();
                let at = |seq: u64| (seq % slots as u64) as usize;
                let mut next = 0u64;
                if let Err(e) = sink.start() {
                    failure.set(e);
                }
                while let Some(slot) = sw.recv(&done_rx, 1) {
                    if failure.is_set() {
                        let _ = free_tx.send(slot);
                        for s in pending.iter_mut().filter_map(Option::take) {
                            let _ = free_tx.send(s);
                        }
                        continue;
                    }
                    let i = at(slot.seq);
                    debug_assert!(pending[i].is_none(), "two blocks in flight at one ring index");
                    pending[i] = Some(slot);
                    while let Some(slot) = pending[at(next)].take() {
                        let data = slot.output.get(..slot.out_len).unwrap_or(&[]);
                        if let Some(meta) = slot.meta.as_ref() {
                            let put = catch_unwind(AssertUnwindSafe(|| sink.put(meta, data)))
                                .unwrap_or(Err(TampError::Panicked("writer")));
                            if let Err(e) = put {
                                failure.set(e);
                            }
                        }
                        let _ = free_tx.send(slot);
                        next += 1;
                    }
                }
                // The reader has ended (all senders are gone): finish only a complete, wanted run.
                if !failure.is_set()
                    && !was_interrupted.load(Ordering::SeqCst)
                    && next == read_units.load(Ordering::SeqCst)
                {
                    if let Err(e) = sink.finish() {
                        failure.set(e);
                    }
                }
                (sw.done("writer".into()), next)
            }
        });

        let reader = reader.join();
        let worker_times: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        let writer = writer.join();
        (reader, worker_times, writer)
    });

    let (reader_times, units, interrupted, bytes_in) =
        reader.map_err(|_| TampError::Panicked("reader"))?;
    let mut threads = vec![reader_times];
    for w in worker_times {
        threads.push(w.map_err(|_| TampError::Panicked("worker"))?);
    }
    let (writer_times, written) = writer.map_err(|_| TampError::Panicked("writer"))?;
    if let Ok(mut g) = failure.first.lock() {
        if let Some(e) = g.take() {
            return Err(e);
        }
    }
    if written != units {
        return Err(TampError::Panicked("writer (blocks lost)"));
    }
    threads.push(writer_times);
    Ok(Outcome { threads, units, interrupted, bytes_in, sink })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_units_queue_deeper_and_large_or_unknown_ones_keep_two_slots_per_worker() {
        // lz4's 256 KiB blocks: 16 per worker; zstd's 2 MiB frames: 2; unknown: 2.
        assert_eq!(slots_for(2, Some(256 << 10)), 16 * 2 + 2);
        assert_eq!(slots_for(2, Some(2 << 20)), 2 * 2 + 2);
        assert_eq!(slots_for(2, None), 2 * 2 + 2);
        // Tiny units stop at 16 per worker, huge ones at 2; zero workers count as one.
        assert_eq!(slots_for(3, Some(1)), 16 * 3 + 2);
        assert_eq!(slots_for(3, Some(64 << 20)), 2 * 3 + 2);
        assert_eq!(slots_for(0, Some(0)), 16 + 2);
    }

    #[test]
    fn queued_input_stays_under_its_total_bound_on_many_cpus() {
        for workers in [1, 2, 8, 64, 256, 1024] {
            for unit in [4 << 10, 64 << 10, 256 << 10, 1 << 20] {
                let per_worker = (slots_for(workers, Some(unit)) - 2) / workers;
                // Above the bound only at the floor of 2 slots per worker.
                assert!(
                    per_worker == 2 || per_worker * workers * unit <= QUEUED_AT_MOST,
                    "{workers} workers × {per_worker} slots × {unit} B"
                );
                assert!((2..=16).contains(&per_worker));
            }
        }
    }
}
