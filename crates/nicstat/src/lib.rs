//! nicstat: per-interface throughput, packet rates, utilization and saturation, plus TCP, UDP
//! and softnet figures, in the layouts of nicstat 1.95 — without the Linux version's bugs.
//!
//! - [`Monitor`] reads [`Snapshot`]s through an [`FsRoot`] and turns consecutive ones into a
//!   [`Report`]; the first report covers the time since boot, as nicstat's does.
//! - The arithmetic is in pure functions: [`interface_rates`], [`tcp_rates`], [`udp_rates`],
//!   [`softnet_rates`], [`utilization_pct`].
//! - [`render`] turns a report into nicstat's text and parseable lines.
//! - [`command`]: `platscope net stat` and the `nicstat` compat name (flags and the sampling
//!   loop).
//!
//! Definitions (the same as nicstat's where nicstat defines them):
//!
//! - **%Util**: for a full-duplex link the busier direction as a percentage of the link speed,
//!   for a half-duplex link both directions summed. Unknown speed → no utilization (`-`). Known
//!   speed with unknown duplex → computed as full duplex, and [`Monitor::take_notes`] says so.
//!   With `--wire`, each packet also counts [`WIRE_OVERHEAD_BYTES`] bytes of Ethernet framing.
//! - **Sat**: per second, the sum of the `/proc/net/dev` counters that Linux nicstat 1.95 adds up
//!   (found by feeding it crafted counters): receive errs and drop, transmit drop, fifo, colls
//!   and carrier. It mixes errors with drops, so `-x` also shows errors and drops separately.
//! - **%ReTX**: retransmitted segments as a percentage of all segments sent (`RetransSegs /
//!   (OutSegs + RetransSegs)`: Linux does not count retransmissions in `OutSegs`).
//! - **Drops** (`-t`): `TcpExt: ListenDrops`, Linux's count of connections and SYNs dropped at a
//!   listener (accept-queue overflows included), read by name from `/proc/net/netstat`.
//! - **InKB/OutKB** (`-t`), **NoCP** and **Defer** (`-x`): Linux has no such counters; nicstat
//!   printed 0 for them, this prints `-`.

pub mod command;
pub mod duplex;
pub mod ioctl;
pub mod link;
pub mod links;
pub mod netdev;
pub mod netlink;
pub mod render;
pub mod snmp;
pub mod softnet;

use std::collections::{HashMap, HashSet};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

pub use crate::duplex::Duplex;
use crate::ioctl::Socket;
use crate::link::{read_ifindex, read_link_facts, refresh_link};
pub use crate::link::{LinkFacts, SpeedOverride, SpeedSource};
use crate::netdev::{parse_net_dev, NetDevCounters};
use crate::snmp::{ProtoTable, TcpCounters, UdpCounters};
use crate::softnet::{parse_softnet_stat, SoftnetCpu};
pub use measure::args::{parse_count, parse_interval};
use measure::CounterDelta;
use measure::FsRoot;
use measure::{Error, ParseError, UsageError};

/// Ethernet framing per packet that interface byte counters leave out: preamble and start
/// delimiter (8 bytes), frame check sequence (4), inter-frame gap (12).
pub const WIRE_OVERHEAD_BYTES: u64 = 24;

/// Link speed, duplex and flags are read again (links renegotiate, go up and down) for a slice of
/// the interfaces at each sample (one at least), so every interface is refreshed at least once
/// every this many samples — once every N samples when there are N < 100 — without a burst of
/// sysfs reads on machines with thousands of interfaces.
const REFRESH_SAMPLES: usize = 100;

