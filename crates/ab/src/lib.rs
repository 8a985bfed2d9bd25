//! ab: is the machine faster with this setting or that? `platscope ab --a SETTING… --b
//! SETTING… -- COMMAND…` sets A, runs the workload, sets B, runs it again, in an order drawn
//! at random each round, after an A/A phase that measures the noise; then says on each of the
//! workload's headline figures whether B is faster, slower or the same as A, with the interval
//! of the ratio — and puts every setting back as it found it.
//!
//! - [`setting`]: the settings in their usual words, checked against the machine before
//!   anything changes; [`files`]: reading and writing a settings file.
//! - [`journal`]: the original values on disk before the first change, restored on every way
//!   out, and after a crash by `platscope ab --restore`.
//! - [`workload`]: a measuring command of this platscope, a report, or `exec CMD…`, each run
//!   a fresh process with the side's memory policy and allocator.
//! - [`plan`]: randomized interleaved rounds and the pre-set looks of an early stop;
//!   [`judge`]: the verdicts ([`measure::verdict`], runs as replicates).
//! - [`outcome`] and [`chart`]: what is stored, printed and drawn.
//!
//! ```
//! use ab::plan::{interleaved, looks, Side};
//! use ab::setting::Setting;
//! use measure::rng::SplitMix64;
//!
//! assert_eq!(Setting::parse("thp=never").unwrap().to_string(), "thp=never");
//! let order = interleaved(&mut SplitMix64::new(1), 3, Side::A, Side::B);
//! assert!(order.iter().all(|round| round.contains(&Side::A) && round.contains(&Side::B)));
//! assert_eq!(looks(20, true), [5, 10, 20]);
//! ```

pub mod chart;
pub mod files;
pub mod journal;
pub mod judge;
pub mod outcome;
pub mod plan;
pub mod setting;
pub mod workload;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use allocbench::run::Subject;
use experiment::{Context, Experiment};
use measure::placement::{Regime, RunPlacement};
use measure::rng::SplitMix64;
use measure::{Classified, FsRoot};

use crate::journal::{Changes, Restored};
use crate::judge::FigureInfo;
use crate::outcome::{
    AbOutcome, AbRun, Calibration, Method, RestoreRun, RoundValue, RunRecord, Sides, Stop,
    CLOCK_STEP,
};
use crate::plan::Side;
use crate::setting::{Arm, Machine, Setting};
use crate::workload::{Launch, Workload};

/// What can go wrong; [`measure::Usage::is_usage`] says what the user can fix (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum AbError {
    /// A setting, a workload or an option the machine or the command line cannot take.
    #[error("{0}")]
    Usage(String),
    /// The kernel refused a value when it was written.
    #[error("{setting}: writing {path} failed: {why}")]
    Setting { setting: String, path: PathBuf, why: String },
    /// The journal could not be written or read.
    #[error("settings journal {path}: {why}")]
    Journal { path: PathBuf, why: String },
    /// A value could not be put back.
    #[error("could not put back {failed}{}", match journal {
        Some(p) => format!("; the originals stay in {}: run `platscope ab --restore`", p.display()),
        None => String::new(),
    })]
    Restore { failed: String, journal: Option<PathBuf> },
    /// The workload failed or could not be measured.
    #[error("{0}")]
    Workload(String),
}

impl measure::Usage for AbError {
    fn is_usage(&self) -> bool {
        matches!(self, AbError::Usage(_) | AbError::Setting { .. })
    }
}

/// `--precision`: `2%` or `0.02`.
fn parse_precision(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let v = match t.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().map(|p| p / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("'{text}' is not a fraction or a percentage (2% or 0.02)"))?;
    if v.is_finite() && v > 0.0 && v < 1.0 {
        Ok(v)
    } else {
        Err(format!("'{text}' must be above 0 and below 100%"))
    }
}

/// `--max-time`: seconds, or with `s`, `m` or `h`.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, scale) = match t.char_indices().last() {
        Some((i, 's')) => (&t[..i], 1.0),
        Some((i, 'm')) => (&t[..i], 60.0),
        Some((i, 'h')) => (&t[..i], 3600.0),
        _ => (t, 1.0),
    };
    let v: f64 =
        number.trim().parse().map_err(|_| format!("'{text}' is not a duration (90s, 10m, 1h)"))?;
    Duration::try_from_secs_f64(v * scale)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("'{text}' is not a positive duration"))
}

