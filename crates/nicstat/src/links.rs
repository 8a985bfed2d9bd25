//! `platscope net links`: every link with its speed, duplex and state, and how busy it was over
//! one interval — utilization, saturation, errors and drops. The report's network section.

use std::fmt::Write as _;
use std::time::Duration;

use chart::svg::{esc, fmt3};
use chart::{Area, Figure, Headline, Part, Section};
use experiment::{Context, Experiment, Outcome};
use measure::{Classified, FsRoot, Metric, ToMetrics, Unit};
use serde::{Deserialize, Serialize};

use crate::{Monitor, Options};

/// Links, speeds, duplex and current utilization of every interface that is up.
#[derive(Debug, clap::Args)]
pub struct LinksArgs {
    /// Length of the interval in seconds (0.1 to 3600).
    #[arg(long, default_value_t = 1.0, value_parser = seconds)]
    pub seconds: f64,
}

fn seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if (0.1..=3600.0).contains(&s) => Ok(s),
        Ok(_) => Err(format!("{text:?} is outside 0.1 to 3600 seconds")),
        Err(_) => Err(format!("{text:?} is not a number of seconds")),
    }
}

/// One link over the interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkSample {
    pub name: String,
    /// Mbit/s, when the kernel knows it.
    pub speed_mbps: Option<u32>,
    /// `full`, `half` or `unknown`.
    pub duplex: String,
    pub operstate: Option<String>,
    pub mtu: Option<u32>,
    pub loopback: bool,
    pub rx_bytes_per_s: f64,
    pub tx_bytes_per_s: f64,
    /// Percent of the link's speed (the busier direction on full duplex); `None` without a
    /// speed.
    pub util_pct: Option<f64>,
    /// nicstat's saturation figure per second (errors and drops that mean a full queue).
    pub sat_per_s: f64,
    pub errors_per_s: f64,
    pub drops_per_s: f64,
}

/// Every link over one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetLinks {
    pub seconds: f64,
    pub links: Vec<LinkSample>,
    /// Remarks from the monitor (e.g. a duplex the kernel does not know).
    pub notes: Vec<String>,
    pub interrupted: bool,
}

/// `platscope net links`.
#[derive(Debug)]
pub struct Links;

/// `net links`' section (the report's network area).
pub const NETWORK: Section =
    Section { area: Area::Network, id: "chart-network", title: "Network links", wide: true };

impl Experiment for Links {
    const PATH: &'static [&'static str] = &["net", "links"];
    const ABOUT: &'static str = "Every link that is up: speed, duplex, state, and how busy it was \
                                 over one interval (utilization, saturation, errors, drops).";
    const TINY: &'static [&'static str] = &["--seconds", "0.2"];
    type Args = LinksArgs;
    type Outcome = NetLinks;

    fn run(args: &LinksArgs, _ctx: &mut Context<'_>) -> Result<NetLinks, Classified> {
        let mut monitor = Monitor::new(FsRoot::live(), Options::default())?;
        let facts = monitor.list()?;
        monitor.next_report()?; // the baseline reading (since boot)
        let due = std::time::Instant::now() + Duration::from_secs_f64(args.seconds);
        let interrupted = !measure::stop::sleep_until(due);
        let report = monitor.next_report()?;
        let links = report
            .interfaces
            .iter()
            .map(|r| {
                let fact = facts.iter().find(|f| f.name == r.name);
                LinkSample {
                    name: r.name.clone(),
                    speed_mbps: r.speed_mbps,
                    duplex: match r.duplex {
                        crate::duplex::Duplex::Full => "full",
                        crate::duplex::Duplex::Half => "half",
                        crate::duplex::Duplex::Unknown => "unknown",
                    }
                    .to_string(),
                    operstate: fact.and_then(|f| f.operstate.clone()),
                    mtu: fact.and_then(|f| f.mtu),
                    loopback: r.loopback,
                    rx_bytes_per_s: r.rx_bytes_per_s,
                    tx_bytes_per_s: r.tx_bytes_per_s,
                    util_pct: r.util_pct,
                    sat_per_s: r.sat_per_s,
                    errors_per_s: r.rx_errors_per_s + r.tx_errors_per_s,
                    drops_per_s: r.rx_drops_per_s + r.tx_drops_per_s,
                }
            })
            .collect();
        Ok(NetLinks { seconds: report.elapsed_s, links, notes: monitor.take_notes(), interrupted })
    }
}

fn speed(s: Option<u32>) -> String {
    match s {
        Some(m) if m >= 1000 && m % 1000 == 0 => format!("{} Gbit/s", m / 1000),
        Some(m) => format!("{m} Mbit/s"),
        None => "unknown".into(),
    }
}

