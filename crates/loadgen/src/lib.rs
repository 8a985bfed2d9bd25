//! loadgen: open-loop, steady-rate database load (what sysbench's `--tx-rate` patch did) against
//! PostgreSQL and MariaDB, with latency measured from each transaction's *intended* start and
//! what each transaction costs the server.
//!
//! - [`schedule`]: transaction `i` is due at `t0 + i / rate` (with the patch's period jitter,
//!   or Poisson arrivals); a connection that falls behind runs late and is counted late — the
//!   schedule never slows to suit the server (no coordinated omission). `--max-lag` skips
//!   transactions already that late, counted.
//! - [`workload`]: sysbench-like OLTP transactions (point select, read-only, read-write) on the
//!   tables [`prepare()`] makes, or a SQL file with `:rand(lo,hi)` parameters; simple or
//!   prepared protocol.
//! - [`run()`]: one thread and connection per `--connections`, HdrHistograms per interval and
//!   per run of latency, service time and schedule lag, errors by SQLSTATE, and ([`cost`]) the
//!   server's process-tree CPU, the machine's busy time and the driver's own CPU per
//!   transaction.
//! - [`sweep`]: fixed-rate steps one after another; [`chart`] draws a run's and a sweep's report
//!   sections.
//! - [`experiments`]: `load` and `load prepare` as the product runs them (arguments, outcome).
//!
//! ```no_run
//! use loadgen::{run, Plan, ServerKind, Target};
//! use std::sync::atomic::AtomicBool;
//! static STOP: AtomicBool = AtomicBool::new(false);
//! let mut target = Target::new(ServerKind::Postgres);
//! target.url = Some("host=/var/run/postgresql user=postgres".into());
//! let plan = Plan { rate: 200.0, ..Plan::default() };
//! let report = run(&target, &plan, &STOP, &mut |line| {
//!     println!("{}", loadgen::render::interval_line(line));
//!     std::ops::ControlFlow::Continue(()) // Break would end the run here
//! })?;
//! println!("{}", loadgen::render::render_report(&report));
//! # Ok::<(), loadgen::Error>(())
//! ```

pub mod chart;
pub mod conn;
pub mod cost;
pub mod driver;
mod error;
pub mod experiments;
mod pgwire;
pub mod prepare;
pub mod render;
pub mod run;
pub mod schedule;
pub mod stats;
pub mod workload;

pub use driver::{ServerKind, Target};
pub use error::Error;
pub use prepare::{prepare, PrepareOptions};
pub use run::{run, IntervalLine, LoadReport, Plan, Protocol};
pub use schedule::Arrivals;
pub use workload::WorkloadKind;

/// Runs `plan` at each of `rates` in turn (each step its own connections and schedule), calling
/// `on_step` before each. Stops after a step that was interrupted; returns the steps run.
pub fn sweep(
    target: &Target,
    plan: &Plan,
    rates: &[f64],
    stop: &'static std::sync::atomic::AtomicBool,
    on_step: &mut dyn FnMut(f64),
    on_interval: &mut dyn FnMut(&IntervalLine) -> std::ops::ControlFlow<()>,
) -> Result<Vec<LoadReport>, Error> {
    let mut out = Vec::with_capacity(rates.len());
    for &rate in rates {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        on_step(rate);
        let step = run(target, &Plan { rate, ..plan.clone() }, stop, on_interval)?;
        let interrupted = step.interrupted.is_some();
        out.push(step);
        if interrupted {
            break;
        }
    }
    Ok(out)
}