// The arguments of `ab` (a doc comment here would replace `Ab::ABOUT`).
#[derive(Debug, clap::Args)]
pub struct AbArgs {
    /// Side A's settings: thp=never|madvise|always, thp-defrag=…, numa-balancing=0|1,
    /// numa=interleave:all|membind:0|preferred:0|localalloc|cpunodebind:1|physcpubind:0-3 (the
    /// workload only), alloc=glibc|jemalloc|tcmalloc|mimalloc|tbb|glibc:arena_max=2,
    /// sysctl:NAME=VALUE, sysfs:PATH=VALUE, governor=NAME.
    #[arg(long = "a", value_name = "SETTING", num_args = 1.., required_unless_present = "restore")]
    pub a: Vec<String>,
    /// Side B's settings, in the same words. A setting only one side names is left as found on
    /// the other.
    #[arg(long = "b", value_name = "SETTING", num_args = 1.., required_unless_present = "restore")]
    pub b: Vec<String>,
    /// A/B rounds, each running A once and B once in a random order.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(2..=100_000))]
    pub rounds: u64,
    /// Rounds of the A/A phase that measures the noise first.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(2..=10_000))]
    pub calibration_rounds: u64,
    /// Skip the A/A phase.
    #[arg(long)]
    pub no_calibrate: bool,
    /// Stop early once every figure's interval is within this of its ratio (2% or 0.02),
    /// looked at only after rounds 5, 10, 20, … and the last, each look at α / looks.
    #[arg(long, value_parser = parse_precision)]
    pub precision: Option<f64>,
    /// Start no round after this long (90s, 10m, 1h); the round under way finishes.
    #[arg(long, value_parser = parse_duration)]
    pub max_time: Option<Duration>,
    /// The seed of the rounds' order (printed with every A/B, to repeat one).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Put back what an A/B that did not finish had changed (its journal), and do nothing else.
    #[arg(long, conflicts_with_all = ["a", "b", "command"])]
    pub restore: bool,
    /// The workload: a measuring command (mem latency …, load …, compress …, alloc …), report
    /// …, or exec CMD… to time an outside command.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `platscope ab`.
#[derive(Debug)]
pub struct Ab;

impl Experiment for Ab {
    const PATH: &'static [&'static str] = &["ab"];
    const ABOUT: &'static str = "A/B of machine settings (THP, NUMA balancing, a memory policy \
                                 or allocator for the workload, any sysctl or sysfs file, the \
                                 governor) on a workload's headline figures: randomized \
                                 interleaved rounds after an A/A, verdicts with the ratio's \
                                 interval, every setting put back";
    const TINY: &'static [&'static str] = &[
        "--a",
        "numa=localalloc",
        "--b",
        "numa=localalloc",
        "--rounds",
        "2",
        "--calibration-rounds",
        "2",
        "--",
        "exec",
        "true",
    ];
    type Args = AbArgs;
    type Outcome = AbOutcome;

    fn run(args: &AbArgs, ctx: &mut Context<'_>) -> Result<AbOutcome, Classified> {
        if args.restore {
            return Ok(restore_command()?);
        }
        Ok(run_ab(args, ctx)?)
    }
}

/// `ab --restore`.
fn restore_command() -> Result<AbOutcome, AbError> {
    let path = journal::default_path().ok_or_else(|| {
        AbError::Usage(
            "no place for a settings journal (neither XDG_DATA_HOME nor HOME is set)".into(),
        )
    })?;
    Ok(AbOutcome::Restore(match journal::restore_pending(&path)? {
        Some((journal, restored)) => RestoreRun { journal: Some(journal), restored },
        None => RestoreRun { journal: None, restored: Vec::new() },
    }))
}

