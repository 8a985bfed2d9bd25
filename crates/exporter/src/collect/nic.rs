//! `nic`: per-interface counters and link speed and duplex, read with nicstat's own readers
//! (sysfs, else the ethtool ioctl), so the speed is nicstat's correct one and an unknown speed
//! is left out rather than invented.
//!
//! Counters are read at every scrape: on a live system from one rtnetlink dump (nicstat's
//! [`LinkStats`]: the kernel formats no text), else — or when netlink cannot be opened — from
//! `/proc/net/dev`, with the same columns. Link facts (speed, duplex) change seldom and cost
//! more than the counters (one ethtool dump: 2.6–2.9 ms for 1,000 interfaces), so each
//! interface's are kept until the kernel announces a change of that interface (rtnetlink's link
//! group; ethtool's monitor group) and at most [`LINK_FACTS_MAX_AGE`]. Without netlink (a
//! fixture root, or it could not be opened) nothing is announced: four sysfs reads per
//! interface, kept for the maximum age alone.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use measure::{FsRoot, UsageError};
use nicstat::ioctl::Socket;
use nicstat::link::read_link_facts;
use nicstat::netdev::{parse_net_dev, NetDevCounters};
use nicstat::netlink::{Announced, LinkStats};
use nicstat::{Duplex, LinkFacts, SpeedSource};

use super::{CollectError, Collector, Config};
use crate::{Family, Kind, Labels, Unit};

/// How long an interface's link facts are reused at most (each interface's between half of this
/// and all of it, fixed per name). Changes the kernel announces show at the next scrape; this
/// bounds the rest (a driver that changes speed without a link event, or no netlink to hear
/// announcements on).
pub const LINK_FACTS_MAX_AGE: Duration = Duration::from_secs(300);

/// Fewer interfaces due than this share of all (one in N) are read one request each, more by
/// one dump: a request costs about 10 µs, the dump about 2.2 µs per interface (1,000 veths, on
/// the 2-vCPU test VM at load 1.5: a ratio, not a benchmark).
const PER_INTERFACE_BELOW: usize = 5;

/// The `nic` collector.
#[derive(Debug)]
pub struct Nic {
    root: FsRoot,
    /// Where the counters come from.
    counters: Mutex<Counters>,
    /// What is kept per interface, by name.
    known: Mutex<Known>,
    /// Whether the fallback from the ethtool dump to sysfs has been said.
    said_link_modes: AtomicBool,
    max_age: Duration,
}

/// Interfaces seen at earlier scrapes.
#[derive(Debug, Default)]
struct Known {
    by_name: HashMap<String, Interface>,
    /// Counts scrapes: an interface not marked with this one's number is gone.
    scrape: u64,
}

/// One interface's facts and labels, kept between scrapes.
#[derive(Debug)]
struct Interface {
    /// Link facts, and until when they are kept ([`refresh_age`] after they were read).
    facts: LinkFacts,
    fresh_until: Instant,
    /// Its label sets, rendered once for its lifetime: it carries eight counter samples.
    labels: DeviceLabels,
    /// The last scrape that saw it.
    scrape: u64,
}

/// An interface's label sets: `device` alone, and with each `direction`.
#[derive(Debug, Clone)]
pub struct DeviceLabels {
    device: Labels,
    receive: Labels,
    transmit: Labels,
}

impl DeviceLabels {
    /// The label sets of interface `name`.
    pub fn new(name: &str) -> Self {
        DeviceLabels {
            device: Labels::new(&[("device", name)]),
            receive: Labels::new(&[("device", name), ("direction", "receive")]),
            transmit: Labels::new(&[("device", name), ("direction", "transmit")]),
        }
    }
}

/// Registry entry.
/// The counters' source: rtnetlink on a live system (opened at the first scrape), else — a
/// fixture root, or netlink could not be opened or read — `/proc/net/dev`.
#[derive(Debug)]
enum Counters {
    Unopened,
    Netlink(LinkStats),
    ProcNetDev,
}

