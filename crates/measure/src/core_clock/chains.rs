//! The two dependent-instruction chains, timed: the add chain and the multiply chain in
//! assembly, the trials that turn them into clocks, and busy work of a number of cycles.

use std::time::{Duration, Instant};

use super::{core_clock, AGREEMENT, MUL_LATENCY};

// For the links in the docs to the clock's fallback.
#[cfg(doc)]
use super::CoreClock;

/// Instructions per loop iteration in both chains.
const STEPS: u64 = 8;

/// `iterations` × 8 dependent register-register adds, each operand the other's last result.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn add_chain(iterations: u64) {
    if iterations == 0 {
        return;
    }
    // SAFETY: register arithmetic on the three named registers; no memory, no stack.
    unsafe {
        std::arch::asm!(
            "2:",
            "add {x}, {y}", "add {y}, {x}", "add {x}, {y}", "add {y}, {x}",
            "add {x}, {y}", "add {y}, {x}", "add {x}, {y}", "add {y}, {x}",
            "dec {n}",
            "jnz 2b",
            x = inout(reg) std::hint::black_box(1u64) => _,
            y = inout(reg) std::hint::black_box(1u64) => _,
            n = inout(reg) iterations => _,
            options(nomem, nostack),
        );
    }
}

/// `iterations` × 8 dependent 64-bit multiplies, each operand the other's last result.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn mul_chain(iterations: u64) {
    if iterations == 0 {
        return;
    }
    // SAFETY: register arithmetic on the three named registers; no memory, no stack.
    unsafe {
        std::arch::asm!(
            "2:",
            "imul {x}, {y}", "imul {y}, {x}", "imul {x}, {y}", "imul {y}, {x}",
            "imul {x}, {y}", "imul {y}, {x}", "imul {x}, {y}", "imul {y}, {x}",
            "dec {n}",
            "jnz 2b",
            x = inout(reg) std::hint::black_box(3u64) => _,
            y = inout(reg) std::hint::black_box(5u64) => _,
            n = inout(reg) iterations => _,
            options(nomem, nostack),
        );
    }
}

/// `iterations` × 8 dependent register-register adds, each operand the other's last result.
#[cfg(target_arch = "aarch64")]
#[inline(never)]
fn add_chain(iterations: u64) {
    if iterations == 0 {
        return;
    }
    // SAFETY: register arithmetic on the three named registers; no memory, no stack.
    unsafe {
        std::arch::asm!(
            "2:",
            "add {x}, {x}, {y}", "add {y}, {y}, {x}", "add {x}, {x}, {y}", "add {y}, {y}, {x}",
            "add {x}, {x}, {y}", "add {y}, {y}, {x}", "add {x}, {x}, {y}", "add {y}, {y}, {x}",
            "subs {n}, {n}, 1",
            "b.ne 2b",
            x = inout(reg) std::hint::black_box(1u64) => _,
            y = inout(reg) std::hint::black_box(1u64) => _,
            n = inout(reg) iterations => _,
            options(nomem, nostack),
        );
    }
}

/// `iterations` × 8 dependent 32-bit multiplies, each operand the other's last result.
#[cfg(target_arch = "aarch64")]
#[inline(never)]
fn mul_chain(iterations: u64) {
    if iterations == 0 {
        return;
    }
    // SAFETY: register arithmetic on the three named registers; no memory, no stack.
    unsafe {
        std::arch::asm!(
            "2:",
            "mul {x:w}, {x:w}, {y:w}", "mul {y:w}, {y:w}, {x:w}",
            "mul {x:w}, {x:w}, {y:w}", "mul {y:w}, {y:w}, {x:w}",
            "mul {x:w}, {x:w}, {y:w}", "mul {y:w}, {y:w}, {x:w}",
            "mul {x:w}, {x:w}, {y:w}", "mul {y:w}, {y:w}, {x:w}",
            "subs {n}, {n}, 1",
            "b.ne 2b",
            x = inout(reg) std::hint::black_box(3u64) => _,
            y = inout(reg) std::hint::black_box(5u64) => _,
            n = inout(reg) iterations => _,
            options(nomem, nostack),
        );
    }
}

