//! `platscope timer`: what each way of reading the clock costs, whether it enters the kernel,
//! the clocksource and counter facts, warnings, and the clock benchmarks should use.

use std::fmt::Write as _;

use chart::svg::{esc, fmt3};
use chart::{Figure, Headline, Part};
use experiment::{Context, Experiment, Outcome};
use measure::Classified;

use crate::timers::{measure_all, Clock, TimerKind, TimerOptions, TimerReport};
use crate::BenchError;

/// What reading the clock costs (ns and cycles per call), whether each call enters the
/// kernel, clocksource and TSC facts, and the cheapest trustworthy clock.
#[derive(Debug, clap::Args)]
pub struct TimerArgs {
    /// Samples per clock: each is one batch of calls lasting at least 200 µs; the median is
    /// reported.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(5..=100_000))]
    pub batches: u64,
}

/// `platscope timer`.
#[derive(Debug)]
pub struct Timer;

impl Experiment for Timer {
    const PATH: &'static [&'static str] = &["timer"];
    const ABOUT: &'static str = "What reading the clock costs (ns and cycles per call), whether \
                                 each call enters the kernel, clocksource and TSC facts, and the \
                                 cheapest trustworthy clock.";
    const TINY: &'static [&'static str] = &["--batches", "5"];
    type Args = TimerArgs;
    type Outcome = TimerReport;

    fn run(args: &TimerArgs, _ctx: &mut Context<'_>) -> Result<TimerReport, Classified> {
        let opts = TimerOptions { batches: args.batches as usize, ..TimerOptions::default() };
        let report = measure_all(&opts);
        if report.timers.is_empty() && report.interrupted {
            return Err(BenchError::Interrupted.into());
        }
        Ok(report)
    }
}

impl Outcome for TimerReport {
    const KINDS: &'static [&'static str] = &["timer"];

    fn interrupted(&self) -> bool {
        self.interrupted
    }

    fn text(&self) -> String {
        crate::render::timer::timer_text(self)
    }

    fn parts(&self, _topology: &topo::Topology) -> Vec<Part> {
        let mut part = crate::chart::TIMER.part(None);
        if self.timers.is_empty() {
            return vec![part];
        }
        let mut table = String::from(
            "<table class=\"facts-table\"><thead><tr><th>call</th><th>ns/call</th>\
             <th>cycles</th><th>p99 ns</th></tr></thead><tbody>",
        );
        for t in &self.timers {
            let cycles = t.cycles.map_or("–".to_string(), fmt3);
            let _ = write!(
                table,
                "<tr><td>{}</td><td class=\"data\" data-value=\"{}\">{}</td><td>{cycles}</td>\
                 <td>{}</td></tr>",
                esc(&t.name),
                t.ns.median,
                fmt3(t.ns.median),
                fmt3(t.ns.p99)
            );
        }
        table.push_str("</tbody></table>");
        let clock = self.choice.as_ref().map_or("none chosen", |c| c.name.as_str());
        let caption = format!(
            "Cost of one call, median of {} batches; benchmarks time with: {}",
            self.timers.first().map_or(0, |t| t.ns.samples),
            esc(clock)
        );
        part.figure = Some(Figure { svg: table, caption, after: String::new() });
        if let Some(t) = self.timer(TimerKind::ClockGettime(Clock::Monotonic)) {
            part.headlines.push(Headline {
                name: "clock_gettime(MONOTONIC)".into(),
                value: format!("{} ns", fmt3(t.ns.median)),
                detail: "per call".into(),
                metric: Some(format!("{}{{timer={}}}", crate::metrics::TIMER_COST, t.name)),
            });
        }
        vec![part]
    }
}
