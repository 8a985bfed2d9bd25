//! `platscope db querystat` as the product runs it: the arguments, the run (the DTrace script's
//! lines printed as they happen), and what the report prints, stores and draws (the latency
//! histogram and who pre-empted the server). One registry line in the binary.

use std::fmt::Write as _;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use chart::svg::{self, esc, exact, fmt3, px, Plot, ScaleKind, Tick};
use chart::{Area, Figure, Headline, Part};
use experiment::{Context, Experiment, Outcome};
use measure::database::ServerKind;
use measure::hist::{slot_low, Log2Hist};
use measure::{stop, Classified, ToMetrics};

use crate::report::{render_interval, render_slow, render_started, EndReason};
use crate::{find_server, render_report, By, Options, Report, RunOptions, Selector, Tracer};

/// Query (or transaction) throughput every INTERVAL seconds; at the end (COUNT intervals or
/// Ctrl-C) the latency histogram, cache hits against misses, latency when pre-empted or not,
/// and who pre-empted the server's threads.
#[derive(Debug, clap::Args)]
pub struct QuerystatArgs {
    /// Seconds between throughput lines.
    #[arg(value_name = "INTERVAL", default_value = "3", value_parser = measure::args::parse_interval)]
    pub interval: Duration,
    /// Stop after this many intervals (default: until Ctrl-C). A server that exits ends the run
    /// with what was traced, and the command exits 1.
    #[arg(value_name = "COUNT", value_parser = measure::args::parse_count)]
    pub count: Option<u64>,
    /// Which kind of server to look for (default: whichever one is running).
    #[arg(long, value_parser = ["postgres", "mariadb"])]
    pub server: Option<String>,
    /// The server's process (the postmaster or mariadbd, or one of its backends).
    #[arg(long, value_parser = measure::args::parse_pid, conflicts_with = "exe")]
    pub pid: Option<u32>,
    /// The server binary that is running (when several servers run from different builds).
    #[arg(long)]
    pub exe: Option<PathBuf>,
    /// Time transactions instead of queries (PostgreSQL).
    #[arg(long, default_value = "query", value_parser = ["query", "transaction"])]
    pub by: String,
    /// Print each query slower than MS milliseconds, with its text, as it happens.
    #[arg(long, value_name = "MS", value_parser = parse_ms)]
    pub slower: Option<Duration>,
    /// Count exact shared-buffer hits (one probe per buffer lookup: costs more; PostgreSQL).
    #[arg(long)]
    pub buffer_hits: bool,
    /// Store the text of --slower queries whole. By default the terminal shows it whole but the
    /// results database keeps it normalized — literals replaced by $1, $2, … (? for MariaDB),
    /// as pg_stat_statements shows statements — so no password or customer data is stored.
    #[arg(long, requires = "slower")]
    pub store_query_text: bool,
    /// Bench only: attach empty programs at the same probes and sched_switch, count nothing
    /// (the floor of tracing's cost; bench/querystat_overhead.sh).
    #[arg(long, hide = true, conflicts_with_all = ["slower", "buffer_hits"])]
    pub empty_programs: bool,
}

fn parse_ms(text: &str) -> Result<Duration, String> {
    let ms: f64 = text.trim().parse().map_err(|_| format!("{text:?} is not milliseconds"))?;
    if !(ms.is_finite() && ms > 0.0) {
        return Err(format!("{text:?} must be a positive number of milliseconds"));
    }
    Ok(Duration::from_secs_f64(ms / 1e3))
}

/// `platscope db querystat`.
#[derive(Debug)]
pub struct Querystat;

