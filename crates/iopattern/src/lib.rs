//! iopattern: is file I/O sequential or random, per filesystem? The table of a DTrace script for
//! Solaris that answered this, on Linux, at the VFS level (page-cache hits included), behind
//! `platscope io pattern`.
//!
//! - [`tracer`]: the BPF program (`src/bpf/iopattern.bpf.c`, `tp_btf` on `sys_enter`/`sys_exit`,
//!   filemap faults and writeback) and its loader; per-CPU, per-filesystem and per-file counts
//!   are read each interval, never one event at a time.
//! - [`pattern`]: turning two snapshots into an interval's rates and that table (pure).
//! - [`syscalls`]: which system calls matter and where their arguments are, per architecture.
//! - [`mounts`]: the mount table and the kernel's device numbers for `--fs` and attribution.
//! - [`command`]: the `io pattern` monitor ([`command::IoPattern`]): its arguments, the interval
//!   loop and what each interval prints.
//!
//! ```
//! use iopattern::pattern::{Counts, SEQUENTIAL, READ};
//! let mut counts = Counts::default();
//! counts.ops[SEQUENTIAL][READ] = 3;
//! assert_eq!(counts.ops[SEQUENTIAL][READ], 3);
//! ```

pub mod command;
mod error;
pub mod mounts;
pub mod pattern;
pub mod syscalls;
pub mod tracer;

pub use error::{Error, Result};

bpfkit::skeletons!(iopattern);
