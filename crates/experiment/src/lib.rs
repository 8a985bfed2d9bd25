//! experiment: the seam between the crates that measure and the product.
//!
//! Every measuring command is one [`Experiment`]: typed arguments (clap-derived, in the crate
//! that measures), a [`run`](Experiment::run) that gets a [`Context`] (topology, the recorder,
//! the output format, progress and the stop flag), and a typed, serde-able [`Outcome`] that
//! knows its kind, its metrics, its terminal text and its report section ([`chart::Part`]).
//! Commands that measure nothing to keep (monitors such as `net stat`, views such as `topo`)
//! are [`Tool`]s. One registry line per command ([`Entry`], made by [`experiment`] or
//! [`tool`]) drives the command line, dispatch, storing, the output format, and reading a
//! stored run back ([`Registry::read_back`]) for `report --from-db` and `results`.
//!
//! ```
//! use experiment::{Context, Experiment, Outcome};
//! use measure::{Classified, Metric, ToMetrics, Unit};
//! use serde::{Deserialize, Serialize};
//!
//! /// Counts to N.
//! #[derive(Debug, clap::Args)]
//! struct CountArgs {
//!     #[arg(long, default_value_t = 3)]
//!     to: u32,
//! }
//!
//! #[derive(Debug, Serialize, Deserialize)]
//! struct Counted(Vec<f64>);
//!
//! impl ToMetrics for Counted {
//!     fn to_metrics(&self) -> Vec<Metric> {
//!         vec![Metric::new("counted", Unit::Count, self.0.clone())]
//!     }
//! }
//!
//! impl Outcome for Counted {
//!     const KINDS: &'static [&'static str] = &["demo count"];
//!     fn text(&self) -> String {
//!         format!("{} numbers\n", self.0.len())
//!     }
//!     fn parts(&self, _: &topo::Topology) -> Vec<chart::Part> {
//!         Vec::new()
//!     }
//! }
//!
//! struct Count;
//! impl Experiment for Count {
//!     const PATH: &'static [&'static str] = &["demo", "count"];
//!     const ABOUT: &'static str = "Counts to N.";
//!     const TINY: &'static [&'static str] = &["--to", "1"];
//!     type Args = CountArgs;
//!     type Outcome = Counted;
//!     fn run(args: &CountArgs, _ctx: &mut Context<'_>) -> Result<Counted, Classified> {
//!         Ok(Counted((1..=args.to).map(f64::from).collect()))
//!     }
//! }
//!
//! static REGISTRY: experiment::Registry =
//!     experiment::Registry { entries: &[experiment::experiment::<Count>()], groups: &[] };
//! assert_eq!(REGISTRY.entry_for_kind("demo count").map(|e| e.path()), Some(&["demo", "count"][..]));
//! ```

pub mod compat;
pub mod output;
pub mod placement;
mod registry;

use std::io;

use chart::Part;
use measure::placement::RunPlacement;
use measure::{Classified, ToMetrics};
use results::{RecordError, Recorder, RunContext, StoreOptions};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use topo::Topology;

pub use output::Format;
pub use registry::{experiment, tool, Entry, ReadBackError, Registry, Shown};

/// What an experiment measured, typed: stored as it is, printed, and drawn again from the store.
pub trait Outcome: Serialize + DeserializeOwned + ToMetrics + 'static {
    /// The kinds this type is stored under (the run's `command` in the store), never a display
    /// string that may be reworded; [`kind`](Outcome::kind) says which one a value is.
    const KINDS: &'static [&'static str];

    /// This value's kind (one of [`KINDS`](Outcome::KINDS)).
    fn kind(&self) -> &'static str {
        Self::KINDS[0]
    }

    /// Whether Ctrl-C or SIGTERM cut the run short (what was measured is kept).
    fn interrupted(&self) -> bool {
        false
    }

    /// Whether there is anything to store (a run stopped before its first figure has not).
    fn worth_storing(&self) -> bool {
        true
    }

    /// The terminal text.
    fn text(&self) -> String;

    /// An error to end the command with once the outcome has been stored and printed: a run
    /// that measured part of what it was asked (one of several files could not be read, the
    /// server went away mid-run, every allocator was refused) keeps that part and still exits
    /// 1 (or 2) with one line. `None` for a run that did it all.
    fn failure(&self) -> Option<Classified> {
        None
    }

    /// The outcome as JSON, unless the type says otherwise (a `Value`: its keys sorted).
    fn json(&self) -> Result<Value, serde_json::Error> {
        serde_json::to_value(self)
    }

    /// What `--json` prints: the outcome as stored, pretty, its keys in the order of its
    /// fields (as the commands printed it before the seam). A type whose
    /// [`json`](Outcome::json) is not its serialized form overrides both.
    fn json_text(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self).map(|text| text + "\n")
    }

    /// What `--csv` prints, for tabular outcomes.
    fn csv(&self) -> Option<String> {
        None
    }

    /// The report sections this outcome draws, on the machine it was measured on.
    fn parts(&self, topology: &Topology) -> Vec<Part>;

    /// The outcome from its stored form (`kind` is one of [`KINDS`](Outcome::KINDS)).
    fn from_stored(kind: &str, result: Value) -> Result<Self, serde_json::Error> {
        let _ = kind;
        serde_json::from_value(result)
    }
}

