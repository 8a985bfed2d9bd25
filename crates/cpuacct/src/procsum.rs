//! Every process's CPU time, summed over its threads in the kernel, in one pass: what
//! `serve`'s process collector reads at each scrape. The BPF program walks the process list, and
//! the threads of each process that has more than one, with the kernel's open-coded task iterators (Linux 6.7+) and writes
//! one record per process into an array mapped into this process, so a scrape of 10,000
//! processes costs one system call and no per-thread records (`pstime::tasks`, the iterator
//! `cpu pstime` uses, writes one per thread through a file and looks each task up by PID).

use std::mem::MaybeUninit;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::ProgramInput;

use crate::skel::procsum::types::iot_proc_rec;
use crate::skel::procsum::{ProcsumSkel, ProcsumSkelBuilder};
use bpfkit::preflight;
use bpfkit::{Error, Result};

/// One process: its leader's name and start, its threads' CPU time (exited threads included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessTotal {
    pub tgid: u32,
    /// The leader's start after boot (ns): with the PID, names the process across PID reuse.
    pub start_boottime_ns: u64,
    pub comm: CommName,
    /// Tick-sampled user time of live and exited threads (ns), as `/proc/PID/stat` sums it
    /// before scaling.
    pub utime_ns: u64,
    /// System time, likewise.
    pub stime_ns: u64,
    /// Live threads counted.
    pub nr_threads: u32,
}

/// The loaded program; dropping it unloads it.
pub struct ProcessSums {
    skel: ProcsumSkel<'static>,
}

impl std::fmt::Debug for ProcessSums {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessSums").finish_non_exhaustive()
    }
}

impl ProcessSums {
    /// Loads the program and runs it once (a kernel without open-coded task iterators fails
    /// here, not at the first scrape). Its object storage is leaked so the handle can be
    /// owned: meant for once per command.
    pub fn load() -> Result<Self> {
        preflight()?;
        let storage = Box::leak(Box::new(MaybeUninit::uninit()));
        let open = ProcsumSkelBuilder::default()
            .open(storage)
            .map_err(|e| Error::bpf("opening the process sums", e))?;
        let skel = open.load().map_err(|e| Error::bpf("loading the process sums", e))?;
        let sums = ProcessSums { skel };
        sums.run()?;
        Ok(sums)
    }

    /// Runs the pass; `false` when there were more processes than the array holds.
    fn run(&self) -> Result<bool> {
        let out = self
            .skel
            .progs
            .sum_processes
            .test_run(ProgramInput::default())
            .map_err(|e| Error::bpf("running the process sums", e))?;
        if out.return_value != 0 {
            return Err(Error::bpf(
                "running the process sums",
                libbpf_rs::Error::from_raw_os_error(libc::ENOTSUP),
            ));
        }
        let bss = self.bss()?;
        // SAFETY: `truncated` is a plain u32 in the mapped .bss; the program that writes it
        // has returned, and a volatile read keeps the compiler from reusing an older value.
        Ok(unsafe { std::ptr::read_volatile(&bss.truncated) } == 0)
    }

    fn bss(&self) -> Result<&crate::skel::procsum::types::bss> {
        self.skel.maps.bss_data.as_deref().ok_or_else(|| {
            Error::bpf(
                "reading the process sums",
                libbpf_rs::Error::from_raw_os_error(libc::ENOMEM),
            )
        })
    }

    /// Every process now, in the kernel's process-list order; `None` when there were more
    /// than the array holds, so the caller reads another way rather than miss some.
    pub fn read(&self) -> Result<Option<Vec<ProcessTotal>>> {
        if !self.run()? {
            return Ok(None);
        }
        let bss = self.bss()?;
        // SAFETY: as in `run`: the writer has returned; volatile so this run's value is read.
        let n = unsafe { std::ptr::read_volatile(&bss.nr_procs) } as usize;
        let mut out = Vec::with_capacity(n);
        for rec in bss.procs.iter().take(n) {
            // SAFETY: a plain-data record inside the mapped .bss, written by the finished run.
            let rec: iot_proc_rec = unsafe { std::ptr::read_volatile(rec) };
            out.push(ProcessTotal {
                tgid: rec.tgid,
                start_boottime_ns: rec.start_boottime_ns,
                comm: CommName::new(&rec.comm.map(|c| c as u8)),
                utime_ns: rec.utime_ns,
                stime_ns: rec.stime_ns,
                nr_threads: rec.nr_threads,
            });
        }
        Ok(Some(out))
    }
}

/// A process name as the kernel keeps it (at most 16 bytes), on the stack; the bytes after
/// `len` are always zero, so equal names compare equal whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommName {
    bytes: [u8; 16],
    len: usize,
}

impl CommName {
    /// The bytes up to the first NUL, at most 16 (the kernel's `TASK_COMM_LEN`).
    pub fn new(raw: &[u8]) -> Self {
        let raw = &raw[..raw.len().min(16)];
        let len = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
        let mut bytes = [0u8; 16];
        bytes[..len].copy_from_slice(&raw[..len]);
        CommName { bytes, len }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// As text (names are bytes; invalid UTF-8 is replaced).
    pub fn to_string_lossy(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.as_bytes())
    }
}