/// Everything one A/B needs while it runs.
struct Session<'a, 'c> {
    ctx: &'a Context<'c>,
    workload: &'a Workload,
    arms: [&'a Arm; 2],
    subjects: [Option<Subject>; 2],
    changes: &'a Changes,
    scratch: PathBuf,
    started: Instant,
    runs: Vec<RunRecord>,
    values: Vec<RoundValue>,
    calibration_values: Vec<RoundValue>,
    figures: Vec<FigureInfo>,
    area: Option<::chart::Area>,
    interrupted: bool,
    /// Runs started, for each run's own scratch store.
    launched: usize,
}

impl Session<'_, '_> {
    /// Runs one side once: sets it, records the clock and placement, runs the workload.
    fn run(&mut self, side: Side, round: usize, calibration: bool) -> Result<(), AbError> {
        let i = usize::from(!side.is_a());
        let arm = self.arms[i];
        self.changes.apply(&arm.writes)?;
        let topology = self.ctx.topology;
        let clock_ghz = measure::core_clock::measure_now().ghz;
        let cpus = workload::workload_cpus(&arm.placement, topology);
        let placement = match self.ctx.globals.placement_probe {
            Some(probe) if cpus.len() >= 2 => Some(match probe(&cpus, topology) {
                Ok(p) => RunPlacement::probed(cpus, Some(p), None),
                Err(why) => RunPlacement { cpus, failed: Some(why), ..RunPlacement::default() },
            }),
            _ => None,
        };
        let at = self.started.elapsed().as_secs_f64();
        self.launched += 1;
        let phase = if calibration { "A/A round" } else { "round" };
        let launch = Launch {
            workload: self.workload,
            placement: &arm.placement,
            subject: self.subjects[i].as_ref(),
            scratch: &self.scratch,
            tag: format!("run-{}", self.launched),
            registry: &self.ctx.globals.registry,
            what: format!("{}, {phase} {round}", side.name()),
        };
        let ran = workload::run(&launch)?;
        if ran.interrupted {
            self.interrupted = true;
            return Ok(());
        }
        if self.area.is_none() {
            self.area = ran.area;
        }
        for m in &ran.figures {
            if !self.figures.contains(&m.info) {
                self.figures.push(m.info.clone());
            }
            let value =
                RoundValue { round, arm: side, figure: m.info.figure.clone(), value: m.value, at };
            if calibration {
                self.calibration_values.push(value);
            } else {
                self.values.push(value);
            }
        }
        self.runs.push(RunRecord {
            round,
            arm: side,
            calibration,
            at,
            seconds: ran.wall_s,
            clock_ghz,
            clock_off: None,
            placement,
            regime: None,
            preload: ran.preload,
        });
        Ok(())
    }

    fn stop_now(&self) -> bool {
        self.interrupted || measure::stop::requested()
    }
}

/// A seed from the clock and the pid, when none is given.
fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    SplitMix64::new(nanos ^ u64::from(std::process::id()) << 32).next_u64()
}

