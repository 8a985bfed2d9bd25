//! Every thread's CPU figures in one pass: a BPF task iterator, read like a file. What
//! `platscope cpu pstime` samples with instead of one `/proc/PID/stat` per process, as root.

use std::io::Read;
use std::mem::MaybeUninit;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Iter, Link};

use crate::skel::tasks::types::iot_task_rec;
use crate::skel::tasks::{TasksSkel, TasksSkelBuilder};
use crate::TaskRecord;
use bpfkit::{c_string, from_bytes, preflight};
use bpfkit::{Error, Result};

/// The loaded iterator; dropping it unloads it.
pub struct TaskIter {
    // Declared before the skeleton it was attached from, so it is dropped first.
    link: Link,
    _skel: TasksSkel<'static>,
}

impl std::fmt::Debug for TaskIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskIter").finish_non_exhaustive()
    }
}

impl TaskIter {
    /// Loads the iterator. Its object storage (a small struct) is leaked so the handle can
    /// be owned: meant for once per command.
    pub fn load() -> Result<Self> {
        preflight()?;
        let storage = Box::leak(Box::new(MaybeUninit::uninit()));
        let open = TasksSkelBuilder::default()
            .open(storage)
            .map_err(|e| Error::bpf("opening the task iterator", e))?;
        let skel = open.load().map_err(|e| Error::bpf("loading the task iterator", e))?;
        let link = skel
            .progs
            .dump_task
            .attach()
            .map_err(|e| Error::bpf("attaching the task iterator", e))?;
        Ok(TaskIter { link, _skel: skel })
    }

    /// Every thread on the system now (one pass; the kernel walks its task list).
    pub fn read(&self) -> Result<Vec<TaskRecord>> {
        let mut iter =
            Iter::new(&self.link).map_err(|e| Error::bpf("starting the task iterator", e))?;
        let mut bytes = Vec::with_capacity(1 << 20);
        iter.read_to_end(&mut bytes)
            .map_err(|e| Error::bpf("reading the task iterator", libbpf_rs::Error::from(e)))?;
        Ok(bytes
            .chunks_exact(size_of::<iot_task_rec>())
            .filter_map(from_bytes::<iot_task_rec>)
            .map(|r| TaskRecord {
                tid: r.tid,
                tgid: r.tgid,
                ppid: r.ppid,
                nr_threads: r.nr_threads,
                state: r.state as u8,
                comm: c_string(&r.comm),
                runtime_ns: r.runtime_ns,
                utime_ns: r.utime_ns,
                stime_ns: r.stime_ns,
                start_boottime_ns: r.start_boottime_ns,
                dead_runtime_ns: r.dead_runtime_ns,
                dead_utime_ns: r.dead_utime_ns,
                dead_stime_ns: r.dead_stime_ns,
                children_utime_ns: r.children_utime_ns,
                children_stime_ns: r.children_stime_ns,
            })
            .collect())
    }
}
