//! Bandwidth kernels: stream through whole buffers with the widest vectors the CPU has.
//!
//! Each ISA gets explicit intrinsics (not auto-vectorized loops) so the compiler cannot turn a
//! copy or fill into a `memcpy`/`memset` call whose strategy (rep movs, non-temporal stores)
//! would change what is measured. Every kernel works on whole buffers whose length is a multiple
//! of [`BLOCK`] bytes and whose start is 64-byte aligned (arenas are page-aligned).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::PAGE;

/// Bytes per unrolled step of every kernel: 4 vectors of the widest ISA.
pub const BLOCK: usize = 256;

/// The order a pass visits a buffer in. Every byte is visited once per pass either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Walk {
    /// Front to back.
    #[default]
    Sequential,
    /// Four 4 KiB pages at a time, a step in each in turn, as glibc's memcpy does for large
    /// copies: four streams for the prefetchers and the memory controller where a sequential
    /// walk gives one. On a Skylake-SP guest a non-temporal copy ran about a tenth faster so.
    FourPages,
}

impl Walk {
    pub const ALL: [Walk; 2] = [Walk::Sequential, Walk::FourPages];
}

impl fmt::Display for Walk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Walk::Sequential => "sequential",
            Walk::FourPages => "four-pages",
        })
    }
}

impl FromStr for Walk {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let name = s.to_ascii_lowercase();
        Walk::ALL
            .into_iter()
            .find(|w| w.to_string() == name)
            .ok_or_else(|| format!("unknown walk {s:?}; available: sequential, four-pages"))
    }
}

/// Visits `$bytes` (a multiple of `$chunk`, which divides [`PAGE`]) chunk by chunk in `$walk`'s
/// order. The four-page walk runs `$four` on the same chunk of four consecutive pages (`$at`:
/// their offsets) over every whole group of four pages; the rest, and the whole buffer in a
/// sequential walk, goes through `$one` a chunk at a time (`$o`: its offset). Given `$one` alone,
/// `$four` is `$one` on each of the four. A macro rather than a function taking closures, so the
/// bodies compile inside each ISA's `target_feature` function.
macro_rules! walk {
    // A kernel whose chunks need nothing from each other: the four pages' chunks one by one.
    ($walk:expr, $bytes:expr, $chunk:expr, |$o:ident| $one:block) => {
        walk!($walk, $bytes, $chunk, |at| { for $o in at $one }, |$o| $one)
    };
    ($walk:expr, $bytes:expr, $chunk:expr, |$at:ident| $four:block, |$o:ident| $one:block) => {{
        let (bytes, chunk): (usize, usize) = ($bytes, $chunk);
        let mut start = 0usize;
        if $walk == Walk::FourPages {
            let end = bytes / (4 * PAGE) * (4 * PAGE);
            while start < end {
                let mut c = 0;
                while c < PAGE {
                    let $at =
                        [start + c, start + PAGE + c, start + 2 * PAGE + c, start + 3 * PAGE + c];
                    $four
                    c += chunk;
                }
                start += 4 * PAGE;
            }
        }
        while start < bytes {
            let $o = start;
            $one
            start += chunk;
        }
    }};
}

/// The vector instruction set a kernel runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Isa {
    Scalar,
    Sse2,
    Avx2,
    Avx512,
    Neon,
}

impl Isa {
    /// ISAs this CPU can run, widest last.
    pub fn available() -> Vec<Isa> {
        let mut isas = vec![Isa::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            isas.push(Isa::Sse2);
            if std::arch::is_x86_feature_detected!("avx2") {
                isas.push(Isa::Avx2);
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                isas.push(Isa::Avx512);
            }
        }
        #[cfg(target_arch = "aarch64")]
        isas.push(Isa::Neon);
        isas
    }

    /// The widest available.
    pub fn best() -> Isa {
        Self::available().into_iter().max().unwrap_or(Isa::Scalar)
    }

    /// Vector width in bytes.
    pub fn width(self) -> usize {
        match self {
            Isa::Scalar => 8,
            Isa::Sse2 | Isa::Neon => 16,
            Isa::Avx2 => 32,
            Isa::Avx512 => 64,
        }
    }
}