fn run_ab(args: &AbArgs, ctx: &mut Context<'_>) -> Result<AbOutcome, AbError> {
    let parse =
        |texts: &[String]| texts.iter().map(|t| Setting::parse(t)).collect::<Result<Vec<_>, _>>();
    let (a, b) = (parse(&args.a)?, parse(&args.b)?);
    let workload = Workload::parse(&args.command, &ctx.globals.registry)?;
    let libraries = if a.iter().chain(&b).any(|s| matches!(s, Setting::Alloc { .. })) {
        allocbench::allocator::ldconfig_cache()
    } else {
        Vec::new()
    };
    let root = FsRoot::live();
    let machine = Machine { root: &root, topology: ctx.topology, libraries: &libraries };
    let arm_a = setting::plan_arm(&a, machine)?;
    let arm_b = setting::plan_arm(&b, machine)?;
    let writes: Vec<&setting::Write> = arm_a.writes.iter().chain(&arm_b.writes).collect();
    let owned: Vec<setting::Write> = writes.iter().map(|w| (*w).clone()).collect();
    setting::check_writable(&owned)?;
    let journal_path = journal::default_path();
    // A pending journal means the machine is not as its owner left it: not a place to measure.
    if let Some(path) = &journal_path {
        if let Some(pending) = journal::read(path)? {
            if pending.owner_alive() {
                return Err(AbError::Usage(format!(
                    "another `platscope ab` (pid {}) is changing {}; wait for it to end",
                    pending.pid,
                    pending.settings()
                )));
            }
            return Err(AbError::Usage(format!(
                "a settings journal is pending ({}: {}): run `platscope ab --restore` first",
                path.display(),
                pending.settings()
            )));
        }
    }
    let subjects =
        [&arm_a, &arm_b].map(|arm| arm.allocator.as_ref().map(|al| Subject::new(al, &libraries)));
    let scratch = workload::scratch_dir()?;
    let seed = args.seed.unwrap_or_else(fresh_seed);
    let rounds = usize::try_from(args.rounds).unwrap_or(usize::MAX);
    let looks = plan::looks(rounds, args.precision.is_some());

    let started = measure::time::utc_now_rfc3339();
    // From here on every value is journalled and put back on every way out.
    let mut changes = Changes::begin(&writes, journal_path.as_deref())?;
    let found: BTreeMap<String, String> =
        changes.originals().iter().map(|o| (o.setting.clone(), o.value.clone())).collect();
    let mut session = Session {
        ctx,
        workload: &workload,
        arms: [&arm_a, &arm_b],
        subjects,
        changes: &changes,
        scratch: scratch.path().to_path_buf(),
        started: Instant::now(),
        runs: Vec::new(),
        values: Vec::new(),
        calibration_values: Vec::new(),
        figures: Vec::new(),
        area: None,
        interrupted: false,
        launched: 0,
    };
    let mut rng = SplitMix64::new(seed);
    let measured = measure_all(&mut session, args, &mut rng, &looks);
    let Session { runs, values, calibration_values, figures, area, interrupted, .. } = session;
    let restored = changes.restore();
    let (rounds_run, looked_at, stopped) = match measured {
        Ok(m) => m,
        Err(e) => {
            return Err(match restored {
                Err(r) => AbError::Workload(format!("{e}; and {r}")),
                Ok(_) => match e {
                    AbError::Usage(_) | AbError::Setting { .. } => {
                        AbError::Usage(format!("{e}; every setting was put back"))
                    }
                    AbError::Workload(m) => {
                        AbError::Workload(format!("{m}; every setting was put back"))
                    }
                    other => other,
                },
            })
        }
    };
    let (restored_settings, restore_failed): (Vec<Restored>, Option<String>) = match restored {
        Ok(r) => (r, None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    let interrupted = interrupted || measure::stop::requested();
    let stopped = if interrupted { Stop::Interrupted } else { stopped };
    let series = Session::series_of(&figures, &values, Side::A, Side::B);
    let verdicts = judge::judge(&series, looks.len());
    let calibration = if args.no_calibrate {
        Calibration::default()
    } else {
        let pairs = Session::series_of(&figures, &calibration_values, Side::A1, Side::A2);
        let figures_cal = judge::calibrate(&pairs, rounds, looks.len());
        let spread = figures_cal
            .iter()
            .map(|f| f.spread)
            .filter(|s| s.is_finite())
            .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))));
        Calibration {
            rounds: calibration_values.iter().map(|v| v.round).max().unwrap_or(0),
            spread,
            figures: figures_cal,
            values: calibration_values,
        }
    };
    let mut runs = runs;
    let (notes, usual_placement) = label_regimes(&mut runs);
    let run = AbRun {
        settings: Sides { a: arm_a.as_map(), b: arm_b.as_map() },
        found,
        workload: workload.clone(),
        started,
        rounds: values,
        runs,
        calibration,
        verdicts,
        method: Method {
            seed,
            rounds_planned: rounds,
            rounds_run,
            looks,
            looked_at,
            precision: args.precision,
            max_time_s: args.max_time.map(|d| d.as_secs_f64()),
            stopped,
        },
        restored: restore_failed.is_none(),
        restored_settings,
        restore_failed,
        notes,
        usual_placement,
        interrupted,
        area: area.unwrap_or(::chart::Area::Cpu),
    };
    drop(scratch);
    Ok(AbOutcome::Run(Box::new(run)))
}