/// (add chain GHz, multiply chain GHz), each the best of many short trials, the two interleaved
/// so both see the same clock; more rounds while they disagree (noise only ever slows a trial,
/// so more trials bring an unlucky figure up, while a real disagreement stays). The last rounds
/// each come after a pause, so that a disturbance gets the chance to pass: in a guest, work on
/// the host's other thread of this core (which the guest cannot see) may slow the two chains
/// unequally (on Intel cores the multiplies have one port, the adds four). Once, in a report on a
/// Skylake-SP guest, they read 2.86 and 2.76 GHz, where every other run that day agreed within
/// 2 %.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn measure_chains() -> (Option<f64>, Option<f64>) {
    // Short trials, many of them: a trial shorter than a scheduler tick (4 ms at HZ=250) usually
    // runs uninterrupted, and the best one is the clock while the thread had the core. Both
    // chains take about 3.2 million cycles per trial.
    const ADD_ITERATIONS: u64 = 400_000;
    const MUL_ITERATIONS: u64 = ADD_ITERATIONS / MUL_LATENCY as u64;
    const TRIALS: usize = 21;
    const ROUNDS: usize = 3;
    const PAUSED_ROUNDS: usize = 2;
    const PAUSE: Duration = Duration::from_millis(50);
    let time = |f: fn(u64), n: u64| {
        let t = Instant::now();
        f(n);
        t.elapsed().as_secs_f64()
    };
    let ghz = |cycles: u64, secs: f64| {
        let g = cycles as f64 / secs / 1e9;
        (g.is_finite() && g > 0.0).then_some(g)
    };
    let wake_up = || add_chain(4 * ADD_ITERATIONS); // from any idle state
    wake_up();
    let (mut add_best, mut mul_best) = (f64::INFINITY, f64::INFINITY);
    let (mut add, mut mul) = (None, None);
    for round in 0..ROUNDS + PAUSED_ROUNDS {
        if round >= ROUNDS {
            std::thread::sleep(PAUSE);
            wake_up();
        }
        for _ in 0..TRIALS {
            add_best = add_best.min(time(add_chain, ADD_ITERATIONS));
            mul_best = mul_best.min(time(mul_chain, MUL_ITERATIONS));
        }
        add = ghz(ADD_ITERATIONS * STEPS, add_best);
        mul = ghz(MUL_ITERATIONS * STEPS * MUL_LATENCY as u64, mul_best);
        if let (Some(a), Some(m)) = (add, mul) {
            if a.max(m) / a.min(m) - 1.0 <= AGREEMENT {
                break;
            }
        }
    }
    (add, mul)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) fn measure_chains() -> (Option<f64>, Option<f64>) {
    (None, None)
}

/// Busy work of `cycles` core cycles, for injecting delays between memory requests without
/// touching memory or the scheduler. With a trusted core clock this is `cycles` dependent adds
/// of the add chain (whose one add per cycle the multiply chain confirmed); when the clock is
/// unknown it spins on the monotonic clock for `cycles` at [`CoreClock::busy_ghz`] (see
/// [`CoreClock::busy_caveat`]). The first call measures the clock: call [`core_clock`] before
/// timing-sensitive work starts.
pub fn busy_cycles(cycles: u64) {
    if cycles == 0 {
        return;
    }
    let clock = core_clock();
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    if clock.ghz.is_some() {
        add_chain(cycles / STEPS);
        return;
    }
    spin_for(Duration::from_secs_f64(cycles as f64 / (clock.busy_ghz() * 1e9)));
}

fn spin_for(duration: Duration) {
    let start = Instant::now();
    while start.elapsed() < duration {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_tier::live;

    #[live("times the add and multiply chains on this core")]
    fn live_both_methods_measure_and_agree() {
        let c = core_clock();
        println!("{}", c.summary());
        println!("{c:#?}");
        let (add, mul) = (c.add_ghz.expect("add chain"), c.mul_ghz.expect("multiply chain"));
        assert!(
            add.max(mul) / add.min(mul) - 1.0 <= AGREEMENT,
            "add {add} vs multiply {mul}: {:?}",
            c.why_unknown
        );
        assert!(c.ghz.is_some(), "{:?}", c.why_unknown);
    }

    #[live("busy work against the monotonic clock")]
    fn live_busy_cycles_spends_what_it_says() {
        let ghz = core_clock().ghz.expect("a trusted core clock");
        // Short runs, best of many: an interrupted run is only ever longer.
        let cycles = 4_000_000;
        let best = (0..31)
            .map(|_| {
                let t = Instant::now();
                busy_cycles(cycles);
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min);
        let spent = best * ghz * 1e9 / cycles as f64;
        println!("busy_cycles({cycles}) took {:.3} ms: {spent:.3}× the cycles asked", best * 1e3);
        // The folded add-immediate chain spent a fifth of what it said.
        assert!((0.9..1.5).contains(&spent), "{spent}");
    }
}