impl fmt::Display for Isa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Isa::Scalar => "scalar",
            Isa::Sse2 => "sse2",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
            Isa::Neon => "neon",
        })
    }
}

impl FromStr for Isa {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let names: Vec<String> = Isa::available().iter().map(ToString::to_string).collect();
        let isa = match s.to_ascii_lowercase().as_str() {
            "scalar" => Isa::Scalar,
            "sse2" => Isa::Sse2,
            "avx2" => Isa::Avx2,
            "avx512" | "avx-512" | "avx512f" => Isa::Avx512,
            "neon" => Isa::Neon,
            _ => return Err(format!("unknown ISA {s:?}; this CPU has: {}", names.join(", "))),
        };
        if Isa::available().contains(&isa) {
            Ok(isa)
        } else {
            Err(format!("this CPU cannot run {isa}; it has: {}", names.join(", ")))
        }
    }
}

/// The bandwidth kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kernel {
    Read,
    ReadLine,
    Write,
    WriteNt,
    Copy,
    CopyNt,
    Triad,
    TriadNt,
}

/// What a kernel does, and how its bytes are counted.
#[derive(Debug, Clone, Copy)]
pub struct KernelInfo {
    pub kernel: Kernel,
    pub name: &'static str,
    pub help: &'static str,
    /// Buffers it streams through (each of the per-thread buffer size).
    pub buffers: usize,
    /// Bytes counted per byte of buffer per pass.
    pub counted_streams: u64,
    /// What the count leaves out or includes, said with every result.
    pub accounting: &'static str,
}

/// The kernel table: drives the command line, the help text and the runner.
pub const KERNELS: &[KernelInfo] = &[
    KernelInfo {
        kernel: Kernel::Read,
        name: "read",
        help: "full-width vector loads of every byte",
        buffers: 1,
        counted_streams: 1,
        accounting: "bytes read",
    },
    KernelInfo {
        kernel: Kernel::ReadLine,
        name: "read-line",
        help: "one 8-byte load per 64-byte line, as the thread_read test",
        buffers: 1,
        counted_streams: 1,
        accounting: "whole 64-byte lines fetched, though only 8 bytes of each are loaded",
    },
    KernelInfo {
        kernel: Kernel::Write,
        name: "write",
        help: "full-width vector stores",
        buffers: 1,
        counted_streams: 1,
        accounting: "bytes stored; the write-allocate (RFO) reads the CPU adds are not counted (STREAM convention)",
    },
    KernelInfo {
        kernel: Kernel::WriteNt,
        name: "write-nt",
        help: "non-temporal (streaming) vector stores, which bypass the caches and need no RFO",
        buffers: 1,
        counted_streams: 1,
        accounting: "bytes stored; non-temporal stores cause no write-allocate reads",
    },
    KernelInfo {
        kernel: Kernel::Copy,
        name: "copy",
        help: "a[i] = b[i] with vector loads and stores",
        buffers: 2,
        counted_streams: 2,
        accounting: "bytes read + bytes stored; write-allocate (RFO) reads not counted (STREAM convention)",
    },
    KernelInfo {
        kernel: Kernel::CopyNt,
        name: "copy-nt",
        help: "a[i] = b[i] with non-temporal stores, as glibc's memcpy does for large copies",
        buffers: 2,
        counted_streams: 2,
        accounting: "bytes read + bytes stored with non-temporal stores (no write-allocate reads)",
    },
    KernelInfo {
        kernel: Kernel::Triad,
        name: "triad",
        help: "a[i] = b[i] + s × c[i] in doubles, STREAM's triad",
        buffers: 3,
        counted_streams: 3,
        accounting: "2 streams read + 1 stored; write-allocate (RFO) reads not counted (STREAM convention)",
    },
    KernelInfo {
        kernel: Kernel::TriadNt,
        name: "triad-nt",
        help: "STREAM's triad with non-temporal stores",
        buffers: 3,
        counted_streams: 3,
        accounting: "2 streams read + 1 stored with non-temporal stores (no write-allocate reads)",
    },
];

