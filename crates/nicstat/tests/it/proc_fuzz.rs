//! Fuzz-style property tests of nicstat's /proc and sysfs parsers over mutated fixtures (the
//! captured and hand-made files of tests/fixtures) and arbitrary text: an error or a sane value,
//! never a panic; and rates between two damaged snapshots are finite, never an overflow.
//!
//! Pure tier: [`fuzz::PURE`] cases per target; live tier (`--ignored`): [`fuzz::LIVE`].

use nicstat::link::{parse_sysfs_duplex, parse_sysfs_flags, parse_sysfs_speed};
use nicstat::netdev::parse_net_dev;
use nicstat::snmp::{ProtoTable, TcpCounters, UdpCounters};
use nicstat::softnet::parse_softnet_stat;
use nicstat::{
    interface_rates, parse_uptime, softnet_rates, tcp_rates, udp_rates, Duplex, LinkFacts,
    SpeedSource,
};
use test_support::fuzz::{self, proptest};
use test_tier::live;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn fixtures(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| fixture(n)).collect()
}

/// Two snapshots: each a mutant of a seed or arbitrary text, so deltas see counters that step
/// back, vanish or jump.
fn pair(seeds: Vec<String>) -> impl Strategy<Value = (String, String)> {
    (fuzz::text_or_mutated(seeds.clone(), 600), fuzz::text_or_mutated(seeds, 600))
}

fn finite(x: f64, what: &str) -> Result<(), TestCaseError> {
    prop_assert!(x.is_finite(), "{what} is {x}");
    Ok(())
}

fn link(speed: &str) -> LinkFacts {
    LinkFacts {
        name: "eth0".into(),
        ifindex: Some(2),
        speed_mbps: parse_sysfs_speed(speed),
        duplex: parse_sysfs_duplex("full"),
        speed_source: SpeedSource::Sysfs,
        operstate: Some("up".into()),
        link_type: Some(1),
        loopback: false,
        up: true,
        mtu: Some(1500),
    }
}

fn net_dev(cases: u32) {
    let seeds = fixtures(&["net_dev_linux_6_18_captured.txt", "net_dev_linux_2_6_handmade.txt"]);
    let speeds = proptest::sample::select(vec!["10000", "1", "-1", "2147483647", "", "100\n"]);
    fuzz::check(cases, (pair(seeds), speeds, 0.0f64..10.0), |((a, b), speed, dt)| {
        let (Ok(before), Ok(after)) = (parse_net_dev(&a), parse_net_dev(&b)) else {
            return Ok(());
        };
        let link = link(speed);
        for cur in &after {
            let prev = before.iter().find(|p| p.name == cur.name);
            for restarted in [false, true] {
                let r = interface_rates(prev, cur, dt, &link, restarted, true);
                let _ = format!("{r:?}");
            }
        }
        Ok(())
    });
}

fn snmp(cases: u32) {
    let snmp_seeds = fixtures(&[
        "net_snmp_linux_6_18_captured.txt",
        "net_snmp_linux_4_14_handmade.txt",
        "net_snmp_linux_2_6_32_handmade.txt",
    ]);
    let netstat_seeds = fixtures(&[
        "net_netstat_linux_6_18_captured.txt",
        "net_netstat_linux_4_14_handmade.txt",
        "net_netstat_without_listen_fields_handmade.txt",
    ]);
    let input = (pair(snmp_seeds), fuzz::text_or_mutated(netstat_seeds, 600), 0.001f64..10.0);
    fuzz::check(cases, input, |((a, b), netstat, dt)| {
        let netstat = ProtoTable::parse(&netstat).ok();
        let (Ok(a), Ok(b)) = (ProtoTable::parse(&a), ProtoTable::parse(&b)) else {
            return Ok(());
        };
        if let (Ok(ta), Ok(tb)) =
            (TcpCounters::from_tables(&a, netstat.as_ref()), TcpCounters::from_tables(&b, None))
        {
            let r = tcp_rates(Some(&ta), &tb, dt);
            let _ = format!("{r:?}");
            let _ = tcp_rates(None, &tb, dt);
        }
        if let (Ok(ua), Ok(ub)) = (UdpCounters::from_table(&a), UdpCounters::from_table(&b)) {
            let r = udp_rates(Some(&ua), &ub, dt);
            let _ = format!("{r:?}");
        }
        Ok(())
    });
}

fn softnet(cases: u32) {
    let seeds = fixtures(&[
        "softnet_stat_linux_6_18_captured.txt",
        "softnet_stat_linux_4_14_handmade.txt",
        "softnet_stat_linux_5_10_handmade.txt",
    ]);
    fuzz::check(cases, (pair(seeds), 0.001f64..10.0), |((a, b), dt)| {
        let (Ok(before), Ok(after)) = (parse_softnet_stat(&a), parse_softnet_stat(&b)) else {
            return Ok(());
        };
        for r in softnet_rates(Some(&before), &after, dt) {
            finite(r.processed_per_s, "processed/s")?;
        }
        let _ = softnet_rates(None, &after, dt);
        Ok(())
    });
}

fn small_files(cases: u32) {
    let seeds = vec![
        "12345.67 23456.78\n".to_string(),
        "10000\n".into(),
        "full\n".into(),
        "0x1003\n".into(),
    ];
    fuzz::check(cases, fuzz::text_or_mutated(seeds, 40), |text| {
        if let Ok(up) = parse_uptime(&text) {
            prop_assert!(up.is_finite() && up >= 0.0, "uptime {up}");
        }
        if let Some(speed) = parse_sysfs_speed(&text) {
            prop_assert!(speed > 0 && speed <= i32::MAX as u32);
        }
        let d = parse_sysfs_duplex(&text);
        prop_assert!(matches!(d, Duplex::Full | Duplex::Half | Duplex::Unknown));
        let _ = parse_sysfs_flags(&text);
        Ok(())
    });
}

#[test]
fn mutated_net_dev_snapshots_give_rates_or_errors() {
    net_dev(fuzz::PURE);
}

#[live("50 000 mutated /proc/net/dev pairs")]
fn mutated_net_dev_snapshots_give_rates_or_errors_long() {
    net_dev(fuzz::LIVE);
}

#[test]
fn mutated_snmp_and_netstat_snapshots_give_rates_or_errors() {
    snmp(fuzz::PURE);
}

#[live("50 000 mutated /proc/net/snmp pairs")]
fn mutated_snmp_and_netstat_snapshots_give_rates_or_errors_long() {
    snmp(fuzz::LIVE);
}

#[test]
fn mutated_softnet_stat_snapshots_give_finite_rates_or_errors() {
    softnet(fuzz::PURE);
}

#[live("50 000 mutated softnet_stat pairs")]
fn mutated_softnet_stat_snapshots_give_finite_rates_or_errors_long() {
    softnet(fuzz::LIVE);
}

#[test]
fn uptime_and_sysfs_link_files_give_sane_values_or_none() {
    small_files(fuzz::PURE);
}

#[live("50 000 uptime and sysfs link files")]
fn uptime_and_sysfs_link_files_give_sane_values_or_none_long() {
    small_files(fuzz::LIVE);
}