/// What to show; mirrors nicstat's flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `-i`: only these interfaces (empty: all).
    pub interfaces: Vec<String>,
    /// `-S`: speeds and duplexes that override what the kernel says.
    pub speeds: Vec<SpeedOverride>,
    /// `-x`: extended interface statistics, and softnet per CPU.
    pub extended: bool,
    /// `-t`: TCP.
    pub tcp: bool,
    /// `-u`: UDP.
    pub udp: bool,
    /// `-p`: parseable lines.
    pub parseable: bool,
    /// `-M`: Mbit/s instead of KB/s (1 KB = 1024 bytes, as nicstat).
    pub mbps: bool,
    /// `-U`: separate read and write utilization.
    pub split_util: bool,
    /// `-z`: skip interfaces (and CPUs) with no traffic in the interval.
    pub skip_idle: bool,
    /// `-n`: skip loopback interfaces.
    pub non_local: bool,
    /// `-s`: summary (read and written KB/s only).
    pub summary: bool,
    /// `--wire`: utilization includes per-packet Ethernet framing.
    pub wire: bool,
}

impl Options {
    /// Whether interface lines are printed: nicstat shows only TCP/UDP for `-t`/`-u` alone.
    pub fn show_interfaces(&self) -> bool {
        self.extended || self.summary || (!self.tcp && !self.udp)
    }
}

/// One reading of the counters.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub at: Instant,
    /// Wall-clock time of the reading, seconds since the Unix epoch (for display only).
    pub epoch_s: f64,
    pub netdev: Vec<NetDevCounters>,
    pub tcp: Option<TcpCounters>,
    pub udp: Option<UdpCounters>,
    pub softnet: Option<Vec<SoftnetCpu>>,
}

/// One interface over one interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InterfaceRates {
    pub name: String,
    /// Counts over the interval.
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes_per_s: f64,
    pub tx_bytes_per_s: f64,
    pub rx_packets_per_s: f64,
    pub tx_packets_per_s: f64,
    /// Average packet size in bytes (0 when no packets).
    pub rx_avg_bytes: f64,
    pub tx_avg_bytes: f64,
    pub speed_mbps: Option<u32>,
    pub duplex: Duplex,
    pub speed_source: SpeedSource,
    pub util_pct: Option<f64>,
    pub rx_util_pct: Option<f64>,
    pub tx_util_pct: Option<f64>,
    /// nicstat's saturation figure (see the module documentation).
    pub sat_per_s: f64,
    pub rx_errors_per_s: f64,
    pub tx_errors_per_s: f64,
    pub rx_drops_per_s: f64,
    pub tx_drops_per_s: f64,
    pub collisions_per_s: f64,
    /// The counters started again during the interval (interface re-created, driver reset):
    /// the figures count only what happened since.
    pub counters_restarted: bool,
    pub loopback: bool,
}

impl InterfaceRates {
    /// No bytes or packets either way.
    pub fn is_idle(&self) -> bool {
        self.rx_bytes == 0 && self.tx_bytes == 0 && self.rx_packets == 0 && self.tx_packets == 0
    }
}

/// TCP over one interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TcpRates {
    pub in_segs: u64,
    pub out_segs: u64,
    pub retrans_segs: u64,
    pub in_segs_per_s: f64,
    pub out_segs_per_s: f64,
    pub retrans_segs_per_s: f64,
    /// Retransmitted segments as a percentage of all segments sent.
    pub retrans_pct: f64,
    pub estab_resets_per_s: f64,
    pub attempt_fails_per_s: f64,
    pub passive_opens_per_s: f64,
    pub active_opens_per_s: f64,
    /// `TcpExt: ListenDrops` per second; `None` when the kernel does not print it.
    pub listen_drops_per_s: Option<f64>,
    pub listen_overflows_per_s: Option<f64>,
    pub timeouts_per_s: Option<f64>,
}

/// UDP over one interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UdpRates {
    pub in_datagrams: u64,
    pub out_datagrams: u64,
    pub in_datagrams_per_s: f64,
    pub out_datagrams_per_s: f64,
    pub in_errors_per_s: f64,
    /// `SndbufErrors` per second (what nicstat shows as OutErr); `None` when not printed.
    pub out_errors_per_s: Option<f64>,
    pub no_ports_per_s: f64,
    pub rcvbuf_errors_per_s: Option<f64>,
}

