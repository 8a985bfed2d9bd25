//! The parsers over captured and hand-made kernel files (tests/fixtures/README.md says which is
//! which). Test names carry the fixture's source.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use nicstat::netdev::parse_net_dev;
use nicstat::snmp::{ProtoTable, TcpCounters, UdpCounters};
use nicstat::softnet::parse_softnet_stat;
use nicstat::{softnet_rates, tcp_rates};

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn table(name: &str) -> ProtoTable {
    ProtoTable::parse(&fixture(name)).unwrap()
}

#[test]
fn net_dev_linux_6_18_captured() {
    let devs = parse_net_dev(&fixture("net_dev_linux_6_18_captured.txt")).unwrap();
    let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["lo", "ifb0", "ifb1", "eth0"]);
    let eth0 = &devs[3];
    assert_eq!((eth0.rx_bytes, eth0.rx_packets), (586_889_963, 11_104));
    assert_eq!((eth0.tx_bytes, eth0.tx_packets), (451_038, 5_850));
    assert_eq!((eth0.rx_errs, eth0.rx_drop, eth0.tx_colls, eth0.tx_carrier), (0, 0, 0, 0));
    assert_eq!(devs[0].rx_bytes, devs[0].tx_bytes);
}

#[test]
fn net_dev_linux_2_6_handmade_counter_touching_the_colon() {
    let devs = parse_net_dev(&fixture("net_dev_linux_2_6_handmade.txt")).unwrap();
    let eth0 = devs.iter().find(|d| d.name == "eth0").unwrap();
    assert_eq!(
        (eth0.rx_bytes, eth0.rx_packets, eth0.rx_errs, eth0.rx_drop),
        (4_294_967_000, 3_120_044, 3, 41)
    );
    assert_eq!((eth0.rx_frame, eth0.rx_multicast), (2, 1203));
    assert_eq!((eth0.tx_bytes, eth0.tx_drop, eth0.tx_fifo), (912_330_411, 5, 1));
    assert_eq!(devs.len(), 3);
}

#[test]
fn snmp_and_netstat_linux_6_18_captured() {
    let snmp = table("net_snmp_linux_6_18_captured.txt");
    let netstat = table("net_netstat_linux_6_18_captured.txt");
    let tcp = TcpCounters::from_tables(&snmp, Some(&netstat)).unwrap();
    assert_eq!(
        (tcp.active_opens, tcp.passive_opens, tcp.attempt_fails, tcp.estab_resets),
        (40, 2, 11, 4)
    );
    assert_eq!((tcp.in_segs, tcp.out_segs, tcp.retrans_segs), (11_083, 5_828, 0));
    assert_eq!((tcp.out_rsts, tcp.in_csum_errors), (Some(21), Some(0)));
    assert_eq!((tcp.listen_overflows, tcp.listen_drops, tcp.timeouts), (Some(0), Some(0), Some(2)));
    assert_eq!(snmp.get_signed("Tcp", "MaxConn"), Some(-1));
    let udp = UdpCounters::from_table(&snmp).unwrap();
    assert_eq!((udp.in_datagrams, udp.out_datagrams), (68, 69));
    assert_eq!((udp.ignored_multi, udp.mem_errors), (Some(0), Some(0)));
    assert!(netstat.has_section("MPTcpExt"));
    assert_eq!(netstat.get("IpExt", "InOctets"), Some(586_738_640));
}

#[test]
fn snmp_and_netstat_linux_4_14_handmade() {
    let snmp = table("net_snmp_linux_4_14_handmade.txt");
    let netstat = table("net_netstat_linux_4_14_handmade.txt");
    let tcp = TcpCounters::from_tables(&snmp, Some(&netstat)).unwrap();
    assert_eq!((tcp.in_segs, tcp.out_segs, tcp.retrans_segs), (47_922_110, 51_877_342, 21_877));
    assert_eq!(
        (tcp.listen_overflows, tcp.listen_drops, tcp.timeouts),
        (Some(11), Some(17), Some(1981))
    );
    assert_eq!(netstat.get("TcpExt", "TCPFACKReorder"), Some(0));
    assert_eq!(netstat.get("TcpExt", "TCPMigrateReqSuccess"), None);
    let udp = UdpCounters::from_table(&snmp).unwrap();
    assert_eq!(
        (udp.in_datagrams, udp.rcvbuf_errors, udp.sndbuf_errors),
        (270_011, Some(17), Some(2))
    );
    assert_eq!((udp.ignored_multi, udp.mem_errors), (Some(5123), None));
    assert_eq!(snmp.get("Ip", "OutTransmits"), None);
}

