//! `platscope timer`: what each way of reading the clock costs, whether it enters the kernel,
//! the clocksource and counter facts, warnings, and the clock benchmarks should use.

use clap::Args;
use measure::stop;
use membench::timers::{measure_all, TimerOptions};

use anyhow::Context;

use crate::output::{emit, emit_json};
use results::StoreOptions;

#[derive(Debug, Args)]
pub struct TimerArgs {
    /// Samples per clock: each is one batch of calls lasting at least 200 µs; the median is
    /// reported.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(5..=100_000))]
    pub batches: u64,
}

pub fn run(args: &TimerArgs, json: bool, store: &StoreOptions) -> anyhow::Result<()> {
    let topology = topo::Topology::detect().context("reading the topology")?;
    let mut rec = super::record::recorder(store, &topology)?;
    stop::install();
    let opts = TimerOptions { batches: args.batches as usize, ..TimerOptions::default() };
    let report = measure_all(&opts);
    if report.timers.is_empty() && report.interrupted {
        return Err(membench::BenchError::Interrupted.into());
    }
    if json {
        emit_json(&report)?;
    } else {
        emit(&membench::render::timer::timer_text(&report))?;
    }
    rec.record("timer", &report, &report, report.interrupted)?;
    Ok(())
}
