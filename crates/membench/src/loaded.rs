//! Loaded latency: one thread chases pointers while load threads on the other CPUs stream
//! through their own buffers with an injected delay; sweeping the delay from none to idle
//! traces latency against bandwidth.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use place::{MemPolicy, Placement};
use serde::{Deserialize, Serialize};
use topo::Topology;

use crate::bandwidth::{BandwidthOptions, Buffers, ThreadSpec};
use crate::kernels::bandwidth::{pass, Isa, Kernel, Walk};
use crate::latency::{Chase, LatencyOptions};
use crate::timers::cheapest_trustworthy_clock;
use crate::together::Crew;
use crate::BenchError;
use measure::core_clock::{busy_cycles, core_clock};
use measure::progress::ProgressBar;
use measure::stop;
use measure::summary::Summary;

/// Bytes a load thread moves between delays.
pub const CHUNK: usize = 4096;

/// What the load threads do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadMix {
    /// All reads.
    Reads,
    /// Two reads per write (the triad kernel).
    TwoToOne,
    /// One read per write (the copy kernel).
    OneToOne,
    /// Non-temporal writes only.
    NtWrites,
}

impl LoadMix {
    pub const NAMES: &'static str = "reads, 2:1, 1:1, nt-writes";

    pub fn kernel(self) -> Kernel {
        match self {
            LoadMix::Reads => Kernel::Read,
            LoadMix::TwoToOne => Kernel::Triad,
            LoadMix::OneToOne => Kernel::Copy,
            LoadMix::NtWrites => Kernel::WriteNt,
        }
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        match text {
            "reads" | "read" | "1:0" => Ok(LoadMix::Reads),
            "2:1" => Ok(LoadMix::TwoToOne),
            "1:1" => Ok(LoadMix::OneToOne),
            "nt-writes" | "nt" => Ok(LoadMix::NtWrites),
            _ => Err(format!("unknown load mix {text:?}; use one of {}", Self::NAMES)),
        }
    }
}

/// Default delays, in core cycles of busy work per 4 KiB a load thread moves.
pub const DEFAULT_DELAYS: &[u64] = &[0, 100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200];

/// How to sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadedOptions {
    pub chase: LatencyOptions,
    pub chase_bytes: u64,
    pub mix: LoadMix,
    pub isa: Isa,
    pub load_bytes_per_thread: u64,
    pub load_policy: MemPolicy,
    pub delays: Vec<u64>,
    /// Sampling time per point.
    pub point_duration: Duration,
}

/// One point of the curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadedPoint {
    /// Busy cycles per 4 KiB per load thread; `None` for the idle point (load threads paused).
    pub delay_cycles: Option<u64>,
    /// What the load threads moved together, GB/s (kernel accounting: RFO not counted).
    pub load_gbs: f64,
    /// Chase latency under that load, ns.
    pub latency_ns: Summary,
}

/// The latency-versus-bandwidth curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadedCurve {
    pub mix: LoadMix,
    pub kernel: Kernel,
    pub isa: Isa,
    pub accounting: String,
    pub chase_cpu: u32,
    pub load_cpus: Vec<u32>,
    pub chase_placement: Placement,
    pub load_placements: Vec<Vec<Placement>>,
    pub points: Vec<LoadedPoint>,
    pub interrupted: bool,
    /// What a delay's busy cycles are when the core clock is unknown
    /// ([`measure::core_clock::CoreClock::busy_caveat`]); absent when they are core cycles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_caveat: Option<String>,
}

/// Load thread state: a delay in cycles, or one of these.
const PAUSE: u64 = u64::MAX;
const STOP: u64 = u64::MAX - 1;

/// A counter alone on its cache lines, so load threads do not slow each other by sharing one.
#[repr(align(128))]
#[derive(Debug, Default)]
struct Counter(AtomicU64);

/// A load thread's stream once released: chunks with the delay the run asks for, until it
/// says stop.
fn load(opts: &BandwidthOptions, state: &AtomicU64, moved: &Counter, buffers: &mut Buffers) {
    let [a, b, c] = buffers.pointers();
    let bytes = opts.bytes_per_thread as usize;
    let per_chunk = CHUNK as u64 * opts.kernel.info().counted_streams;
    let isa = opts.isa.unwrap_or_else(Isa::best);
    let mut offset = 0;
    let mut checksum = 0u64;
    loop {
        let delay = state.load(Ordering::Relaxed);
        if delay == STOP {
            break;
        }
        if delay == PAUSE {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        // SAFETY: offset + CHUNK ≤ bytes (bytes is a multiple of CHUNK), inside this thread's
        // page-aligned, distinct buffers; the ISA was validated by the caller.
        checksum ^= unsafe {
            pass(
                opts.kernel,
                isa,
                Walk::Sequential,
                [a.add(offset), b.add(offset), c.add(offset)],
                CHUNK,
                offset as u64,
            )
        };
        moved.0.fetch_add(per_chunk, Ordering::Relaxed);
        busy_cycles(delay);
        offset = (offset + CHUNK) % bytes;
    }
    std::hint::black_box(checksum);
}

/// A thread of the run: the one that chases, or one that loads (with its counter).
enum Role<'a> {
    Chase,
    Load(&'a ThreadSpec, &'a Counter),
}

/// What a thread prepared before the release.
enum Ready {
    Chase(Chase),
    Load(Buffers, Vec<Placement>),
}

/// Where a thread's memory was.
enum Joined {
    Chase(Placement),
    Load(Vec<Placement>),
}

