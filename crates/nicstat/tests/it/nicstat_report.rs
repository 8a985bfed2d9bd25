//! nicstat's arithmetic and layouts over hand-built counters, and the monitor over a fixture
//! tree (wrap, reset, removal and re-creation of an interface between samples).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

use measure::time::Stamp;
use measure::{FsRoot, UsageError};
use nicstat::netdev::NetDevCounters;
use nicstat::render::{render_list, render_report};
use nicstat::snmp::{TcpCounters, UdpCounters};
use nicstat::{
    compute_report, interface_rates, tcp_rates, udp_rates, utilization_pct, Duplex, LinkFacts,
    Monitor, Options, Snapshot, SpeedSource,
};
use test_support::Tree;

fn link(name: &str, speed: Option<u32>, duplex: Duplex) -> LinkFacts {
    let mut l = LinkFacts::unknown(name);
    l.speed_mbps = speed;
    l.duplex = duplex;
    l.speed_source = SpeedSource::Sysfs;
    l.operstate = Some("up".into());
    l.link_type = Some(1);
    l.mtu = Some(1500);
    l.ifindex = Some(2);
    l
}

fn dev(
    name: &str,
    rx_bytes: u64,
    rx_packets: u64,
    tx_bytes: u64,
    tx_packets: u64,
) -> NetDevCounters {
    NetDevCounters {
        name: name.into(),
        rx_bytes,
        rx_packets,
        tx_bytes,
        tx_packets,
        ..Default::default()
    }
}

fn snapshot(devs: Vec<NetDevCounters>) -> Snapshot {
    Snapshot { at: Instant::now(), epoch_s: 0.0, netdev: devs, tcp: None, udp: None, softnet: None }
}

/// Ten seconds on eth0 (1000 Mbit/s full duplex): 12.5 MB in, 2.5 MB out, some errors and drops.
fn ten_seconds() -> (Snapshot, Snapshot, HashMap<String, LinkFacts>) {
    let before = dev("eth0", 1_000_000, 1_000, 500_000, 500);
    let mut after = dev("eth0", 13_500_000, 11_000, 3_000_000, 5_500);
    after.rx_errs = 10;
    after.rx_drop = 20;
    after.tx_errs = 7; // not part of Sat (nicstat 1.95 leaves it out)
    after.tx_drop = 5;
    let links = HashMap::from([("eth0".to_string(), link("eth0", Some(1000), Duplex::Full))]);
    (snapshot(vec![before]), snapshot(vec![after]), links)
}

fn report(opts: &Options) -> nicstat::Report {
    let (a, b, links) = ten_seconds();
    compute_report(Some(&a), &b, 10.0, &links, &HashSet::new(), opts)
}

const STAMP: (&str, &str) = ("12:00:00", "1795300000");

fn render(opts: &Options) -> String {
    render_report(&report(opts), opts, &Stamp::fixed(STAMP.0, STAMP.1), true)
}

#[test]
fn utilization_follows_nicstat_definitions() {
    // Full duplex: the busier direction. 100 Mbit/s: 8 Mbit/s in, 2 out → 8 %.
    assert_eq!(utilization_pct(8e6, 2e6, Some(100), Duplex::Full), Some(8.0));
    // Half duplex: both directions share the medium → 10 %.
    assert_eq!(utilization_pct(8e6, 2e6, Some(100), Duplex::Half), Some(10.0));
    // Unknown speed: no utilization at all, not 0 and not a guess.
    assert_eq!(utilization_pct(8e6, 2e6, None, Duplex::Full), None);
    // A 100 GbE link at 50 Gbit/s is 50 %, from the full 32-bit speed.
    assert_eq!(utilization_pct(50e9, 0.0, Some(100_000), Duplex::Full), Some(50.0));
}

