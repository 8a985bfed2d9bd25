//! The rtnetlink counters (root): the same interfaces and counters /proc/net/dev shows, and a
//! renamed interface under its new name at the next read. Runs in a network namespace of its
//! own (one test thread unshares it; `ip` children inherit it), so the host's links are not
//! touched.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use nicstat::ioctl::Socket;
use nicstat::netdev::{parse_net_dev, NetDevCounters};
use nicstat::netlink::LinkStats;
use nicstat::Duplex;
use test_support::net::ip;
use test_tier::live;

fn proc_net_dev() -> Vec<NetDevCounters> {
    // /proc/thread-self/net: this thread's namespace (/proc/self follows the main thread).
    let text = std::fs::read_to_string("/proc/thread-self/net/dev").unwrap();
    parse_net_dev(&text).unwrap()
}

fn counters(c: &NetDevCounters) -> [u64; 16] {
    [
        c.rx_bytes,
        c.rx_packets,
        c.rx_errs,
        c.rx_drop,
        c.rx_fifo,
        c.rx_frame,
        c.rx_compressed,
        c.rx_multicast,
        c.tx_bytes,
        c.tx_packets,
        c.tx_errs,
        c.tx_drop,
        c.tx_fifo,
        c.tx_colls,
        c.tx_carrier,
        c.tx_compressed,
    ]
}

#[live]
fn netlink_counters_match_proc_net_dev_and_follow_renames() {
    std::thread::spawn(|| {
        // SAFETY: unshare(2) of this thread's network namespace only.
        assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0, "unshare: needs root");
        ip(&["link", "set", "lo", "up"]);
        ip(&["link", "add", "nla0", "type", "veth", "peer", "name", "nlb0"]);
        ip(&["link", "set", "nla0", "up"]);
        ip(&["link", "set", "nlb0", "up"]);
        ip(&["addr", "add", "10.77.0.1/24", "dev", "nla0"]);
        // Traffic, so the counters are not all zero: datagrams on lo (the socket is made in
        // this thread's namespace).
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        for _ in 0..6 {
            udp.send_to(b"counted", udp.local_addr().unwrap()).unwrap();
        }

        let mut stats = LinkStats::open().unwrap();
        let before = proc_net_dev();
        let now = stats.read().unwrap();
        let after = proc_net_dev();
        let names = |l: &[NetDevCounters]| {
            let mut n: Vec<String> = l.iter().map(|c| c.name.clone()).collect();
            n.sort();
            n
        };
        assert_eq!(names(&now), names(&before));
        assert_eq!(names(&now), vec!["lo", "nla0", "nlb0"]);
        for c in &now {
            let b = before.iter().find(|p| p.name == c.name).unwrap();
            let a = after.iter().find(|p| p.name == c.name).unwrap();
            for ((lo, mid), hi) in counters(b).iter().zip(counters(c)).zip(counters(a)) {
                assert!(*lo <= mid && mid <= hi, "{}: {b:?} / {c:?} / {a:?}", c.name);
            }
        }
        assert!(now.iter().find(|c| c.name == "lo").unwrap().rx_packets >= 6, "datagrams counted");

        // Renamed (down, rename, up): the next read has the new name, not the old.
        ip(&["link", "set", "nla0", "down"]);
        ip(&["link", "set", "nla0", "name", "nlc0"]);
        let renamed = stats.read().unwrap();
        assert_eq!(names(&renamed), vec!["lo", "nlb0", "nlc0"]);
        // A new link appears; a deleted one goes.
        ip(&["link", "del", "nlc0"]);
        ip(&["link", "add", "nld0", "type", "veth", "peer", "name", "nle0"]);
        assert_eq!(names(&stats.read().unwrap()), vec!["lo", "nld0", "nle0"]);
    })
    .join()
    .unwrap();
}

