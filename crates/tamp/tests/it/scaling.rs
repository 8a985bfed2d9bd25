//! The scaling logic, with a codec that sleeps per block (no CPU, so N workers overlap N sleeps
//! whatever the CPU count) and a reader that sleeps per read. The real codec's speedups are never
//! asserted: they depend on the machine.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use crate::common;

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use common::NO_STOP;
use tamp::codec::Sleep;
use tamp::scale::{self, ScalePlan};
use tamp::{compress_reader, Output, Verdict};

const BLOCK: usize = 4096;

fn run(threads: usize, data: &[u8], per_block: Duration) -> tamp::RunResult {
    compress_reader(
        data,
        Path::new("(memory)"),
        &Output::Discard,
        &Sleep { per_block },
        threads,
        BLOCK,
        &NO_STOP,
    )
    .unwrap()
}

#[test]
fn four_sleeping_workers_give_at_least_three_times_one() {
    let data = vec![7u8; 40 * BLOCK];
    let one = run(1, &data, Duration::from_millis(10));
    let four = run(4, &data, Duration::from_millis(10));
    assert_eq!(one.blocks, 40);
    assert_eq!(four.bytes_in, data.len() as u64);
    let speedup = four.mb_per_s / one.mb_per_s;
    assert!(
        speedup >= 3.0,
        "4 workers: {speedup:.2}× one worker ({} vs {} MB/s)",
        four.mb_per_s,
        one.mb_per_s
    );
    // One sleeping worker is the limit: busy nearly all the time, reader and writer idle.
    let w0 = &one.thread_busy[1];
    assert_eq!(w0.role, "worker 0");
    assert!(w0.busy_share > 0.9 && w0.cpu_share < 0.5, "{w0:?}");
    assert!(one.thread_busy[0].busy_share < 0.5, "reader {:?}", one.thread_busy[0]);
}

/// Gives `chunk` bytes per read after sleeping `delay`: a slow disk, as the reader sees it.
struct SlowReader {
    left: usize,
    chunk: usize,
    delay: Duration,
}

impl Read for SlowReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        std::thread::sleep(self.delay);
        let n = buf.len().min(self.chunk).min(self.left);
        buf[..n].fill(b'x');
        self.left -= n;
        Ok(n)
    }
}

#[test]
fn a_throttled_reader_is_reader_bound() {
    let r = SlowReader { left: 30 * BLOCK, chunk: BLOCK, delay: Duration::from_millis(5) };
    let res = compress_reader(
        r,
        Path::new("(slow)"),
        &Output::Discard,
        &Sleep { per_block: Duration::ZERO },
        4,
        BLOCK,
        &NO_STOP,
    )
    .unwrap();
    assert_eq!(res.verdict, Verdict::ReaderBound, "{}", tamp::render::run(&res));
    assert!(res.thread_busy[0].busy_share >= 0.9, "{:?}", res.thread_busy[0]);
    assert!(res.verdict_reason.contains("reader"), "{}", res.verdict_reason);
}

#[test]
fn scale_steps_with_the_sleeping_codec() {
    let data = vec![1u8; 24 * BLOCK];
    let plan = ScalePlan { units: vec![1, 2], threads: vec![1, 4], block_size: BLOCK, rounds: 1 };
    let r =
        scale::run(&data, &Sleep { per_block: Duration::from_millis(8) }, &plan, &NO_STOP).unwrap();
    assert_eq!(r.steps.len(), 4);
    assert!(!r.interrupted);
    let s = |u: usize, t: usize| r.steps.iter().find(|x| x.units == u && x.threads == t).unwrap();
    assert_eq!(s(2, 4).bytes, 2 * data.len() as u64);
    assert!(s(1, 4).mb_per_s >= 3.0 * s(1, 1).mb_per_s, "{}", tamp::render::scale(&r));
    // Two units of one worker: two sleeps at once.
    assert!(s(2, 1).mb_per_s >= 1.6 * s(1, 1).mb_per_s, "{}", tamp::render::scale(&r));
    assert_eq!(r.summary.single_thread_mb_s, Some(s(1, 1).mb_per_s));
    assert!(s(1, 1).machine.is_some(), "/proc/stat was read");
    let text = tamp::render::scale(&r);
    assert!(text.contains("units") && text.contains("One thread:"), "{text}");
    let j = serde_json::to_value(&r).unwrap();
    assert_eq!(j["steps"].as_array().unwrap().len(), 4);
}
