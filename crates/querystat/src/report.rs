//! What a run measured, and its text in the DTrace querystat script's layout (pure functions:
//! golden-tested).

use serde::{Deserialize, Serialize};

use crate::server::{Server, ServerKind};
use measure::hist::Log2Hist;

/// What one traced unit is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum By {
    /// A statement: PostgreSQL's `query__execute__start/done`, MariaDB's COM_QUERY and
    /// COM_STMT_EXECUTE.
    #[default]
    Query,
    /// A transaction: PostgreSQL's `transaction__start` to `commit`/`abort`.
    Transaction,
}

impl By {
    /// "queries" or "transactions".
    pub fn plural(self) -> &'static str {
        match self {
            By::Query => "queries",
            By::Transaction => "transactions",
        }
    }

    /// "query" or "transaction".
    pub fn singular(self) -> &'static str {
        match self {
            By::Query => "query",
            By::Transaction => "transaction",
        }
    }
}

/// A moment, as seconds since the epoch and as local time in the DTrace script's format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    /// Seconds since 1970 (UTC).
    pub epoch_s: i64,
    /// "2009 Sep 17 16:28:35", local time.
    pub local: String,
}

impl Stamp {
    /// Now.
    pub fn now() -> Self {
        let epoch_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        Stamp { epoch_s, local: local_time(epoch_s) }
    }
}

/// `epoch` as local time, "YYYY Mon DD HH:MM:SS" (DTrace's `%Y`); the epoch itself when the C
/// library cannot convert it.
pub fn local_time(epoch: i64) -> String {
    measure::time::dtrace_date(epoch).unwrap_or_else(|| epoch.to_string())
}

/// Count, mean and distribution of some latency.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// How many.
    pub count: u64,
    /// Their summed time, µs.
    pub total_us: f64,
    /// The mean, µs (`None` when `count` is 0).
    pub avg_us: Option<f64>,
    /// The log2 distribution, µs.
    pub histogram_us: Log2Hist,
}

impl Latency {
    /// From a count, a sum in ns and a histogram.
    pub fn new(count: u64, sum_ns: u64, histogram_us: Log2Hist) -> Self {
        let total_us = sum_ns as f64 / 1e3;
        Latency {
            count,
            total_us,
            avg_us: (count > 0).then(|| total_us / count as f64),
            histogram_us,
        }
    }

    fn avg_text(&self) -> String {
        self.avg_us.map_or_else(|| "-".to_string(), |a| format!("{}", a.round() as u64))
    }
}

/// Hit vs miss: MariaDB's query cache, or PostgreSQL's shared buffers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheStats {
    /// "query cache" or "shared buffer".
    pub label: String,
    /// MariaDB: answered from the query cache. PostgreSQL: every buffer it needed was in
    /// shared buffers (none read in from the OS).
    pub hit: Latency,
    /// The others.
    pub miss: Latency,
    /// PostgreSQL with `buffer_hits` asked for: buffer lookups found in shared buffers, over
    /// all traced queries.
    pub buffer_hits: Option<u64>,
    /// PostgreSQL: blocks read in (from the page cache or disk), over all traced queries.
    pub buffer_reads: Option<u64>,
}

/// Time queries spent off the CPU, by why, per query that had any.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OffCpu {
    /// Waiting on the run queue after being pre-empted (state R at the switch).
    pub run_queue: Latency,
    /// Uninterruptible sleep (state D: mostly disk I/O).
    pub io_wait: Latency,
    /// Interruptible sleep (state S: locks, latches, the network).
    pub sleep: Latency,
}

/// A task that took the CPU from a server thread in the middle of a query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preemptor {
    /// Its command name.
    pub comm: String,
    /// How many times.
    pub count: u64,
}

/// One interval's throughput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// When it ended.
    pub at: Stamp,
    /// Completed in the interval.
    pub completed: u64,
    /// Per second.
    pub per_sec: f64,
    /// Mean latency of the queries (or transactions) completed in the interval, µs (`None`
    /// when none completed, and in runs stored before it was kept): one sample each of the
    /// run's mean latency for a comparison.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_us: Option<f64>,
}

/// One query slower than `--slower`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowQuery {
    /// When it was reported.
    pub at: Stamp,
    /// Its latency, µs.
    pub latency_us: f64,
    /// Server process and thread.
    pub pid: u32,
    /// Thread ID.
    pub tid: u32,
    /// Left the CPU involuntarily at least once.
    pub preempted: bool,
    /// A cache hit (see [`CacheStats`]).
    pub hit: bool,
    /// Off-CPU µs: run queue, D, S.
    pub off_cpu_us: [f64; 3],
    /// The statement's first 256 bytes (PostgreSQL: the last text the backend received by
    /// the simple protocol or parsed by the extended one; MariaDB: COM_QUERY's text, or
    /// "(prepared statement)" for COM_STMT_EXECUTE).
    pub text: String,
}

