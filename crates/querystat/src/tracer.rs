//! Loading and attaching the BPF programs, and reading what they aggregated.

use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, RingBuffer, RingBufferBuilder, UprobeOpts};

use crate::error::{Error, Result};
use crate::report::{By, Preemptor, SlowQuery, Stamp};
use crate::server::{check_traceable, process_tree, Server, ServerKind};
use crate::server::{MARIADB_DISPATCH, MARIADB_QC_SEND};
use crate::skel::querystat::types::{qs_inflight, qs_slow_event};
use crate::skel::querystat::{QuerystatSkel, QuerystatSkelBuilder};
use measure::hist::{Log2Hist, SLOTS};

/// What to trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Queries or (PostgreSQL only) transactions.
    pub by: By,
    /// Report each query at least this slow as it completes (`--slower MS`).
    pub slower: Option<Duration>,
    /// PostgreSQL: also count buffer lookups found in shared buffers (`buffer__read__done`).
    /// Costs one more probe per buffer lookup (most of a simple query's tracing cost);
    /// without it, hit vs miss per query still comes from the blocks read in
    /// (`smgr__md__read__done`, which fires only on misses).
    pub buffer_hits: bool,
    /// Attach empty programs at the same points instead (the USDT probes or uprobes and
    /// sched_switch) and count nothing: the floor of tracing's cost, for the overhead benches.
    pub empty_programs: bool,
    /// Also read each query's thread's own counters at its start and end (two more loads per
    /// query): [`Totals::task_preemptions`] and [`Totals::task_run_delay_ns`], the same
    /// pre-emptions counted without the scheduler tracepoint, to check its accounting.
    pub task_counters: bool,
}

/// The histograms the kernel keeps, in `qs_stats.hist` order (querystat.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Hist {
    /// Every completed query.
    All = 0,
    /// Query-cache hit / no buffer read.
    Hit,
    /// The others.
    Miss,
    /// Pre-empted at least once.
    Preempted,
    /// Never pre-empted.
    NotPreempted,
    /// Per-query run-queue wait (queries that had any).
    OffRunQueue,
    /// Per-query D-state time.
    OffIo,
    /// Per-query S-state time.
    OffSleep,
}

const HISTS: usize = 8;
/// u64 words of `struct qs_stats`: hist, count, sum_ns, then seven counters.
const STATS_WORDS: usize = HISTS * SLOTS + 2 * HISTS + 7;

/// The kernel's counters summed over CPUs, cumulative since attach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    /// Histograms, indexed by [`Hist`].
    pub hist: [Log2Hist; HISTS],
    /// Counts, indexed by [`Hist`].
    pub count: [u64; HISTS],
    /// Summed ns, indexed by [`Hist`].
    pub sum_ns: [u64; HISTS],
    /// PostgreSQL buffer lookups found in shared buffers (with [`Options::buffer_hits`]).
    pub buffer_hits: u64,
    /// PostgreSQL blocks read in from the OS (shared buffer misses).
    pub buffer_reads: u64,
    /// Involuntary switches while a query was in flight.
    pub preemptions: u64,
    /// Involuntary switches of any server thread.
    pub involuntary: u64,
    /// `--slower` events lost.
    pub slow_dropped: u64,
    /// With [`Options::task_counters`]: involuntary switches inside queries as the threads' own
    /// counters (`nivcsw`) saw them, read at each query's start and end; the same count as
    /// [`Totals::preemptions`], taken without the scheduler tracepoint.
    pub task_preemptions: u64,
    /// With [`Options::task_counters`]: time inside queries spent waiting on a run queue, ns,
    /// from the threads' own `sched_info.run_delay` (0 on a kernel that keeps none). It
    /// includes the wait after a wake-up, which the per-switch accounting files under the
    /// sleep before it, so it matches [`Hist::OffRunQueue`]'s sum only for queries that never
    /// sleep.
    pub task_run_delay_ns: u64,
}