impl Session<'_, '_> {
    /// Each figure with its values on sides `x` and `y`.
    fn series_of(
        figures: &[FigureInfo],
        values: &[RoundValue],
        x: Side,
        y: Side,
    ) -> Vec<(FigureInfo, Vec<f64>, Vec<f64>)> {
        let of = |f: &FigureInfo, side: Side| -> Vec<f64> {
            values
                .iter()
                .filter(|v| v.figure == f.figure && v.arm == side)
                .map(|v| v.value)
                .collect()
        };
        figures.iter().map(|f| (f.clone(), of(f, x), of(f, y))).collect()
    }
}

/// The A/A phase and the A/B rounds: (rounds run, looks taken, why it stopped).
fn measure_all(
    s: &mut Session<'_, '_>,
    args: &AbArgs,
    rng: &mut SplitMix64,
    looks: &[usize],
) -> Result<(usize, Vec<usize>, Stop), AbError> {
    // Both sides set once before anything is measured: a value the kernel refuses ends the
    // A/B here, with nothing measured and everything put back.
    s.changes.apply(&s.arms[1].writes)?;
    s.changes.apply(&s.arms[0].writes)?;
    if !args.no_calibrate {
        let rounds = usize::try_from(args.calibration_rounds).unwrap_or(usize::MAX);
        for (r, pair) in plan::interleaved(rng, rounds, Side::A1, Side::A2).into_iter().enumerate()
        {
            for side in pair {
                if s.stop_now() {
                    return Ok((0, Vec::new(), Stop::Interrupted));
                }
                s.run(side, r + 1, true)?;
            }
        }
    }
    let rounds = looks.last().copied().unwrap_or(0);
    let mut looked_at = Vec::new();
    let started = Instant::now();
    let mut done = 0;
    for (r, pair) in plan::interleaved(rng, rounds, Side::A, Side::B).into_iter().enumerate() {
        if args.max_time.is_some_and(|max| started.elapsed() >= max) {
            return Ok((done, looked_at, Stop::MaxTime));
        }
        for side in pair {
            if s.stop_now() {
                return Ok((done, looked_at, Stop::Interrupted));
            }
            s.run(side, r + 1, false)?;
        }
        if s.stop_now() {
            return Ok((done, looked_at, Stop::Interrupted));
        }
        done = r + 1;
        if let (Some(precision), true) = (args.precision, looks.contains(&done)) {
            looked_at.push(done);
            let series = Session::series_of(&s.figures, &s.values, Side::A, Side::B);
            let verdicts = judge::judge(&series, looks.len());
            if done < rounds && judge::precise_enough(&verdicts, precision) {
                return Ok((done, looked_at, Stop::Precision));
            }
        }
    }
    if looked_at.last() != Some(&done) {
        looked_at.push(done);
    }
    Ok((done, looked_at, Stop::Rounds))
}