/// Why the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// The stop flag (Ctrl-C).
    Stopped,
    /// COUNT intervals done.
    Count,
    /// The server exited during the run.
    ServerExited,
}

/// Everything a run measured, cumulative from attach to the end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The server traced.
    pub server: Server,
    /// Queries or transactions.
    pub by: By,
    /// When tracing started.
    pub started: Stamp,
    /// When it ended.
    pub ended: Stamp,
    /// Seconds traced.
    pub duration_s: f64,
    /// Why it ended.
    pub end: EndReason,
    /// Throughput per interval.
    pub intervals: Vec<Interval>,
    /// All completed queries.
    pub all: Latency,
    /// Hit vs miss.
    pub cache: CacheStats,
    /// Queries that left the CPU involuntarily at least once while in flight.
    pub preempted: Latency,
    /// The others.
    pub not_preempted: Latency,
    /// Off-CPU time inside queries, by why.
    pub off_cpu: OffCpu,
    /// Involuntary switches while a query was in flight.
    pub preemptions: u64,
    /// Involuntary switches of any of the server's threads (what `nonvoluntary_ctxt_switches`
    /// counts).
    pub involuntary_switches: u64,
    /// Who took the CPU, least frequent first (the DTrace script's order).
    pub preemptors: Vec<Preemptor>,
    /// Queries slower than `--slower`, as reported.
    pub slow: Vec<SlowQuery>,
    /// Slow-query events lost because the ring buffer was full.
    pub slow_dropped: u64,
}

/// "Tracing started at 2009 Sep 17 16:28:35".
pub fn render_started(at: &Stamp) -> String {
    format!("Tracing started at {}\n", at.local)
}

/// "2009 Sep 17 16:28:38   throughput 3 queries/sec".
pub fn render_interval(interval: &Interval, by: By) -> String {
    format!(
        "{}   throughput {} {}/sec\n",
        interval.at.local,
        interval.per_sec.round() as u64,
        by.plural()
    )
}

/// One `--slower` line.
pub fn render_slow(q: &SlowQuery, by: By) -> String {
    let [runq, io, sleep] = q.off_cpu_us.map(|v| v.round() as u64);
    format!(
        "{}   slow {} {:.3} ms  tid {}{}{}  off-CPU us: run queue {runq}, D {io}, S {sleep}  {}\n",
        q.at.local,
        by.singular(),
        q.latency_us / 1e3,
        q.tid,
        if q.preempted { "  pre-empted" } else { "" },
        if q.hit { "  hit" } else { "" },
        q.text.replace(['\n', '\r', '\t'], " ")
    )
}

fn histogram_block(out: &mut String, title: &str, h: &Log2Hist) {
    out.push_str(title);
    out.push('\n');
    let text = h.render();
    if text.is_empty() {
        out.push_str("    (none)\n");
    } else {
        out.push_str(&text);
    }
}

