//! The core clock, measured: a chain of dependent one-cycle adds runs at one add per cycle on
//! every modern x86-64 and Arm core, so its rate is the clock rate (turbo included) without
//! performance counters, which these machines often lack.

use std::sync::OnceLock;
use std::time::Instant;

/// Adds per loop iteration in the calibration chain.
const ADDS: u64 = 8;

#[cfg(target_arch = "x86_64")]
fn dependent_adds(iterations: u64) {
    // SAFETY: pure register arithmetic on the two named registers; no memory, no stack.
    unsafe {
        std::arch::asm!(
            "2:",
            "add {x}, 1", "add {x}, 1", "add {x}, 1", "add {x}, 1",
            "add {x}, 1", "add {x}, 1", "add {x}, 1", "add {x}, 1",
            "dec {n}",
            "jnz 2b",
            x = inout(reg) 0u64 => _,
            n = inout(reg) iterations => _,
            options(nomem, nostack),
        );
    }
}

#[cfg(target_arch = "aarch64")]
fn dependent_adds(iterations: u64) {
    // SAFETY: pure register arithmetic on the two named registers; no memory, no stack.
    unsafe {
        std::arch::asm!(
            "2:",
            "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1",
            "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1", "add {x}, {x}, 1",
            "subs {n}, {n}, 1",
            "b.ne 2b",
            x = inout(reg) 0u64 => _,
            n = inout(reg) iterations => _,
            options(nomem, nostack),
        );
    }
}

/// The core clock in GHz, measured once (best of several short runs), or `None` on
/// architectures without a calibration loop.
pub fn core_ghz() -> Option<f64> {
    static GHZ: OnceLock<Option<f64>> = OnceLock::new();
    *GHZ.get_or_init(measure)
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn measure() -> Option<f64> {
    // Short trials, many of them: a trial shorter than a scheduler tick (4 ms at HZ=250) usually
    // runs uninterrupted, and the best one is the clock while the thread had the core.
    let iterations = 400_000;
    dependent_adds(4 * iterations); // wake the core up from any idle state
    let best = (0..31)
        .map(|_| {
            let t = Instant::now();
            dependent_adds(iterations);
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    let ghz = (iterations * ADDS) as f64 / best / 1e9;
    (ghz.is_finite() && ghz > 0.1).then_some(ghz)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn measure() -> Option<f64> {
    None
}

/// Busy work of about `cycles` core cycles (dependent adds), for injecting delays between
/// memory requests without touching memory or the scheduler.
pub fn busy_cycles(cycles: u64) {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    if cycles >= ADDS {
        dependent_adds(cycles / ADDS);
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    for _ in 0..cycles {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn measured_clock_is_plausible() {
        let ghz = super::core_ghz().expect("x86-64 or arm64");
        println!("core clock {ghz:.2} GHz");
        assert!((0.5..7.0).contains(&ghz), "{ghz} GHz");
    }
}
