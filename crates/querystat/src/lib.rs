//! `platscope db querystat`: query throughput, latency distributions, cache hits and
//! pre-emption of a live PostgreSQL or MariaDB server, traced with eBPF (querystat, a DTrace
//! script that did this for MySQL on Solaris, redone for Linux).
//!
//! - **PostgreSQL**: USDT probes (Debian builds it `--enable-dtrace`). A query is
//!   `query__execute__start` → `query__execute__done`, which fire for the simple, extended
//!   and prepared protocols alike (`query__start/done` fire for the simple one only); with
//!   [`By::Transaction`], `transaction__start` → `commit`/`abort`. Hit vs miss is per query:
//!   "hit" when every buffer it needed was in shared buffers (`buffer__read__done`'s found
//!   flag), "miss" when it read at least one in.
//! - **MariaDB** (no USDT in Debian's build): a uprobe and uretprobe on `dispatch_command`
//!   (COM_QUERY and COM_STMT_EXECUTE), and the return of `Query_cache::send_result_to_client`
//!   (1 = answered from the query cache). The mangled symbols are checked in the binary's
//!   symbol table first.
//! - **Pre-emption**: `tp_btf/sched_switch`. A query whose thread left the CPU involuntarily
//!   (pre-empted, or still runnable) is "pre-empted", and the task switched in is counted as
//!   a pre-emptor. Each query's off-CPU time is split by the state it left in: run queue (R),
//!   D (mostly I/O), S (locks, latches, network). The program runs at every context switch on
//!   the machine; one with no query on either side (nearly all: a backend sleeps on its
//!   socket between queries) ends after two loads from a small table of the threads that
//!   have a query open, found from the task pointers the tracepoint passes, with no helper
//!   call and no read of either task.
//!
//! Probes are attached system-wide to `/proc/PID/exe`, so backends forked later are traced
//! too; a map of the server's processes, seeded from /proc and kept up to date from
//! `sched_process_fork`/`exit`, limits them to the chosen server. Histograms are kept per
//! CPU in the kernel; nothing per query reaches user space except `--slower` reports (ring
//! buffer).
//!
//! ```no_run
//! use std::sync::atomic::AtomicBool;
//! use querystat::{find_server, render_report, run, Options, RunOptions, Selector, Tracer};
//!
//! let server = find_server(&Selector::default())?;
//! eprintln!("tracing {}", server.describe());
//! let tracer = Tracer::attach(&server, &Options::default())?;
//! let stop = AtomicBool::new(false); // set from the Ctrl-C handler
//! let options = RunOptions { interval: std::time::Duration::from_secs(3), count: Some(2) };
//! let report = run(&tracer, &options, &stop, &mut std::io::stdout())?;
//! drop(tracer); // detaches
//! print!("{}", render_report(&report));
//! # Ok::<(), querystat::Error>(())
//! ```

mod elf;
pub mod error;
pub mod experiments;
pub mod metrics;
pub mod normalize;
pub mod report;
pub mod run;
pub mod server;
pub mod tracer;

pub use error::{Error, Result};
pub use measure::hist::{self, Log2Hist};
pub use report::{render_interval, render_report, render_slow, render_started, By, Report};
pub use run::{run, RunOptions};
pub use server::{find_server, Selector, Server, ServerKind};
pub use tracer::{preflight, Options, Tracer};

bpfkit::skeletons!(querystat);