/// Labels each run's placement regime against the A/B's other runs and each run's clock
/// against their median. When the placement changed: the placement most runs were taken in,
/// and notes for the reader (how many runs in each, and where the probes contradict the
/// topology).
fn label_regimes(runs: &mut [RunRecord]) -> (Vec<String>, Option<Regime>) {
    let steps: Vec<(String, RunPlacement)> = runs
        .iter()
        .map(|r| {
            let phase = if r.calibration { "A/A round" } else { "round" };
            let label = format!("{} {phase} {}", r.arm.name(), r.round);
            (label, r.placement.clone().unwrap_or_default())
        })
        .collect();
    let summary = measure::placement::classify(&steps);
    for (run, step) in runs.iter_mut().zip(&summary.steps) {
        if run.placement.is_some() {
            run.regime = Some(step.regime);
        }
    }
    let clocks: Vec<f64> = runs.iter().filter_map(|r| r.clock_ghz).collect();
    let median = measure::stats::finite_median(&clocks);
    if median.is_finite() && median > 0.0 {
        for run in runs.iter_mut() {
            run.clock_off =
                run.clock_ghz.map(|g| g / median - 1.0).filter(|off| off.abs() > CLOCK_STEP);
        }
    }
    if !summary.changed {
        return (summary.notes, None);
    }
    let regimes = [Regime::Near, Regime::Far, Regime::Moved];
    let count = |r: Regime| runs.iter().filter(|x| x.regime == Some(r)).count();
    let usual = regimes.into_iter().max_by_key(|&r| (count(r), r == Regime::Near));
    let groups: Vec<String> = regimes
        .into_iter()
        .filter(|&r| count(r) > 0)
        .map(|r| {
            let trips: Vec<f64> = runs
                .iter()
                .filter(|x| x.regime == Some(r))
                .filter_map(|x| x.placement.as_ref())
                .flat_map(|p| {
                    p.probes().flat_map(|probe| probe.pairs.iter().map(|q| q.round_trip_ns))
                })
                .filter(|ns| ns.is_finite())
                .collect();
            let lo = trips.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = trips.iter().copied().fold(0.0, f64::max);
            format!("{} {} ({lo:.0}–{hi:.0} ns)", count(r), r.name())
        })
        .collect();
    let mut notes = vec![format!(
        "The placement of the CPUs changed during the A/B: a cache line's round trip between          the same CPUs moved by {}× or more between probes (a hypervisor moving vCPUs does          this). Runs: {}. Those outside the usual placement ({}) are marked; the random order          spreads such a change over both sides.",
        measure::placement::FAR_FACTOR,
        groups.join(", "),
        usual.map_or("none", Regime::name)
    )];
    // The contradictions with the topology; the list of every run's placement is ours above.
    notes.extend(summary.notes.into_iter().skip(1));
    (notes, usual)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse_in_their_usual_forms() {
        assert_eq!(parse_precision("2%").unwrap(), 0.02);
        assert_eq!(parse_precision("0.05").unwrap(), 0.05);
        assert!(parse_precision("0").is_err() && parse_precision("150%").is_err());
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_duration("1.5h").unwrap(), Duration::from_secs(5400));
        assert!(parse_duration("soon").is_err() && parse_duration("0s").is_err());
    }

    #[test]
    fn runs_in_another_placement_or_clock_are_labelled() {
        use measure::placement::{PairProbe, Probe};
        let probe = |ns| Probe { pairs: vec![PairProbe::new(0, 1, "same L3", true, ns)] };
        let record = |round, ns, ghz| RunRecord {
            round,
            arm: Side::A,
            calibration: false,
            at: 0.0,
            seconds: 1.0,
            clock_ghz: Some(ghz),
            clock_off: None,
            placement: Some(RunPlacement::probed(vec![0, 1], Some(probe(ns)), None)),
            regime: None,
            preload: None,
        };
        let mut runs = vec![
            record(1, 80.0, 3.0),
            record(2, 85.0, 3.0),
            record(3, 380.0, 2.6),
            record(4, 82.0, 3.01),
        ];
        let (notes, usual) = label_regimes(&mut runs);
        assert_eq!(usual, Some(Regime::Near));
        assert!(notes[0].contains("Runs: 3 near (80–85 ns), 1 far (380–380 ns)"), "{notes:?}");
        let regimes: Vec<Option<Regime>> = runs.iter().map(|r| r.regime).collect();
        assert_eq!(
            regimes,
            [Some(Regime::Near), Some(Regime::Near), Some(Regime::Far), Some(Regime::Near)]
        );
        assert_eq!(runs[2].other_regime(usual).as_deref(), Some("placement far, clock −13%"));
        assert_eq!(runs[0].other_regime(usual), None);
        // Most runs far: the near ones are the odd ones out.
        let mut mostly_far =
            vec![record(1, 80.0, 3.0), record(2, 380.0, 3.0), record(3, 390.0, 3.0)];
        let (_, usual) = label_regimes(&mut mostly_far);
        assert_eq!(usual, Some(Regime::Far));
        assert_eq!(mostly_far[0].other_regime(usual).as_deref(), Some("placement near"));
        // One placement throughout: nothing said.
        let mut quiet = vec![record(1, 80.0, 3.0), record(2, 84.0, 3.0)];
        assert_eq!(label_regimes(&mut quiet), (Vec::new(), None));
    }
}
