//! The Silly Little Benchmark kit under its original names, busybox-style: `create_sem`,
//! `memhammer PAGES LOOPS`, `trigger` and `cpu_bind PID CPU` — each takes its arguments (after
//! `argv[0]`) and prints what the original printed. Positional arguments without options, as
//! the originals took them, plus `--help`; the scripts of the SLB's articles run unchanged.
//!
//! `thread_read TIMES FROM TO` (the cross-node read test, [`crate::thread_read`]) is here too:
//! the measurement stays in its own module, and the command line and the printing around it sit
//! with the other original tools.

use std::ffi::OsString;
use std::fmt;

use clap::Parser;
use experiment::output::emit;
use measure::args::parse_count;
use measure::{stop, Classified, UsageError};
use place::{lists, pin, Arena, ArenaSpec, MemPolicy, PageSize, PlaceError};
use topo::Topology;

use crate::kit::{self, SlbSemaphore};
use crate::render::bandwidth::thread_read_summary;
use crate::shared::SharedRegion;
use crate::slb_shared::{hammer_shared, LockKind, SharedLayout};
use crate::{slb, BenchError, PAGE};

const CREATE_SEM_HELP: &str = "\
usage: create_sem
Creates (or re-arms) the SLB semaphore that memhammer processes wait on and trigger opens.
Its System V IPC key is 0x534c4221 unless PLATSCOPE_SLB_KEY gives another. It also removes
the shared memory segment `memhammer --shared` left at that key, so a round starts clean.
";

const MEMHAMMER_HELP: &str = "\
usage: memhammer [--shared [--lock spin|ticket|mutex|none] [--counters N]] PAGES LOOPS
Allocates PAGES x 4 KiB under the memory policy and CPU affinity it inherits (numactl,
cpu_bind), initializes all of it, waits on the SLB semaphore (run create_sem first) until
trigger, then performs PAGES x LOOPS 8-byte stores to pseudo-random pages, each within the
page's first 64 bytes, and prints:
  Total ops N Avg nsec/op X gettimeofday usec N TPUT ops/sec X
(the elapsed time is measured with the monotonic clock). Ctrl-C ends the stores early and
prints the line for those done.
--shared: every memhammer of the round stores into one System V shared segment at the SLB's
IPC key (the first to come creates it under its inherited policy; all must give the same PAGES
and --counters). --lock takes a lock word in that segment around every store and adds one to
a shared counter (of --counters, default 1) under it; with a lock a second line follows:
  Lock KIND acquisitions N hand-offs N hand-offs/sec X
";

const TRIGGER_HELP: &str = "\
usage: trigger
Releases every memhammer waiting on the SLB semaphore at once. Waits up to 5 s for the first
memhammer to show up and until none is still allocating its memory.
";

const CPU_BIND_HELP: &str = "\
usage: cpu_bind PID CPU
Binds process PID (all its threads) to CPU; children it starts later inherit the binding, so
`cpu_bind $$ 7` binds the shell and every command it runs after. CPU may also be a list in
numactl's syntax (0-3,8).
";

/// A tool's command line: run it, or show its help.
#[derive(Debug, PartialEq, Eq)]
enum Parsed<T> {
    Run(T),
    Help,
}

/// Positional arguments as text; `--help`/`-h` anywhere asks for help; any other option is
/// refused, since the originals took none.
fn positional(
    tool: &str,
    args: &[OsString],
    usage: &str,
) -> Result<Parsed<Vec<String>>, UsageError> {
    let mut out = Vec::with_capacity(args.len());
    for arg in args {
        let text = arg.to_str().ok_or_else(|| {
            UsageError::Message(format!("argument {arg:?} is not valid UTF-8 ({usage})"))
        })?;
        if text == "--help" || text == "-h" {
            return Ok(Parsed::Help);
        }
        let numeric =
            text.strip_prefix('-').is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
        if text.starts_with('-') && text.len() > 1 && !numeric {
            return Err(UsageError::Message(format!(
                "{tool} takes no options, got {text:?} ({usage}; --help explains)"
            )));
        }
        out.push(text.to_string());
    }
    Ok(Parsed::Run(out))
}