#[test]
fn rates_sat_errors_and_drops() {
    let r = &report(&Options::default()).interfaces[0];
    assert_eq!(
        (r.rx_bytes, r.rx_packets, r.tx_bytes, r.tx_packets),
        (12_500_000, 10_000, 2_500_000, 5_000)
    );
    assert_eq!(r.rx_bytes_per_s, 1_250_000.0);
    assert_eq!(r.rx_avg_bytes, 1250.0);
    assert_eq!(r.util_pct, Some(1.0));
    // Sat = (rx errs 10 + rx drop 20 + tx drop 5) / 10 s; tx errs are not in nicstat's sum.
    assert_eq!(r.sat_per_s, 3.5);
    // Extended output keeps them apart.
    assert_eq!(
        (r.rx_errors_per_s, r.rx_drops_per_s, r.tx_errors_per_s, r.tx_drops_per_s),
        (1.0, 2.0, 0.7, 0.5)
    );
}

#[test]
fn wire_adds_24_bytes_per_packet() {
    // 1000 packets/s of 1000 bytes on 100 Mbit/s: 8 % of payload bytes, 8.192 % on the wire.
    let l = link("eth0", Some(100), Duplex::Full);
    let a = dev("eth0", 0, 0, 0, 0);
    let b = dev("eth0", 1_000_000, 1_000, 0, 0);
    let plain = interface_rates(Some(&a), &b, 1.0, &l, false, false);
    let wire = interface_rates(Some(&a), &b, 1.0, &l, false, true);
    assert_eq!(plain.util_pct, Some(8.0));
    assert!((wire.util_pct.unwrap() - 8.192).abs() < 1e-9);
    // Throughput itself is what the counters say either way.
    assert_eq!(plain.rx_bytes_per_s, wire.rx_bytes_per_s);
}

#[test]
fn a_32_bit_counter_wrap_gives_the_true_rate() {
    let l = link("eth0", Some(1000), Duplex::Full);
    let a = dev("eth0", u64::from(u32::MAX) - 999, 100, 0, 0);
    let b = dev("eth0", 4_000, 110, 0, 0);
    let r = interface_rates(Some(&a), &b, 1.0, &l, false, false);
    assert_eq!((r.rx_bytes, r.rx_packets), (5_000, 10));
    assert!(!r.counters_restarted);
}

#[test]
fn a_counter_reset_is_never_negative_or_absurd() {
    let l = link("eth0", Some(1000), Duplex::Full);
    // 64-bit counters far past 2^32, then an interface whose counters started again.
    let a = dev("eth0", 900_000_000_000, 800_000_000, 700_000_000_000, 600_000_000);
    let b = dev("eth0", 3_000, 3, 2_000, 2);
    let r = interface_rates(Some(&a), &b, 1.0, &l, false, false);
    assert_eq!((r.rx_bytes, r.rx_packets, r.tx_bytes, r.tx_packets), (3_000, 3, 2_000, 2));
    assert!(r.counters_restarted);
    // Small counters that go back on a known speed: a "wrap" of ~4 GB in 1 s on 1 Gbit/s is
    // disbelieved and taken as a restart.
    let a = dev("eth0", 50_000, 40, 0, 0);
    let b = dev("eth0", 1_000, 1, 0, 0);
    let r = interface_rates(Some(&a), &b, 1.0, &l, false, false);
    assert_eq!(r.rx_bytes, 1_000);
    assert!(r.rx_bytes_per_s >= 0.0 && r.rx_bytes_per_s < 125e6);
    assert!(r.counters_restarted);
    // The ifindex changed (re-created): counted from zero even if the counters grew.
    let a = dev("eth0", 100, 1, 0, 0);
    let b = dev("eth0", 5_000, 5, 0, 0);
    let r = interface_rates(Some(&a), &b, 1.0, &l, true, false);
    assert_eq!(r.rx_bytes, 5_000);
}

#[test]
fn default_layout() {
    let expected = "    Time      Int   rKB/s   wKB/s   rPk/s   wPk/s    rAvs    wAvs %Util    Sat\n\
                    12:00:00     eth0  1220.7   244.1  1000.0   500.0  1250.0   500.0  1.00   3.50\n";
    assert_eq!(render(&Options::default()), expected);
}

