//! Event-based CPU time: busy ns per CPU from every context switch, and the final CPU time
//! of threads that exit.

use std::mem::MaybeUninit;

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags};
use serde::Serialize;

use crate::skel::cputime::types::{iot_cpu_busy, iot_exited_task};
use crate::skel::cputime::{CputimeSkel, CputimeSkelBuilder};
use bpfkit::{c_string, from_bytes, preflight};
use bpfkit::{Error, Result};

use crate::cpuutil::CpuBusyNs;
use pstime::task::Comm;
use pstime::ExitedTask;

/// Exit records that cannot give a complete interval.
#[derive(Debug, thiserror::Error)]
pub enum ExitsLost {
    #[error("{0} exits were not recorded (the kernel-side table was full)")]
    Dropped(u64),
    #[error(transparent)]
    Bpf(bpfkit::Error),
}

/// One CPU's busy time, measured at context switches, cumulative since attach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CpuBusy {
    pub cpu: usize,
    /// ns a task other than idle ran, up to the moment of reading.
    pub busy_ns: u64,
    /// What the scheduler charged the tasks that ran, up to the last switch: `busy_ns` less
    /// steal (the hypervisor running another guest) and, with IRQ_TIME_ACCOUNTING, interrupts.
    pub task_ns: u64,
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
    pub uid: u32,
    /// Exact on-CPU time (the scheduler's sum_exec_runtime).
    pub runtime_ns: u64,
    /// On the last thread of a process: the whole process's on-CPU time over its life.
    pub group_runtime_ns: Option<u64>,
    /// The kernel's user/system split (tick-sampled, scaled to the runtime).
    pub utime_ns: u64,
    pub stime_ns: u64,
    /// CLOCK_BOOTTIME ns, of the thread and of its process's leader.
    pub start_boottime_ns: u64,
    pub group_start_boottime_ns: u64,
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

impl CpuEvents<'static> {
    /// Attaches what is wanted; dropping the value detaches it. The programs' object storage
    /// (a small struct; libbpf's own memory is freed on drop) is leaked so the handle can be
    /// owned by the caller: meant for once per command, not in a loop.
    pub fn attach(wanted: Wanted) -> Result<Self> {
        preflight()?;
        let storage = Box::leak(Box::new(MaybeUninit::uninit()));
        let mut open = CputimeSkelBuilder::default()
            .open(storage)
            .map_err(|e| Error::bpf("opening the CPU time BPF object", e))?;
        open.progs.cpu_sched_switch.set_autoload(wanted.busy);
        open.progs.cpu_process_exit.set_autoload(wanted.exits);
        let mut skel =
            open.load().map_err(|e| Error::bpf("loading the CPU time BPF programs", e))?;
        skel.attach().map_err(|e| Error::bpf("attaching the CPU time BPF programs", e))?;
        if wanted.busy {
            switch_on_every_cpu();
        }
        Ok(CpuEvents { skel })
    }
}

/// Makes every CPU this process may use switch tasks once, so the program knows at once
/// whether each is idle or busy (an idle CPU can otherwise go long without a switch, and
/// until its first switch its busy time is unknown).
fn switch_on_every_cpu() {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    let mut allowed: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer and size describe `allowed`.
    if unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut allowed) } != 0 {
        return;
    }
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        // SAFETY: reads bit c of a filled set; c < CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &allowed) })
        .collect();
    std::thread::scope(|s| {
        for cpu in cpus {
            s.spawn(move || {
                // SAFETY: a zeroed set with one CPU added, passed with its size.
                unsafe {
                    let mut one: libc::cpu_set_t = std::mem::zeroed();
                    libc::CPU_SET(cpu, &mut one);
                    libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &one);
                }
                // Run on that CPU, then sleep: a switch in, and one out.
                std::thread::sleep(std::time::Duration::from_micros(100));
            });
        }
    });
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
        let now = measure::time::monotonic_ns();
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
                    task_ns: b.task_ns,
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
                uid: t.uid,
                comm: c_string(&t.comm),
                runtime_ns: t.runtime_ns,
                group_runtime_ns: (t.group_runtime_ns > 0).then_some(t.group_runtime_ns),
                utime_ns: t.utime_ns,
                stime_ns: t.stime_ns,
                start_boottime_ns: t.start_boottime_ns,
                group_start_boottime_ns: t.group_start_boottime_ns,
                exit_boottime_ns: t.exit_boottime_ns,
            });
        }
        Ok(out)
    }

    /// Exits not recorded because the map was full (drained too rarely).
    pub fn exits_dropped(&self) -> u64 {
        self.skel.maps.bss_data.as_ref().map_or(0, |b| b.exits_dropped)
    }

    /// The exit records since the last call as pstime takes them; an error when the kernel-side
    /// table overflowed (some exits were lost, so the interval cannot be complete).
    pub fn take_exited_tasks(&self) -> std::result::Result<Vec<ExitedTask>, ExitsLost> {
        let dropped = self.exits_dropped();
        if dropped > 0 {
            return Err(ExitsLost::Dropped(dropped));
        }
        Ok(self
            .take_exited()
            .map_err(ExitsLost::Bpf)?
            .into_iter()
            .map(|t| ExitedTask {
                tid: t.pid,
                tgid: t.tgid,
                ppid: t.ppid,
                uid: t.uid,
                comm: Comm::new(t.comm.as_bytes()),
                cpu_ns: t.runtime_ns,
                group_cpu_ns: t.group_runtime_ns,
                utime_ns: t.utime_ns,
                stime_ns: t.stime_ns,
                start_boottime_ns: t.start_boottime_ns,
                group_start_boottime_ns: t.group_start_boottime_ns,
                exit_boottime_ns: t.exit_boottime_ns,
            })
            .collect())
    }

    /// Busy time per CPU as cpu util takes it (CPUs not yet seen switching left out).
    pub fn busy_per_cpu(&self) -> Result<Vec<CpuBusyNs>> {
        Ok(self
            .busy()?
            .into_iter()
            .filter(|c| !c.unknown)
            .map(|c| CpuBusyNs {
                cpu: u32::try_from(c.cpu).unwrap_or(u32::MAX),
                busy_ns: c.busy_ns,
            })
            .collect())
    }
}

impl std::fmt::Debug for CpuEvents<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuEvents").finish_non_exhaustive()
    }
}