impl Totals {
    /// Adds one CPU's `struct qs_stats`, given as its bytes. The programs leave the `All`
    /// histogram to user space: every query is a hit or a miss, so it is their sum.
    fn add_cpu(&mut self, bytes: &[u8]) {
        let words: Vec<u64> = bytes
            .chunks_exact(8)
            .take(STATS_WORDS)
            .map(|c| u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect();
        if words.len() < STATS_WORDS {
            return;
        }
        for (h, slots) in self.hist.iter_mut().zip(words.chunks_exact(SLOTS)) {
            h.merge(&Log2Hist::from_slots(slots));
        }
        let rest = &words[HISTS * SLOTS..];
        for i in 0..HISTS {
            self.count[i] += rest[i];
            self.sum_ns[i] += rest[HISTS + i];
        }
        let (all, hit, miss) = (Hist::All as usize, Hist::Hit as usize, Hist::Miss as usize);
        for side in [hit, miss] {
            let slots = &words[side * SLOTS..(side + 1) * SLOTS];
            self.hist[all].merge(&Log2Hist::from_slots(slots));
            self.count[all] += rest[side];
            self.sum_ns[all] += rest[HISTS + side];
        }
        let c = &rest[2 * HISTS..];
        self.buffer_hits += c[0];
        self.buffer_reads += c[1];
        self.preemptions += c[2];
        self.involuntary += c[3];
        self.slow_dropped += c[4];
        self.task_preemptions += c[5];
        self.task_run_delay_ns += c[6];
    }

    /// Queries completed (the `All` count).
    pub fn completed(&self) -> u64 {
        self.count[Hist::All as usize]
    }
}

/// The attached programs. Dropping it detaches them all (on every path: the links are owned
/// here). It holds libbpf's ring buffer, so it stays on the thread that attached it.
pub struct Tracer {
    // Dropped in declaration order: links and the ring buffer before the skeleton.
    links: Vec<Link>,
    ring: Option<RingBuffer<'static>>,
    slow: Arc<Mutex<Vec<SlowQuery>>>,
    skel: QuerystatSkel<'static>,
    server: Server,
    by: By,
    buffer_hits: bool,
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer")
            .field("server", &self.server)
            .field("by", &self.by)
            .field("links", &self.links.len())
            .finish_non_exhaustive()
    }
}

const TRACEPOINTS: &[&str] = &["sched_switch", "sched_process_fork", "sched_process_exit"];

/// Checks root, BTF and the scheduler tracepoints, so the error says which is missing.
/// [`Tracer::attach`] calls it; the CLI may call it first, before looking for the server
/// (which needs root to read other users' `/proc/PID/exe`).
pub fn preflight() -> Result<()> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(Error::NotRoot);
    }
    // BTF present (the only failure bpfkit's preflight has), libbpf's chatter routed.
    bpfkit::preflight().map_err(|_| Error::NoBtf)?;
    let missing = bpfkit::missing_tracepoints(TRACEPOINTS);
    if !missing.is_empty() {
        return Err(Error::MissingTracepoints(missing.join(", ")));
    }
    Ok(())
}

/// Slots of the programs' `server_procs` (querystat.bpf.c's QS_PROC_SLOTS).
const PROC_SLOTS: usize = 4096;

/// Counts process `pid` into its slot of `server_procs`, as qs_fork does for the processes it
/// adds: an atomic add, since the programs may be adding to the same slot.
fn count_server_process(slots: &mut [u32; PROC_SLOTS], pid: u32) {
    let slot: *mut u32 = &mut slots[pid as usize & (PROC_SLOTS - 1)];
    // SAFETY: the slot is an aligned u32 of the map's memory, mapped for as long as the
    // skeleton that lent `slots` lives; the programs touch it only with atomic adds and loads.
    let slot = unsafe { AtomicU32::from_ptr(slot) };
    slot.fetch_add(1, Ordering::Relaxed);
}

fn slow_from_bytes(bytes: &[u8], kind: ServerKind) -> Option<SlowQuery> {
    let e: qs_slow_event = bpfkit::from_bytes(bytes)?;
    let mut text = bpfkit::c_string(&e.text);
    if kind == ServerKind::MariaDb && e.command == 23 {
        text = "(prepared statement)".to_string();
    }
    Some(SlowQuery {
        at: Stamp::now(),
        latency_us: e.latency_ns as f64 / 1e3,
        pid: e.pid,
        tid: e.tid,
        preempted: e.preempted != 0,
        hit: e.hit != 0,
        off_cpu_us: e.off_ns.map(|ns| ns as f64 / 1e3),
        text,
    })
}