/// The end-of-run summary in the DTrace querystat script's layout, then what the script did not
/// have (buffer totals, off-CPU time by why, involuntary switches).
pub fn render_report(r: &Report) -> String {
    let (one, all) = (r.by.singular(), r.by.plural());
    let label = &r.cache.label;
    let mut out = format!("Tracing ended   at {}\n", r.ended.local);
    if r.end == EndReason::ServerExited {
        out.push_str(&format!(
            "The {} server (PID {}) exited during the run; what was measured until then:\n",
            r.server.kind.title(),
            r.server.pid
        ));
    }
    out.push_str(&format!("Average latency, all {all}: {} us\n", r.all.avg_text()));
    histogram_block(
        &mut out,
        &format!("Latency distribution, all {all} (us):"),
        &r.all.histogram_us,
    );

    let title = match label.as_str() {
        "query cache" => "Query cache statistics:".to_string(),
        other => format!("{}{} statistics:", other[..1].to_uppercase(), &other[1..]),
    };
    out.push_str(&title);
    out.push('\n');
    out.push_str(&format!("    count {:>15}: {}\n", "hit", r.cache.hit.count));
    out.push_str(&format!("    count {:>15}: {}\n", "miss", r.cache.miss.count));
    out.push_str(&format!("    avg latency {:>9}: {} (us)\n", "miss", r.cache.miss.avg_text()));
    out.push_str(&format!("    avg latency {:>9}: {} (us)\n", "hit", r.cache.hit.avg_text()));
    if let Some(hits) = r.cache.buffer_hits {
        out.push_str(&format!("    buffers {:>13}: {hits}\n", "hit"));
    }
    if let Some(reads) = r.cache.buffer_reads {
        out.push_str(&format!("    buffers {:>13}: {reads}\n", "read"));
    }
    histogram_block(
        &mut out,
        &format!("Latency distribution, for {label} hit (us):"),
        &r.cache.hit.histogram_us,
    );
    histogram_block(
        &mut out,
        &format!("Latency distribution, for {label} miss (us):"),
        &r.cache.miss.histogram_us,
    );

    out.push_str(&format!(
        "Average latency when {one} WAS NOT pre-empted: {} us\n",
        r.not_preempted.avg_text()
    ));
    out.push_str(&format!(
        "Average latency when {one}     WAS pre-empted: {} us\n",
        r.preempted.avg_text()
    ));
    out.push_str("Pre-emptors:\n");
    for p in &r.preemptors {
        out.push_str(&format!("   {:<16} {:>26}\n", p.comm, p.count));
    }

    out.push_str(&format!("Off-CPU time inside {all}, by why (per {one} that had any):\n"));
    for (name, l) in [
        ("run queue (R)", &r.off_cpu.run_queue),
        ("I/O wait (D)", &r.off_cpu.io_wait),
        ("sleep, locks (S)", &r.off_cpu.sleep),
    ] {
        out.push_str(&format!(
            "    {name:<17} {:>12} us total in {:>9} {all}, avg {} us\n",
            l.total_us.round() as u64,
            l.count,
            l.avg_text()
        ));
    }
    for (name, l) in [
        ("run queue wait", &r.off_cpu.run_queue),
        ("I/O wait", &r.off_cpu.io_wait),
        ("sleep", &r.off_cpu.sleep),
    ] {
        if l.count > 0 {
            histogram_block(
                &mut out,
                &format!("Off-CPU distribution, {name} per {one} (us):"),
                &l.histogram_us,
            );
        }
    }
    out.push_str(&format!(
        "Involuntary context switches of server threads: {} ({} inside {all})\n",
        r.involuntary_switches, r.preemptions
    ));
    if r.slow_dropped > 0 {
        out.push_str(&format!("Slow {one} reports lost (ring buffer full): {}\n", r.slow_dropped));
    }
    out
}

