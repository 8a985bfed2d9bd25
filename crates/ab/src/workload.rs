//! The workload an A/B measures, run once per side per round as a fresh process.
//!
//! - A **measuring command** of this platscope (`mem latency --size 1GiB --page thp`, `load …`,
//!   `compress …`, `alloc …`, `report --sections memory`): it runs as this binary with its own
//!   arguments and stores into a scratch store of its own; its figures are the headline
//!   figures its stored run draws (each [`chart::Headline`] names the stored metric behind it,
//!   as the report's cards and `--baseline` use them), or every stored metric when it draws
//!   none. A `report` gives its page's headline figures.
//! - **`exec CMD…`**: an outside command timed as a whole: its wall time and its CPU time
//!   (user + system of it and the children it waited for, from `wait4`).
//!
//! A side's memory policy and CPUs are set on the thread that starts the workload, which the
//! child inherits (numactl does the same with `exec`): the workload runs under them and
//! nothing else does. A side's allocator is preloaded (`LD_PRELOAD`, or `GLIBC_TUNABLES` for
//! glibc's own) and verified in the measured process's maps while it runs, as the allocator
//! bake-off verifies its runs ([`allocbench::run::Subject`]).

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use allocbench::procfs::Verdict as Preload;
use allocbench::run::{describe_status, last_line, timeval_s, wait_rusage, Subject};
use chart::Area;
use experiment::Registry;
use place::PlacementRequest;
use results::{ResultStore, SqliteStore, StoredRun};
use serde::{Deserialize, Serialize};

use crate::journal::CHILD_VARIABLE;
use crate::judge::FigureInfo;
use crate::AbError;

/// Global flags of platscope a workload must not carry: its results go to the A/B's scratch
/// store, and the A/B itself takes them.
const GLOBAL_FLAGS: &[&str] = &["--db", "--no-store", "--json", "--csv", "--html-out"];

/// What an A/B runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "argv", rename_all = "lowercase")]
pub enum Workload {
    /// A measuring command of this platscope, its arguments after `platscope`.
    Command(Vec<String>),
    /// An outside command (after `exec`).
    Exec(Vec<String>),
}

impl Workload {
    /// The command after `--`, checked: a platscope command that stores figures (its
    /// arguments parsed as its command line parses them), or `exec` and a program that can be
    /// run.
    pub fn parse(argv: &[String], registry: &Registry) -> Result<Self, AbError> {
        let usage = |m: String| AbError::Usage(m);
        let Some(first) = argv.first() else {
            return Err(usage(
                "give the workload after -- (a measuring command such as `mem latency --size \
                 1GiB`, `report --sections memory`, or `exec CMD…`)"
                    .into(),
            ));
        };
        if first == "exec" {
            let program =
                argv.get(1).ok_or_else(|| usage("exec: give the command to run".into()))?;
            if !runnable(program) {
                return Err(usage(format!(
                    "exec: cannot run '{program}': not found or not executable"
                )));
            }
            return Ok(Workload::Exec(argv[1..].to_vec()));
        }
        if let Some(flag) = argv.iter().find(|a| {
            GLOBAL_FLAGS.iter().any(|g| a.as_str() == *g || a.starts_with(&format!("{g}=")))
        }) {
            return Err(usage(format!(
                "the workload's {flag}: its runs go to the A/B's own scratch store; give --db, \
                 --no-store, --json or --html-out to ab itself"
            )));
        }
        let entry = registry
            .entries
            .iter()
            .filter(|e| {
                let path = e.path();
                argv.len() >= path.len() && path.iter().zip(argv).all(|(p, a)| p == a)
            })
            .max_by_key(|e| e.path().len());
        let not_a_workload = |why: &str| {
            usage(format!(
                "`{}` {why}; give a measuring command (mem latency …, load …, compress …, alloc \
                 …), report …, or exec CMD…",
                argv.join(" ")
            ))
        };
        let Some(entry) = entry else { return Err(not_a_workload("is not a platscope command")) };
        let path = entry.path();
        if path == ["ab"] {
            return Err(not_a_workload("is an A/B itself"));
        }
        if entry.kinds().is_empty() && path != ["report"] {
            return Err(not_a_workload("stores no figures"));
        }
        let rest = &argv[path.len()..];
        entry.command().no_binary_name(true).try_get_matches_from(rest).map_err(|e| {
            let rendered = e.render().to_string();
            let line = rendered.lines().next().unwrap_or("").trim();
            usage(format!("{}: {}", path.join(" "), line.strip_prefix("error: ").unwrap_or(line)))
        })?;
        Ok(Workload::Command(argv.to_vec()))
    }

    /// `mem latency --size 1GiB`, `exec make -j2`.
    pub fn describe(&self) -> String {
        match self {
            Workload::Command(argv) => argv.join(" "),
            Workload::Exec(argv) => format!("exec {}", argv.join(" ")),
        }
    }