/// The one ethtool dump gives each interface the speed and duplex the per-interface ethtool
/// ioctl gives (what `read_link_facts` falls back to without sysfs), none for an interface that
/// is down, and leaves out one without link settings (loopback).
#[live]
fn link_modes_match_the_ethtool_ioctl() {
    std::thread::spawn(|| {
        // SAFETY: unshare(2) of this thread's network namespace only.
        assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0, "unshare: needs root");
        ip(&["link", "set", "lo", "up"]);
        ip(&["link", "add", "lma0", "type", "veth", "peer", "name", "lmb0"]);
        ip(&["link", "set", "lma0", "up"]);
        ip(&["link", "set", "lmb0", "up"]);
        ip(&["link", "add", "lmc0", "type", "veth", "peer", "name", "lmd0"]);
        ip(&["link", "set", "lmc0", "up"]); // its peer stays down

        let mut stats = LinkStats::open().unwrap();
        let Some(mut modes) = stats.link_modes().unwrap() else {
            panic!("this kernel has no ethtool netlink family (Linux 5.6+ with ETHTOOL_NETLINK)")
        };
        modes.sort_by(|a, b| a.name.cmp(&b.name));
        let names: Vec<&str> = modes.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, vec!["lma0", "lmb0", "lmc0", "lmd0"], "{modes:?}");
        let socket = Socket::open().unwrap();
        assert!(socket.link_settings("lo").is_err(), "loopback has no link settings");
        for m in &modes {
            let ioctl = socket.link_settings(&m.name).unwrap();
            if m.name == "lmd0" {
                // Down: sysfs answers EINVAL, so no speed (the driver itself still says one).
                assert_eq!((m.speed_mbps, m.duplex), (None, Duplex::Unknown));
            } else {
                assert_eq!(
                    (m.speed_mbps, m.duplex),
                    (ioctl.speed_mbps, ioctl.duplex),
                    "{}",
                    m.name
                );
                assert!(m.speed_mbps.is_some(), "a veth that is up has a speed: {m:?}");
            }
        }
        // Brought up, it has its speed at the next dump.
        ip(&["link", "set", "lmd0", "up"]);
        let modes = stats.link_modes().unwrap().unwrap();
        let lmd0 = modes.iter().find(|m| m.name == "lmd0").unwrap();
        assert_eq!(lmd0.speed_mbps, socket.link_settings("lmd0").unwrap().speed_mbps);
        assert!(lmd0.speed_mbps.is_some());
    })
    .join()
    .unwrap();
}

/// What the kernel announces names the interfaces whose facts may have changed: a speed set
/// with ethtool (its netlink monitor group) and a link brought down (rtnetlink); the one-request
/// read then has the new speed, as the ioctl does.
#[live]
fn announced_changes_name_their_interfaces_and_are_read_one_by_one() {
    use nicstat::netlink::Announced;
    use test_support::net::set_link_speed;
    std::thread::spawn(|| {
        // SAFETY: unshare(2) of this thread's network namespace only.
        assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0, "unshare: needs root");
        ip(&["link", "set", "lo", "up"]);
        ip(&["tuntap", "add", "dev", "ant0", "mode", "tap"]);
        ip(&["link", "set", "ant0", "up"]);
        ip(&["link", "add", "ana0", "type", "veth", "peer", "name", "anb0"]);
        ip(&["link", "set", "ana0", "up"]);
        ip(&["link", "set", "anb0", "up"]);

        let mut stats = LinkStats::open().unwrap();
        assert!(stats.link_modes().unwrap().is_some(), "no ethtool netlink family");
        // Whatever setting up the links announced is taken; then nothing is pending.
        stats.take_announced().unwrap();
        assert_eq!(stats.take_announced().unwrap(), Announced::Links(vec![]));

        set_link_speed("ant0", 2500, false).unwrap();
        assert_eq!(stats.take_announced().unwrap(), Announced::Links(vec!["ant0".into()]));
        let modes = stats.link_modes_of(&["ant0"]).unwrap().unwrap();
        assert_eq!(modes.len(), 1, "{modes:?}");
        assert_eq!((modes[0].speed_mbps, modes[0].duplex), (Some(2500), Duplex::Half));
        let ioctl = Socket::open().unwrap().link_settings("ant0").unwrap();
        assert_eq!((ioctl.speed_mbps, ioctl.duplex), (Some(2500), Duplex::Half));

        ip(&["link", "set", "anb0", "down"]);
        let Announced::Links(names) = stats.take_announced().unwrap() else {
            panic!("an overflow for one link change")
        };
        assert!(names.contains(&"anb0".to_string()), "{names:?}");
        assert!(!names.contains(&"ant0".to_string()), "{names:?}");
        // Down: no speed, as in the dump. Loopback has no link settings and a name that is
        // not an interface is not one: both left out, not an error.
        let modes = stats.link_modes_of(&["anb0", "lo", "nosuch0"]).unwrap().unwrap();
        assert_eq!(modes.len(), 1, "{modes:?}");
        assert_eq!((modes[0].name.as_str(), modes[0].speed_mbps), ("anb0", None));
    })
    .join()
    .unwrap();
}
