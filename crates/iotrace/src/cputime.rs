//! Event-based CPU time: busy ns per CPU from every context switch, and the final CPU time
//! of threads that exit.

use std::mem::MaybeUninit;

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};
use serde::Serialize;

use crate::bpfutil::{c_string, from_bytes, preflight};
use crate::error::{Error, Result};
use crate::skel::cputime::types::{iot_cpu_busy, iot_exited_task};
use crate::skel::cputime::{CputimeSkel, CputimeSkelBuilder};

/// One CPU's busy time, measured at context switches, cumulative since attach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CpuBusy {
    pub cpu: usize,
    /// ns a task other than idle ran, up to the moment of reading.
    pub busy_ns: u64,
    pub switches: u64,
    /// No switch seen on this CPU yet: its busy time is unknown.
    pub unknown: bool,
}

/// A thread that exited, with its final on-CPU time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExitedThread {
    pub pid: u32,
    pub tgid: u32,
    pub ppid: u32,
    pub comm: String,
    /// Exact on-CPU time (the scheduler's sum_exec_runtime).
    pub runtime_ns: u64,
    /// The kernel's user/system split (tick-sampled, scaled to the runtime).
    pub utime_ns: u64,
    pub stime_ns: u64,
    /// CLOCK_BOOTTIME ns.
    pub start_boottime_ns: u64,
    pub exit_boottime_ns: u64,
}

/// Which of the two programs to attach.
#[derive(Debug, Clone, Copy, Default)]
pub struct Wanted {
    pub busy: bool,
    pub exits: bool,
}

/// The attached programs; dropping it detaches them.
pub struct CpuEvents<'obj> {
    skel: CputimeSkel<'obj>,
}

/// Attaches what is wanted, runs `f`, detaches.
pub fn with_cpu_events<T>(wanted: Wanted, f: impl FnOnce(&mut CpuEvents<'_>) -> T) -> Result<T> {
    preflight()?;
    let mut storage = MaybeUninit::uninit();
    let mut open = CputimeSkelBuilder::default()
        .open(&mut storage)
        .map_err(|e| Error::bpf("opening the CPU time BPF object", e))?;
    open.progs.cpu_sched_switch.set_autoload(wanted.busy);
    open.progs.cpu_process_exit.set_autoload(wanted.exits);
    let mut skel = open.load().map_err(|e| Error::bpf("loading the CPU time BPF programs", e))?;
    skel.attach().map_err(|e| Error::bpf("attaching the CPU time BPF programs", e))?;
    let mut events = CpuEvents { skel };
    Ok(f(&mut events))
}

/// CLOCK_MONOTONIC in ns: the clock of bpf_ktime_get_ns.
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a live local; clock_gettime only writes it.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl CpuEvents<'_> {
    /// Busy time per CPU up to now (the running stretch of a busy CPU included).
    pub fn busy(&self) -> Result<Vec<CpuBusy>> {
        let per_cpu = self
            .skel
            .maps
            .busy
            .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| Error::bpf("reading busy time", e))?
            .unwrap_or_default();
        let now = monotonic_ns();
        Ok(per_cpu
            .iter()
            .enumerate()
            .filter_map(|(cpu, bytes)| {
                let b = from_bytes::<iot_cpu_busy>(bytes)?;
                let running = if b.running_busy != 0 && b.last_switch_ns > 0 {
                    now.saturating_sub(b.last_switch_ns)
                } else {
                    0
                };
                Some(CpuBusy {
                    cpu,
                    busy_ns: b.busy_ns + running,
                    switches: b.switches,
                    unknown: b.last_switch_ns == 0,
                })
            })
            .collect())
    }

    /// The threads that exited since the last call (each is returned once).
    pub fn take_exited(&self) -> Result<Vec<ExitedThread>> {
        let map = &self.skel.maps.exited;
        let mut out = Vec::new();
        for key in map.keys() {
            let Some(value) =
                map.lookup_and_delete(&key).map_err(|e| Error::bpf("reading exited threads", e))?
            else {
                continue;
            };
            let Some(t) = from_bytes::<iot_exited_task>(&value) else { continue };
            out.push(ExitedThread {
                pid: t.pid,
                tgid: t.tgid,
                ppid: t.ppid,
                comm: c_string(&t.comm),
                runtime_ns: t.runtime_ns,
                utime_ns: t.utime_ns,
                stime_ns: t.stime_ns,
                start_boottime_ns: t.start_boottime_ns,
                exit_boottime_ns: t.exit_boottime_ns,
            });
        }
        Ok(out)
    }

    /// Exits not recorded because the map was full (drained too rarely).
    pub fn exits_dropped(&self) -> u64 {
        self.skel.maps.bss_data.as_ref().map_or(0, |b| b.exits_dropped)
    }
}

impl std::fmt::Debug for CpuEvents<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuEvents").finish_non_exhaustive()
    }
}