/// A measuring command.
pub trait Experiment: 'static {
    /// Where it sits on the command line (`["mem", "latency"]`).
    const PATH: &'static [&'static str];
    /// One line for `--help` (no closing full stop, as clap's own help lines).
    const ABOUT: &'static str;
    /// Arguments after [`PATH`](Experiment::PATH) that make it run in a second or two: the
    /// registry's round-trip test runs every experiment with them.
    const TINY: &'static [&'static str];
    type Args: clap::Args + clap::FromArgMatches;
    type Outcome: Outcome;

    fn run(args: &Self::Args, ctx: &mut Context<'_>) -> Result<Self::Outcome, Classified>;

    /// The CPUs whose placement the run's figures depend on (several threads sharing caches
    /// and memory controllers, a cache line or a lock handed between CPUs), when they do and
    /// there are at least two: the seam probes where they sit before and after the run
    /// ([`placement`]). `None` (the default) for a run on one CPU or one that does not care.
    fn placement_cpus(args: &Self::Args, topology: &Topology) -> Option<Vec<u32>> {
        let _ = (args, topology);
        None
    }
}

/// A command that keeps nothing in the store: a view (`topo`) or a monitor (`net stat`).
pub trait Tool: 'static {
    const PATH: &'static [&'static str];
    const ABOUT: &'static str;
    /// Left out of `--help` (internal commands, such as a worker process the binary starts).
    const HIDDEN: bool = false;
    type Args: clap::Args + clap::FromArgMatches;

    fn run(args: &Self::Args, globals: &Globals) -> Result<(), Classified>;
}

/// What every command gets from the global flags.
#[derive(Debug, Clone)]
pub struct Globals {
    pub format: Format,
    pub store: StoreOptions,
    /// `--html-out FILE`: also write the run's report sections as a page.
    pub html_out: Option<std::path::PathBuf>,
    /// platscope's version line (version and git commit).
    pub version: &'static str,
    /// The git commit alone.
    pub revision: &'static str,
    /// Parameters only known once a run ends (the clock a benchmark trusted).
    pub late_parameters: Option<fn() -> Value>,
    /// Every command of the binary: multi-step experiments and `results` read stored runs of
    /// any kind back through it.
    pub registry: Registry,
    /// The placement probe run around experiments whose figures depend on where the CPUs sit
    /// ([`Experiment::placement_cpus`]); `None`: not probed.
    pub placement_probe: Option<placement::ProbeFn>,
    /// Computes the headline figures of the reports a store holds without them (stored by an
    /// older platscope) by drawing each report again: `suite::figures::backfill`, handed in by
    /// the binary so the fleet reader needs no crate that measures. `None`: they stay out.
    pub backfill: Option<BackfillFn>,
}

/// See [`Globals::backfill`].
pub type BackfillFn = fn(
    &mut dyn results::FleetStore,
    &Registry,
) -> Result<results::fleet::Backfill, results::StoreError>;

impl Globals {
    /// The recorder for a run on `topology`: `--db`, the default store, or none.
    pub fn recorder(&self, topology: &Topology) -> Result<Recorder, Classified> {
        let context = RunContext {
            // Arguments need not be UTF-8 (file names); the record keeps them lossily.
            argv: std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect(),
            version: self.version.to_string(),
            topology: serde_json::to_value(topology).unwrap_or_default(),
            environment: serde_json::to_value(&topology.environment).unwrap_or_default(),
            late_parameters: self.late_parameters,
        };
        Ok(Recorder::open(&self.store, context)?)
    }
}

/// What an experiment runs with.
#[derive(Debug)]
pub struct Context<'a> {
    pub topology: &'a Topology,
    pub globals: &'a Globals,
    recorder: &'a mut Recorder,
    streamed: bool,
    /// The first failure writing streamed text (stdout on a full disk): the run goes on
    /// without printing, is stored, and the command then fails saying so.
    print_error: Option<io::Error>,
    /// A step of a multi-step experiment: its text is not printed (the whole prints its own).
    pub quiet: bool,
    /// The placement the last step run with this context was measured in, if it was probed.
    placement: Option<RunPlacement>,
}