fn pct(p: Option<f64>) -> String {
    p.map_or("–".into(), |p| format!("{}%", fmt3(p)))
}

impl ToMetrics for NetLinks {
    fn to_metrics(&self) -> Vec<Metric> {
        let mut out = Vec::new();
        for l in &self.links {
            out.push(
                Metric::new("nic_rx_bytes_per_second", Unit::PerSecond, vec![l.rx_bytes_per_s])
                    .label("interface", &l.name),
            );
            out.push(
                Metric::new("nic_tx_bytes_per_second", Unit::PerSecond, vec![l.tx_bytes_per_s])
                    .label("interface", &l.name),
            );
            if let Some(u) = l.util_pct {
                out.push(
                    Metric::new("nic_utilization", Unit::Percent, vec![u])
                        .label("interface", &l.name),
                );
            }
        }
        out
    }
}

impl Outcome for NetLinks {
    const KINDS: &'static [&'static str] = &["net links"];

    fn interrupted(&self) -> bool {
        self.interrupted
    }

    fn text(&self) -> String {
        let mut out = format!(
            "{:<16} {:>12} {:>8} {:>8} {:>12} {:>12} {:>7} {:>8}\n",
            "interface", "speed", "duplex", "state", "rx B/s", "tx B/s", "util", "sat/s"
        );
        for l in &self.links {
            let _ = writeln!(
                out,
                "{:<16} {:>12} {:>8} {:>8} {:>12.0} {:>12.0} {:>7} {:>8.1}",
                l.name,
                speed(l.speed_mbps),
                l.duplex,
                l.operstate.as_deref().unwrap_or("?"),
                l.rx_bytes_per_s,
                l.tx_bytes_per_s,
                pct(l.util_pct),
                l.sat_per_s
            );
        }
        let _ = writeln!(out, "over {:.2} s", self.seconds);
        for n in &self.notes {
            let _ = writeln!(out, "note: {n}");
        }
        out
    }

    fn csv(&self) -> Option<String> {
        let mut out = String::from(
            "interface,speed_mbps,duplex,state,rx_bytes_per_s,tx_bytes_per_s,util_pct,sat_per_s\n",
        );
        for l in &self.links {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{}",
                l.name,
                l.speed_mbps.map_or(String::new(), |s| s.to_string()),
                l.duplex,
                l.operstate.as_deref().unwrap_or(""),
                l.rx_bytes_per_s,
                l.tx_bytes_per_s,
                l.util_pct.map_or(String::new(), |u| u.to_string()),
                l.sat_per_s
            );
        }
        Some(out)
    }

    fn parts(&self, _topology: &topo::Topology) -> Vec<Part> {
        let mut part = NETWORK.part(None);
        if self.links.is_empty() {
            return vec![part];
        }
        let mut table = String::from(
            "<table class=\"facts-table\"><thead><tr><th>interface</th><th>speed</th>\
             <th>duplex</th><th>state</th><th>rx MB/s</th><th>tx MB/s</th><th>utilization</th>\
             <th>saturation /s</th></tr></thead><tbody>",
        );
        for l in &self.links {
            let _ = write!(
                table,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td class=\"data\" data-value=\"{}\">{}</td><td>{}</td></tr>",
                esc(&l.name),
                esc(&speed(l.speed_mbps)),
                esc(&l.duplex),
                esc(l.operstate.as_deref().unwrap_or("?")),
                fmt3(l.rx_bytes_per_s / 1e6),
                fmt3(l.tx_bytes_per_s / 1e6),
                l.util_pct.map_or(String::new(), |u| u.to_string()),
                esc(&pct(l.util_pct)),
                fmt3(l.sat_per_s)
            );
        }
        table.push_str("</tbody></table>");
        let caption = format!(
            "Over {} s; utilization is the busier direction on full duplex, the sum on half; \
             unknown speed: no utilization",
            fmt3(self.seconds)
        );
        part.figure = Some(Figure { svg: table, caption, after: String::new() });
        let busiest = self
            .links
            .iter()
            .filter(|l| !l.loopback)
            .filter_map(|l| l.util_pct.map(|u| (l, u)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((l, u)) = busiest {
            part.headlines.push(Headline {
                name: "Busiest link".into(),
                value: format!("{}%", fmt3(u)),
                detail: format!("{} at {}", l.name, speed(l.speed_mbps)),
                metric: Some(format!("nic_utilization{{interface={}}}", l.name)),
            });
        }
        part.notes = self.notes.clone();
        vec![part]
    }
}
