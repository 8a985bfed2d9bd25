//! pstime: CPU time per process over an interval — exact, with the user/system split the
//! kernel's tick sampling gives — for listed processes or every process. It reads `/proc`, and
//! as root every thread in one pass of a BPF task iterator ([`tasks`], the `bpf` feature, on by
//! default); a crate that needs only the `/proc` sampler (`loadgen`'s cost per transaction)
//! turns the feature off and does not link libbpf. The exit records that complete a report
//! come from `cpuacct`'s `sched_process_exit` tracer (which shares its program with the busy
//! time of `cpu util`), passed in as [`ExitedTask`].
//!
//! - [`Sampler`] takes [`Snapshot`]s through an [`FsRoot`]: per process one read of
//!   `/proc/PID/stat` (name, parent, state, tick-sampled user/system time, start time, thread
//!   count) and its exact CPU time. On a live system the exact time is the process's CPU-time
//!   clock ([`measure::time::process_cpu_ns`]): one system call, all threads including those that
//!   exited, running ones brought up to date. Elsewhere (a fixture tree, another PID namespace)
//!   it is the sum of `/proc/PID/task/TID/schedstat` over the threads
//!   ([`CpuSource::Schedstat`]). Each process's reading carries its own timestamp, so its
//!   percentage is over its own interval. Files are read with one `read` into a reused buffer,
//!   names kept inline: a snapshot allocates only its two vectors.
//! - [`compare`] turns two snapshots into a [`Report`]: processes are matched by PID *and start
//!   time* (a reused PID is a new process). A process that appeared counts from zero; one that
//!   vanished is listed as exited, its CPU after the first snapshot unknown unless exit records
//!   ([`ExitedTask`], from a `sched_process_exit` tracer) are given, which also bring in
//!   processes that started and exited inside the interval. Without them the report says so.
//! - [`render`] prints the original pstime's layout (`UID PID %USR %SYS COMMAND`, four significant digits)
//!   or that layout with the exact `%CPU` and `CPU-ms` columns.
//! - [`tasks`] (feature `bpf`): the task iterator (`src/bpf/tasks.bpf.c`), one fixed
//!   [`TaskRecord`] per thread, which [`Sampler::snapshot_from_tasks`] turns into a snapshot.
//! - [`task`]: the parsers of `/proc/PID/schedstat` and the task's name ([`task::Comm`]), and
//!   `/proc/PID/stat`'s (`measure::procstat`'s, re-exported).
//!
//! Percentages are of the whole machine (all online CPUs), as the original pstime reports them:
//! one busy CPU of four is 25 %.
//!
//! [`FsRoot`]: measure::FsRoot
//! [`compare`]: fn@compare

mod compare;
mod model;
mod read;
pub mod render;
mod sampler;
pub mod task;
#[cfg(feature = "bpf")]
pub mod tasks;

pub use compare::compare;
pub use model::{
    Basis, Counts, CpuSource, ExitedTask, Lifetime, Options, ProcSample, ProcessCpu, Report,
    Snapshot, Split, TaskRecord, ThreadCpu, ThreadSample, ThreadStat,
};
pub use sampler::Sampler;

#[cfg(feature = "bpf")]
bpfkit::skeletons!(tasks);