impl Experiment for Querystat {
    const PATH: &'static [&'static str] = &["db", "querystat"];
    const ABOUT: &'static str = "Query (or transaction) throughput every INTERVAL seconds; at the \
                                 end (COUNT intervals or Ctrl-C) the latency histogram, cache \
                                 hits against misses, latency when pre-empted or not, and who \
                                 pre-empted the server's threads. PostgreSQL through its USDT \
                                 probes, MariaDB through uprobes; root";
    const TINY: &'static [&'static str] = &["0.5", "2", "--pid", "{pgpid}"];
    type Args = QuerystatArgs;
    type Outcome = Report;

    fn run(args: &QuerystatArgs, ctx: &mut Context<'_>) -> Result<Report, Classified> {
        crate::preflight()?;
        let kind = args.server.as_deref().map(str::parse::<ServerKind>).transpose()?;
        let selector = Selector { kind, pid: args.pid, exe: args.exe.clone() };
        let server = find_server(&selector)?;
        let by = if args.by == "transaction" { By::Transaction } else { By::Query };
        let options = Options {
            by,
            slower: args.slower,
            buffer_hits: args.buffer_hits,
            empty_programs: args.empty_programs,
        };
        let tracer = Tracer::attach(&server, &options)?;
        // Said once the probes are on, so what follows it is traced.
        if !ctx.quiet {
            measure::say!("platscope: tracing {}", server.describe());
        }
        let run_options = RunOptions { interval: args.interval, count: args.count };
        let mut report = crate::run(&tracer, &run_options, stop::flag(), &mut Live(ctx))?;
        drop(tracer);
        // Printed whole as they happened; stored without their literals unless asked.
        if !args.store_query_text {
            for q in &mut report.slow {
                q.text = crate::normalize::normalize(&q.text, server.kind);
            }
        }
        let _ = ctx.live(&render_report(&report));
        Ok(report)
    }
}

/// The run's lines, printed as they happen (text output only; a reader that went away is not
/// an error: the run goes on and is stored).
struct Live<'c, 'a>(&'c mut Context<'a>);

impl io::Write for Live<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.live(&String::from_utf8_lossy(buf))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Outcome for Report {
    const KINDS: &'static [&'static str] = &["db querystat"];

    fn interrupted(&self) -> bool {
        self.end == EndReason::Stopped
    }

    /// The text as printed: the start, each interval (then any `--slower` lines, which were
    /// printed among them as they happened), the summary.
    fn text(&self) -> String {
        let mut out = render_started(&self.started);
        for i in &self.intervals {
            out.push_str(&render_interval(i, self.by));
        }
        for q in &self.slow {
            out.push_str(&render_slow(q, self.by));
        }
        out.push_str(&render_report(self));
        out
    }

    fn parts(&self, _topology: &topo::Topology) -> Vec<Part> {
        vec![part(self)]
    }

    /// A server that exits under the tracer ends the run with what was traced, printed and
    /// stored, and the command fails (exit 1) so a script sees the server went away.
    fn failure(&self) -> Option<Classified> {
        (self.end == EndReason::ServerExited).then(|| {
            Classified::runtime(format!(
                "the {} server (PID {}) exited during the run; what was traced until then is kept",
                self.server.kind.title(),
                self.server.pid
            ))
        })
    }
}

/// The id of `db querystat`'s section (its heading names the server).
pub const CHART_ID: &str = "chart-querystat";

/// The section: the latency histogram of every traced query (or transaction), the cache and
/// pre-emption figures and the top pre-emptors under it.
fn part(r: &Report) -> Part {
    let (one, all) = (r.by.singular(), r.by.plural());
    let mut part =
        Part::new(Area::Database, CHART_ID, &format!("{} latency", r.server.kind.title()), false);
    let Some(svg) = histogram_chart(CHART_ID, &r.all.histogram_us, all) else {
        part.notes.push(format!(
            "no {all} completed in the {} s traced ({}, PID {})",
            fmt3(r.duration_s),
            r.server.kind.title(),
            r.server.pid
        ));
        return part;
    };
    let mut caption = format!(
        "{} {all} of {} (PID {}) in {} s traced, by log2 bucket of latency; mean {} µs.",
        r.all.count,
        esc(r.server.kind.title()),
        r.server.pid,
        fmt3(r.duration_s),
        r.all.avg_us.map_or("–".to_string(), fmt3)
    );
    match r.end {
        EndReason::Stopped => caption.push_str(" Stopped by Ctrl-C or SIGTERM."),
        EndReason::ServerExited => caption.push_str(" The server exited during the run."),
        EndReason::Count => {}
    }
    let mut after = String::from("<table class=\"facts-table\"><tbody>");
    let mut row = |name: &str, count: u64, avg: Option<f64>| {
        let _ = write!(
            after,
            "<tr><td>{}</td><td class=\"data\" data-value=\"{count}\">{count}</td>\
             <td>{}</td></tr>",
            esc(name),
            avg.map_or("–".to_string(), |a| format!("{} µs", fmt3(a)))
        );
    };
    row(&format!("{} hit", r.cache.label), r.cache.hit.count, r.cache.hit.avg_us);
    row(&format!("{} miss", r.cache.label), r.cache.miss.count, r.cache.miss.avg_us);
    row(&format!("{one} not pre-empted"), r.not_preempted.count, r.not_preempted.avg_us);
    row(&format!("{one} pre-empted"), r.preempted.count, r.preempted.avg_us);
    after.push_str("</tbody></table>");
    let mut top: Vec<_> = r.preemptors.iter().collect();
    top.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.comm.cmp(&b.comm)));
    if top.is_empty() {
        let _ = write!(after, "<p>No task pre-empted the server's threads inside a {one}.</p>");
    } else {
        after.push_str(
            "<table class=\"facts-table\"><thead><tr><th>pre-emptor</th><th>times</th></tr>\
             </thead><tbody>",
        );
        for p in top.iter().take(10) {
            let _ = write!(
                after,
                "<tr><td>{}</td><td class=\"data\" data-value=\"{}\">{}</td></tr>",
                esc(&p.comm),
                p.count,
                p.count
            );
        }
        after.push_str("</tbody></table>");
    }
    part.figure = Some(Figure { svg, caption, after });
    if let Some(avg) = r.all.avg_us {
        let metric = r
            .to_metrics()
            .into_iter()
            .find(|m| {
                m.name == crate::metrics::LATENCY_MEAN
                    && m.labels.get("preempted").map(String::as_str) == Some("all")
            })
            .map(|m| m.key());
        part.headlines.push(Headline {
            name: format!("{} mean {one} latency", r.server.kind.title()),
            value: format!("{} µs", fmt3(avg)),
            detail: format!("{} {all}", r.all.count),
            metric,
        });
    }
    part
}