#[test]
fn mbps_and_split_utilization_layout() {
    let opts = Options { mbps: true, split_util: true, ..Default::default() };
    let expected = "    Time      Int   rMbps   wMbps   rPk/s   wPk/s    rAvs    wAvs %rUtil %wUtil\n\
                    12:00:00     eth0   10.00    2.00  1000.0   500.0  1250.0   500.0   1.00   0.20\n";
    assert_eq!(render(&opts), expected);
}

#[test]
fn extended_layout_keeps_errors_and_drops_apart() {
    let opts = Options { extended: true, ..Default::default() };
    let expected = "12:00:00      RdKB    WrKB   RdPkt   WrPkt   IErr  OErr  Coll  NoCP Defer  %Util  IDrop  ODrop\n\
                    eth0        1220.7   244.1  1000.0   500.0   1.00  0.70  0.00     -     -   1.00   2.00   0.50\n";
    assert_eq!(render(&opts), expected);
}

#[test]
fn parseable_layouts() {
    let opts = Options { parseable: true, ..Default::default() };
    assert_eq!(render(&opts), "1795300000:eth0:1220.7:244.1:1000.0:500.0:1.00:3.50\n");
    let opts = Options { parseable: true, extended: true, mbps: true, ..Default::default() };
    // KB/s even with -M, as nicstat; NoCP and Defer do not exist on Linux.
    assert_eq!(
        render(&opts),
        "1795300000:eth0:1220.7:244.1:1000.0:500.0:1.00:3.50:1.00:0.70:0.00:-:-:2.00:0.50\n"
    );
}

#[test]
fn unknown_speed_shows_no_utilization() {
    let (a, b, mut links) = ten_seconds();
    links.insert("eth0".into(), link("eth0", None, Duplex::Unknown));
    let opts = Options::default();
    let r = compute_report(Some(&a), &b, 10.0, &links, &HashSet::new(), &opts);
    let text = render_report(&r, &opts, &Stamp::fixed(STAMP.0, STAMP.1), false);
    assert_eq!(
        text,
        "12:00:00     eth0  1220.7   244.1  1000.0   500.0  1250.0   500.0     -   3.50\n"
    );
}

#[test]
fn skip_idle_and_non_local() {
    let a = vec![dev("lo", 0, 0, 0, 0), dev("eth0", 0, 0, 0, 0), dev("eth1", 0, 0, 0, 0)];
    let b = vec![dev("lo", 100, 1, 100, 1), dev("eth0", 0, 0, 0, 0), dev("eth1", 10, 1, 0, 0)];
    let mut lo = link("lo", None, Duplex::Unknown);
    lo.loopback = true;
    let links = HashMap::from([
        ("lo".to_string(), lo),
        ("eth0".to_string(), link("eth0", Some(1000), Duplex::Full)),
        ("eth1".to_string(), link("eth1", Some(1000), Duplex::Full)),
    ]);
    let names = |opts: Options| -> Vec<String> {
        compute_report(
            Some(&snapshot(a.clone())),
            &snapshot(b.clone()),
            1.0,
            &links,
            &HashSet::new(),
            &opts,
        )
        .interfaces
        .into_iter()
        .map(|i| i.name)
        .collect()
    };
    assert_eq!(names(Options::default()), ["lo", "eth0", "eth1"]);
    assert_eq!(names(Options { skip_idle: true, ..Default::default() }), ["lo", "eth1"]);
    assert_eq!(names(Options { non_local: true, ..Default::default() }), ["eth0", "eth1"]);
    assert_eq!(names(Options { interfaces: vec!["eth1".into()], ..Default::default() }), ["eth1"]);
}

fn tcp(in_segs: u64, out_segs: u64, retrans: u64, drops: Option<u64>) -> TcpCounters {
    TcpCounters {
        active_opens: 10,
        passive_opens: 20,
        attempt_fails: 1,
        estab_resets: 2,
        in_segs,
        out_segs,
        retrans_segs: retrans,
        listen_drops: drops,
        ..Default::default()
    }
}