/// The hit/miss label for a server kind.
pub(crate) fn cache_label(kind: ServerKind) -> &'static str {
    match kind {
        ServerKind::Postgres => "shared buffer",
        ServerKind::MariaDb => "query cache",
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use measure::hist::slot_of;

    fn hist(values: &[(u64, u64)]) -> Log2Hist {
        let mut slots = [0u64; measure::hist::SLOTS];
        for &(v, c) in values {
            slots[slot_of(v)] += c;
        }
        Log2Hist::from_slots(&slots)
    }

    fn stamp(local: &str) -> Stamp {
        Stamp { epoch_s: 0, local: local.to_string() }
    }

    fn querystat_example_report() -> Report {
        Report {
            server: Server {
                pid: 4242,
                kind: ServerKind::MariaDb,
                exe: PathBuf::from("/usr/sbin/mariadbd"),
                version: "mariadbd  Ver 10.11.19-MariaDB".to_string(),
            },
            by: By::Query,
            started: stamp("2009 Sep 17 16:28:35"),
            ended: stamp("2009 Sep 17 16:28:51"),
            duration_s: 16.0,
            end: EndReason::Stopped,
            intervals: vec![],
            all: Latency::new(4480, 4480 * 107_000, hist(&[(64, 4000), (128, 480)])),
            cache: CacheStats {
                label: "query cache".to_string(),
                hit: Latency::new(6, 6 * 407_000, hist(&[(256, 6)])),
                miss: Latency::new(4474, 4474 * 107_000, hist(&[(64, 4000), (128, 474)])),
                buffer_hits: None,
                buffer_reads: None,
            },
            preempted: Latency::new(100, 100 * 127_000, Log2Hist::default()),
            not_preempted: Latency::new(4380, 4380 * 73_000, Log2Hist::default()),
            off_cpu: OffCpu {
                run_queue: Latency::new(2, 300_000, hist(&[(100, 1), (200, 1)])),
                ..OffCpu::default()
            },
            preemptions: 3188,
            involuntary_switches: 3500,
            preemptors: vec![
                Preemptor { comm: "mysql".to_string(), count: 6 },
                Preemptor { comm: "sysbench".to_string(), count: 3095 },
            ],
            slow: vec![],
            slow_dropped: 0,
        }
    }

    #[test]
    fn interval_line_is_the_originals() {
        let i = Interval {
            at: stamp("2009 Sep 17 16:28:38"),
            completed: 4830,
            per_sec: 1610.0,
            mean_us: Some(310.0),
        };
        assert_eq!(
            render_interval(&i, By::Query),
            "2009 Sep 17 16:28:38   throughput 1610 queries/sec\n"
        );
        assert_eq!(
            render_started(&stamp("2009 Sep 17 16:28:35")),
            "Tracing started at 2009 Sep 17 16:28:35\n"
        );
    }

    #[test]
    fn report_golden() {
        let expected = "\
Tracing ended   at 2009 Sep 17 16:28:51
Average latency, all queries: 107 us
Latency distribution, all queries (us):
           value  ------------- Distribution ------------- count
              32 |                                         0
              64 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@     4000
             128 |@@@@                                     480
             256 |                                         0
Query cache statistics:
    count             hit: 6
    count            miss: 4474
    avg latency      miss: 107 (us)
    avg latency       hit: 407 (us)
Latency distribution, for query cache hit (us):
           value  ------------- Distribution ------------- count
             128 |                                         0
             256 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@ 6
             512 |                                         0
Latency distribution, for query cache miss (us):
           value  ------------- Distribution ------------- count
              32 |                                         0
              64 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@     4000
             128 |@@@@                                     474
             256 |                                         0
Average latency when query WAS NOT pre-empted: 73 us
Average latency when query     WAS pre-empted: 127 us
Pre-emptors:
   mysql                                     6
   sysbench                               3095
Off-CPU time inside queries, by why (per query that had any):
    run queue (R)              300 us total in         2 queries, avg 150 us
    I/O wait (D)                 0 us total in         0 queries, avg - us
    sleep, locks (S)             0 us total in         0 queries, avg - us
Off-CPU distribution, run queue wait per query (us):
           value  ------------- Distribution ------------- count
              32 |                                         0
              64 |@@@@@@@@@@@@@@@@@@@@                     1
             128 |@@@@@@@@@@@@@@@@@@@@                     1
             256 |                                         0
Involuntary context switches of server threads: 3500 (3188 inside queries)
";
        assert_eq!(render_report(&querystat_example_report()), expected);
    }

    #[test]
    fn postgres_transactions_and_server_exit_wording() {
        let mut r = querystat_example_report();
        r.by = By::Transaction;
        r.end = EndReason::ServerExited;
        r.server.kind = ServerKind::Postgres;
        r.cache.label = cache_label(ServerKind::Postgres).to_string();
        r.cache.buffer_hits = Some(10);
        r.cache.buffer_reads = Some(2);
        let text = render_report(&r);
        assert!(text.contains("The PostgreSQL server (PID 4242) exited during the run"));
        assert!(text.contains("Average latency, all transactions: 107 us\n"));
        assert!(text.contains("Shared buffer statistics:\n"));
        assert!(text.contains("    buffers           hit: 10\n    buffers          read: 2\n"));
        assert!(text.contains("Latency distribution, for shared buffer miss (us):\n"));
        assert!(text.contains("Average latency when transaction     WAS pre-empted: 127 us\n"));
    }

    #[test]
    fn empty_run_renders_without_numbers() {
        let mut r = querystat_example_report();
        r.all = Latency::default();
        let text = render_report(&r);
        assert!(text.contains("Average latency, all queries: - us\nLatency distribution, all queries (us):\n    (none)\n"));
    }

    #[test]
    fn slow_line_and_json() {
        let q = SlowQuery {
            at: stamp("2026 Nov 23 19:00:00"),
            latency_us: 12_345.6,
            pid: 10,
            tid: 11,
            preempted: true,
            hit: false,
            off_cpu_us: [3000.0, 0.0, 12.4],
            text: "SELECT\n1".to_string(),
        };
        assert_eq!(
            render_slow(&q, By::Query),
            "2026 Nov 23 19:00:00   slow query 12.346 ms  tid 11  pre-empted  off-CPU us: run queue 3000, D 0, S 12  SELECT 1\n"
        );
        let json = serde_json::to_value(querystat_example_report()).unwrap();
        assert_eq!(json["server"]["kind"], "mariadb");
        assert_eq!(json["all"]["count"], 4480);
        assert_eq!(json["cache"]["hit"]["histogram_us"][0]["low_us"], 256);
        assert_eq!(json["preemptors"][1]["comm"], "sysbench");
        assert_eq!(json["end"], "stopped");
    }
}