/// One CPU's receive softirq over one interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SoftnetRates {
    /// The CPU number, or the line number when the kernel does not print it (before 5.10).
    pub cpu: u32,
    pub cpu_known: bool,
    pub processed_per_s: f64,
    /// Packets dropped because the backlog was full.
    pub dropped_per_s: f64,
    /// Times the softirq stopped with work left (budget or time used up).
    pub squeezed_per_s: f64,
}

/// Everything measured over one interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Wall-clock end of the interval, seconds since the Unix epoch.
    pub epoch_s: f64,
    /// Length of the interval (monotonic clock; since boot for the first report).
    pub elapsed_s: f64,
    pub since_boot: bool,
    /// Bytes of framing added per packet for utilization (`--wire`).
    pub wire_overhead_bytes_per_packet: Option<u64>,
    pub interfaces: Vec<InterfaceRates>,
    pub tcp: Option<TcpRates>,
    pub udp: Option<UdpRates>,
    pub softnet: Option<Vec<SoftnetRates>>,
}

/// Utilization in percent: full duplex takes the busier direction, half duplex the sum; unknown
/// duplex is computed as full (callers say so). `None` without a speed.
pub fn utilization_pct(
    rx_bits_per_s: f64,
    tx_bits_per_s: f64,
    speed_mbps: Option<u32>,
    duplex: Duplex,
) -> Option<f64> {
    let capacity = f64::from(speed_mbps?) * 1e6;
    let used = match duplex {
        Duplex::Half => rx_bits_per_s + tx_bits_per_s,
        Duplex::Full | Duplex::Unknown => rx_bits_per_s.max(tx_bits_per_s),
    };
    Some(used / capacity * 100.0)
}