impl Tracer {
    /// Loads the programs and attaches them to `server` (system-wide on its binary, filtered
    /// in the kernel to its process tree). The skeleton's object storage (a small struct;
    /// libbpf's memory is freed on drop) is leaked so the handle can be owned: meant for once
    /// per command.
    pub fn attach(server: &Server, options: &Options) -> Result<Tracer> {
        preflight()?;
        if server.kind == ServerKind::MariaDb && options.by == By::Transaction {
            return Err(Error::ByTransactionOnMariaDb);
        }
        check_traceable(server)?;
        let pg = server.kind == ServerKind::Postgres;
        let slower_ns =
            options.slower.map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1));

        let storage = Box::leak(Box::new(MaybeUninit::uninit()));
        let mut open = QuerystatSkelBuilder::default()
            .open(storage)
            .map_err(Error::bpf("opening the querystat BPF object"))?;
        if let Some(rodata) = open.maps.rodata_data.as_deref_mut() {
            rodata.slower_ns = slower_ns;
            rodata.task_counters = options.task_counters;
        }
        for prog in
            [&mut open.progs.pg_begin, &mut open.progs.pg_end, &mut open.progs.pg_block_read]
        {
            prog.set_autoload(pg);
        }
        open.progs.pg_buffer_done.set_autoload(pg && options.buffer_hits);
        open.progs.pg_text.set_autoload(pg && slower_ns > 0);
        for prog in [
            &mut open.progs.my_dispatch,
            &mut open.progs.my_dispatch_ret,
            &mut open.progs.my_qc_ret,
        ] {
            prog.set_autoload(!pg);
        }
        let floor = options.empty_programs;
        if floor {
            for mut prog in libbpf_rs::skel::OpenSkel::open_object_mut(&mut open).progs_mut() {
                prog.set_autoload(false);
            }
        }
        open.progs.qs_floor_probe.set_autoload(floor);
        open.progs.qs_floor_switch.set_autoload(floor);
        let mut skel = open.load().map_err(Error::bpf("loading the querystat BPF programs"))?;

        let mut links = Vec::new();
        // The tree first follows forks, then is seeded: a backend forked in between is
        // caught by one or the other.
        let scheduler: &[(&libbpf_rs::ProgramMut<'_>, &str)] = if floor {
            &[(&skel.progs.qs_floor_switch, "attaching to sched_switch")]
        } else {
            &[
                (&skel.progs.qs_fork, "attaching to sched_process_fork"),
                (&skel.progs.qs_exit, "attaching to sched_process_exit"),
                (&skel.progs.qs_sched_switch, "attaching to sched_switch"),
            ]
        };
        for (prog, what) in scheduler {
            links.push(prog.attach().map_err(Error::bpf(*what))?);
        }
        let fresh = [0u8; 8];
        // libbpf maps the programs' globals on every kernel that has what they need (5.5).
        let Some(bss) = skel.maps.bss_data.as_deref_mut() else {
            let unmapped = libbpf_rs::Error::from_raw_os_error(libc::ENOTSUP);
            return Err(Error::bpf("mapping the BPF programs' global variables")(unmapped));
        };
        for pid in process_tree(server.pid)? {
            skel.maps
                .tree
                .update(&pid.to_ne_bytes(), &fresh, MapFlags::ANY)
                .map_err(Error::bpf("seeding the server's process tree"))?;
            count_server_process(&mut bss.server_procs, pid);
        }

        let path = server.attach_path();
        if pg {
            let usdt = |prog: &libbpf_rs::ProgramMut<'_>, name: &str| {
                // The empty program in the real one's place, at the same probe.
                let prog = if floor { &skel.progs.qs_floor_probe } else { prog };
                prog.attach_usdt(-1, &path, "postgresql", name).map_err(Error::bpf(format!(
                    "attaching to USDT postgresql:{name} in {}",
                    path.display()
                )))
            };
            let (begin, ends): (&str, &[&str]) = match options.by {
                By::Query => ("query__execute__start", &["query__execute__done"]),
                By::Transaction => {
                    ("transaction__start", &["transaction__commit", "transaction__abort"])
                }
            };
            // Ends before begins, so every query begun is seen to end.
            for end in ends {
                links.push(usdt(&skel.progs.pg_end, end)?);
            }
            links.push(usdt(&skel.progs.pg_begin, begin)?);
            links.push(usdt(&skel.progs.pg_block_read, "smgr__md__read__done")?);
            if options.buffer_hits {
                links.push(usdt(&skel.progs.pg_buffer_done, "buffer__read__done")?);
            }
            if slower_ns > 0 {
                links.push(usdt(&skel.progs.pg_text, "query__start")?);
                links.push(usdt(&skel.progs.pg_text, "query__parse__start")?);
            }
        } else {
            let uprobe = |prog: &libbpf_rs::ProgramMut<'_>, func: &str, retprobe: bool| {
                let opts = UprobeOpts {
                    func_name: Some(func.to_string()),
                    retprobe,
                    ..Default::default()
                };
                let prog = if floor { &skel.progs.qs_floor_probe } else { prog };
                prog.attach_uprobe_with_opts(-1, &path, 0, opts).map_err(Error::bpf(format!(
                    "attaching a uprobe to {func} in {}",
                    path.display()
                )))
            };
            // Returns before the entry: a dispatch entered between the two attaches would
            // leave its thread's record open with no return to close it, and MariaDB's
            // dispatches nest, so every later query of that thread would look nested in it and
            // go uncounted.
            links.push(uprobe(&skel.progs.my_qc_ret, MARIADB_QC_SEND, true)?);
            links.push(uprobe(&skel.progs.my_dispatch_ret, MARIADB_DISPATCH, true)?);
            links.push(uprobe(&skel.progs.my_dispatch, MARIADB_DISPATCH, false)?);
        }

        let slow = Arc::new(Mutex::new(Vec::new()));
        let ring = if slower_ns > 0 {
            let sink = Arc::clone(&slow);
            let kind = server.kind;
            let mut builder = RingBufferBuilder::new();
            builder
                .add(&skel.maps.slow, move |bytes: &[u8]| {
                    if let (Some(q), Ok(mut v)) = (slow_from_bytes(bytes, kind), sink.lock()) {
                        v.push(q);
                    }
                    0
                })
                .map_err(Error::bpf("setting up the slow-query ring buffer"))?;
            Some(builder.build().map_err(Error::bpf("setting up the slow-query ring buffer"))?)
        } else {
            None
        };
        Ok(Tracer {
            links,
            ring,
            slow,
            skel,
            server: server.clone(),
            by: options.by,
            buffer_hits: pg && options.buffer_hits,
        })
    }

    /// The server traced.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// Queries or transactions.
    pub fn by(&self) -> By {
        self.by
    }

    /// Whether buffer hits are counted ([`Options::buffer_hits`] on PostgreSQL).
    pub fn counts_buffer_hits(&self) -> bool {
        self.buffer_hits
    }

    /// The kernel's counters, summed over CPUs.
    pub fn totals(&self) -> Result<Totals> {
        let per_cpu = self
            .skel
            .maps
            .stats
            .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
            .map_err(Error::bpf("reading the query statistics"))?
            .unwrap_or_default();
        let mut totals = Totals::default();
        for cpu in &per_cpu {
            totals.add_cpu(cpu);
        }
        Ok(totals)
    }

    /// Who took the CPU from in-flight queries, least frequent first.
    pub fn preemptors(&self) -> Result<Vec<Preemptor>> {
        let map = &self.skel.maps.preemptors;
        let mut out = Vec::new();
        for key in map.keys() {
            let Some(value) =
                map.lookup(&key, MapFlags::ANY).map_err(Error::bpf("reading pre-emptors"))?
            else {
                continue;
            };
            let Ok(count) = <[u8; 8]>::try_from(value.as_slice()) else { continue };
            out.push(Preemptor {
                comm: bpfkit::c_string_bytes(&key),
                count: u64::from_ne_bytes(count),
            });
        }
        out.sort_by(|a, b| a.count.cmp(&b.count).then_with(|| a.comm.cmp(&b.comm)));
        Ok(out)
    }

    /// Involuntary context switches per server process (TGID) since attach, for the
    /// processes alive now (an exiting process leaves the map): the tree's count plus those
    /// of its threads that hold a slot of `flights`, which sched_switch counts there. A thread
    /// exiting while this reads can be counted twice or not at all in that one reading.
    pub fn involuntary_by_pid(&self) -> Result<BTreeMap<u32, u64>> {
        let map = &self.skel.maps.tree;
        let mut out = BTreeMap::new();
        for key in map.keys() {
            let Some(value) =
                map.lookup(&key, MapFlags::ANY).map_err(Error::bpf("reading the process tree"))?
            else {
                continue;
            };
            if let (Ok(pid), Ok(n)) =
                (<[u8; 4]>::try_from(key.as_slice()), <[u8; 8]>::try_from(value.as_slice()))
            {
                out.insert(u32::from_ne_bytes(pid), u64::from_ne_bytes(n));
            }
        }
        let flights = &self.skel.maps.flights;
        for key in flights.keys() {
            let Some(value) =
                flights.lookup(&key, MapFlags::ANY).map_err(Error::bpf("reading the slots"))?
            else {
                continue;
            };
            let Some(slot) = bpfkit::from_bytes::<qs_inflight>(&value) else { continue };
            // A slot given back (task 0) keeps its last holder's count until taken again.
            if slot.task == 0 {
                continue;
            }
            if let Some(n) = out.get_mut(&slot.tgid) {
                *n += slot.involuntary;
            }
        }
        Ok(out)
    }

    /// Waits up to `timeout` for slow-query events and returns those that arrived (none
    /// without `--slower`: then it just sleeps).
    pub fn poll_slow(&self, timeout: Duration) -> Result<Vec<SlowQuery>> {
        match &self.ring {
            Some(ring) => ring.poll(timeout).map_err(Error::bpf("reading slow-query events"))?,
            None => std::thread::sleep(timeout),
        }
        Ok(self.slow.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_processes_are_counted_in_their_slot() {
        let mut slots = [0u32; PROC_SLOTS];
        count_server_process(&mut slots, 7);
        count_server_process(&mut slots, 7 + PROC_SLOTS as u32);
        count_server_process(&mut slots, 8);
        assert_eq!((slots[7], slots[8]), (2, 1));
        assert_eq!(slots.iter().sum::<u32>(), 3);
    }

    #[test]
    fn stats_words_match_the_c_struct() {
        assert_eq!(STATS_WORDS * 8, 4280);
        // qs_stats as libbpf sees it: checked against the map's value size.
        let obj = QuerystatSkelBuilder::default();
        let mut storage = MaybeUninit::uninit();
        let open = obj.open(&mut storage).unwrap();
        assert_eq!(open.maps.stats.value_size() as usize, STATS_WORDS * 8);
    }

    #[test]
    fn totals_sum_cpus_in_the_c_order() {
        let mut words = vec![0u64; STATS_WORDS];
        let (hit, miss) = (Hist::Hit as usize, Hist::Miss as usize);
        words[hit * SLOTS + 3] = 5; // Hit, slot 3 (4..7 us)
        words[miss * SLOTS + 6] = 2; // Miss, slot 6 (32..63 us)
        words[HISTS * SLOTS + hit] = 5; // count[Hit]
        words[HISTS * SLOTS + miss] = 2; // count[Miss]
        words[HISTS * SLOTS + HISTS + hit] = 25_000; // sum_ns[Hit]
        words[HISTS * SLOTS + HISTS + miss] = 80_000; // sum_ns[Miss]
        words[HISTS * SLOTS + 2 * HISTS + 2] = 7; // preemptions
        words[HISTS * SLOTS + 2 * HISTS + 5] = 6; // task_preemptions
        words[HISTS * SLOTS + 2 * HISTS + 6] = 900; // task_run_delay_ns
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let mut t = Totals::default();
        t.add_cpu(&bytes);
        t.add_cpu(&bytes);
        assert_eq!(t.count[hit], 10);
        assert_eq!(t.hist[hit].slots()[3], 10);
        assert_eq!(t.preemptions, 14);
        assert_eq!((t.task_preemptions, t.task_run_delay_ns), (12, 1800));
        assert_eq!(t.buffer_hits, 0);
        // All is the hits' and the misses' sum, slot by slot.
        assert_eq!(t.completed(), 14);
        assert_eq!(t.sum_ns[Hist::All as usize], 210_000);
        let all = t.hist[Hist::All as usize].slots();
        assert_eq!((all[3], all[6]), (10, 4));
        assert_eq!(all.iter().sum::<u64>(), 14);
    }
}