#[test]
fn snmp_linux_2_6_32_handmade_lacks_later_fields() {
    let snmp = table("net_snmp_linux_2_6_32_handmade.txt");
    let tcp = TcpCounters::from_tables(&snmp, None).unwrap();
    assert_eq!((tcp.in_segs, tcp.retrans_segs, tcp.in_csum_errors), (3_399_120, 1_520, None));
    // No /proc/net/netstat given: the TcpExt figures are unknown, not zero.
    assert_eq!((tcp.listen_drops, tcp.listen_overflows), (None, None));
    let udp = UdpCounters::from_table(&snmp).unwrap();
    assert_eq!((udp.in_csum_errors, udp.ignored_multi, udp.mem_errors), (None, None, None));
    assert_eq!(udp.rcvbuf_errors, Some(0));
}

#[test]
fn netstat_without_the_fields_nicstat_1_95_expects_handmade() {
    let snmp = table("net_snmp_linux_4_14_handmade.txt");
    let netstat = table("net_netstat_without_listen_fields_handmade.txt");
    let tcp = TcpCounters::from_tables(&snmp, Some(&netstat)).unwrap();
    assert_eq!((tcp.listen_drops, tcp.listen_overflows), (None, None));
    // Fields that are there are still found by name, wherever they moved.
    assert_eq!(netstat.get("TcpExt", "DelayedACKs"), Some(412_903));
    // Rates: Drops unknown (None → printed '-'), never a silent 0.
    let rates = tcp_rates(None, &tcp, 100.0);
    assert_eq!(rates.listen_drops_per_s, None);
    let full = TcpCounters::from_tables(&snmp, Some(&table("net_netstat_linux_4_14_handmade.txt")))
        .unwrap();
    assert_eq!(tcp_rates(None, &full, 1.0).listen_drops_per_s, Some(17.0));
}

#[test]
fn softnet_stat_linux_6_18_captured() {
    let cpus = parse_softnet_stat(&fixture("softnet_stat_linux_6_18_captured.txt")).unwrap();
    assert_eq!(cpus.len(), 2);
    assert_eq!((cpus[0].cpu, cpus[0].processed), (Some(0), 8));
    assert_eq!((cpus[1].cpu, cpus[1].processed, cpus[1].dropped), (Some(1), 0x2b8c, 0));
    assert_eq!(cpus[1].backlog_len, Some(0));
}

#[test]
fn softnet_stat_linux_4_14_handmade_has_no_cpu_numbers() {
    let cpus = parse_softnet_stat(&fixture("softnet_stat_linux_4_14_handmade.txt")).unwrap();
    assert_eq!(cpus[1].cpu, None);
    assert_eq!(cpus[1].label(), 1);
    assert_eq!((cpus[1].dropped, cpus[1].time_squeeze), (7, 301));
    assert_eq!(
        (cpus[1].received_rps, cpus[1].flow_limit_count, cpus[1].backlog_len),
        (Some(15), Some(2), None)
    );
}

#[test]
fn softnet_stat_linux_5_10_handmade_offline_cpu_and_32_bit_wrap() {
    let before = parse_softnet_stat(&fixture("softnet_stat_linux_5_10_handmade.txt")).unwrap();
    let labels: Vec<u32> = before.iter().map(|c| c.label()).collect();
    assert_eq!(labels, [0, 2, 3]);
    // CPU 3 processed 0xfffffff0, then wraps to 0x10 one second later: 32 packets, not -4 billion.
    let mut after = before.clone();
    after[2].processed = 0x10;
    let rates = softnet_rates(Some(&before), &after, 1.0);
    let cpu3 = rates.iter().find(|r| r.cpu == 3).unwrap();
    assert_eq!(cpu3.processed_per_s, 32.0);
    assert!(cpu3.cpu_known);
}