/// Rates for one interface. `prev` is `None` for the since-boot report; `restarted` when its
/// counters are known to have started again (ifindex changed).
pub fn interface_rates(
    prev: Option<&NetDevCounters>,
    cur: &NetDevCounters,
    elapsed_s: f64,
    link: &LinkFacts,
    restarted: bool,
    wire: bool,
) -> InterfaceRates {
    // Bound on what one interval can carry, to disbelieve a "wrap" that is really a restart.
    let byte_bound = link.speed_mbps.map(|mbps| {
        let per_s = f64::from(mbps) * 1e6 / 8.0;
        (per_s * elapsed_s * 2.0).max(1_048_576.0) as u64
    });
    let packet_bound = byte_bound.map(|b| b / 60 + 1);
    let delta = |f: fn(&NetDevCounters) -> u64, bound: Option<u64>| match prev {
        Some(p) => CounterDelta::between(f(p), f(cur), !restarted, bound),
        None => CounterDelta::from_zero(f(cur)),
    };
    let rx_bytes = delta(|c| c.rx_bytes, byte_bound);
    let tx_bytes = delta(|c| c.tx_bytes, byte_bound);
    let rx_packets = delta(|c| c.rx_packets, packet_bound);
    let tx_packets = delta(|c| c.tx_packets, packet_bound);
    let errors = |f: fn(&NetDevCounters) -> u64| delta(f, packet_bound);
    let rx_errs = errors(|c| c.rx_errs);
    let rx_drop = errors(|c| c.rx_drop);
    let tx_errs = errors(|c| c.tx_errs);
    let tx_drop = errors(|c| c.tx_drop);
    let tx_fifo = errors(|c| c.tx_fifo);
    let colls = errors(|c| c.tx_colls);
    let carrier = errors(|c| c.tx_carrier);
    let sat = [rx_errs, rx_drop, tx_drop, tx_fifo, colls, carrier]
        .iter()
        .map(|d| d.value)
        .fold(0u64, u64::saturating_add);

    let rate = |d: &CounterDelta| d.rate(elapsed_s);
    let avg = |bytes: &CounterDelta, packets: &CounterDelta| {
        if packets.value > 0 {
            bytes.value as f64 / packets.value as f64
        } else {
            0.0
        }
    };
    let framing = if wire { WIRE_OVERHEAD_BYTES } else { 0 };
    let bits = |bytes: &CounterDelta, packets: &CounterDelta| {
        (bytes.value as f64 + packets.value as f64 * framing as f64) * 8.0
            / elapsed_s.max(f64::MIN_POSITIVE)
    };
    let rx_bits = bits(&rx_bytes, &rx_packets);
    let tx_bits = bits(&tx_bytes, &tx_packets);
    let one_way = |b: f64| link.speed_mbps.map(|s| b / (f64::from(s) * 1e6) * 100.0);

    InterfaceRates {
        name: cur.name.clone(),
        rx_bytes: rx_bytes.value,
        tx_bytes: tx_bytes.value,
        rx_packets: rx_packets.value,
        tx_packets: tx_packets.value,
        rx_bytes_per_s: rate(&rx_bytes),
        tx_bytes_per_s: rate(&tx_bytes),
        rx_packets_per_s: rate(&rx_packets),
        tx_packets_per_s: rate(&tx_packets),
        rx_avg_bytes: avg(&rx_bytes, &rx_packets),
        tx_avg_bytes: avg(&tx_bytes, &tx_packets),
        speed_mbps: link.speed_mbps,
        duplex: link.duplex,
        speed_source: link.speed_source,
        util_pct: utilization_pct(rx_bits, tx_bits, link.speed_mbps, link.duplex),
        rx_util_pct: one_way(rx_bits),
        tx_util_pct: one_way(tx_bits),
        sat_per_s: sat as f64 / elapsed_s.max(f64::MIN_POSITIVE),
        rx_errors_per_s: rate(&rx_errs),
        tx_errors_per_s: rate(&tx_errs),
        rx_drops_per_s: rate(&rx_drop),
        tx_drops_per_s: rate(&tx_drop),
        collisions_per_s: rate(&colls),
        counters_restarted: [rx_bytes, tx_bytes, rx_packets, tx_packets]
            .iter()
            .any(CounterDelta::is_reset),
        loopback: link.loopback,
    }
}

fn delta_of<T>(prev: Option<&T>, cur: &T, f: impl Fn(&T) -> u64) -> CounterDelta {
    match prev {
        Some(p) => CounterDelta::between(f(p), f(cur), true, None),
        None => CounterDelta::from_zero(f(cur)),
    }
}

fn opt_rate<T>(
    prev: Option<&T>,
    cur: &T,
    f: impl Fn(&T) -> Option<u64>,
    elapsed_s: f64,
) -> Option<f64> {
    let now = f(cur)?;
    let d = match prev {
        Some(p) => CounterDelta::between(f(p)?, now, true, None),
        None => CounterDelta::from_zero(now),
    };
    Some(d.rate(elapsed_s))
}

/// TCP rates between two readings (`prev` `None`: since boot).
pub fn tcp_rates(prev: Option<&TcpCounters>, cur: &TcpCounters, elapsed_s: f64) -> TcpRates {
    let d = |f: fn(&TcpCounters) -> u64| delta_of(prev, cur, f);
    let in_segs = d(|t| t.in_segs);
    let out_segs = d(|t| t.out_segs);
    let retrans = d(|t| t.retrans_segs);
    let sent = out_segs.value.saturating_add(retrans.value);
    TcpRates {
        in_segs: in_segs.value,
        out_segs: out_segs.value,
        retrans_segs: retrans.value,
        in_segs_per_s: in_segs.rate(elapsed_s),
        out_segs_per_s: out_segs.rate(elapsed_s),
        retrans_segs_per_s: retrans.rate(elapsed_s),
        retrans_pct: if sent > 0 { retrans.value as f64 / sent as f64 * 100.0 } else { 0.0 },
        estab_resets_per_s: d(|t| t.estab_resets).rate(elapsed_s),
        attempt_fails_per_s: d(|t| t.attempt_fails).rate(elapsed_s),
        passive_opens_per_s: d(|t| t.passive_opens).rate(elapsed_s),
        active_opens_per_s: d(|t| t.active_opens).rate(elapsed_s),
        listen_drops_per_s: opt_rate(prev, cur, |t| t.listen_drops, elapsed_s),
        listen_overflows_per_s: opt_rate(prev, cur, |t| t.listen_overflows, elapsed_s),
        timeouts_per_s: opt_rate(prev, cur, |t| t.timeouts, elapsed_s),
    }
}