fn usage_line(help: &str) -> &str {
    help.lines().next().unwrap_or(help)
}

fn no_arguments(tool: &str, args: &[OsString], help: &'static str) -> Result<bool, UsageError> {
    let usage = usage_line(help);
    match positional(tool, args, usage)? {
        Parsed::Help => Ok(false),
        Parsed::Run(a) if a.is_empty() => Ok(true),
        Parsed::Run(a) => Err(UsageError::Message(format!(
            "{tool} takes no arguments, got {} ({usage})",
            a.join(" ")
        ))),
    }
}

/// `create_sem`
pub fn create_sem(args: &[OsString]) -> Result<(), Classified> {
    if !no_arguments("create_sem", args, CREATE_SEM_HELP)? {
        return Ok(emit(CREATE_SEM_HELP)?);
    }
    let key = kit::key_from_env()?;
    SlbSemaphore::create(key)?;
    SharedRegion::remove_key(key)?;
    Ok(())
}

/// `trigger`
pub fn trigger(args: &[OsString]) -> Result<(), Classified> {
    if !no_arguments("trigger", args, TRIGGER_HELP)? {
        return Ok(emit(TRIGGER_HELP)?);
    }
    let key = kit::key_from_env()?;
    let sem = SlbSemaphore::open(key)?;
    sem.trigger(kit::ARRIVAL_PATIENCE)?;
    Ok(())
}

/// memhammer's validated arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hammer {
    pages: u64,
    loops: u64,
    /// PAGES × LOOPS.
    ops: u64,
    /// `--shared`: the lock and the counter count.
    shared: SharedOptions,
}

/// `--shared` with its lock and counter count.
type SharedOptions = Option<(LockKind, u64)>;

/// Takes memhammer's options (`--shared`, `--lock K`, `--counters N`, also as `--opt=value`)
/// out of `args`, leaving the positional ones.
fn memhammer_options(
    args: &[OsString],
    usage: &str,
) -> Result<(Vec<OsString>, SharedOptions), UsageError> {
    let (mut rest, mut shared, mut lock, mut counters) = (Vec::new(), false, None, None);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let text = arg.to_str().unwrap_or("");
        let (name, inline) = match text.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (text, None),
        };
        let mut value = |name: &str| -> Result<String, UsageError> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => {
                    it.next().and_then(|v| v.to_str()).map(str::to_string).ok_or_else(|| {
                        UsageError::Message(format!("{name} needs a value ({usage})"))
                    })
                }
            }
        };
        match name {
            "--shared" => shared = true,
            "--lock" => {
                let v = value("--lock")?;
                lock = Some(
                    LockKind::parse(&v)
                        .map_err(|e| UsageError::Message(format!("{e} ({usage})")))?,
                );
            }
            "--counters" => {
                let v = value("--counters")?;
                counters = Some(count("--counters", &v, usage)?);
            }
            _ => rest.push(arg.clone()),
        }
    }
    if !shared && (lock.is_some() || counters.is_some()) {
        return Err(UsageError::Message(format!(
            "--lock and --counters work on the shared segment: add --shared ({usage})"
        )));
    }
    Ok((rest, shared.then(|| (lock.unwrap_or(LockKind::None), counters.unwrap_or(1)))))
}

impl Hammer {
    fn bytes(self) -> u64 {
        self.pages * PAGE as u64 // pages < 2^32, so this cannot overflow
    }
}

fn count(name: &str, text: &str, usage: &str) -> Result<u64, UsageError> {
    parse_count(text).map_err(|why| UsageError::Message(format!("{name} {why} ({usage})")))
}

