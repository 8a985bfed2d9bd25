//! Bandwidth kernels: stream through whole buffers with the widest vectors the CPU has.
//!
//! Each ISA gets explicit intrinsics (not auto-vectorized loops) so the compiler cannot turn a
//! copy or fill into a `memcpy`/`memset` call whose strategy (rep movs, non-temporal stores)
//! would change what is measured. Every kernel works on whole buffers whose length is a multiple
//! of [`BLOCK`] bytes and whose start is 64-byte aligned (arenas are page-aligned).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Bytes per unrolled step of every kernel: 4 vectors of the widest ISA.
pub const BLOCK: usize = 256;

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
        help: "one 8-byte load per 64-byte line, as seed 001's thread_read",
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

/// One pass of `kernel` over buffers of `bytes` each; returns a checksum so loads are kept.
///
/// # Safety
/// `bufs[0..kernel.info().buffers]` must each be valid for reads and writes of `bytes` bytes,
/// 64-byte aligned, and not overlap; `bytes` must be a multiple of [`BLOCK`]; `isa` must be in
/// [`Isa::available`].
pub unsafe fn pass(kernel: Kernel, isa: Isa, bufs: [*mut u8; 3], bytes: usize, seed: u64) -> u64 {
    let [a, b, c] = bufs;
    if kernel == Kernel::ReadLine {
        // SAFETY: forwarded contract.
        return unsafe { read_line(a, bytes) };
    }
    // SAFETY: forwarded contract; each ISA module is only entered when the CPU has the ISA.
    unsafe {
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => x86::avx512::run(kernel, a, b, c, bytes, seed),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => x86::avx2::run(kernel, a, b, c, bytes, seed),
            #[cfg(target_arch = "x86_64")]
            Isa::Sse2 => x86::sse2::run(kernel, a, b, c, bytes, seed),
            _ => scalar(kernel, a, b, c, bytes, seed),
        }
    }
}

/// One 8-byte load per 64-byte line, four independent chains so loads overlap.
unsafe fn read_line(a: *const u8, bytes: usize) -> u64 {
    let mut acc = [0u64; 4];
    let mut offset = 0;
    while offset < bytes {
        for (k, x) in acc.iter_mut().enumerate() {
            // SAFETY: offset + k*64 < bytes because bytes is a multiple of BLOCK (4 lines).
            *x ^= unsafe { a.add(offset + k * 64).cast::<u64>().read_volatile() };
        }
        offset += BLOCK;
    }
    acc.iter().fold(0, |x, y| x ^ y)
}