impl<'a> Context<'a> {
    pub fn new(topology: &'a Topology, globals: &'a Globals, recorder: &'a mut Recorder) -> Self {
        Self {
            topology,
            globals,
            recorder,
            streamed: false,
            print_error: None,
            quiet: false,
            placement: None,
        }
    }

    /// The placement the last step ([`run_step`]) was measured in, when it was probed.
    pub fn take_placement(&mut self) -> Option<RunPlacement> {
        self.placement.take()
    }

    /// One placement probe between `cpus`, or why not.
    fn probe(&self, cpus: &[u32]) -> Result<measure::placement::Probe, String> {
        placement::probe(self.globals.placement_probe, cpus, self.topology)
    }

    /// Runs `E` between two placement probes when its figures depend on placement.
    fn run_probed<E: Experiment>(
        &mut self,
        args: &E::Args,
    ) -> Result<(E::Outcome, Option<RunPlacement>), Classified> {
        let cpus = E::placement_cpus(args, self.topology).filter(|cpus| cpus.len() >= 2);
        let Some(cpus) = cpus.filter(|_| self.globals.placement_probe.is_some()) else {
            return Ok((E::run(args, self)?, None));
        };
        let mut failed = None;
        let mut probe = |ctx: &Self| match ctx.probe(&cpus) {
            Ok(p) => Some(p),
            Err(why) => {
                failed.get_or_insert(why);
                None
            }
        };
        let before = probe(self);
        let outcome = E::run(args, self)?;
        // After Ctrl-C the run ends now: no probe after it.
        let after = if measure::stop::requested() { None } else { probe(self) };
        Ok((outcome, Some(RunPlacement { cpus, before, after, failed })))
    }

    pub fn format(&self) -> Format {
        self.globals.format
    }

    /// Stores one outcome now (a step of a multi-step experiment); its run id when stored.
    pub fn record<O: Outcome>(&mut self, outcome: &O) -> Result<Option<i64>, RecordError> {
        self.record_placed(outcome, None)
    }

    /// [`record`](Self::record), with the placement the outcome was measured in.
    fn record_placed<O: Outcome>(
        &mut self,
        outcome: &O,
        placement: Option<&RunPlacement>,
    ) -> Result<Option<i64>, RecordError> {
        let mut own = serde_json::Map::new();
        if let Some(p) = placement {
            own.insert(
                measure::placement::PARAMETER.to_string(),
                serde_json::to_value(p).unwrap_or_default(),
            );
        }
        self.recorder.record_with(outcome.kind(), outcome, outcome, outcome.interrupted(), own)
    }

    /// A finished run of several in one command (`compress a b c`: one run per file): stored
    /// now, then printed in the chosen format as the last one will be. The last is what `run`
    /// returns; the seam stores and prints it (and draws `--html-out` from it).
    pub fn finished<O: Outcome>(&mut self, outcome: &O) -> Result<Option<i64>, Classified> {
        let id = if outcome.worth_storing() { self.record(outcome)? } else { None };
        print(outcome, self.globals.format, self.streamed, id)?;
        Ok(id)
    }

    /// Where runs are stored, for the page's footer.
    pub fn database(&self) -> Option<String> {
        self.recorder.database()
    }

    /// Prints text as it is measured (rows of a sweep, a monitor's intervals) when the output
    /// is text; an experiment that streams prints all of its text this way, and the seam does
    /// not print the outcome's text again. `Ok(false)`: the reader has gone away, or writing
    /// failed (kept for the seam, which stores the run and then reports it): nothing more is
    /// printed, the run goes on.
    pub fn live(&mut self, text: &str) -> io::Result<bool> {
        if self.quiet || self.globals.format != Format::Text {
            return Ok(true);
        }
        self.streamed = true;
        if self.print_error.is_some() {
            return Ok(false);
        }
        match output::write_out(text) {
            Ok(open) => Ok(open),
            Err(e) => {
                self.print_error = Some(e);
                Ok(false)
            }
        }
    }

    /// The failure writing streamed text, if any (taken: the seam reports it once).
    pub fn take_print_error(&mut self) -> Option<io::Error> {
        self.print_error.take()
    }

    /// Whether the run was asked to stop (Ctrl-C, SIGTERM).
    pub fn stopped(&self) -> bool {
        measure::stop::requested()
    }

    /// A progress bar over `len` items, drawn only on a terminal.
    pub fn progress(&self, len: u64, what: &str) -> measure::progress::ProgressBar {
        measure::progress::counter(len, what)
    }
}