#[test]
fn tcp_layout_and_retransmit_share() {
    let a = tcp(1_000, 1_000, 0, Some(0));
    let b = tcp(2_000, 1_990, 10, Some(4));
    let r = tcp_rates(Some(&a), &b, 2.0);
    // 10 retransmitted of 1000 segments sent (990 new + 10 again): 1 %.
    assert_eq!(r.retrans_pct, 1.0);
    assert_eq!((r.in_segs_per_s, r.out_segs_per_s, r.retrans_segs_per_s), (500.0, 495.0, 5.0));
    assert_eq!(r.listen_drops_per_s, Some(2.0));
    let mut snap_a = snapshot(vec![]);
    let mut snap_b = snapshot(vec![]);
    snap_a.tcp = Some(a);
    snap_b.tcp = Some(b);
    let opts = Options { tcp: true, ..Default::default() };
    let rep = compute_report(Some(&snap_a), &snap_b, 2.0, &HashMap::new(), &HashSet::new(), &opts);
    let text = render_report(&rep, &opts, &Stamp::fixed(STAMP.0, STAMP.1), true);
    assert_eq!(
        text,
        "12:00:00    InKB   OutKB   InSeg  OutSeg Reset  AttF %ReTX InConn OutCon Drops\n\
         TCP            -       -   500.0   495.0  0.00  0.00 1.000   0.00   0.00  2.00\n"
    );
    // Without ListenDrops in /proc/net/netstat: '-', not 0.
    snap_a.tcp = Some(tcp(0, 0, 0, None));
    snap_b.tcp = Some(tcp(0, 0, 0, None));
    let opts_p = Options { tcp: true, parseable: true, ..Default::default() };
    let rep =
        compute_report(Some(&snap_a), &snap_b, 1.0, &HashMap::new(), &HashSet::new(), &opts_p);
    assert_eq!(
        render_report(&rep, &opts_p, &Stamp::fixed(STAMP.0, STAMP.1), true),
        "1795300000:TCP:-:-:0.000:0.000:0.000:0.000:0.000:0.000:0.000:-\n"
    );
}

#[test]
fn udp_layout() {
    let a = UdpCounters {
        in_datagrams: 0,
        out_datagrams: 0,
        sndbuf_errors: Some(0),
        ..Default::default()
    };
    let b = UdpCounters {
        in_datagrams: 1000,
        out_datagrams: 500,
        in_errors: 3,
        sndbuf_errors: Some(1),
        ..Default::default()
    };
    assert_eq!(udp_rates(Some(&a), &b, 1.0).out_errors_per_s, Some(1.0));
    let mut sa = snapshot(vec![]);
    let mut sb = snapshot(vec![]);
    sa.udp = Some(a);
    sb.udp = Some(b);
    let opts = Options { udp: true, ..Default::default() };
    let rep = compute_report(Some(&sa), &sb, 1.0, &HashMap::new(), &HashSet::new(), &opts);
    assert_eq!(
        render_report(&rep, &opts, &Stamp::fixed(STAMP.0, STAMP.1), true),
        "12:00:00                    InDG   OutDG     InErr  OutErr\n\
         UDP                       1000.0   500.0      3.00    1.00\n"
    );
}

#[test]
fn list_layout_says_unknown() {
    let mut lo = link("lo", None, Duplex::Unknown);
    lo.loopback = true;
    lo.link_type = Some(772);
    let links = vec![
        lo,
        link("eth0", None, Duplex::Unknown),
        link("veth0", Some(10_000), Duplex::Full),
        link("big0", Some(100_000), Duplex::Half),
    ];
    let expected = "Int      Loopback   Mbit/s Duplex State\n\
                    lo            Yes        -   unkn    up\n\
                    eth0           No  unknown   unkn    up\n\
                    veth0          No    10000   full    up\n\
                    big0           No   100000   half    up\n";
    assert_eq!(render_list(&links, false), expected);
    assert!(render_list(&links, true)
        .lines()
        .nth(3)
        .unwrap()
        .ends_with("up     ether   1500  sysfs"));
}

