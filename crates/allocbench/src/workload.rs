//! The built-in allocation workload, run inside a child process so that the allocator under
//! test (preloaded into that child) serves every allocation.
//!
//! Each thread keeps a working set of slots. One operation replaces the object in a random slot:
//! the old object is freed — by this thread, or, for a share of them, handed to the next thread
//! in a batch and freed there (producer/consumer, the cross-thread frees where allocators differ
//! most) — and a new one is allocated with a size drawn log-uniformly from 16 B to 4 KiB, and
//! its first cache line written. Threads start together and the clock covers only the loop.
//!
//! The parent and the worker talk over stdin/stdout: the worker prints `ready` and where its
//! allocation functions resolve ([`Resolved`], a JSON array on the same line), waits for a line,
//! runs, prints one JSON line ([`WorkerReport`]), then waits for stdin to close so the parent can
//! read its maps and memory while everything it allocated is still mapped.

use std::io::{BufRead, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Barrier};
use std::time::Instant;

use measure::rng::SplitMix64;
use serde::{Deserialize, Serialize};

use crate::Error;

/// Parameters of the built-in workload.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BuiltinParams {
    pub threads: u32,
    /// Allocations each thread makes (one operation = one allocation and one free).
    pub ops_per_thread: u64,
    /// Live objects each thread keeps.
    pub working_set: u32,
    /// Share (0–1) of frees handed to the next thread (with one thread, all frees are local).
    pub cross_share: f64,
    pub min_size: u32,
    pub max_size: u32,
    pub seed: u64,
}

impl Default for BuiltinParams {
    fn default() -> Self {
        BuiltinParams {
            threads: 1,
            ops_per_thread: 10_000_000,
            working_set: 4096,
            cross_share: 0.25,
            min_size: 16,
            max_size: 4096,
            seed: 0x5eed_a110c,
        }
    }
}

impl BuiltinParams {
    /// Checks ranges; the errors name the option to fix.
    pub fn validate(&self) -> Result<(), Error> {
        if self.threads == 0 || self.threads > 1024 {
            return Err(Error::usage(format!("threads {} is outside 1…1024", self.threads)));
        }
        if self.ops_per_thread == 0 {
            return Err(Error::usage("--ops per thread must be at least 1"));
        }
        if self.working_set == 0 {
            return Err(Error::usage("--working-set must be at least 1 object"));
        }
        if !(0.0..=1.0).contains(&self.cross_share) {
            return Err(Error::usage(format!(
                "--cross-thread {} is outside 0…1 (a share of frees)",
                self.cross_share
            )));
        }
        if self.min_size == 0 || self.min_size > self.max_size {
            return Err(Error::usage("object sizes: need 1 ≤ min ≤ max"));
        }
        Ok(())
    }

    /// Command-line arguments of the worker (after the program and its subcommand).
    pub fn to_args(&self) -> Vec<String> {
        vec![
            format!("--threads={}", self.threads),
            format!("--ops={}", self.ops_per_thread),
            format!("--working-set={}", self.working_set),
            format!("--cross-thread={}", self.cross_share),
            format!("--min-size={}", self.min_size),
            format!("--max-size={}", self.max_size),
            format!("--seed={}", self.seed),
        ]
    }

    /// The inverse of [`Self::to_args`].
    pub fn from_args(args: &[String]) -> Result<Self, Error> {
        let mut p = BuiltinParams::default();
        for arg in args {
            let (key, value) = arg
                .split_once('=')
                .ok_or_else(|| Error::usage(format!("alloc-worker: '{arg}' is not --KEY=VALUE")))?;
            let bad = || Error::usage(format!("alloc-worker: malformed {arg}"));
            match key {
                "--threads" => p.threads = value.parse().map_err(|_| bad())?,
                "--ops" => p.ops_per_thread = value.parse().map_err(|_| bad())?,
                "--working-set" => p.working_set = value.parse().map_err(|_| bad())?,
                "--cross-thread" => p.cross_share = value.parse().map_err(|_| bad())?,
                "--min-size" => p.min_size = value.parse().map_err(|_| bad())?,
                "--max-size" => p.max_size = value.parse().map_err(|_| bad())?,
                "--seed" => p.seed = value.parse().map_err(|_| bad())?,
                _ => return Err(Error::usage(format!("alloc-worker: unknown option {key}"))),
            }
        }
        p.validate()?;
        Ok(p)
    }
}