enum ChaseRequest {
    Sample(Duration),
    Done,
}

/// Sweeps the delays, then measures once more with the load threads paused (the idle point);
/// `progress` counts points.
pub fn run(
    chase_cpu: u32,
    load_cpus: &[u32],
    opts: &LoadedOptions,
    topology: &Topology,
    progress: &ProgressBar,
) -> Result<LoadedCurve, BenchError> {
    // Calibrate the measuring clock and the core clock the delays are spun with now, not
    // after the workers' release.
    cheapest_trustworthy_clock();
    let delay_caveat = core_clock().busy_caveat();
    if load_cpus.is_empty() {
        return Err(BenchError::Usage(
            "loaded latency needs at least two CPUs: one to chase, the others to load".into(),
        ));
    }
    if !Isa::available().contains(&opts.isa) {
        return Err(BenchError::Usage(format!("this CPU cannot run {}", opts.isa)));
    }
    let kernel = opts.mix.kernel();
    let load_opts = BandwidthOptions {
        kernel,
        isa: Some(opts.isa),
        walk: Some(Walk::Sequential),
        bytes_per_thread: opts.load_bytes_per_thread.next_multiple_of(CHUNK as u64),
        page: opts.chase.page,
        duration: opts.point_duration,
        rounds: 1,
    };
    let specs: Vec<ThreadSpec> = load_cpus
        .iter()
        .map(|&cpu| ThreadSpec { cpu: Some(cpu), policy: opts.load_policy.clone() })
        .collect();
    let state = AtomicU64::new(PAUSE);
    let counters: Vec<Counter> = load_cpus.iter().map(|_| Counter::default()).collect();
    let (to_chase, chase_requests) = mpsc::channel::<ChaseRequest>();
    let chase_requests = Mutex::new(chase_requests);
    let (chase_replies, from_chase) = mpsc::channel::<Option<Summary>>();
    let roles: Vec<Role<'_>> = std::iter::once(Role::Chase)
        .chain(specs.iter().zip(&counters).map(|(spec, counter)| Role::Load(spec, counter)))
        .collect();
    let crew = Crew {
        what: "loaded-latency thread",
        workers: &roles,
        cpu: &|role: &Role<'_>| match role {
            Role::Chase => Some(chase_cpu),
            Role::Load(spec, _) => spec.cpu,
        },
        prepare: &|_, role| match role {
            Role::Chase => Chase::new(opts.chase_bytes, &opts.chase, topology).map(Ready::Chase),
            Role::Load(spec, _) => {
                let buffers = Buffers::new(spec, &load_opts, topology)?;
                let placements = buffers.placements()?;
                Ok(Ready::Load(buffers, placements))
            }
        },
        work: &|_, role, ready| match (role, ready) {
            (Role::Load(_, counter), Ready::Load(mut buffers, placements)) => {
                load(&load_opts, &state, counter, &mut buffers);
                Ok(Joined::Load(placements))
            }
            (_, Ready::Chase(mut chase)) => {
                let requests = chase_requests.lock().unwrap_or_else(PoisonError::into_inner);
                while let Ok(ChaseRequest::Sample(duration)) = requests.recv() {
                    if chase_replies.send(chase.sample(duration).map(|(s, _)| s)).is_err() {
                        break;
                    }
                }
                Ok(Joined::Chase(chase.placement().clone()))
            }
            (Role::Chase, Ready::Load(..)) => {
                Err(BenchError::Worker("the chase thread prepared load buffers".into()))
            }
        },
    };
    let (points, outcomes) = crew.run(|go| {
        let mut points = Vec::new();
        if go {
            let mut levels: Vec<Option<u64>> = opts.delays.iter().map(|&d| Some(d)).collect();
            levels.push(None);
            progress.set_length(levels.len() as u64);
            for level in levels {
                if stop::requested() {
                    break;
                }
                state.store(level.unwrap_or(PAUSE), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20)); // let the load settle
                let before: u64 = counters.iter().map(|c| c.0.load(Ordering::Relaxed)).sum();
                let t0 = Instant::now();
                if to_chase.send(ChaseRequest::Sample(opts.point_duration)).is_err() {
                    break;
                }
                let Ok(Some(latency_ns)) = from_chase.recv() else { break };
                let after: u64 = counters.iter().map(|c| c.0.load(Ordering::Relaxed)).sum();
                let load_gbs = (after - before) as f64 / t0.elapsed().as_nanos().max(1) as f64;
                points.push(LoadedPoint { delay_cycles: level, load_gbs, latency_ns });
                progress.inc(1);
            }
        }
        state.store(STOP, Ordering::Relaxed);
        let _ = to_chase.send(ChaseRequest::Done);
        points
    });
    let (mut chase_placement, mut load_placements) = (None, Vec::new());
    for outcome in outcomes {
        match outcome? {
            Some(Joined::Chase(p)) => chase_placement = Some(p),
            Some(Joined::Load(p)) => load_placements.push(p),
            None => {} // aborted: a thread failed to get ready (its error is among these)
        }
    }
    let Some(chase_placement) = chase_placement else { return Err(BenchError::Interrupted) };
    if points.is_empty() {
        return Err(BenchError::Interrupted);
    }
    Ok(LoadedCurve {
        mix: opts.mix,
        kernel,
        isa: opts.isa,
        accounting: kernel.info().accounting.to_string(),
        chase_cpu,
        load_cpus: load_cpus.to_vec(),
        chase_placement,
        load_placements,
        interrupted: points.len() < opts.delays.len() + 1,
        points,
        delay_caveat,
    })
}