/// UDP rates between two readings.
pub fn udp_rates(prev: Option<&UdpCounters>, cur: &UdpCounters, elapsed_s: f64) -> UdpRates {
    let d = |f: fn(&UdpCounters) -> u64| delta_of(prev, cur, f);
    let in_dg = d(|u| u.in_datagrams);
    let out_dg = d(|u| u.out_datagrams);
    UdpRates {
        in_datagrams: in_dg.value,
        out_datagrams: out_dg.value,
        in_datagrams_per_s: in_dg.rate(elapsed_s),
        out_datagrams_per_s: out_dg.rate(elapsed_s),
        in_errors_per_s: d(|u| u.in_errors).rate(elapsed_s),
        out_errors_per_s: opt_rate(prev, cur, |u| u.sndbuf_errors, elapsed_s),
        no_ports_per_s: d(|u| u.no_ports).rate(elapsed_s),
        rcvbuf_errors_per_s: opt_rate(prev, cur, |u| u.rcvbuf_errors, elapsed_s),
    }
}

/// Softnet rates per CPU, matched by CPU number (or line); a CPU not in `prev` is skipped.
pub fn softnet_rates(
    prev: Option<&[SoftnetCpu]>,
    cur: &[SoftnetCpu],
    elapsed_s: f64,
) -> Vec<SoftnetRates> {
    cur.iter()
        .filter_map(|c| {
            let before = match prev {
                Some(list) => Some(list.iter().find(|p| p.cpu == c.cpu && p.label() == c.label())?),
                None => None,
            };
            let d = |f: fn(&SoftnetCpu) -> u64| delta_of(before, c, f).rate(elapsed_s);
            Some(SoftnetRates {
                cpu: c.label(),
                cpu_known: c.cpu.is_some(),
                processed_per_s: d(|s| s.processed),
                dropped_per_s: d(|s| s.dropped),
                squeezed_per_s: d(|s| s.time_squeeze),
            })
        })
        .collect()
}

/// Builds a report from two snapshots (`prev` `None`: since boot, over `elapsed_s`).
/// `links` holds the facts of every selected interface; `restarted` names interfaces whose
/// counters are known to have started again. Interfaces absent from `prev` (new ones) are left
/// out: their first reading is a baseline.
pub fn compute_report(
    prev: Option<&Snapshot>,
    cur: &Snapshot,
    elapsed_s: f64,
    links: &HashMap<String, LinkFacts>,
    restarted: &HashSet<String>,
    opts: &Options,
) -> Report {
    let mut interfaces = Vec::new();
    let before_by_name: HashMap<&str, &NetDevCounters> = match prev {
        Some(p) if opts.show_interfaces() => {
            p.netdev.iter().map(|d| (d.name.as_str(), d)).collect()
        }
        _ => HashMap::new(),
    };
    if opts.show_interfaces() {
        for dev in &cur.netdev {
            let Some(link) = links.get(&dev.name) else { continue };
            if !selected(opts, link) {
                continue;
            }
            let before = match prev {
                Some(_) => match before_by_name.get(dev.name.as_str()) {
                    Some(d) => Some(*d),
                    None => continue,
                },
                None => None,
            };
            let rates = interface_rates(
                before,
                dev,
                elapsed_s,
                link,
                restarted.contains(&dev.name),
                opts.wire,
            );
            if opts.skip_idle && rates.is_idle() {
                continue;
            }
            interfaces.push(rates);
        }
    }
    let tcp = match (opts.tcp, &cur.tcp) {
        (true, Some(now)) => Some(tcp_rates(prev.and_then(|p| p.tcp.as_ref()), now, elapsed_s)),
        _ => None,
    };
    let udp = match (opts.udp, &cur.udp) {
        (true, Some(now)) => Some(udp_rates(prev.and_then(|p| p.udp.as_ref()), now, elapsed_s)),
        _ => None,
    };
    let softnet = match (opts.extended, &cur.softnet) {
        (true, Some(now)) => {
            let mut rows = softnet_rates(prev.and_then(|p| p.softnet.as_deref()), now, elapsed_s);
            if opts.skip_idle {
                rows.retain(|r| r.processed_per_s + r.dropped_per_s + r.squeezed_per_s > 0.0);
            }
            Some(rows)
        }
        _ => None,
    };
    Report {
        epoch_s: cur.epoch_s,
        elapsed_s,
        since_boot: prev.is_none(),
        wire_overhead_bytes_per_packet: opts.wire.then_some(WIRE_OVERHEAD_BYTES),
        interfaces,
        tcp,
        udp,
        softnet,
    }
}