/// The functions an allocator must serve for a run under it to count.
pub const ALLOCATION_SYMBOLS: [&str; 5] = ["malloc", "free", "realloc", "calloc", "posix_memalign"];

/// Where one allocation function resolves in a process: the address the dynamic linker binds
/// (`dlsym(RTLD_DEFAULT, …)`, what every call in the process reaches) and the object `dladdr`
/// says holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolved {
    pub symbol: String,
    /// 0: the symbol did not resolve.
    pub address: u64,
    /// The file name of the object holding it, as the loader knows it (`dli_fname`).
    pub object: Option<String>,
}

/// Resolves [`ALLOCATION_SYMBOLS`] in this process, as its own calls are resolved.
pub fn resolve_allocation_symbols() -> Vec<Resolved> {
    ALLOCATION_SYMBOLS
        .iter()
        .map(|&symbol| {
            let Ok(name) = std::ffi::CString::new(symbol) else {
                return Resolved { symbol: symbol.into(), address: 0, object: None };
            };
            // SAFETY: dlsym with the RTLD_DEFAULT pseudo-handle and a NUL-terminated name only
            // looks the name up in the global scope; it does not call what it finds.
            let address = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
            let mut object = None;
            if !address.is_null() {
                // SAFETY: Dl_info is plain old data (pointers and integers): all-zero is valid.
                let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
                // SAFETY: dladdr only reads the loader's tables for `address` and fills `info`,
                // which is valid for writes.
                let found = unsafe { libc::dladdr(address, &mut info) };
                if found != 0 && !info.dli_fname.is_null() {
                    // SAFETY: on success dli_fname points to the loader's NUL-terminated name of
                    // the object, which lives as long as the object stays loaded (we unload
                    // nothing).
                    let fname = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
                    object = Some(fname.to_string_lossy().into_owned());
                }
            }
            Resolved { symbol: symbol.into(), address: address as u64, object }
        })
        .collect()
}

/// The worker's first line: `ready` and the resolved allocation functions.
pub fn ready_line(resolved: &[Resolved]) -> String {
    let json = serde_json::to_string(resolved).unwrap_or_else(|_| "[]".into());
    format!("ready {json}")
}

/// Reads the worker's first line ([`ready_line`]); `None` when it is not one.
pub fn parse_ready(line: &str) -> Option<Vec<Resolved>> {
    let rest = line.trim().strip_prefix("ready")?;
    serde_json::from_str(rest.trim()).ok()
}

/// What the worker reports after its loop.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WorkerReport {
    /// Allocations made (each paired with a free).
    pub ops: u64,
    /// Frees done by a thread other than the allocating one.
    pub cross_frees: u64,
    /// Wall time of the loop, from the start gate to the last thread's end.
    pub seconds: f64,
}

/// A size between `min` and `max`, log-uniform: as many objects of 16–32 B as of 2–4 KiB, the
/// shape of real programs' small allocations.
fn draw_size(rng: &mut SplitMix64, min: u32, max: u32) -> usize {
    let (lo, hi) = (f64::from(min).ln(), f64::from(max).ln());
    let u = rng.unit();
    ((lo + (hi - lo) * u).exp() as usize).clamp(min as usize, max as usize)
}

const BATCH: usize = 64;

type Batch = Vec<Vec<u8>>;

struct Counts {
    ops: u64,
    cross: u64,
}