/// Runs experiment `E` as a step of a multi-step experiment, with arguments as on its command
/// line (`argv` after its path), quietly, and stores its outcome: (outcome, run id). A step
/// whose figures depend on placement is probed before and after
/// ([`Context::take_placement`] hands the placement on).
pub fn run_step<E: Experiment>(
    ctx: &mut Context<'_>,
    argv: &[&str],
) -> Result<(E::Outcome, Option<i64>), Classified> {
    let args = parse_step::<E>(argv)?;
    let quiet = std::mem::replace(&mut ctx.quiet, true);
    ctx.placement = None;
    let run = ctx.run_probed::<E>(&args);
    ctx.quiet = quiet;
    let (outcome, placement) = run?;
    let id = if outcome.worth_storing() {
        ctx.record_placed(&outcome, placement.as_ref())?
    } else {
        None
    };
    ctx.placement = placement;
    Ok((outcome, id))
}

/// `argv` (after the experiment's path) as experiment `E`'s arguments, as its command line
/// parses them.
pub fn parse_step<E: Experiment>(argv: &[&str]) -> Result<E::Args, Classified> {
    use clap::FromArgMatches as _;
    let command = <E::Args as clap::Args>::augment_args(clap::Command::new(
        E::PATH.last().copied().unwrap_or("step"),
    ))
    .no_binary_name(true);
    let matches = command
        .try_get_matches_from(argv)
        .map_err(|e| Classified::usage(format!("{} {argv:?}: {e}", E::PATH.join(" "))))?;
    E::Args::from_arg_matches(&matches).map_err(|e| Classified::usage(e.to_string()))
}

/// Prints an outcome in the chosen format (and the `--html-out` page): the one output seam.
pub fn present<O: Outcome>(
    outcome: &O,
    topology: &Topology,
    globals: &Globals,
    streamed: bool,
) -> Result<(), Classified> {
    present_stored(outcome, topology, globals, streamed, None)
}

/// [`present`] for an outcome already stored as run `id`: a failure to print says the run is
/// kept.
pub fn present_stored<O: Outcome>(
    outcome: &O,
    topology: &Topology,
    globals: &Globals,
    streamed: bool,
    id: Option<i64>,
) -> Result<(), Classified> {
    present_placed(outcome, topology, globals, streamed, id, None)
}

/// [`present_stored`] for an outcome measured in `placement`: the text ends with it, and the
/// page's sections and figures carry it.
pub fn present_placed<O: Outcome>(
    outcome: &O,
    topology: &Topology,
    globals: &Globals,
    streamed: bool,
    id: Option<i64>,
    placement: Option<&RunPlacement>,
) -> Result<(), Classified> {
    print(outcome, globals.format, streamed, id)?;
    if let (Some(p), Format::Text) = (placement, globals.format) {
        output::emit(&placement::text_line(p)).map_err(|e| output_failed(&e, id))?;
    }
    if let Some(path) = &globals.html_out {
        let mut parts = outcome.parts(topology);
        if let Some(p) = placement {
            placement::label_sections(&mut parts, p);
            placement::label_headlines(&mut parts, p, None);
        }
        output::write_page(path, outcome.kind(), globals.version, &parts)?;
    }
    Ok(())
}

/// A failure writing the output, naming the stored run it did not lose.
pub fn output_failed(error: &io::Error, id: Option<i64>) -> Classified {
    // "No space left on device", without the "(os error 28)" the kind already says.
    let text = error.to_string();
    let text = match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_string(),
        _ => text,
    };
    Classified::runtime(match id {
        Some(id) => format!("writing the output: {text} (the run is stored as {id})"),
        None => format!("writing the output: {text}"),
    })
}

/// An outcome on stdout in `format` (nothing in text when it was streamed as measured).
fn print<O: Outcome>(
    outcome: &O,
    format: Format,
    streamed: bool,
    id: Option<i64>,
) -> Result<(), Classified> {
    let emit = |text: &str| output::emit(text).map_err(|e| output_failed(&e, id));
    match format {
        Format::Json => emit(&outcome.json_text()?)?,
        Format::Csv => match outcome.csv() {
            Some(text) => emit(&text)?,
            None => {
                return Err(Classified::usage(format!(
                    "{} has no CSV form; use --json or the text output",
                    outcome.kind()
                )))
            }
        },
        Format::Text if streamed => {}
        Format::Text => emit(&outcome.text())?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_failure_is_one_line_naming_the_stored_run() {
        let full = io::Error::from_raw_os_error(libc_enospc());
        let stored = output_failed(&full, Some(7)).to_string();
        assert_eq!(stored, "writing the output: No space left on device (the run is stored as 7)");
        let unstored = output_failed(&full, None).to_string();
        assert_eq!(unstored, "writing the output: No space left on device");
        let other = output_failed(&io::Error::other("odd (not an os error)"), Some(1)).to_string();
        assert!(other.contains("odd (not an os error)") && !other.contains('\n'), "{other}");
    }

    /// ENOSPC on Linux.
    fn libc_enospc() -> i32 {
        28
    }
}