/// Named with `-i`, or (without `-i`) up, and not loopback under `-n`.
fn selected(opts: &Options, link: &LinkFacts) -> bool {
    if opts.non_local && link.loopback {
        return false;
    }
    if opts.interfaces.is_empty() {
        link.up
    } else {
        opts.interfaces.contains(&link.name)
    }
}

/// Parses `/proc/uptime`'s first field (seconds since boot).
pub fn parse_uptime(text: &str) -> Result<f64, ParseError> {
    text.split_whitespace()
        .next()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .ok_or_else(|| ParseError::new(1, "expected seconds since boot"))
}

/// Samples the counters and keeps what is needed between samples.
#[derive(Debug)]
pub struct Monitor {
    root: FsRoot,
    opts: Options,
    socket: Option<Socket>,
    links: HashMap<String, LinkFacts>,
    refresh_cursor: usize,
    prev: Option<Snapshot>,
    buf: String,
    notes: Vec<String>,
    /// Selected interfaces that disappeared (said once; said again when they come back).
    gone: HashSet<String>,
}

impl Monitor {
    /// Checks the request against the interfaces that exist (an unknown `-i` or `-S` name is a
    /// usage error) and reads the facts of the selected interfaces.
    pub fn new(root: FsRoot, opts: Options) -> Result<Self, Error> {
        let socket = if root.is_live() { Socket::open().ok() } else { None };
        let mut monitor = Self {
            root,
            opts,
            socket,
            links: HashMap::new(),
            refresh_cursor: 0,
            prev: None,
            buf: String::new(),
            notes: Vec::new(),
            gone: HashSet::new(),
        };
        let devices = monitor.read_netdev()?;
        let known: Vec<&str> = devices.iter().map(|d| d.name.as_str()).collect();
        let wanted =
            monitor.opts.interfaces.iter().chain(monitor.opts.speeds.iter().map(|s| &s.interface));
        for name in wanted {
            if !known.contains(&name.as_str()) {
                return Err(UsageError::UnknownInterface {
                    name: name.clone(),
                    known: known.join(", "),
                }
                .into());
            }
        }
        for dev in &devices {
            monitor.learn(&dev.name);
        }
        Ok(monitor)
    }