    /// The argument vector of one run: the program and its arguments.
    fn command_line(&self, db: &Path, scratch: &Path) -> Result<Vec<String>, AbError> {
        Ok(match self {
            Workload::Exec(argv) => argv.clone(),
            Workload::Command(argv) => {
                let exe = std::env::current_exe()
                    .map_err(|e| AbError::Workload(format!("finding this program: {e}")))?;
                let mut line = vec![exe.display().to_string()];
                line.extend(argv.iter().cloned());
                line.extend(["--db".to_string(), db.display().to_string()]);
                // A report writes its page where it is told: into the scratch directory.
                if argv.first().is_some_and(|a| a == "report") && !argv.iter().any(|a| a == "--out")
                {
                    line.extend(["--out".to_string(), scratch.display().to_string()]);
                }
                line
            }
        })
    }
}

/// Whether `program` names something that can be run: a path to an executable, or a name found
/// on `PATH`.
fn runnable(program: &str) -> bool {
    if program.contains('/') {
        return allocbench::run::is_executable(Path::new(program));
    }
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| allocbench::run::is_executable(&dir.join(program)))
    })
}

/// One figure of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    pub info: FigureInfo,
    pub value: f64,
}

/// What one run gave.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ran {
    pub figures: Vec<Measured>,
    pub wall_s: f64,
    /// The allocator preload as found in the measured process.
    pub preload: Option<String>,
    /// Stopped by Ctrl-C or SIGTERM before it finished.
    pub interrupted: bool,
    /// Where on a report page what it measured belongs (its own sections' area).
    pub area: Option<Area>,
}

/// How to start one run.
#[derive(Debug)]
pub struct Launch<'a> {
    pub workload: &'a Workload,
    pub placement: &'a PlacementRequest,
    /// The allocator to preload and verify, with what it is checked against.
    pub subject: Option<&'a Subject>,
    /// The A/B's scratch directory.
    pub scratch: &'a Path,
    /// A name for this run's files (`run-7`).
    pub tag: String,
    pub registry: &'a Registry,
    /// The run in words for errors (`A, round 3`).
    pub what: String,
}

/// Runs the workload once as `launch` says.
pub fn run(launch: &Launch<'_>) -> Result<Ran, AbError> {
    let db = launch.scratch.join(format!("{}.db", launch.tag));
    let line = launch.workload.command_line(&db, launch.scratch)?;
    let (program, args) =
        line.split_first().ok_or_else(|| AbError::Workload("an empty command".into()))?;
    let mut cmd = Command::new(program);
    cmd.args(args).env(CHILD_VARIABLE, "1");
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if let Some(subject) = launch.subject {
        subject.allocator.apply(&mut cmd);
    }
    let ended = std::thread::scope(|s| {
        s.spawn(|| start_and_wait(cmd, launch.placement, launch.subject))
            .join()
            .unwrap_or_else(|_| Err(AbError::Workload("the thread running it panicked".into())))
    })?;
    let mut ran = Ran { wall_s: ended.wall_s, interrupted: ended.interrupted, ..Ran::default() };
    if ended.interrupted {
        return Ok(ran);
    }
    let shown = launch.workload.describe();
    if !(libc::WIFEXITED(ended.status) && libc::WEXITSTATUS(ended.status) == 0) {
        let tail = if ended.stderr.trim().is_empty() { &ended.stdout } else { &ended.stderr };
        return Err(AbError::Workload(format!(
            "`{shown}` ({}) {}: {}",
            launch.what,
            describe_status(ended.status),
            last_line(tail)
        )));
    }
    if let Some(subject) = launch.subject {
        match &ended.preload {
            Some(Preload::Verified(v)) => ran.preload = Some(v.clone()),
            Some(Preload::Refused(why)) => {
                return Err(AbError::Workload(format!(
                    "alloc={} ({}): {why}",
                    subject.allocator.name, launch.what
                )))
            }
            None => {
                return Err(AbError::Workload(format!(
                    "alloc={} ({}): the workload ended before its maps could be read; give it \
                     more work",
                    subject.allocator.name, launch.what
                )))
            }
        }
    }
    (ran.figures, ran.area) = match launch.workload {
        Workload::Exec(_) => (
            vec![
                Measured {
                    info: FigureInfo {
                        figure: "wall time".into(),
                        metric: "wall_time".into(),
                        unit: "s".into(),
                    },
                    value: ended.wall_s,
                },
                Measured {
                    info: FigureInfo {
                        figure: "CPU time".into(),
                        metric: "cpu_time".into(),
                        unit: "s".into(),
                    },
                    value: ended.cpu_s,
                },
            ],
            Some(Area::Cpu),
        ),
        Workload::Command(_) => figures_of_store(&db, launch.registry)
            .map_err(|why| AbError::Workload(format!("`{shown}` ({}): {why}", launch.what)))?,
    };
    if ran.figures.is_empty() {
        return Err(AbError::Workload(format!(
            "`{shown}` stored no figure to compare (no headline figure, no metric)"
        )));
    }
    Ok(ran)
}

/// A finished child.
struct Ended {
    status: i32,
    wall_s: f64,
    cpu_s: f64,
    stdout: String,
    stderr: String,
    preload: Option<Preload>,
    interrupted: bool,
}

/// How long an interrupted workload is given to end after SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(5);

