//! `platscope mem c2c`: the round trip of one cache line handed back and forth between every
//! pair of CPUs.

use std::time::Duration;

use chart::Part;
use experiment::{Context, Experiment, Outcome};
use measure::args::parse_count;
use measure::Classified;
use place::{lists, MemPolicy, PlacementRequest};
use topo::Topology;

use crate::c2c::{self, C2cMode, C2cOptions, C2cResult};
use crate::chart::{c2c as c2c_chart, C2C};
use crate::render::c2c as render;

// The arguments of `mem c2c`.
#[derive(Debug, clap::Args)]
pub struct C2cArgs {
    /// CPUs whose every pair is measured (numactl list syntax; default: the allowed CPUs).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// How the line is polled and handed over: read (loads, then a store; multichase -u),
    /// write (locked read-modify-write polls), cas (compare-and-swap; multichase -l), xchg.
    #[arg(long, default_value = "read", value_parser = C2cMode::parse)]
    pub mode: C2cMode,
    /// Bind the line's page to this node (it must have CPUs and memory); default: first
    /// touched by the first CPU's thread.
    #[arg(long, value_name = "NODE")]
    pub line_on: Option<u32>,
    /// Sampling time per pair, in milliseconds, shared among its lines and their two passes
    /// (each visit times at least one batch).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(10..=600_000))]
    pub duration_ms: u64,
    /// Lines each pair is measured on, each on its own page at its own offset (1 to 64): a
    /// round trip's cost depends on the line's address, so a pair's figure is the summary over
    /// all its lines, with the spread between lines.
    #[arg(long, value_name = "N", default_value_t = c2c::DEFAULT_LINES as u64,
          value_parser = parse_count, allow_hyphen_values = true)]
    pub lines: u64,
}

/// `platscope mem c2c`.
#[derive(Debug)]
pub struct C2c;

impl Experiment for C2c {
    const PATH: &'static [&'static str] = &["mem", "c2c"];
    const ABOUT: &'static str = "Core to core: the round trip of one cache line handed back and \
                                 forth between every pair of CPUs, as a CPU×CPU matrix folded to \
                                 SMT sibling / same L3 / same node / other node and node×node, \
                                 median and p99 over several lines on their own pages with the \
                                 spread between lines, their home node placed and verified";
    const TINY: &'static [&'static str] = &["--duration-ms", "10"];
    type Args = C2cArgs;
    type Outcome = C2cResult;

    /// The hand-off is what the probe measures: a figure taken in one placement.
    fn placement_cpus(args: &C2cArgs, topology: &Topology) -> Option<Vec<u32>> {
        match &args.cpus {
            Some(list) => lists::parse_cpus(list, topology).ok().filter(|c| c.len() >= 2),
            None => super::several_cpus(None, topology, usize::MAX),
        }
    }

    fn run(args: &C2cArgs, ctx: &mut Context<'_>) -> Result<C2cResult, Classified> {
        let topology = ctx.topology;
        let cpus = match &args.cpus {
            Some(list) => lists::parse_cpus(list, topology)?,
            None => PlacementRequest { cpus: None, policy: MemPolicy::Inherit }
                .allowed_cpus(topology)?,
        };
        let options = C2cOptions {
            cpus,
            mode: args.mode,
            line_on: args.line_on,
            duration: Duration::from_millis(args.duration_ms),
            lines: usize::try_from(args.lines).unwrap_or(usize::MAX),
        };
        c2c::check(&options, topology)?;
        let n = options.cpus.len() as u64;
        let bar = ctx.progress(n * (n - 1) / 2, "CPU pairs");
        let result = c2c::run(&options, topology, |done, _| bar.set_position(done as u64));
        bar.finish_and_clear();
        Ok(result?)
    }
}

impl Outcome for C2cResult {
    /// The last is read only: the step of reports stored by earlier versions.
    const KINDS: &'static [&'static str] = &["mem c2c", "report: core to core"];

    fn interrupted(&self) -> bool {
        self.interrupted
    }

    fn text(&self) -> String {
        render::c2c_text(self)
    }

    fn parts(&self, _topology: &Topology) -> Vec<Part> {
        let mut part = C2C.part(c2c_chart(self));
        part.headlines = crate::chart::headlines::c2c(self);
        vec![part]
    }
}