pub(super) fn factory(config: &Config) -> Result<Box<dyn Collector>, UsageError> {
    Ok(Box::new(Nic::with_max_age(config.root.clone(), config.link_facts_max_age)))
}

impl Nic {
    /// A collector reading through `root`.
    pub fn new(root: FsRoot) -> Self {
        Self::with_max_age(root, LINK_FACTS_MAX_AGE)
    }

    /// A collector that reuses link facts for `max_age` (zero: reads them at every scrape).
    pub fn with_max_age(root: FsRoot, max_age: Duration) -> Self {
        Nic {
            root,
            counters: Mutex::new(Counters::Unopened),
            known: Mutex::default(),
            said_link_modes: AtomicBool::new(false),
            max_age,
        }
    }

    /// Every interface's counters from one rtnetlink dump, on a live system; `None` when that
    /// cannot be read (said once), so the caller reads `/proc/net/dev`.
    fn read_netlink(&self) -> Option<Vec<NetDevCounters>> {
        let mut counters = self.counters.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Counters::Unopened = *counters {
            *counters = if !self.root.is_live() {
                Counters::ProcNetDev
            } else {
                match LinkStats::open() {
                    Ok(stats) => Counters::Netlink(stats),
                    Err(e) => {
                        measure::say!(
                            "nic collector: reading /proc/net/dev instead of rtnetlink ({e})"
                        );
                        Counters::ProcNetDev
                    }
                }
            };
        }
        let Counters::Netlink(stats) = &mut *counters else { return None };
        match stats.read() {
            Ok(devices) => Some(devices),
            Err(e) => {
                measure::say!("nic collector: rtnetlink: {e}; reading /proc/net/dev from now on");
                *counters = Counters::ProcNetDev;
                None
            }
        }
    }

    /// The interfaces whose link facts the kernel announced changes of since the last scrape;
    /// `None` where the counters do not come from netlink (nothing is heard).
    fn take_announced(&self) -> Option<Announced> {
        let mut counters = self.counters.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Counters::Netlink(stats) = &mut *counters else { return None };
        // An announcement that cannot be received may have been about any interface.
        Some(stats.take_announced().unwrap_or(Announced::All))
    }

    /// The speed and duplex of `names` (of `all` interfaces) from ethtool netlink — a request
    /// each for a few, one dump for many — when the counters come from netlink and the kernel
    /// has ethtool's family; `None` otherwise (said once), so the caller reads each
    /// interface's link facts from sysfs.
    fn read_link_modes(
        &self,
        names: &[&str],
        all: usize,
    ) -> Option<HashMap<String, (Option<u32>, Duplex)>> {
        let mut counters = self.counters.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Counters::Netlink(stats) = &mut *counters else { return None };
        let read = if names.len() * PER_INTERFACE_BELOW < all {
            stats.link_modes_of(names)
        } else {
            stats.link_modes()
        };
        let why = match read {
            Ok(Some(modes)) => {
                return Some(
                    modes.into_iter().map(|m| (m.name, (m.speed_mbps, m.duplex))).collect(),
                )
            }
            Ok(None) => "no ethtool netlink family in this kernel".to_string(),
            Err(e) => format!("ethtool netlink: {e}"),
        };
        if !self.said_link_modes.swap(true, Ordering::Relaxed) {
            measure::say!("nic collector: {why}; reading link speeds from sysfs");
        }
        None
    }
}