fn thread_loop(
    id: u32,
    p: BuiltinParams,
    gate: &Barrier,
    to_next: Option<SyncSender<Batch>>,
    from_prev: Option<Receiver<Batch>>,
) -> Counts {
    let mut rng = SplitMix64::new(p.seed ^ (u64::from(id) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut slots: Vec<Vec<u8>> = (0..p.working_set).map(|_| Vec::new()).collect();
    let mut outgoing: Batch = Vec::with_capacity(BATCH);
    let mut cross = 0u64;
    gate.wait();
    for op in 0..p.ops_per_thread {
        let slot = rng.below(u64::from(p.working_set)) as usize;
        let old = std::mem::take(&mut slots[slot]);
        match &to_next {
            Some(tx) if old.capacity() > 0 && rng.unit() < p.cross_share => {
                outgoing.push(old);
                if outgoing.len() == BATCH {
                    let full = std::mem::replace(&mut outgoing, Vec::with_capacity(BATCH));
                    // A consumer that falls behind: free here rather than queue without bound.
                    if let Err(TrySendError::Full(b) | TrySendError::Disconnected(b)) =
                        tx.try_send(full)
                    {
                        drop(b);
                    }
                }
            }
            _ => drop(old),
        }
        let size = draw_size(&mut rng, p.min_size, p.max_size);
        let mut v = Vec::with_capacity(size);
        v.resize(size.min(64), op as u8);
        slots[slot] = std::hint::black_box(v);
        if op % BATCH as u64 == 0 {
            if let Some(rx) = &from_prev {
                while let Ok(batch) = rx.try_recv() {
                    cross += batch.len() as u64;
                    drop(batch);
                }
            }
        }
    }
    drop(to_next);
    if let Some(rx) = from_prev {
        // Frees still in flight are this thread's to do; they are part of the work measured.
        for batch in rx.iter() {
            cross += batch.len() as u64;
        }
    }
    drop(slots);
    Counts { ops: p.ops_per_thread, cross }
}

/// Runs the workload in this process and returns its counts.
pub fn run(p: &BuiltinParams) -> Result<WorkerReport, Error> {
    p.validate()?;
    let n = p.threads as usize;
    let gate = Arc::new(Barrier::new(n + 1));
    // A ring: thread i hands objects to thread i+1.
    let mut senders = Vec::with_capacity(n);
    let mut receivers = Vec::with_capacity(n);
    for _ in 0..n {
        let (tx, rx) = sync_channel::<Batch>(64);
        senders.push(Some(tx));
        receivers.push(Some(rx));
    }
    let mut handles = Vec::with_capacity(n);
    for i in 0..n {
        let (to_next, from_prev) =
            if n > 1 { (senders[(i + 1) % n].take(), receivers[i].take()) } else { (None, None) };
        let gate = Arc::clone(&gate);
        let params = *p;
        let h = std::thread::Builder::new()
            .name(format!("alloc-{i}"))
            .spawn(move || thread_loop(i as u32, params, &gate, to_next, from_prev))
            .map_err(|e| Error::Io { what: "starting a workload thread".into(), source: e })?;
        handles.push(h);
    }
    drop(senders);
    gate.wait();
    let start = Instant::now();
    let mut ops = 0;
    let mut cross = 0;
    for h in handles {
        let c = h.join().map_err(|_| Error::Worker("a workload thread panicked".into()))?;
        ops += c.ops;
        cross += c.cross;
    }
    Ok(WorkerReport { ops, cross_frees: cross, seconds: start.elapsed().as_secs_f64() })
}

/// The worker process's side of the protocol (see the module documentation): `ready`, wait for
/// a line, run, report, wait for EOF.
pub fn serve(
    p: &BuiltinParams,
    input: &mut impl BufRead,
    output: &mut impl Write,
) -> Result<(), Error> {
    let io = |what: &str| {
        let what = what.to_string();
        move |source| Error::Io { what: what.clone(), source }
    };
    writeln!(output, "{}", ready_line(&resolve_allocation_symbols()))
        .and_then(|()| output.flush())
        .map_err(io("writing to the parent"))?;
    let mut line = String::new();
    input.read_line(&mut line).map_err(io("reading from the parent"))?;
    if line.is_empty() {
        return Ok(()); // The parent went away before the start: nothing to measure.
    }
    let report = run(p)?;
    let json = serde_json::to_string(&report).map_err(|e| Error::Worker(e.to_string()))?;
    writeln!(output, "{json}")
        .and_then(|()| output.flush())
        .map_err(io("writing to the parent"))?;
    let mut rest = Vec::new();
    input.read_to_end(&mut rest).map_err(io("reading from the parent"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_stay_in_range_and_spread_over_it() {
        let mut rng = SplitMix64::new(7);
        let sizes: Vec<usize> = (0..10_000).map(|_| draw_size(&mut rng, 16, 4096)).collect();
        assert!(sizes.iter().all(|&s| (16..=4096).contains(&s)));
        let small = sizes.iter().filter(|&&s| s < 64).count();
        let large = sizes.iter().filter(|&&s| s >= 1024).count();
        // log-uniform: 16–64 B and 1–4 KiB are a quarter each.
        assert!((2000..3000).contains(&small), "{small}");
        assert!((2000..3000).contains(&large), "{large}");
    }

    #[test]
    fn the_workload_counts_its_operations_and_frees_across_threads() {
        let p = BuiltinParams {
            threads: 3,
            ops_per_thread: 20_000,
            working_set: 256,
            ..Default::default()
        };
        let r = run(&p).unwrap();
        assert_eq!(r.ops, 60_000);
        assert!(r.cross_frees > 0 && r.cross_frees < r.ops, "{r:?}");
        let one =
            run(&BuiltinParams { threads: 1, ops_per_thread: 1000, ..Default::default() }).unwrap();
        assert_eq!(one.cross_frees, 0);
    }

    #[test]
    fn arguments_round_trip() {
        let p = BuiltinParams { threads: 4, cross_share: 0.5, ..Default::default() };
        assert_eq!(BuiltinParams::from_args(&p.to_args()).unwrap(), p);
        assert!(BuiltinParams::from_args(&["--cross-thread=2".into()]).is_err());
        assert!(BuiltinParams::from_args(&["--bogus=1".into()]).is_err());
    }

    #[test]
    fn the_protocol_reports_between_ready_and_eof() {
        let p = BuiltinParams { threads: 2, ops_per_thread: 1000, ..Default::default() };
        let mut input = std::io::Cursor::new(b"go\n".to_vec());
        let mut out = Vec::new();
        serve(&p, &mut input, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut lines = text.lines();
        let resolved = parse_ready(lines.next().unwrap()).unwrap();
        assert_eq!(resolved.len(), ALLOCATION_SYMBOLS.len());
        let r: WorkerReport = serde_json::from_str(lines.next().unwrap()).unwrap();
        assert_eq!(r.ops, 2000);
    }

    /// In a test binary (no preload), every allocation function is glibc's, and lies in a
    /// mapping of libc in this process's own maps.
    #[test]
    fn allocation_functions_resolve_to_libc_here() {
        let resolved = resolve_allocation_symbols();
        let names: Vec<&str> = resolved.iter().map(|r| r.symbol.as_str()).collect();
        assert_eq!(names, ALLOCATION_SYMBOLS);
        let maps = crate::procfs::parse_maps(&std::fs::read_to_string("/proc/self/maps").unwrap())
            .unwrap();
        for r in &resolved {
            assert_ne!(r.address, 0, "{r:?}");
            let object = r.object.as_deref().unwrap();
            assert!(object.contains("libc.so"), "{r:?}");
            let m = maps.iter().find(|m| m.start <= r.address && r.address < m.end).unwrap();
            assert!(m.path.as_deref().is_some_and(|p| p.contains("libc.so")), "{m:?}");
        }
    }

    #[test]
    fn the_ready_line_round_trips_and_anything_else_is_not_one() {
        let r = vec![Resolved { symbol: "malloc".into(), address: 0x7f00, object: None }];
        assert_eq!(parse_ready(&ready_line(&r)), Some(r));
        assert_eq!(parse_ready("ready []\n"), Some(vec![]));
        assert_eq!(parse_ready("ready"), None);
        assert_eq!(parse_ready("{\"ops\":1}"), None);
        // Arbitrary lines (what a broken or foreign worker might print): never a panic.
        let mut rng = SplitMix64::new(29);
        let alphabet = b"ready []{}\",:0123456789symboladdressobjectnul\\\n\xff";
        for _ in 0..5000 {
            let len = rng.below(64) as usize;
            let bytes: Vec<u8> =
                (0..len).map(|_| alphabet[rng.below(alphabet.len() as u64) as usize]).collect();
            let _ = parse_ready(&String::from_utf8_lossy(&bytes));
        }
    }
}