fn parse_memhammer(args: &[OsString]) -> Result<Parsed<Hammer>, UsageError> {
    let usage = usage_line(MEMHAMMER_HELP);
    let (args, shared) = memhammer_options(args, usage)?;
    let args = match positional("memhammer", &args, usage)? {
        Parsed::Help => return Ok(Parsed::Help),
        Parsed::Run(args) => args,
    };
    let [pages, loops] = args.as_slice() else {
        return Err(UsageError::Message(format!(
            "memhammer takes 2 arguments, got {} ({usage})",
            args.len()
        )));
    };
    let pages = count("PAGES", pages, usage)?;
    let loops = count("LOOPS", loops, usage)?;
    if pages >= 1 << 32 {
        return Err(UsageError::Message(format!(
            "PAGES {pages} is too large: at most 4294967295 pages of 4 KiB ({usage})"
        )));
    }
    let ops = pages.checked_mul(loops).ok_or_else(|| {
        UsageError::Message(format!(
            "PAGES x LOOPS ({pages} x {loops}) is more stores than a 64-bit count holds ({usage})"
        ))
    })?;
    if let Some((_, counters)) = shared {
        SharedLayout::new(pages, counters)
            .map_err(|e| UsageError::Message(format!("{e} ({usage})")))?;
    }
    Ok(Parsed::Run(Hammer { pages, loops, ops, shared }))
}

/// memhammer's memory: 4 KiB pages under whatever policy the process inherited, refused
/// before anything is allocated when the nodes that policy allows have not that much free.
fn hammer_arena_spec(hammer: Hammer, topology: &Topology) -> Result<ArenaSpec, PlaceError> {
    let spec =
        ArenaSpec { bytes: hammer.bytes(), policy: MemPolicy::Inherit, page: PageSize::Base };
    Arena::check_fits(&spec, topology)?;
    Ok(spec)
}

/// `memhammer PAGES LOOPS`
pub fn memhammer(args: &[OsString]) -> Result<(), Classified> {
    let hammer = match parse_memhammer(args)? {
        Parsed::Help => return Ok(emit(MEMHAMMER_HELP)?),
        Parsed::Run(h) => h,
    };
    let key = kit::key_from_env()?;
    let topology = detect()?;
    if let Some((lock, counters)) = hammer.shared {
        return memhammer_shared(hammer, lock, counters, key, &topology);
    }
    let spec = hammer_arena_spec(hammer, &topology)?;
    stop::install();
    // Announce ourselves before the (possibly long) allocation, so trigger waits for us.
    let sem = SlbSemaphore::open(key)?;
    sem.arrive()?;
    let mut arena = Arena::new(spec, &topology)?;
    arena.as_mut_slice().fill(0); // the original memset its whole buffer before waiting
                                  // Calibrate the measuring clock before the trigger, so it is not timed.
    crate::timers::cheapest_trustworthy_clock();
    sem.ready_and_wait()?;
    let seed = slb::worker_seed(0x51B, std::process::id() as usize);
    let done =
        slb::hammer(&mut arena, hammer.pages, hammer.ops, seed, &measure::progress::hidden())?;
    if done.ops == 0 {
        return Err(BenchError::Interrupted.into());
    }
    emit(&format!("{}\n", slb::memhammer_line(done.ops, done.elapsed_ns)))?;
    if done.ops < hammer.ops {
        measure::say!(
            "memhammer: interrupted after {} of {} stores; the line above covers those",
            done.ops,
            hammer.ops
        );
    }
    Ok(())
}

