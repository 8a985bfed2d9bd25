//! cpuacct: how much CPU a process, or a CPU, really used — every data source for that question.
//!
//! - [`pstime`]: exact CPU time per process over an interval (seed 004's pstime): the process's
//!   own CPU clock and `/proc/PID/schedstat`, with the tick-sampled user/system split labelled
//!   as such; processes that start and exit inside the interval from exit records.
//! - [`cpuutil`]: per-CPU utilization from `/proc/stat` as floating-point percentages, with a
//!   slot for event-based busy time beside the tick-sampled figures.
//! - [`cputime`]: BPF on `sched_switch` (busy time measured at every switch) and
//!   `sched_process_exit` (exit records); [`tasks`]: a BPF task iterator that samples every
//!   process in one pass.
//! - [`command`]: `cpu pstime`, `cpu util` and the `pstime` compat name; [`child`]: running one
//!   command and passing its SIGTERM and exit status on.
//! - Pure parsers: [`task::parse_stat`], [`task::parse_schedstat`]; `/proc/stat`'s is
//!   [`measure::cpustat::parse_proc_stat`] (no BPF, so crates that need only it do not link
//!   libbpf).
//!
//! ```
//! use cpuacct::task::parse_schedstat;
//! let s = parse_schedstat(b"1500000 20000 7\n").unwrap();
//! assert_eq!(s.cpu_ns, 1_500_000);
//! ```

pub mod child;
pub mod command;
pub mod cputime;
pub mod cpuutil;
pub mod procsum;
pub mod pstime;
pub mod task;
pub mod tasks;

bpfkit::skeletons!(cputime, tasks, procsum);