impl Collector for Nic {
    fn name(&self) -> &'static str {
        "nic"
    }

    fn collect(&self, out: &mut Vec<Family>) -> Result<(), CollectError> {
        let fail = |message: String| CollectError { collector: "nic", message };
        let devices = match self.read_netlink() {
            Some(devices) => devices,
            None => {
                let mut buf = String::new();
                self.root
                    .parse(&self.root.net_path("dev"), &mut buf, parse_net_dev)
                    .map_err(|e| fail(e.to_string()))?
            }
        };
        let now = Instant::now();
        let mut known = self.known.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        known.scrape += 1;
        let scrape = known.scrape;
        // Link facts are due for new interfaces, announced ones and those read max_age ago: from
        // ethtool netlink where there is one, else four sysfs reads each (and the ethtool ioctl
        // where sysfs has no speed, through a socket opened when first needed).
        let announced = self.take_announced();
        let is_announced = |name: &str| match &announced {
            Some(Announced::All) => true,
            Some(Announced::Links(names)) => {
                names.binary_search_by(|n| n.as_str().cmp(name)).is_ok()
            }
            None => false,
        };
        let mut due: Vec<&NetDevCounters> = Vec::new();
        for device in &devices {
            match known.by_name.get_mut(&device.name) {
                Some(i) if now < i.fresh_until && !is_announced(&device.name) => {
                    i.scrape = scrape;
                }
                _ => due.push(device),
            }
        }
        let modes = if due.is_empty() {
            None
        } else {
            let names: Vec<&str> = due.iter().map(|d| d.name.as_str()).collect();
            self.read_link_modes(&names, devices.len())
        };
        let mut socket: Option<Option<Socket>> = None;
        for device in due {
            let fresh_until = now + refresh_age(self.max_age, &device.name);
            let facts = match &modes {
                Some(modes) => {
                    let mut facts = LinkFacts::unknown(&device.name);
                    if let Some(&(speed_mbps, duplex)) = modes.get(&device.name) {
                        facts.speed_mbps = speed_mbps;
                        facts.duplex = duplex;
                        facts.speed_source = SpeedSource::EthtoolNetlink;
                    }
                    facts
                }
                None => {
                    let socket = socket.get_or_insert_with(|| {
                        if self.root.is_live() {
                            Socket::open().ok()
                        } else {
                            None
                        }
                    });
                    read_link_facts(&self.root, socket.as_ref(), &device.name, false)
                }
            };
            match known.by_name.get_mut(&device.name) {
                Some(interface) => {
                    (interface.facts, interface.fresh_until, interface.scrape) =
                        (facts, fresh_until, scrape);
                }
                None => {
                    let labels = DeviceLabels::new(&device.name);
                    let interface = Interface { facts, fresh_until, labels, scrape };
                    known.by_name.insert(device.name.clone(), interface);
                }
            }
        }
        // Forget interfaces that are gone.
        if known.by_name.len() != devices.len() {
            known.by_name.retain(|_, interface| interface.scrape == scrape);
        }
        let links: Vec<(&LinkFacts, &DeviceLabels)> = devices
            .iter()
            .filter_map(|d| known.by_name.get(&d.name).map(|i| (&i.facts, &i.labels)))
            .collect();
        families(&devices, &links, out);
        Ok(())
    }
}

/// How old interface `name`'s link facts may grow: between half of `max_age` and all of it,
/// fixed per name. Interfaces first seen at one scrape are then due at different ones: a few
/// requests per scrape (about 10 µs each) instead of one scrape that reads them all.
fn refresh_age(max_age: Duration, name: &str) -> Duration {
    // FNV-1a of the name, mixed (MurmurHash3's finaliser: FNV's top bits barely differ between
    // `veth1` and `veth2`), its top 53 bits as a fraction in [0, 1).
    let mut hash = name
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^= hash >> 33;
    let fraction = (hash >> 11) as f64 / (1u64 << 53) as f64;
    max_age.mul_f64(0.5 + 0.5 * fraction)
}