/// `memhammer --shared`: the round's shared segment at the SLB key, an optional lock.
fn memhammer_shared(
    hammer: Hammer,
    lock: LockKind,
    counters: u64,
    key: libc::key_t,
    topology: &Topology,
) -> Result<(), Classified> {
    let layout = SharedLayout::new(hammer.pages, counters)?;
    stop::install();
    let sem = SlbSemaphore::open(key)?;
    sem.arrive()?;
    let region = SharedRegion::keyed(key, layout.bytes(), &MemPolicy::Inherit, topology)?;
    let work = layout.work(&region)?;
    crate::timers::cheapest_trustworthy_clock();
    sem.ready_and_wait()?;
    // Everyone of the round has attached (trigger waited for them): the segment can go once
    // the last one detaches.
    region.mark_removed();
    let me = u64::from(std::process::id());
    let seed = slb::worker_seed(0x51B, std::process::id() as usize);
    let progress = std::sync::atomic::AtomicU64::new(0);
    let done = hammer_shared(&work, lock, me, hammer.ops, seed, &progress, || {});
    if done.ops == 0 {
        return Err(BenchError::Interrupted.into());
    }
    let mut text = format!("{}\n", slb::memhammer_line(done.ops, done.elapsed_ns));
    if lock != LockKind::None {
        text.push_str(&format!(
            "Lock {} acquisitions {} hand-offs {} hand-offs/sec {:.1}\n",
            lock.name(),
            done.ops,
            done.handoffs,
            done.handoffs as f64 / (done.elapsed_ns.max(1) as f64 / 1e9)
        ));
    }
    emit(&text)?;
    if done.ops < hammer.ops {
        eprintln!(
            "memhammer: interrupted after {} of {} stores; the line above covers those",
            done.ops, hammer.ops
        );
    }
    Ok(())
}

/// cpu_bind's validated process id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pid(libc::pid_t);

impl fmt::Display for Pid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

fn parse_cpu_bind(args: &[OsString]) -> Result<Parsed<(Pid, String)>, UsageError> {
    let usage = usage_line(CPU_BIND_HELP);
    let args = match positional("cpu_bind", args, usage)? {
        Parsed::Help => return Ok(Parsed::Help),
        Parsed::Run(args) => args,
    };
    let [pid, cpu] = args.as_slice() else {
        return Err(UsageError::Message(format!(
            "cpu_bind takes 2 arguments, got {} ({usage})",
            args.len()
        )));
    };
    let pid = match pid.trim().parse::<libc::pid_t>() {
        Ok(p) if p > 0 => Pid(p),
        _ => {
            return Err(UsageError::Message(format!(
                "PID {pid:?} is not a process id (a whole number of at least 1, e.g. $$ for the \
                 shell) ({usage})"
            )))
        }
    };
    Ok(Parsed::Run((pid, cpu.clone())))
}