/// On its own thread: sets this thread's memory policy and CPUs (inherited by the child),
/// starts the command, verifies its preload while it runs, passes a stop on as SIGTERM, and
/// reaps it with its resource usage.
fn start_and_wait(
    mut cmd: Command,
    placement: &PlacementRequest,
    subject: Option<&Subject>,
) -> Result<Ended, AbError> {
    let place = |e: place::PlaceError| AbError::Workload(format!("placing the workload: {e}"));
    placement.policy.apply_to_thread().map_err(place)?;
    if let Some(cpus) = &placement.cpus {
        place::pin::pin_current_thread(cpus).map_err(place)?;
    }
    // SAFETY: the closure runs in the child between fork and exec and only calls prctl, which
    // is async-signal-safe: the kernel kills the workload if this thread dies first (a
    // `kill -9` of the A/B), so no run outlives it.
    unsafe {
        use std::os::unix::process::CommandExt as _;
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| AbError::Workload(format!("starting {:?}: {e}", cmd.get_program())))?;
    let pid = child.id();
    let read_all = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = read_all(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = read_all(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let mut preload: Option<Preload> = None;
    let mut stopped_at: Option<Instant> = None;
    let (status, usage) = loop {
        match wait_rusage(pid, true) {
            Ok(Some(done)) => break done,
            Ok(None) => {}
            Err(e) => return Err(AbError::Workload(e.to_string())),
        }
        if measure::stop::requested() && stopped_at.is_none() {
            // SAFETY: kill(2) on our own child, not yet reaped.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
            stopped_at = Some(Instant::now());
        }
        if stopped_at.is_some_and(|at| at.elapsed() > GRACE) {
            // SAFETY: as above.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        if let (Some(subject), None | Some(Preload::Refused(_))) = (subject, &preload) {
            // Right after exec the loader may still be mapping the preload: look until seen.
            if let Ok(found) = subject.verify(pid) {
                preload = Some(found);
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let wall_s = started.elapsed().as_secs_f64();
    Ok(Ended {
        status,
        wall_s,
        cpu_s: timeval_s(usage.ru_utime) + timeval_s(usage.ru_stime),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        preload,
        interrupted: stopped_at.is_some(),
    })
}

/// The headline figures of what a workload stored in the scratch store `db`, and the page
/// area they belong to: a report's page figures; else each stored run's headlines that name a
/// stored metric (with that metric's median); else every stored metric by its key.
pub fn figures_of_store(
    db: &Path,
    registry: &Registry,
) -> Result<(Vec<Measured>, Option<Area>), String> {
    let store = SqliteStore::open_read_only(db).map_err(|e| e.to_string())?;
    let mut runs: Vec<StoredRun> = Vec::new();
    for summary in store.list(usize::MAX >> 1).map_err(|e| e.to_string())?.into_iter().rev() {
        runs.push(store.run(summary.id).map_err(|e| e.to_string())?);
    }
    if let Some(report) = runs.iter().find(|r| r.command == suite::characterise::REPORT_COMMAND) {
        let figures =
            suite::figures::of_report(&store, report.id, registry).map_err(|e| e.to_string())?;
        let measured = figures
            .figures
            .into_iter()
            .map(|f| Measured {
                info: FigureInfo { figure: f.name, metric: f.metric, unit: f.unit },
                value: f.median,
            })
            .collect();
        return Ok((measured, Some(Area::Machine)));
    }
    let mut out: Vec<Measured> = Vec::new();
    let mut area = None;
    for run in &runs {
        let (shown, topology) = registry.read_back(run).map_err(|e| e.to_string())?;
        for part in shown.parts(&topology) {
            area.get_or_insert(part.area);
            for h in part.headlines {
                let Some(key) = h.metric else { continue };
                let Some(m) = run.metrics.iter().find(|m| m.key() == key) else { continue };
                let info = FigureInfo { figure: h.name, metric: key, unit: m.unit.clone() };
                push_new(&mut out, info, m.median);
            }
        }
    }
    if out.is_empty() {
        for m in runs.iter().flat_map(|r| &r.metrics) {
            let key = m.key();
            let info = FigureInfo { figure: key.clone(), metric: key, unit: m.unit.clone() };
            push_new(&mut out, info, m.median);
        }
    }
    Ok((out, area))
}

/// Adds a figure unless one of that name and metric is there already (two runs of one kind
/// in one round keep the first).
fn push_new(out: &mut Vec<Measured>, info: FigureInfo, value: f64) {
    if value.is_finite() && !out.iter().any(|m| m.info == info) {
        out.push(Measured { info, value });
    }
}

/// The scratch directory of one A/B: every run's store, removed at the end.
pub fn scratch_dir() -> Result<tempfile::TempDir, AbError> {
    tempfile::Builder::new()
        .prefix("platscope-ab-")
        .tempdir()
        .map_err(|e| AbError::Workload(format!("making a scratch directory: {e}")))
}

/// Where the workload's CPUs are, for the placement probe: the side's CPUs, else those this
/// process may run on.
pub fn workload_cpus(placement: &PlacementRequest, topology: &topo::Topology) -> Vec<u32> {
    placement.allowed_cpus(topology).unwrap_or_default()
}