/// The families for a set of devices and their link facts and labels (same order).
pub fn families(
    devices: &[NetDevCounters],
    links: &[(&LinkFacts, &DeviceLabels)],
    out: &mut Vec<Family>,
) {
    type Pick = fn(&NetDevCounters) -> (u64, u64);
    let counters: [(&str, Option<Unit>, &str, Pick); 4] = [
        ("platscope_nic_bytes", Some(Unit::Bytes), "Bytes through the interface.", |d| {
            (d.rx_bytes, d.tx_bytes)
        }),
        ("platscope_nic_packets", None, "Packets through the interface.", |d| {
            (d.rx_packets, d.tx_packets)
        }),
        (
            "platscope_nic_errors",
            None,
            "Packets with errors (the kernel's errs column of /proc/net/dev).",
            |d| (d.rx_errs, d.tx_errs),
        ),
        (
            "platscope_nic_drops",
            None,
            "Packets dropped (the drop column of /proc/net/dev; receive includes missed packets).",
            |d| (d.rx_drop, d.tx_drop),
        ),
    ];
    for (name, unit, help, pick) in counters {
        let mut family = Family::new(name, Kind::Counter, unit, help);
        family.samples.reserve(devices.len() * 2);
        for (device, (_, labels)) in devices.iter().zip(links) {
            let (rx, tx) = pick(device);
            family.push_labels(&labels.receive, rx as f64);
            family.push_labels(&labels.transmit, tx as f64);
        }
        out.push(family);
    }
    let mut speed = Family::new(
        "platscope_nic_speed_bytes_per_second",
        Kind::Gauge,
        Some(Unit::BytesPerSecond),
        "Link speed in bytes per second, per direction; absent when the kernel does not know it.",
    );
    let mut duplex = Family::new(
        "platscope_nic_duplex_full",
        Kind::Gauge,
        None,
        "1 for a full-duplex link, 0 for half duplex; absent when the kernel does not know.",
    );
    for (link, labels) in links {
        if let Some(mbps) = link.speed_mbps {
            // Mbit/s as the kernel reports it (10^6 bits), in bytes.
            speed.push_labels(&labels.device, f64::from(mbps) * 1e6 / 8.0);
        }
        match link.duplex {
            Duplex::Full => duplex.push_labels(&labels.device, 1.0),
            Duplex::Half => duplex.push_labels(&labels.device, 0.0),
            Duplex::Unknown => continue,
        };
    }
    out.push(speed);
    out.push(duplex);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{render, Format};
    use test_tier::live;

    #[test]
    fn counters_per_direction_and_unknown_speed_left_out() {
        let devices = vec![
            NetDevCounters {
                name: "eth0".into(),
                rx_bytes: 1000,
                tx_bytes: 2000,
                rx_packets: 10,
                tx_packets: 20,
                rx_drop: 3,
                ..Default::default()
            },
            NetDevCounters { name: "veth1".into(), ..Default::default() },
        ];
        let mut eth0 = LinkFacts::unknown("eth0");
        eth0.speed_mbps = Some(10_000);
        eth0.duplex = Duplex::Full;
        let veth = LinkFacts::unknown("veth1");
        let mut out = Vec::new();
        let (eth0_labels, veth_labels) = (DeviceLabels::new("eth0"), DeviceLabels::new("veth1"));
        families(&devices, &[(&eth0, &eth0_labels), (&veth, &veth_labels)], &mut out);
        let text = render(&out, Format::OpenMetrics);
        assert!(
            text.contains("# TYPE platscope_nic_bytes counter\n# UNIT platscope_nic_bytes bytes\n")
        );
        assert!(text
            .contains("platscope_nic_bytes_total{device=\"eth0\",direction=\"transmit\"} 2000\n"));
        assert!(
            text.contains("platscope_nic_drops_total{device=\"eth0\",direction=\"receive\"} 3\n")
        );
        assert!(
            text.contains("platscope_nic_speed_bytes_per_second{device=\"eth0\"} 1.25e9\n")
                || text
                    .contains("platscope_nic_speed_bytes_per_second{device=\"eth0\"} 1250000000\n"),
            "{text}"
        );
        assert!(text.contains("platscope_nic_duplex_full{device=\"eth0\"} 1\n"));
        assert!(!text.contains("speed_bytes_per_second{device=\"veth1\"}"), "{text}");
        assert!(!text.contains("duplex_full{device=\"veth1\"}"), "{text}");
    }

    /// A fixture tree with one interface whose sysfs speed is `mbps`.
    fn tree(dir: &std::path::Path, mbps: u32) {
        std::fs::create_dir_all(dir.join("proc/net")).unwrap();
        std::fs::write(
            dir.join("proc/net/dev"),
            "Inter-|   Receive                                                |  Transmit\n \
             face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n  \
             eth0: 100 1 0 0 0 0 0 0 200 2 0 0 0 0 0 0\n",
        )
        .unwrap();
        let sys = dir.join("sys/class/net/eth0");
        std::fs::create_dir_all(&sys).unwrap();
        for (name, value) in [("ifindex", "2"), ("flags", "0x1003"), ("duplex", "full")] {
            std::fs::write(sys.join(name), value).unwrap();
        }
        std::fs::write(sys.join("speed"), mbps.to_string()).unwrap();
    }

    fn speed(nic: &Nic) -> String {
        let mut out = Vec::new();
        nic.collect(&mut out).unwrap();
        let text = render(&out, Format::Text004);
        let line = text.lines().find(|l| l.starts_with("platscope_nic_speed_bytes_per_second{"));
        line.unwrap_or_else(|| panic!("no speed in {text}")).to_string()
    }

    #[test]
    fn link_facts_are_reused_until_they_are_old_enough() {
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path(), 1000);
        let cached = Nic::new(FsRoot::at(dir.path()));
        let uncached = Nic::with_max_age(FsRoot::at(dir.path()), Duration::ZERO);
        assert!(speed(&cached).ends_with(" 125000000"), "{}", speed(&cached));
        assert!(speed(&uncached).ends_with(" 125000000"));
        tree(dir.path(), 10_000);
        assert!(speed(&cached).ends_with(" 125000000"), "reused within the age limit");
        assert!(speed(&uncached).ends_with(" 1250000000"), "{}", speed(&uncached));
    }

    #[test]
    fn reads_the_live_system() {
        let mut out = Vec::new();
        Nic::new(FsRoot::live()).collect(&mut out).unwrap();
        let text = render(&out, Format::Text004);
        assert!(
            text.contains("platscope_nic_bytes_total{device=\"lo\",direction=\"receive\"}"),
            "{text}"
        );
    }
    /// Link speeds from the one ethtool dump: a veth pair that is up has the speed its driver
    /// gives the ethtool ioctl, loopback none, in a network namespace of this test's own.
    #[live("root, a network namespace with a veth pair")]
    fn link_speeds_come_from_one_ethtool_dump() {
        std::thread::spawn(|| {
            let ip = |args: &[&str]| {
                let out = std::process::Command::new("ip").args(args).output().unwrap();
                assert!(
                    out.status.success(),
                    "ip {args:?}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            };
            // SAFETY: unshare(2) of this thread's network namespace only.
            assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0, "unshare: needs root");
            ip(&["link", "add", "nsa0", "type", "veth", "peer", "name", "nsb0"]);
            ip(&["link", "set", "nsa0", "up"]);
            ip(&["link", "set", "nsb0", "up"]);
            let nic = Nic::new(FsRoot::live());
            let mut out = Vec::new();
            nic.collect(&mut out).unwrap();
            let text = render(&out, Format::Text004);
            let mbps = Socket::open().unwrap().link_settings("nsa0").unwrap().speed_mbps.unwrap();
            let want = format!(
                "platscope_nic_speed_bytes_per_second{{device=\"nsa0\"}} {}\n",
                u64::from(mbps) * 1_000_000 / 8
            );
            assert!(text.contains(&want), "{want} in\n{text}");
            assert!(text.contains("platscope_nic_duplex_full{device=\"nsb0\"} 1\n"), "{text}");
            assert!(!text.contains("speed_bytes_per_second{device=\"lo\"}"), "{text}");
            let known = nic.known.lock().unwrap();
            let source = known.by_name.get("nsa0").map(|i| i.facts.speed_source);
            assert_eq!(source, Some(SpeedSource::EthtoolNetlink), "not from the dump");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn refresh_ages_spread_over_the_second_half_of_the_maximum() {
        let max = Duration::from_secs(300);
        let ages: Vec<Duration> =
            (0..1000).map(|i| refresh_age(max, &format!("veth{i}"))).collect();
        assert!(ages.iter().all(|a| *a >= max / 2 && *a <= max), "{ages:?}");
        // Spread: no tenth of the range holds more than twice its share.
        let mut tenths = [0u32; 10];
        for a in &ages {
            let at = (a.as_secs_f64() - 150.0) / 150.0 * 10.0;
            tenths[(at as usize).min(9)] += 1;
        }
        assert!(tenths.iter().all(|&n| (50..=200).contains(&n)), "{tenths:?}");
        assert_eq!(refresh_age(Duration::ZERO, "eth0"), Duration::ZERO, "0 stays every scrape");
        assert_eq!(refresh_age(max, "eth0"), refresh_age(max, "eth0"), "fixed per name");
    }

    /// Facts kept for an hour are still read again at the scrape after the kernel announces a
    /// change of that interface (a speed set as `ethtool -s` does), and only for it: the other
    /// interfaces keep the facts read at the first scrape.
    #[live("root, a network namespace with a tap and veth pairs")]
    fn an_announced_speed_change_shows_at_the_next_scrape_and_only_its_interface_is_read() {
        use test_support::net::{ip, set_link_speed};
        std::thread::spawn(|| {
            // SAFETY: unshare(2) of this thread's network namespace only.
            assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0, "unshare: needs root");
            ip(&["tuntap", "add", "dev", "nst0", "mode", "tap"]);
            ip(&["link", "set", "nst0", "up"]);
            // Enough other links that one due interface is read by a request of its own.
            for i in 0..4 {
                let (a, b) = (format!("nsc{i}"), format!("nsd{i}"));
                ip(&["link", "add", &a, "type", "veth", "peer", "name", &b]);
                ip(&["link", "set", &a, "up"]);
            }
            set_link_speed("nst0", 100, true).unwrap();
            let nic = Nic::with_max_age(FsRoot::live(), Duration::from_secs(3600));
            let scrape = |nic: &Nic| {
                let mut out = Vec::new();
                nic.collect(&mut out).unwrap();
                render(&out, Format::Text004)
            };
            let speed = |mbps: u64| {
                format!(
                    "platscope_nic_speed_bytes_per_second{{device=\"nst0\"}} {}\n",
                    mbps * 1_000_000 / 8
                )
            };
            let text = scrape(&nic);
            assert!(text.contains(&speed(100)), "{text}");
            assert!(text.contains("platscope_nic_duplex_full{device=\"nst0\"} 1\n"), "{text}");
            // Facts read again move their keep-until time on.
            let kept = |nic: &Nic, name: &str| nic.known.lock().unwrap().by_name[name].fresh_until;
            let (tap_first, veth_first) = (kept(&nic, "nst0"), kept(&nic, "nsc0"));
            // Unannounced, unchanged: nothing is read again.
            scrape(&nic);
            assert_eq!(kept(&nic, "nst0"), tap_first);

            set_link_speed("nst0", 1000, false).unwrap();
            let text = scrape(&nic);
            assert!(text.contains(&speed(1000)), "{text}");
            assert!(text.contains("platscope_nic_duplex_full{device=\"nst0\"} 0\n"), "{text}");
            assert!(kept(&nic, "nst0") > tap_first);
            assert_eq!(kept(&nic, "nsc0"), veth_first, "an unannounced interface read again");
        })
        .join()
        .unwrap();
    }
}