/// Plain 64-bit code: the reference and the fallback on architectures without a vector path
/// here. Volatile accesses keep the compiler from replacing loops with library calls.
unsafe fn scalar(
    kernel: Kernel,
    a: *mut u8,
    b: *mut u8,
    c: *mut u8,
    bytes: usize,
    seed: u64,
) -> u64 {
    let n = bytes / 8;
    let (a, b, c) = (a.cast::<u64>(), b.cast::<u64>(), c.cast::<u64>());
    let mut sum = 0u64;
    for i in 0..n {
        // SAFETY: i < n = bytes / 8, inside buffers valid for `bytes`.
        unsafe {
            match kernel {
                Kernel::Read | Kernel::ReadLine => sum ^= a.add(i).read_volatile(),
                Kernel::Write | Kernel::WriteNt => a.add(i).write_volatile(seed),
                Kernel::Copy | Kernel::CopyNt => a.add(i).write_volatile(b.add(i).read_volatile()),
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

                use super::super::Kernel;

                const W: usize = $w;

                /// Vectors per unrolled step: a whole BLOCK, one accumulator each, so the loop
                /// overhead is paid once per 256 bytes whatever the vector width.
                const N: usize = super::super::BLOCK / W;

                #[target_feature(enable = $feature)]
                unsafe fn read(a: *const u8, bytes: usize) -> u64 {
                    let mut acc = [$splat(0); N];
                    let mut o = 0;
                    while o < bytes {
                        for (k, x) in acc.iter_mut().enumerate() {
                            // SAFETY: o + (k+1)·W ≤ bytes (bytes is a multiple of BLOCK), aligned.
                            *x = $xor(*x, unsafe { $load(a.add(o + k * W).cast::<$vi>()) });
                        }
                        o += N * W;
                    }
                    let folded = acc.iter().fold($splat(0), |x, y| $xor(x, *y));
                    // SAFETY: a vector is W plain bytes.
                    let lanes: [u64; $w / 8] = unsafe { std::mem::transmute(folded) };
                    lanes.iter().fold(0, |x, y| x ^ y)
                }

                #[target_feature(enable = $feature)]
                unsafe fn write(a: *mut u8, bytes: usize, seed: u64, temporal: bool) {
                    let v = $splat(seed as i64);
                    let mut o = 0;
                    while o < bytes {
                        for k in 0..4 {
                            // SAFETY: as in read; the buffer is writable.
                            unsafe {
                                let p = a.add(o + k * W).cast::<$vi>();
                                if temporal {
                                    $store(p, v)
                                } else {
                                    $stream(p, v)
                                }
                            }
                        }
                        o += 4 * W;
                    }
                    if !temporal {
                        $fence; // order the streaming stores before the pass is timed as done
                    }
                }

                #[target_feature(enable = $feature)]
                unsafe fn copy(a: *mut u8, b: *const u8, bytes: usize, temporal: bool) {
                    let mut o = 0;
                    while o < bytes {
                        for k in 0..4 {
                            // SAFETY: as in read; a and b do not overlap.
                            unsafe {
                                let v = $load(b.add(o + k * W).cast::<$vi>());
                                let p = a.add(o + k * W).cast::<$vi>();
                                if temporal {
                                    $store(p, v)
                                } else {
                                    $stream(p, v)
                                }
                            }
                        }
                        o += 4 * W;
                    }
                    if !temporal {
                        $fence;
                    }
                }

                #[target_feature(enable = $feature)]
                unsafe fn triad(
                    a: *mut u8,
                    b: *const u8,
                    c: *const u8,
                    bytes: usize,
                    temporal: bool,
                ) {
                    let s = $splatpd(3.0);
                    let mut o = 0;
                    while o < bytes {
                        for k in 0..4 {
                            // SAFETY: as in read; the three buffers do not overlap.
                            unsafe {
                                let x = $loadpd(b.add(o + k * W).cast::<f64>());
                                let y = $loadpd(c.add(o + k * W).cast::<f64>());
                                let p = a.add(o + k * W).cast::<f64>();
                                if temporal {
                                    $storepd(p, $addpd(x, $mulpd(s, y)))
                                } else {
                                    $streampd(p, $addpd(x, $mulpd(s, y)))
                                }
                            }
                        }
                        o += 4 * W;
                    }
                    if !temporal {
                        $fence;
                    }
                }

                /// # Safety
                /// As [`super::super::pass`], and the CPU supports this module's ISA.
                pub unsafe fn run(
                    kernel: Kernel,
                    a: *mut u8,
                    b: *mut u8,
                    c: *mut u8,
                    bytes: usize,
                    seed: u64,
                ) -> u64 {
                    // SAFETY: forwarded contract.
                    unsafe {
                        match kernel {
                            Kernel::Read | Kernel::ReadLine => read(a, bytes),
                            Kernel::Write => {
                                write(a, bytes, seed, true);
                                0
                            }
                            Kernel::WriteNt => {
                                write(a, bytes, seed, false);
                                0
                            }
                            Kernel::Copy | Kernel::CopyNt => {
                                copy(a, b, bytes, kernel == Kernel::Copy);
                                0
                            }
                            Kernel::Triad | Kernel::TriadNt => {
                                triad(a, b, c, bytes, kernel == Kernel::Triad);
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
    fn every_isa_computes_the_same_results() {
        let bytes = 64 * BLOCK;
        for isa in Isa::available() {
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
            // SAFETY: buffers as required, isa available.
            unsafe {
                pass(Kernel::Triad, isa, [a, b, c], bytes, 0);
                for i in 0..bytes / 8 {
                    assert_eq!(a.cast::<f64>().add(i).read(), i as f64 + 3.0, "{isa} triad at {i}");
                }
                pass(Kernel::Copy, isa, [a, b, c], bytes, 0);
                assert_eq!(a.cast::<f64>().add(100).read(), 100.0, "{isa} copy");
                pass(Kernel::WriteNt, isa, [a, b, c], bytes, 0);
                pass(Kernel::TriadNt, isa, [a, b, c], bytes, 0);
                for i in 0..bytes / 8 {
                    assert_eq!(
                        a.cast::<f64>().add(i).read(),
                        i as f64 + 3.0,
                        "{isa} triad-nt at {i}"
                    );
                }
                pass(Kernel::WriteNt, isa, [a, b, c], bytes, 0);
                pass(Kernel::CopyNt, isa, [a, b, c], bytes, 0);
                assert_eq!(
                    a.cast::<f64>().add(bytes / 8 - 1).read(),
                    (bytes / 8 - 1) as f64,
                    "{isa} copy-nt"
                );
                pass(Kernel::WriteNt, isa, [a, b, c], bytes, 0x77);
                assert_eq!(a.cast::<u64>().add(5).read(), 0x77, "{isa} write-nt");
                pass(Kernel::Write, isa, [a, b, c], bytes, 0x55);
                assert_eq!(a.cast::<u64>().add(bytes / 8 - 1).read(), 0x55, "{isa} write");
                // XOR of an even number of equal words is zero; one changed word shows.
                a.cast::<u64>().add(3).write(0x55 ^ 0xF0);
                assert_eq!(pass(Kernel::Read, isa, [a, b, c], bytes, 0), 0xF0, "{isa} read");
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
    }
}