    /// The options in force.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// One-time remarks for the user (e.g. a utilization computed as full duplex because the
    /// kernel does not know the duplex). Each is returned once.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// The selected interfaces' facts, in the kernel's order (`-l`).
    pub fn list(&mut self) -> Result<Vec<LinkFacts>, Error> {
        let devices = self.read_netdev()?;
        let mut out = Vec::new();
        for dev in &devices {
            self.learn(&dev.name);
            if let Some(link) = self.links.get(&dev.name) {
                if selected(&self.opts, link) {
                    let mut full =
                        read_link_facts(&self.root, self.socket.as_ref(), &dev.name, true);
                    if let Some(over) = self.opts.speeds.iter().find(|s| s.interface == dev.name) {
                        full.apply(over);
                    }
                    out.push(full);
                }
            }
        }
        Ok(out)
    }

    /// The number of interfaces a report would show before `-z` (for header repetition).
    pub fn selected_count(&self) -> usize {
        self.links.values().filter(|l| selected(&self.opts, l)).count()
    }

    fn read_netdev(&mut self) -> Result<Vec<NetDevCounters>, Error> {
        let path = self.root.net_path("dev");
        self.root.parse(&path, &mut self.buf, parse_net_dev)
    }

    /// Reads facts for an interface seen for the first time (or again after re-creation).
    fn learn(&mut self, name: &str) {
        let filtered_out =
            !self.opts.interfaces.is_empty() && !self.opts.interfaces.iter().any(|i| i == name);
        if filtered_out || self.links.contains_key(name) {
            return;
        }
        let facts = self.facts_for(name);
        self.links.insert(name.to_string(), facts);
    }

    fn facts_for(&mut self, name: &str) -> LinkFacts {
        let mut facts = read_link_facts(&self.root, self.socket.as_ref(), name, false);
        if let Some(over) = self.opts.speeds.iter().find(|s| s.interface == name) {
            facts.apply(over);
        }
        if facts.speed_mbps.is_some()
            && facts.duplex == Duplex::Unknown
            && selected(&self.opts, &facts)
        {
            self.notes.push(format!(
                "{name}: the kernel does not know the duplex; %Util assumes full duplex \
                 (set it with -S {name}:SPEEDhd if the link is half duplex)"
            ));
        }
        facts
    }

    /// Reads every counter this monitor's options need.
    pub fn snapshot(&mut self) -> Result<Snapshot, Error> {
        let at = Instant::now();
        let epoch_s =
            SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
        let netdev = self.read_netdev()?;
        let (mut tcp, mut udp) = (None, None);
        if self.opts.tcp || self.opts.udp {
            let snmp_path = self.root.net_path("snmp");
            let snmp = self.root.parse(&snmp_path, &mut self.buf, ProtoTable::parse)?;
            let wrap = |source: ParseError| Error::Parse { path: snmp_path.clone(), source };
            if self.opts.tcp {
                let netstat_path = self.root.net_path("netstat");
                // Without /proc/net/netstat the TcpExt figures are unknown, not zero.
                let netstat = self.root.parse(&netstat_path, &mut self.buf, ProtoTable::parse).ok();
                tcp = Some(TcpCounters::from_tables(&snmp, netstat.as_ref()).map_err(wrap)?);
            }
            if self.opts.udp {
                udp = Some(UdpCounters::from_table(&snmp).map_err(wrap)?);
            }
        }
        let softnet = if self.opts.extended {
            let path = self.root.net_path("softnet_stat");
            // Not every kernel or container has it; its absence hides the softnet lines only.
            self.root.parse(&path, &mut self.buf, parse_softnet_stat).ok()
        } else {
            None
        };
        Ok(Snapshot { at, epoch_s, netdev, tcp, udp, softnet })
    }