// ---- the monitor over a fixture tree ----

const DEV_HEADER: &str = "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n";

/// A fixture root with `proc/net/` and an uptime.
fn net_tree(tag: &str) -> Tree {
    let t = Tree::new(tag);
    t.mkdir("proc/net");
    t.write("proc/uptime", "100.00 180.00\n");
    t
}

/// The files of interfaces: `/proc/net/dev` rows and `/sys/class/net/IF/` attributes.
trait NetFiles {
    fn dev(&self, rows: &[(&str, u64, u64)]);
    fn link(&self, name: &str, ifindex: u32, speed: &str);
}

impl NetFiles for Tree {
    fn dev(&self, rows: &[(&str, u64, u64)]) {
        let mut text = DEV_HEADER.to_string();
        for (name, bytes, packets) in rows {
            text.push_str(&format!(
                "{name:>6}: {bytes} {packets} 0 0 0 0 0 0 {bytes} {packets} 0 0 0 0 0 0\n"
            ));
        }
        self.write("proc/net/dev", text);
    }
    fn link(&self, name: &str, ifindex: u32, speed: &str) {
        for (attr, value) in [
            ("ifindex", ifindex.to_string()),
            ("speed", speed.into()),
            ("duplex", "full".into()),
            ("operstate", "up".into()),
            ("flags", "0x1003".into()),
            ("type", "1".into()),
            ("mtu", "1500".into()),
        ] {
            self.write(format!("sys/class/net/{name}/{attr}"), format!("{value}\n"));
        }
    }
}

fn names(r: &nicstat::Report) -> Vec<&str> {
    r.interfaces.iter().map(|i| i.name.as_str()).collect()
}

#[test]
fn monitor_first_report_is_since_boot() {
    let t = net_tree("boot");
    t.dev(&[("veth0", 1_000_000, 1000)]);
    t.link("veth0", 5, "10000");
    let mut m = Monitor::new(t.root(), Options::default()).unwrap();
    let r = m.next_report().unwrap();
    assert!(r.since_boot);
    assert_eq!(r.elapsed_s, 100.0);
    assert_eq!(r.interfaces[0].rx_bytes_per_s, 10_000.0);
    assert_eq!(r.interfaces[0].speed_mbps, Some(10_000));
    assert_eq!(r.interfaces[0].duplex, Duplex::Full);
}

#[test]
fn monitor_interface_removed_then_re_added() {
    let t = net_tree("readd");
    t.dev(&[("eth0", 5_000, 50), ("veth0", 9_000_000, 9000)]);
    t.link("eth0", 2, "1000");
    t.link("veth0", 5, "10000");
    let mut m = Monitor::new(t.root(), Options::default()).unwrap();
    m.next_report().unwrap();
    assert!(m.take_notes().is_empty());
    // veth0 removed: no line for it, nothing negative for the others, and a note (before, the
    // output went silent).
    t.dev(&[("eth0", 6_000, 60)]);
    let r = m.next_report().unwrap();
    assert_eq!(names(&r), ["eth0"]);
    assert_eq!(r.interfaces[0].rx_bytes, 1_000);
    assert_eq!(
        m.take_notes(),
        ["veth0: the interface disappeared; it is left out until it comes back"]
    );
    // Said once.
    t.dev(&[("eth0", 6_500, 65)]);
    m.next_report().unwrap();
    assert!(m.take_notes().is_empty());
    // Re-added (new ifindex, counters from zero): its first reading is a baseline.
    t.dev(&[("eth0", 7_000, 70), ("veth0", 300, 3)]);
    t.link("veth0", 9, "10000");
    let r = m.next_report().unwrap();
    assert_eq!(names(&r), ["eth0"]);
    assert_eq!(
        m.take_notes(),
        ["veth0: the interface is back; reported again from the next interval"]
    );
    t.dev(&[("eth0", 8_000, 80), ("veth0", 1_300, 13)]);
    let r = m.next_report().unwrap();
    assert_eq!(names(&r), ["eth0", "veth0"]);
    assert_eq!((r.interfaces[1].rx_bytes, r.interfaces[1].rx_packets), (1_000, 10));
}