/// Bars of a log2 histogram, from one bucket below the first counted to one above the last
/// (as DTrace prints it); `None` when nothing was counted.
fn histogram_chart(id: &str, h: &Log2Hist, what: &str) -> Option<String> {
    let slots = h.slots();
    let first = slots.iter().position(|&c| c > 0)?;
    let last = slots.iter().rposition(|&c| c > 0)?;
    let (from, to) = (first.saturating_sub(1), (last + 1).min(slots.len() - 1));
    let n = (to - from + 1) as f64;
    let top = slots[from..=to].iter().copied().max().unwrap_or(1) as f64;
    let plot =
        Plot { width: 600.0, height: 340.0, left: 64.0, right: 16.0, top: 20.0, bottom: 60.0 };
    let x = plot.x_scale(ScaleKind::Linear, 0.0, n);
    let y = plot.y_scale(ScaleKind::Linear, 0.0, svg::nice_max(top, 5));
    let ticks: Vec<Tick> = (from..=to)
        .enumerate()
        .map(|(i, s)| Tick { value: i as f64 + 0.5, label: Some(slot_low(s).to_string()) })
        .collect();
    let mut out = svg::open(id, plot.width, plot.height, &format!("Latency of all {what}"));
    out.push_str(&plot.axes(&x, &ticks, &y, &y.ticks(5)));
    out.push_str(&plot.x_title("latency, µs (bucket from)"));
    out.push_str(&plot.y_title(what));
    let width = x.map(1.0) - x.map(0.0);
    for (i, s) in (from..=to).enumerate() {
        let count = slots[s];
        let (x0, y0, yc) = (x.map(i as f64), y.map(0.0), y.map(count as f64));
        let _ = write!(
            out,
            "<rect class=\"bar data\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" \
             data-value=\"{count}\" data-low-us=\"{}\"><title>{} – {} µs: {count}</title></rect>",
            px(x0 + width * 0.1),
            px(yc),
            px(width * 0.8),
            px((y0 - yc).max(0.0)),
            slot_low(s),
            slot_low(s),
            exact(slot_low(s + 1) as f64)
        );
    }
    out.push_str("</svg>");
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{CacheStats, Latency, OffCpu, Preemptor, Stamp};
    use crate::Server;

    fn report(values: &[u64]) -> Report {
        let mut h = Log2Hist::default();
        for &v in values {
            h.add(v);
        }
        let stamp = Stamp { epoch_s: 1, local: "2026 Jan 01 00:00:01".into() };
        Report {
            server: Server {
                pid: 42,
                kind: ServerKind::MariaDb,
                exe: "/usr/sbin/mariadbd".into(),
                version: "x".into(),
            },
            by: By::Query,
            started: stamp.clone(),
            ended: stamp,
            duration_s: 2.0,
            end: EndReason::Count,
            intervals: Vec::new(),
            all: Latency::new(values.len() as u64, values.iter().sum::<u64>() * 1000, h),
            cache: CacheStats { label: "query cache".into(), ..CacheStats::default() },
            preempted: Latency::default(),
            not_preempted: Latency::default(),
            off_cpu: OffCpu::default(),
            preemptions: 3,
            involuntary_switches: 5,
            preemptors: vec![
                Preemptor { comm: "kworker".into(), count: 1 },
                Preemptor { comm: "<sysbench>".into(), count: 9 },
            ],
            slow: Vec::new(),
            slow_dropped: 0,
        }
    }

    #[test]
    fn the_histogram_and_pre_emptors_are_drawn_and_read_back_alike() {
        let topology =
            topo::Topology::from_synthetic("pack:1 [numa(memory=1GiB)] core:2 pu:1").unwrap();
        let r = report(&[40, 50, 70, 300]);
        let parts = r.parts(&topology);
        let f = parts[0].figure.as_ref().unwrap();
        // Buckets 16 (empty, below), 32, 64, 128 (empty), 256, 512 (empty, above).
        assert_eq!(f.svg.matches("<rect class=\"bar data\"").count(), 6, "{}", f.svg);
        assert!(f.svg.contains("data-value=\"2\" data-low-us=\"32\""), "{}", f.svg);
        // The most frequent pre-emptor first, escaped.
        let most = f.after.find("&lt;sysbench&gt;").unwrap();
        assert!(most < f.after.find("kworker").unwrap(), "{}", f.after);
        assert!(parts[0].headlines[0]
            .metric
            .as_deref()
            .is_some_and(|m| m.contains("preempted=all")));
        let stored = serde_json::to_value(&r).unwrap();
        assert_eq!(stored["server"]["kind"], "mariadb");
        let back = Report::from_stored("db querystat", stored).unwrap();
        assert_eq!(back.parts(&topology), parts);
        assert_eq!(back.text(), r.text());
    }

    #[test]
    fn the_mean_latency_is_stored_one_sample_an_interval() {
        let topology =
            topo::Topology::from_synthetic("pack:1 [numa(memory=1GiB)] core:2 pu:1").unwrap();
        let mut r = report(&[40, 50, 70, 300]);
        let interval = |mean_us: Option<f64>| crate::report::Interval {
            at: r.started.clone(),
            completed: u64::from(mean_us.is_some()),
            per_sec: 1.0,
            mean_us,
        };
        // An interval in which nothing completed has no mean and gives no sample.
        let means = [Some(90.0), Some(110.0), None, Some(100.0), Some(95.0), Some(120.0)];
        r.intervals = means.iter().map(|&m| interval(m)).collect();
        let key = r.parts(&topology)[0].headlines[0].metric.clone().unwrap();
        let metrics = r.to_metrics();
        let backing = metrics.iter().find(|m| m.key() == key).expect("the headline's metric");
        assert_eq!(backing.samples, [90e3, 110e3, 100e3, 95e3, 120e3], "ns, one an interval");
        // Stored and read back with the intervals' means; a run stored before them (no
        // `mean_us`) reads back with the run's mean as its one sample.
        let mut stored = serde_json::to_value(&r).unwrap();
        assert_eq!(stored["intervals"][0]["mean_us"], 90.0);
        assert!(stored["intervals"][2].get("mean_us").is_none());
        assert_eq!(Report::from_stored("db querystat", stored.clone()).unwrap(), r);
        for i in stored["intervals"].as_array_mut().unwrap() {
            i.as_object_mut().unwrap().remove("mean_us");
        }
        let old = Report::from_stored("db querystat", stored).unwrap();
        let old = old.to_metrics().into_iter().find(|m| m.key() == key).unwrap();
        assert_eq!(old.samples, [115e3], "the run's mean of 40, 50, 70 and 300 µs");
    }

    #[test]
    fn a_server_that_exits_fails_the_command_and_the_others_do_not() {
        let mut r = report(&[40]);
        for end in [EndReason::Count, EndReason::Stopped] {
            r.end = end;
            assert!(r.failure().is_none(), "{end:?}");
        }
        r.end = EndReason::ServerExited;
        let why = r.failure().expect("a failure");
        assert!(!why.is_usage());
        assert_eq!(
            why.to_string(),
            "the MariaDB server (PID 42) exited during the run; what was traced until then is kept"
        );
    }

    #[test]
    fn nothing_traced_says_so() {
        let topology =
            topo::Topology::from_synthetic("pack:1 [numa(memory=1GiB)] core:2 pu:1").unwrap();
        let parts = report(&[]).parts(&topology);
        assert!(parts[0].figure.is_none());
        let html = chart::render_part(&parts[0], "unused");
        assert!(html.contains("no queries completed in the 2.00 s traced"), "{html}");
    }
}