    /// Samples and reports the interval since the previous sample (since boot the first time).
    pub fn next_report(&mut self) -> Result<Report, Error> {
        let cur = self.snapshot()?;
        let elapsed_s = match &self.prev {
            Some(p) => cur.at.duration_since(p.at).as_secs_f64(),
            None => {
                let path = self.root.path("proc/uptime");
                self.root.parse(&path, &mut self.buf, parse_uptime)?
            }
        };
        self.refresh_some(&cur.netdev);
        let mut restarted = HashSet::new();
        let before_by_name: HashMap<&str, &NetDevCounters> = match &self.prev {
            Some(p) => p.netdev.iter().map(|d| (d.name.as_str(), d)).collect(),
            None => HashMap::new(),
        };
        let mut went_back_names = Vec::new();
        for dev in &cur.netdev {
            if !self.links.contains_key(&dev.name) {
                continue;
            }
            let Some(prev) = before_by_name.get(dev.name.as_str()) else {
                continue;
            };
            let went_back = dev.rx_bytes < prev.rx_bytes
                || dev.tx_bytes < prev.tx_bytes
                || dev.rx_packets < prev.rx_packets
                || dev.tx_packets < prev.tx_packets;
            if went_back {
                went_back_names.push(dev.name.clone());
            }
        }
        drop(before_by_name);
        for name in went_back_names {
            if self.recreated(&name) {
                restarted.insert(name);
            }
        }
        for dev in &cur.netdev {
            if !self.links.contains_key(&dev.name) {
                self.learn(&dev.name);
                if self.gone.remove(&dev.name) {
                    self.notes.push(format!(
                        "{}: the interface is back; reported again from the next interval",
                        dev.name
                    ));
                }
            }
        }
        // An interface that vanished is forgotten (and the user told, when it was shown); if it
        // comes back it is learnt again (new ifindex) and its first reading is a baseline.
        let changed = self.links.len() > cur.netdev.len()
            || self.prev.as_ref().is_some_and(|p| {
                p.netdev.len() > cur.netdev.len()
                    // Same count: a removal paired with an addition still changes the names.
                    || p.netdev.iter().zip(&cur.netdev).any(|(a, b)| a.name != b.name)
            });
        if changed {
            let now: HashSet<&str> = cur.netdev.iter().map(|d| d.name.as_str()).collect();
            let mut vanished: Vec<String> = self
                .links
                .iter()
                .filter(|(name, link)| !now.contains(name.as_str()) && selected(&self.opts, link))
                .map(|(name, _)| name.clone())
                .collect();
            vanished.sort();
            for name in vanished {
                self.notes.push(format!(
                    "{name}: the interface disappeared; it is left out until it comes back"
                ));
                self.gone.insert(name);
            }
            self.links.retain(|name, _| now.contains(name.as_str()));
        }
        let report = compute_report(
            self.prev.as_ref(),
            &cur,
            elapsed_s,
            &self.links,
            &restarted,
            &self.opts,
        );
        self.prev = Some(cur);
        Ok(report)
    }

    /// Whether an interface whose counters went backwards is a new one under the old name.
    fn recreated(&mut self, name: &str) -> bool {
        let before = self.links.get(name).and_then(|l| l.ifindex);
        let now = read_ifindex(&self.root, self.socket.as_ref(), name);
        match (before, now) {
            (Some(a), Some(b)) if a != b => {
                let facts = self.facts_for(name);
                self.links.insert(name.to_string(), facts);
                true
            }
            _ => false,
        }
    }

    /// Reads speed, duplex and flags again for the next slice of interfaces (round robin).
    fn refresh_some(&mut self, devices: &[NetDevCounters]) {
        if self.prev.is_none() || devices.is_empty() {
            return;
        }
        let slice = devices.len().div_ceil(REFRESH_SAMPLES);
        for _ in 0..slice {
            let name = &devices[self.refresh_cursor % devices.len()].name;
            self.refresh_cursor = self.refresh_cursor.wrapping_add(1);
            if !self.links.contains_key(name) {
                continue;
            }
            let mut fresh = refresh_link(&self.root, self.socket.as_ref(), name);
            if let Some(over) = self.opts.speeds.iter().find(|s| s.interface == *name) {
                fresh.apply(over);
            }
            if let Some(link) = self.links.get_mut(name) {
                link.speed_mbps = fresh.speed_mbps;
                link.duplex = fresh.duplex;
                link.speed_source = fresh.speed_source;
                link.up = fresh.up;
            }
        }
    }
}