#[test]
fn monitor_interface_re_created_between_two_samples() {
    let t = net_tree("recreate");
    t.dev(&[("veth0", 2_000_000, 2000)]);
    t.link("veth0", 5, "10000");
    let mut m = Monitor::new(t.root(), Options::default()).unwrap();
    m.next_report().unwrap();
    // Deleted and created again before the next sample: counters went back, ifindex changed.
    t.dev(&[("veth0", 700, 7)]);
    t.link("veth0", 6, "10000");
    let r = m.next_report().unwrap();
    let v = &r.interfaces[0];
    assert!(v.counters_restarted);
    assert_eq!((v.rx_bytes, v.rx_packets, v.tx_bytes), (700, 7, 700));
    assert!(v.rx_bytes_per_s.is_finite() && v.rx_bytes_per_s >= 0.0);
}

#[test]
fn monitor_rejects_unknown_interfaces_as_usage_errors() {
    let t = net_tree("usage");
    t.dev(&[("lo", 0, 0), ("eth0", 0, 0)]);
    let err =
        Monitor::new(t.root(), Options { interfaces: vec!["eth9".into()], ..Default::default() })
            .unwrap_err();
    assert!(err.is_usage());
    assert_eq!(err.to_string(), "unknown interface 'eth9' (this network namespace has: lo, eth0)");
    let speeds = vec!["eth7:100".parse().unwrap()];
    let err = Monitor::new(t.root(), Options { speeds, ..Default::default() }).unwrap_err();
    assert!(matches!(err, measure::Error::Usage(UsageError::UnknownInterface { .. })));
}

#[test]
fn monitor_speed_override_and_unknown_duplex_note() {
    let t = net_tree("override");
    t.dev(&[("eth0", 0, 0), ("eth1", 0, 0)]);
    t.link("eth0", 2, "-1");
    t.link("eth1", 3, "25000");
    std::fs::write(t.join("sys/class/net/eth1/duplex"), "unknown\n").unwrap();
    let speeds = vec!["eth0:1000hd".parse().unwrap()];
    let mut m = Monitor::new(t.root(), Options { speeds, ..Default::default() }).unwrap();
    let list = m.list().unwrap();
    assert_eq!(
        (list[0].speed_mbps, list[0].duplex, list[0].speed_source),
        (Some(1000), Duplex::Half, SpeedSource::CommandLine)
    );
    assert_eq!((list[1].speed_mbps, list[1].duplex), (Some(25_000), Duplex::Unknown));
    let notes = m.take_notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].starts_with("eth1: the kernel does not know the duplex"), "{notes:?}");
}

#[test]
fn monitor_hides_down_interfaces_unless_named() {
    let t = net_tree("down");
    t.dev(&[("eth0", 0, 0), ("ifb0", 0, 0)]);
    t.link("eth0", 2, "1000");
    t.link("ifb0", 3, "-1");
    std::fs::write(t.join("sys/class/net/ifb0/flags"), "0x82\n").unwrap();
    let mut m = Monitor::new(t.root(), Options::default()).unwrap();
    assert_eq!(names(&m.next_report().unwrap()), ["eth0"]);
    let mut m =
        Monitor::new(t.root(), Options { interfaces: vec!["ifb0".into()], ..Default::default() })
            .unwrap();
    assert_eq!(names(&m.next_report().unwrap()), ["ifb0"]);
}

#[test]
fn fixture_path_helper_is_rooted() {
    assert_eq!(FsRoot::at("/x").net_path("dev"), Path::new("/x/proc/net/dev"));
    assert_eq!(FsRoot::thread_netns().net_path("snmp"), Path::new("/proc/thread-self/net/snmp"));
}
