//! `thread_read TIMES FROM TO`, the cross-node read bandwidth test from an article on Nehalem's
//! memory and QPI bandwidth: a generator thread on CPU FROM first-touches 256 MiB, a reader
//! thread on CPU TO loads one word per 64-byte line, TIMES passes; the time taken says how fast
//! TO can read FROM's memory (local, or across the interconnect).
//!
//! This module measures; the `thread_read` command line and its printed lines are
//! [`crate::kit::tools::thread_read`].

use place::{pin, Arena, ArenaSpec, MemPolicy, PageSize, Placement};
use serde::{Deserialize, Serialize};
use topo::Topology;

use crate::kernels::bandwidth::{pass, Isa, Kernel, Walk};
use crate::timers::cheapest_trustworthy_clock;
use crate::BenchError;
use measure::stop;

/// The original's buffer: 256 MiB.
pub const BYTES: u64 = 256 << 20;

/// What one run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadRead {
    /// Where the buffer was mapped (the original printed it).
    pub address: u64,
    pub from_cpu: u32,
    pub to_cpu: u32,
    /// Passes completed (fewer than asked when interrupted).
    pub passes: u64,
    pub elapsed_ns: u64,
    /// Bytes of lines fetched: passes × 256 MiB.
    pub bytes: u64,
    /// Where the generator's first touch put the buffer.
    pub placement: Placement,
}

impl ThreadRead {
    /// 10^9 bytes per second.
    pub fn gbs(&self) -> f64 {
        self.bytes as f64 / self.elapsed_ns.max(1) as f64
    }

    /// The original's `time cost S.SSSSSS secs.` line.
    pub fn time_cost_line(&self) -> String {
        let us = self.elapsed_ns / 1000;
        format!("time cost {}.{:06} secs.", us / 1_000_000, us % 1_000_000)
    }
}

/// Runs it. `on_address` is called with the buffer's address before the reads start, so the
/// original's first line can be printed when the original printed it.
pub fn run(
    passes: u64,
    from_cpu: u32,
    to_cpu: u32,
    topology: &Topology,
    on_address: impl FnOnce(u64) + Send,
) -> Result<ThreadRead, BenchError> {
    // Calibrate the measuring clock now, not after the workers' release.
    cheapest_trustworthy_clock();
    if passes == 0 {
        return Err(BenchError::Usage("TIMES must be at least 1".into()));
    }
    let spec = ArenaSpec { bytes: BYTES, policy: MemPolicy::Inherit, page: PageSize::Base };
    Arena::check_fits(&spec, topology)?;
    std::thread::scope(|scope| {
        scope
            .spawn(|| -> Result<ThreadRead, BenchError> {
                // The generator: pinned to FROM, first-touches (and fills) the buffer.
                pin::pin_current_thread(&[from_cpu])?;
                let mut arena = Arena::new(spec, topology)?;
                for word in arena.as_mut_slice().chunks_exact_mut(8) {
                    word.copy_from_slice(&0x5a5a_5a5a_5a5a_5a5au64.to_ne_bytes());
                }
                let placement = arena.placement()?;
                let address = arena.as_ptr() as u64;
                on_address(address);
                let arena = &arena;
                // The reader: pinned to TO, one load per line, every pass.
                let (done, elapsed_ns) = std::thread::scope(|inner| {
                    inner
                        .spawn(move || -> Result<(u64, u64), BenchError> {
                            pin::pin_current_thread(&[to_cpu])?;
                            let clock = cheapest_trustworthy_clock();
                            let start = clock.read();
                            let mut done = 0;
                            let mut checksum = 0;
                            while done < passes && !stop::requested() {
                                // The kernels take writable stream pointers; read-line only
                                // reads through them, so a shared arena is enough.
                                let ptr = arena.as_ptr().cast_mut();
                                // SAFETY: the arena is BYTES long (a multiple of the kernel's
                                // block), page-aligned, alive for this scope; read-line only reads.
                                checksum ^= unsafe {
                                    pass(
                                        Kernel::ReadLine,
                                        Isa::Scalar,
                                        Walk::Sequential,
                                        [ptr, ptr, ptr],
                                        BYTES as usize,
                                        0,
                                    )
                                };
                                done += 1;
                            }
                            std::hint::black_box(checksum);
                            Ok((done, clock.ticks_to_ns(clock.read().wrapping_sub(start)) as u64))
                        })
                        .join()
                        .map_err(|_| BenchError::Worker("reader thread panicked".into()))?
                })?;
                if done == 0 {
                    return Err(BenchError::Interrupted);
                }
                Ok(ThreadRead {
                    address,
                    from_cpu,
                    to_cpu,
                    passes: done,
                    elapsed_ns,
                    bytes: done * BYTES,
                    placement,
                })
            })
            .join()
            .map_err(|_| BenchError::Worker("generator thread panicked".into()))?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_cost_line_is_the_originals() {
        let r = ThreadRead {
            address: 0x7f1a_eda5_a010,
            from_cpu: 0,
            to_cpu: 0,
            passes: 500,
            elapsed_ns: 16_759_935_123,
            bytes: 500 * BYTES,
            placement: Placement::base_pages(BYTES, vec![]),
        };
        assert_eq!(r.time_cost_line(), "time cost 16.759935 secs.");
        assert!((r.gbs() - 8.009).abs() < 0.001, "{}", r.gbs());
    }
}