/// The thread ids of a process (`/proc/PID/task`), or `None` when there is no such process.
fn threads_of(pid: Pid) -> Option<Vec<libc::pid_t>> {
    match std::fs::read_dir(format!("/proc/{pid}/task")) {
        Ok(dir) => {
            let mut tids: Vec<libc::pid_t> =
                dir.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect();
            if tids.is_empty() {
                tids.push(pid.0);
            }
            Some(tids)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(_) => Some(vec![pid.0]), // /proc unreadable: bind the main thread as the original did
    }
}

fn no_such_process(pid: Pid) -> Classified {
    UsageError::Message(format!(
        "process {pid} does not exist (cpu_bind PID CPU; $$ is the shell's PID)"
    ))
    .into()
}

fn detect() -> Result<Topology, Classified> {
    Topology::detect().map_err(|e| Classified::runtime(format!("reading the topology: {e}")))
}

/// `cpu_bind PID CPU`
pub fn cpu_bind(args: &[OsString]) -> Result<(), Classified> {
    let (pid, cpu_text) = match parse_cpu_bind(args)? {
        Parsed::Help => return Ok(emit(CPU_BIND_HELP)?),
        Parsed::Run(a) => a,
    };
    let topology = detect()?;
    let cpus = lists::parse_cpus(&cpu_text, &topology)?;
    let Some(threads) = threads_of(pid) else { return Err(no_such_process(pid)) };
    for tid in threads {
        match pin::pin(tid, &cpus) {
            Ok(()) => {}
            // A thread that ended meanwhile needs no binding; the process itself must exist.
            Err(PlaceError::NoSuchProcess(_)) if tid != pid.0 => {}
            Err(PlaceError::NoSuchProcess(_)) => return Err(no_such_process(pid)),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// `thread_read TIMES FROM TO`, as the original program.
#[derive(Debug, Parser)]
#[command(
    name = "thread_read",
    about = "Read 256 MiB first-touched by CPU FROM from CPU TO, TIMES passes"
)]
struct ThreadReadArgs {
    /// Passes over the 256 MiB buffer.
    #[arg(value_parser = parse_count, allow_hyphen_values = true)]
    times: u64,
    /// CPU that allocates and first-touches the buffer.
    from: String,
    /// CPU that reads it.
    to: String,
}

/// The `thread_read` compat tool: its arguments after `argv[0]`; prints the original's lines.
pub fn thread_read(args: &[OsString]) -> Result<(), Classified> {
    let argv = std::iter::once(OsString::from("thread_read")).chain(args.iter().cloned());
    let args = match ThreadReadArgs::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) if matches!(e.kind(), clap::error::ErrorKind::DisplayHelp) => {
            let _ = e.print();
            return Ok(());
        }
        Err(e) => {
            let text = e.render().to_string();
            let first =
                text.lines().next().unwrap_or("bad arguments").trim_start_matches("error: ");
            return Err(UsageError::Message(format!(
                "thread_read: {first}; usage: thread_read TIMES FROM TO"
            ))
            .into());
        }
    };
    let topology = Topology::detect()
        .map_err(|e| Classified::runtime(format!("reading the topology: {e}")))?;
    let one_cpu = |text: &str| -> Result<u32, Classified> {
        match lists::parse_cpus(text, &topology)?.as_slice() {
            [cpu] => Ok(*cpu),
            _ => Err(UsageError::Message(format!("thread_read: {text:?} must be one CPU")).into()),
        }
    };
    let (from, to) = (one_cpu(&args.from)?, one_cpu(&args.to)?);
    stop::install();
    let result = crate::thread_read::run(args.times, from, to, &topology, |address| {
        let _ = emit(&format!("The address of source data is {address:#x}\n"));
    })?;
    emit(&format!("{}\n", result.time_cost_line()))?;
    Ok(emit(&thread_read_summary(&result))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::KitError;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    fn hammer_err(list: &[&str]) -> String {
        parse_memhammer(&args(list)).unwrap_err().to_string()
    }

    #[test]
    fn memhammer_takes_pages_and_loops() {
        assert_eq!(
            parse_memhammer(&args(&["262144", "6000"])).unwrap(),
            Parsed::Run(Hammer { pages: 262_144, loops: 6000, ops: 1_572_864_000, shared: None })
        );
        assert_eq!(
            parse_memhammer(&args(&["--shared", "--lock", "spin", "16", "--counters=4", "10"]))
                .unwrap(),
            Parsed::Run(Hammer {
                pages: 16,
                loops: 10,
                ops: 160,
                shared: Some((LockKind::Spin, 4))
            })
        );
        assert_eq!(
            parse_memhammer(&args(&["--shared", "1", "2"])).unwrap(),
            Parsed::Run(Hammer { pages: 1, loops: 2, ops: 2, shared: Some((LockKind::None, 1)) })
        );
        assert_eq!(parse_memhammer(&args(&["--help"])).unwrap(), Parsed::Help);
        assert_eq!(parse_memhammer(&args(&["1", "-h"])).unwrap(), Parsed::Help);
    }

    #[test]
    fn memhammer_bad_arguments_say_what_is_wrong() {
        let cases: &[(&[&str], &str)] = &[
            (&["0", "10"], "PAGES 0 is not allowed"),
            (&["10", "0"], "LOOPS 0 is not allowed"),
            (&["-5", "10"], "PAGES \"-5\" is negative"),
            (&["10", "-1"], "LOOPS \"-1\" is negative"),
            (&["abc", "10"], "PAGES \"abc\" is not a whole number"),
            (&["10", "1.5"], "LOOPS \"1.5\" is not a whole number"),
            (&["99999999999999999999", "1"], "is too large"),
            (&["4294967296", "1"], "PAGES 4294967296 is too large"),
            (&["4294967295", "4294967298"], "more stores than a 64-bit count holds"),
            (&["10"], "takes 2 arguments, got 1"),
            (&[], "takes 2 arguments, got 0"),
            (&["1", "2", "3"], "takes 2 arguments, got 3"),
            (&["--pages", "10"], "takes no options"),
            (&["--lock", "spin", "1", "1"], "add --shared"),
            (&["--shared", "--lock", "rw", "1", "1"], "unknown lock \"rw\""),
            (&["--shared", "--counters", "0", "1", "1"], "--counters 0 is not allowed"),
            (&["--shared", "--counters", "5000", "1", "1"], "give 1 to 4096"),
            (&["--shared", "1", "1", "--lock"], "--lock needs a value"),
        ];
        for (list, needle) in cases {
            let err = hammer_err(list);
            assert!(err.contains(needle), "{list:?}: {err:?} lacks {needle:?}");
            assert!(err.contains("usage: memhammer ["), "{err}");
            assert!(!err.contains('\n'), "one line: {err:?}");
        }
    }

    #[test]
    fn memhammer_refuses_more_than_free_memory_before_allocating() {
        let topology = Topology::detect().unwrap();
        // 2^32 - 1 pages are 16 TiB: no test machine has that free. Nothing is mapped: the
        // check reads the nodes' free memory only.
        let h = Hammer { pages: (1 << 32) - 1, loops: 1, ops: (1 << 32) - 1, shared: None };
        let err = hammer_arena_spec(h, &topology).unwrap_err();
        assert!(matches!(err, PlaceError::InsufficientMemory { .. }), "{err}");
        assert!(err.is_usage());
        assert!(err.to_string().contains("use a smaller size"), "{err}");
        let small = Hammer { pages: 16, loops: 1, ops: 16, shared: None };
        assert_eq!(hammer_arena_spec(small, &topology).unwrap().bytes, 65_536);
    }

    #[test]
    fn cpu_bind_takes_pid_and_cpu() {
        assert_eq!(
            parse_cpu_bind(&args(&["1234", "7"])).unwrap(),
            Parsed::Run((Pid(1234), "7".to_string()))
        );
        assert_eq!(parse_cpu_bind(&args(&["--help"])).unwrap(), Parsed::Help);
        for (list, needle) in [
            (&["0", "1"][..], "is not a process id"),
            (&["-3", "1"][..], "is not a process id"),
            (&["$$", "1"][..], "is not a process id"),
            (&["99999999999", "1"][..], "is not a process id"),
            (&["1"][..], "takes 2 arguments, got 1"),
            (&["1", "2", "3"][..], "takes 2 arguments, got 3"),
        ] {
            let err = parse_cpu_bind(&args(list)).unwrap_err().to_string();
            assert!(err.contains(needle), "{list:?}: {err:?}");
            assert!(err.contains("usage: cpu_bind PID CPU"), "{err}");
        }
    }

    #[test]
    fn argumentless_tools_refuse_arguments() {
        assert!(no_arguments("trigger", &args(&[]), TRIGGER_HELP).unwrap());
        assert!(!no_arguments("trigger", &args(&["--help"]), TRIGGER_HELP).unwrap());
        let err = no_arguments("create_sem", &args(&["now"]), CREATE_SEM_HELP).unwrap_err();
        assert!(err.to_string().contains("create_sem takes no arguments, got now"), "{err}");
    }

    #[test]
    fn bad_key_is_a_usage_error() {
        let err = Classified::from(KitError::BadKey("zero".into()));
        assert!(err.is_usage());
        let err = Classified::from(KitError::NoSemaphore { key: kit::DEFAULT_KEY });
        assert!(!err.is_usage());
        assert!(err.to_string().contains("run create_sem first"));
    }
}
