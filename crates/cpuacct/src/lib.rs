//! cpuacct: how much CPU a process, or a CPU, really used — every data source for that question.
//!
//! - `pstime` (its own crate): exact CPU time per process over an interval, as the original
//!   pstime tool reported it: the process's own CPU clock and `/proc/PID/schedstat`, with the
//!   tick-sampled user/system split labelled as such, and as root its BPF task iterator. This
//!   crate adds processes that start and exit inside the interval, from exit records.
//! - [`cpuutil`]: per-CPU utilization from `/proc/stat` as floating-point percentages, with a
//!   slot for event-based busy time beside the tick-sampled figures.
//! - [`cputime`]: BPF on `sched_switch` (busy time measured at every switch) and
//!   `sched_process_exit` (exit records); [`procsum`]: each process's CPU time summed in the
//!   kernel (serve's process collector).
//! - [`command`]: `cpu pstime`, `cpu util` and the `pstime` compat name; [`child`]: running one
//!   command and passing its SIGTERM and exit status on.
//! - The parsers live where crates without BPF take them: `/proc/stat`'s in
//!   [`measure::cpustat`], `/proc/PID/stat`'s in [`measure::procstat`], `schedstat`'s in
//!   `pstime::task`.

pub mod child;
pub mod command;
pub mod cputime;
pub mod cpuutil;
pub mod procsum;

bpfkit::skeletons!(cputime, procsum);
