//! The cache-line ping-pong: two threads hand one 8-byte word back and forth. The word counts
//! turns: the pinger owns even turns, the ponger odd ones; each waits until the word holds its
//! turn and writes the next. The loops hold nothing but the hand-off; callers time batches of
//! round trips from outside. [`STOP`] in the word tells the ponger to return.

use std::sync::atomic::{AtomicU64, Ordering};

/// Written by the pinger when the run is over; never reached by counting.
pub const STOP: u64 = u64::MAX;

/// How a thread waits for its turn and hands the line over.
pub trait HandOff {
    /// Waits until `line` holds `turn`, then writes `turn + 1`. `false` when it saw [`STOP`].
    fn take(line: &AtomicU64, turn: u64) -> bool;
}

/// Polls with plain loads, hands off with a plain store (multichase `pingpong -u`).
#[derive(Debug)]
pub struct Read;
/// Polls with a locked read-modify-write (`fetch_add(0)`), so every poll takes the line
/// exclusive, as a test-and-set spin does; hands off with a plain store.
#[derive(Debug)]
pub struct Write;
/// Tries a compare-and-swap from its turn to the next until it succeeds, no polling loads
/// (multichase `pingpong -l`).
#[derive(Debug)]
pub struct Cas;
/// Polls with plain loads, hands off with an atomic exchange.
#[derive(Debug)]
pub struct Xchg;

impl HandOff for Read {
    #[inline(always)]
    fn take(line: &AtomicU64, turn: u64) -> bool {
        loop {
            let v = line.load(Ordering::Acquire);
            if v == turn {
                line.store(turn + 1, Ordering::Release);
                return true;
            }
            if v == STOP {
                return false;
            }
        }
    }
}

impl HandOff for Write {
    #[inline(always)]
    fn take(line: &AtomicU64, turn: u64) -> bool {
        loop {
            let v = line.fetch_add(0, Ordering::AcqRel);
            if v == turn {
                line.store(turn + 1, Ordering::Release);
                return true;
            }
            if v == STOP {
                return false;
            }
        }
    }
}

impl HandOff for Cas {
    #[inline(always)]
    fn take(line: &AtomicU64, turn: u64) -> bool {
        loop {
            match line.compare_exchange(turn, turn + 1, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return true,
                Err(STOP) => return false,
                Err(_) => {}
            }
        }
    }
}

impl HandOff for Xchg {
    #[inline(always)]
    fn take(line: &AtomicU64, turn: u64) -> bool {
        loop {
            let v = line.load(Ordering::Acquire);
            if v == turn {
                line.swap(turn + 1, Ordering::AcqRel);
                return true;
            }
            if v == STOP {
                return false;
            }
        }
    }
}

/// The pinger's batch: `rounds` round trips starting at (even) `turn`; returns the next turn.
#[inline(always)]
pub fn ping<H: HandOff>(line: &AtomicU64, mut turn: u64, rounds: u64) -> u64 {
    for _ in 0..rounds {
        H::take(line, turn);
        turn += 2;
    }
    turn
}

/// The ponger: answers every even turn from (odd) `turn` on until it sees [`STOP`].
#[inline(always)]
pub fn pong<H: HandOff>(line: &AtomicU64, mut turn: u64) {
    while H::take(line, turn) {
        turn += 2;
    }
}

/// A pinger's batch of one mode, as [`ping`].
pub type PingFn = fn(&AtomicU64, u64, u64) -> u64;
/// A ponger of one mode, as [`pong`].
pub type PongFn = fn(&AtomicU64, u64);

macro_rules! mode_loops {
    ($($ping:ident, $pong:ident, $mode:ty;)*) => {$(
        /// [`ping`] for this mode, kept out of line under its own name so its code can be
        /// read in the binary (`objdump -d`).
        #[inline(never)]
        pub fn $ping(line: &AtomicU64, turn: u64, rounds: u64) -> u64 {
            ping::<$mode>(line, turn, rounds)
        }
        /// [`pong`] for this mode, out of line under its own name.
        #[inline(never)]
        pub fn $pong(line: &AtomicU64, turn: u64) {
            pong::<$mode>(line, turn)
        }
    )*};
}

mode_loops! {
    ping_read, pong_read, Read;
    ping_write, pong_write, Write;
    ping_cas, pong_cas, Cas;
    ping_xchg, pong_xchg, Xchg;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair<H: HandOff>() {
        let line = AtomicU64::new(0);
        std::thread::scope(|s| {
            s.spawn(|| pong::<H>(&line, 1));
            let next = ping::<H>(&line, 0, 1000);
            assert_eq!(next, 2000);
            // Wait for the last answer, then stop the ponger.
            while line.load(Ordering::Acquire) != next {
                std::hint::spin_loop();
            }
            line.store(STOP, Ordering::Release);
        });
    }

    #[test]
    fn every_mode_completes_its_round_trips_and_stops() {
        pair::<Read>();
        pair::<Write>();
        pair::<Cas>();
        pair::<Xchg>();
    }
}