impl Kernel {
    pub fn info(self) -> &'static KernelInfo {
        KERNELS.iter().find(|k| k.kernel == self).unwrap_or(&KERNELS[0])
    }

    /// Parses a kernel name; the error lists the available ones.
    pub fn parse(name: &str) -> Result<Kernel, String> {
        KERNELS.iter().find(|k| k.name == name).map(|k| k.kernel).ok_or_else(|| {
            let names: Vec<&str> = KERNELS.iter().map(|k| k.name).collect();
            format!("unknown kernel {name:?}; available: {}", names.join(", "))
        })
    }
}

impl fmt::Display for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.info().name)
    }
}

/// One pass of `kernel` over buffers of `bytes` each, in `walk`'s order; returns a checksum so
/// loads are kept.
///
/// # Safety
/// `bufs[0..kernel.info().buffers]` must each be valid for reads and writes of `bytes` bytes,
/// 64-byte aligned, and not overlap; `bytes` must be a multiple of [`BLOCK`]; `isa` must be in
/// [`Isa::available`].
pub unsafe fn pass(
    kernel: Kernel,
    isa: Isa,
    walk: Walk,
    bufs: [*mut u8; 3],
    bytes: usize,
    seed: u64,
) -> u64 {
    let [a, b, c] = bufs;
    if kernel == Kernel::ReadLine {
        // SAFETY: forwarded contract.
        return unsafe { read_line(a, bytes, walk) };
    }
    // SAFETY: forwarded contract; each ISA module is only entered when the CPU has the ISA.
    unsafe {
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => x86::avx512::run(kernel, walk, a, b, c, bytes, seed),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => x86::avx2::run(kernel, walk, a, b, c, bytes, seed),
            #[cfg(target_arch = "x86_64")]
            Isa::Sse2 => x86::sse2::run(kernel, walk, a, b, c, bytes, seed),
            _ => scalar(kernel, walk, a, b, c, bytes, seed),
        }
    }
}

/// One 8-byte load per 64-byte line, four independent chains so loads overlap.
unsafe fn read_line(a: *const u8, bytes: usize, walk: Walk) -> u64 {
    let mut acc = [0u64; 4];
    walk!(walk, bytes, BLOCK, |o| {
        for (k, x) in acc.iter_mut().enumerate() {
            // SAFETY: o + k*64 < bytes: o starts a block inside the buffer.
            *x ^= unsafe { a.add(o + k * 64).cast::<u64>().read_volatile() };
        }
    });
    acc.iter().fold(0, |x, y| x ^ y)
}

/// Plain 64-bit code: the reference and the fallback on architectures without a vector path
/// here. Volatile accesses keep the compiler from replacing loops with library calls.
unsafe fn scalar(
    kernel: Kernel,
    walk: Walk,
    a: *mut u8,
    b: *mut u8,
    c: *mut u8,
    bytes: usize,
    seed: u64,
) -> u64 {
    let (a, b, c) = (a.cast::<u64>(), b.cast::<u64>(), c.cast::<u64>());
    let mut sum = 0u64;
    // The 8 words of one 64-byte chunk at byte offset `o`.
    let mut chunk = |o: usize| {
        for i in o / 8..o / 8 + 8 {
            // SAFETY: i < bytes / 8: the chunk is inside buffers valid for `bytes`.
            unsafe {
                match kernel {
                    Kernel::Read | Kernel::ReadLine => sum ^= a.add(i).read_volatile(),
                    Kernel::Write | Kernel::WriteNt => a.add(i).write_volatile(seed),
                    Kernel::Copy | Kernel::CopyNt => {
                        a.add(i).write_volatile(b.add(i).read_volatile())
                    }
                    Kernel::Triad | Kernel::TriadNt => {
                        let (x, y) = (
                            f64::from_bits(b.add(i).read_volatile()),
                            f64::from_bits(c.add(i).read_volatile()),
                        );
                        a.add(i).write_volatile((x + 3.0 * y).to_bits());
                    }
                }
            }
        }
    };
    walk!(walk, bytes, 64, |o| {
        chunk(o);
    });
    sum
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    /// Generates one ISA's kernels from its intrinsics.
    macro_rules! isa_kernels {
        ($module:ident, $feature:literal, $w:literal, $vi:ty, $vd:ty,
         load: $load:ident, store: $store:ident, stream: $stream:ident, xor: $xor:ident,
         splat: $splat:ident, loadpd: $loadpd:ident, storepd: $storepd:ident,
         addpd: $addpd:ident, mulpd: $mulpd:ident, splatpd: $splatpd:ident,
         streampd: $streampd:ident, fence: $fence:expr) => {
            pub mod $module {
                use std::arch::x86_64::*;

                use super::super::{Kernel, Walk};
                use crate::PAGE;

                const W: usize = $w;

                /// Vectors per unrolled step: a whole BLOCK, one accumulator each, so the loop
                /// overhead is paid once per 256 bytes whatever the vector width.
                const N: usize = super::super::BLOCK / W;

                #[target_feature(enable = $feature)]
                unsafe fn read(a: *const u8, bytes: usize, walk: Walk) -> u64 {
                    let mut acc = [$splat(0); N];
                    walk!(walk, bytes, N * W, |o| {
                        for (k, x) in acc.iter_mut().enumerate() {
                            // SAFETY: o + (k+1)·W ≤ bytes (o starts a block), aligned.
                            *x = $xor(*x, unsafe { $load(a.add(o + k * W).cast::<$vi>()) });
                        }
                    });
                    let folded = acc.iter().fold($splat(0), |x, y| $xor(x, *y));
                    // SAFETY: a vector is W plain bytes.
                    let lanes: [u64; $w / 8] = unsafe { std::mem::transmute(folded) };
                    lanes.iter().fold(0, |x, y| x ^ y)
                }

                /// One vector store at `p`: cached, or streaming past the caches.
                #[target_feature(enable = $feature)]
                unsafe fn put(p: *mut $vi, v: $vi, temporal: bool) {
                    // SAFETY: the caller's `p` is valid for a vector store and aligned.
                    unsafe {
                        if temporal {
                            $store(p, v)
                        } else {
                            $stream(p, v)
                        }
                    }
                }

                #[target_feature(enable = $feature)]
                unsafe fn write(a: *mut u8, bytes: usize, seed: u64, temporal: bool, walk: Walk) {
                    let v = $splat(seed as i64);
                    walk!(walk, bytes, 4 * W, |o| {
                        for k in 0..4 {
                            // SAFETY: the chunk's 4 vectors lie inside the writable buffer (o
                            // starts a chunk), aligned.
                            unsafe { put(a.add(o + k * W).cast::<$vi>(), v, temporal) };
                        }
                    });
                    if !temporal {
                        $fence; // order the streaming stores before the pass is timed as done
                    }
                }

                #[target_feature(enable = $feature)]
                unsafe fn copy(a: *mut u8, b: *const u8, bytes: usize, temporal: bool, walk: Walk) {
                    walk!(
                        walk,
                        bytes,
                        4 * W,
                        |at| {
                            // Every load of the four pages first, then the stores in address order
                            // (stores to a line in another order ran slower, streaming ones most).
                            let mut v = [[$splat(0); 4]; 4];
                            for (vs, &o) in v.iter_mut().zip(&at) {
                                for (k, x) in vs.iter_mut().enumerate() {
                                    // SAFETY: inside b, as in write.
                                    *x = unsafe { $load(b.add(o + k * W).cast::<$vi>()) };
                                }
                            }
                            for (vs, &o) in v.iter().zip(&at) {
                                for (k, &x) in vs.iter().enumerate() {
                                    // SAFETY: inside a, as in write; a and b do not overlap.
                                    unsafe { put(a.add(o + k * W).cast::<$vi>(), x, temporal) };
                                }
                            }
                        },
                        |o| {
                            for k in 0..4 {
                                // SAFETY: inside b and a, as in write; they do not overlap.
                                unsafe {
                                    let v = $load(b.add(o + k * W).cast::<$vi>());
                                    put(a.add(o + k * W).cast::<$vi>(), v, temporal);
                                }
                            }
                        }
                    );
                    if !temporal {
                        $fence;
                    }
                }

                /// `a = b + 3·c` for one vector at offset `o`.
                #[target_feature(enable = $feature)]
                unsafe fn triad_at(
                    a: *mut u8,
                    b: *const u8,
                    c: *const u8,
                    o: usize,
                    temporal: bool,
                ) {
                    // SAFETY: the caller's `o` leaves a vector inside each of the three
                    // non-overlapping buffers, aligned.
                    unsafe {
                        let x = $loadpd(b.add(o).cast::<f64>());
                        let y = $loadpd(c.add(o).cast::<f64>());
                        let r = $addpd(x, $mulpd($splatpd(3.0), y));
                        let p = a.add(o).cast::<f64>();
                        if temporal {
                            $storepd(p, r)
                        } else {
                            $streampd(p, r)
                        }
                    }
                }

                #[target_feature(enable = $feature)]
                unsafe fn triad(
                    a: *mut u8,
                    b: *const u8,
                    c: *const u8,
                    bytes: usize,
                    temporal: bool,
                    walk: Walk,
                ) {
                    walk!(walk, bytes, 4 * W, |o| {
                        for k in 0..4 {
                            // SAFETY: o starts a chunk of 4 vectors inside the buffers.
                            unsafe { triad_at(a, b, c, o + k * W, temporal) };
                        }
                    });
                    if !temporal {
                        $fence;
                    }
                }

                /// # Safety
                /// As [`super::super::pass`], and the CPU supports this module's ISA.
                pub unsafe fn run(
                    kernel: Kernel,
                    walk: Walk,
                    a: *mut u8,
                    b: *mut u8,
                    c: *mut u8,
                    bytes: usize,
                    seed: u64,
                ) -> u64 {
                    // SAFETY: forwarded contract.
                    unsafe {
                        match kernel {
                            Kernel::Read | Kernel::ReadLine => read(a, bytes, walk),
                            Kernel::Write | Kernel::WriteNt => {
                                write(a, bytes, seed, kernel == Kernel::Write, walk);
                                0
                            }
                            Kernel::Copy | Kernel::CopyNt => {
                                copy(a, b, bytes, kernel == Kernel::Copy, walk);
                                0
                            }
                            Kernel::Triad | Kernel::TriadNt => {
                                triad(a, b, c, bytes, kernel == Kernel::Triad, walk);
                                0
                            }
                        }
                    }
                }
            }
        };
    }
    isa_kernels!(sse2, "sse2", 16, __m128i, __m128d,
        load: _mm_load_si128, store: _mm_store_si128, stream: _mm_stream_si128, xor: _mm_xor_si128,
        splat: _mm_set1_epi64x, loadpd: _mm_load_pd, storepd: _mm_store_pd,
        addpd: _mm_add_pd, mulpd: _mm_mul_pd, splatpd: _mm_set1_pd, streampd: _mm_stream_pd,
        fence: _mm_sfence());
    isa_kernels!(avx2, "avx2", 32, __m256i, __m256d,
        load: _mm256_load_si256, store: _mm256_store_si256, stream: _mm256_stream_si256, xor: _mm256_xor_si256,
        splat: _mm256_set1_epi64x, loadpd: _mm256_load_pd, storepd: _mm256_store_pd,
        addpd: _mm256_add_pd, mulpd: _mm256_mul_pd, splatpd: _mm256_set1_pd,
        streampd: _mm256_stream_pd, fence: _mm_sfence());
    isa_kernels!(avx512, "avx512f", 64, __m512i, __m512d,
        load: _mm512_load_si512, store: _mm512_store_si512, stream: _mm512_stream_si512, xor: _mm512_xor_si512,
        splat: _mm512_set1_epi64, loadpd: _mm512_load_pd, storepd: _mm512_store_pd,
        addpd: _mm512_add_pd, mulpd: _mm512_mul_pd, splatpd: _mm512_set1_pd,
        streampd: _mm512_stream_pd, fence: _mm_sfence());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_isa_and_walk_computes_the_same_results() {
        // Two whole groups of four pages and a tail of 3 blocks, which every walk goes through
        // a chunk at a time.
        let bytes = 2 * 4 * PAGE + 3 * BLOCK;
        for isa in Isa::available() {
            for walk in Walk::ALL {
                same_results(isa, walk, bytes);
            }
        }
    }

    fn same_results(isa: Isa, walk: Walk, bytes: usize) {
        let what = format!("{isa} {walk}");
        // Vec<u64> is 8-aligned only; over-allocate and align to 64 for the vector loads.
        let mut raw = vec![0u64; 3 * bytes / 8 + 64];
        let base = raw.as_mut_ptr() as usize;
        let aligned = base.next_multiple_of(64) as *mut u8;
        // SAFETY: three non-overlapping `bytes` regions inside raw, 64-byte aligned.
        let (a, b, c) = unsafe { (aligned, aligned.add(bytes), aligned.add(2 * bytes)) };
        for i in 0..bytes / 8 {
            // SAFETY: inside b and c.
            unsafe {
                b.cast::<f64>().add(i).write(i as f64);
                c.cast::<f64>().add(i).write(1.0);
            }
        }
        let every_word = |a: *mut u8, expect: &dyn Fn(usize) -> u64, kernel: &str| {
            for i in 0..bytes / 8 {
                // SAFETY: inside a.
                let got = unsafe { a.cast::<u64>().add(i).read() };
                assert_eq!(got, expect(i), "{what} {kernel} at word {i}");
            }
        };
        let triad = |i: usize| (i as f64 + 3.0).to_bits();
        let copied = |i: usize| (i as f64).to_bits();
        // SAFETY: buffers as required, isa available.
        unsafe {
            pass(Kernel::Triad, isa, walk, [a, b, c], bytes, 0);
            every_word(a, &triad, "triad");
            pass(Kernel::Copy, isa, walk, [a, b, c], bytes, 0);
            every_word(a, &copied, "copy");
            pass(Kernel::WriteNt, isa, walk, [a, b, c], bytes, 0);
            pass(Kernel::TriadNt, isa, walk, [a, b, c], bytes, 0);
            every_word(a, &triad, "triad-nt");
            pass(Kernel::WriteNt, isa, walk, [a, b, c], bytes, 0);
            pass(Kernel::CopyNt, isa, walk, [a, b, c], bytes, 0);
            every_word(a, &copied, "copy-nt");
            pass(Kernel::WriteNt, isa, walk, [a, b, c], bytes, 0x77);
            every_word(a, &|_| 0x77, "write-nt");
            pass(Kernel::Write, isa, walk, [a, b, c], bytes, 0x55);
            every_word(a, &|_| 0x55, "write");
            // XOR of an even number of equal words is zero; one changed word shows, wherever
            // it is (in a four-page group or in the tail). read-line loads only the first word
            // of each line, so it sees the change only there.
            for word in [3, 8 * 7, bytes / 8 - 8, bytes / 8 - 5] {
                a.cast::<u64>().add(word).write(0x55 ^ 0xF0);
                let read = pass(Kernel::Read, isa, walk, [a, b, c], bytes, 0);
                assert_eq!(read, 0xF0, "{what} read, word {word}");
                let line = pass(Kernel::ReadLine, isa, walk, [a, b, c], bytes, 0);
                let seen = if word % 8 == 0 { 0xF0 } else { 0 };
                assert_eq!(line, seen, "{what} read-line, word {word}");
                a.cast::<u64>().add(word).write(0x55);
            }
        }
    }

    #[test]
    fn kernel_names_and_isa_names_parse() {
        for k in KERNELS {
            assert_eq!(Kernel::parse(k.name), Ok(k.kernel));
        }
        assert!(Kernel::parse("stream").expect_err("unknown").contains("read-line"));
        assert_eq!(
            "sse2".parse::<Isa>().ok(),
            Some(Isa::Sse2).filter(|_| cfg!(target_arch = "x86_64"))
        );
        assert!("mmx".parse::<Isa>().expect_err("unknown").contains("scalar"));
        for walk in Walk::ALL {
            assert_eq!(walk.to_string().parse::<Walk>(), Ok(walk));
        }
        assert!("zigzag".parse::<Walk>().expect_err("unknown").contains("four-pages"));
    }
}
