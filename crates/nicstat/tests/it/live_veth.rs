//! Live, as root: two network namespaces joined by a veth pair (iproute2), addresses in
//! 10.200.X.0/24 inside those namespaces only, static neighbours and IPv6 off so that the only
//! traffic is the test's own. The test's threads enter a namespace with setns(2) and read it
//! through `/proc/thread-self/net` and ioctls ([`FsRoot::thread_netns`]). The namespaces are
//! deleted by a guard, also when a test fails. Without root (or without `ip`) each test prints
//! why it skipped.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::io::{Read, Write};
use std::net::{SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use test_tier::live;

use measure::time::Stamp;
use measure::FsRoot;
use nicstat::render::{render_list, render_report};
use nicstat::{Duplex, Monitor, Options, Report, SpeedSource};

/// Ethernet 14 + IPv4 20 + UDP 8: bytes each datagram adds on the veth.
const UDP_OVERHEAD: u64 = 42;
/// Ethernet 14 + IPv4 20 + TCP 20 + timestamps option 12.
const TCP_OVERHEAD: u64 = 66;

static SEQ: AtomicU32 = AtomicU32::new(0);

/// Two namespaces `a` (veth0, 10.200.X.1) and `b` (veth1, 10.200.X.2); deleted on drop.
struct Lab {
    a: String,
    b: String,
    subnet: u32,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

impl Lab {
    /// `None` (after saying why) when this cannot run here.
    fn new(test: &str) -> Option<Lab> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            println!("SKIPPED {test}: needs root to create network namespaces and a veth pair");
            return None;
        }
        if Command::new("ip").arg("-V").output().is_err() {
            println!(
                "SKIPPED {test}: iproute2 ('ip') is not installed (scripts/setup.sh installs it)"
            );
            return None;
        }
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let lab = Lab {
            a: format!("psmA{pid}x{n}"),
            b: format!("psmB{pid}x{n}"),
            subnet: 1 + (pid.wrapping_mul(7).wrapping_add(n) % 250),
        };
        lab.build().unwrap_or_else(|e| panic!("setting up the namespaces: {e}"));
        Some(lab)
    }

    fn addr(&self, host: u32) -> String {
        format!("10.200.{}.{host}", self.subnet)
    }

    fn build(&self) -> Result<(), String> {
        let (a, b) = (self.a.as_str(), self.b.as_str());
        ip(&["netns", "add", a])?;
        ip(&["netns", "add", b])?;
        for ns in [a, b] {
            // IPv6 off so no router/neighbour solicitations mix with the counted traffic.
            for conf in ["all", "default"] {
                let path = format!("/proc/sys/net/ipv6/conf/{conf}/disable_ipv6");
                let _ = Command::new("ip")
                    .args([
                        "netns",
                        "exec",
                        ns,
                        "sh",
                        "-c",
                        &format!("[ -e {path} ] && echo 1 > {path}"),
                    ])
                    .status();
            }
        }
        ip(&[
            "-n",
            a,
            "link",
            "add",
            "veth0",
            "address",
            "02:00:00:00:00:01",
            "type",
            "veth",
            "peer",
            "name",
            "veth1",
            "address",
            "02:00:00:00:00:02",
            "netns",
            b,
        ])?;
        ip(&["-n", a, "addr", "add", &format!("{}/24", self.addr(1)), "dev", "veth0"])?;
        ip(&["-n", b, "addr", "add", &format!("{}/24", self.addr(2)), "dev", "veth1"])?;
        // Static neighbours: no ARP in the counts.
        ip(&[
            "-n",
            a,
            "neigh",
            "add",
            &self.addr(2),
            "lladdr",
            "02:00:00:00:00:02",
            "dev",
            "veth0",
            "nud",
            "permanent",
        ])?;
        ip(&[
            "-n",
            b,
            "neigh",
            "add",
            &self.addr(1),
            "lladdr",
            "02:00:00:00:00:01",
            "dev",
            "veth1",
            "nud",
            "permanent",
        ])?;
        for (ns, dev) in [(a, "veth0"), (b, "veth1")] {
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
        }
        Ok(())
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in [&self.a, &self.b] {
            if let Err(e) = ip(&["netns", "del", ns]) {
                eprintln!("cleanup: {e}");
            }
        }
    }
}

/// Moves the calling thread into a named network namespace.
fn enter(ns: &str) {
    let file = std::fs::File::open(format!("/run/netns/{ns}")).unwrap();
    // SAFETY: the descriptor is open for the duration of the call; CLONE_NEWNET only changes the
    // calling thread's network namespace.
    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(rc, 0, "setns {ns}: {}", std::io::Error::last_os_error());
}

fn opts(interface: &str) -> Options {
    Options { interfaces: vec![interface.into()], ..Default::default() }
}

/// A monitor in namespace `ns` that takes its baseline, says so on `ready`, waits for `go`, waits
/// `settle` for the last packets to be counted, and reports the interval.
fn watch(
    ns: String,
    options: Options,
    ready: mpsc::Sender<()>,
    go: mpsc::Receiver<()>,
) -> std::thread::JoinHandle<Report> {
    std::thread::spawn(move || {
        enter(&ns);
        let mut m = Monitor::new(FsRoot::thread_netns(), options).unwrap();
        m.next_report().unwrap(); // since boot: the baseline
        ready.send(()).unwrap();
        go.recv_timeout(Duration::from_secs(60)).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        m.next_report().unwrap()
    })
}

fn within(what: &str, got: f64, want: f64, tolerance: f64) {
    let err = (got - want).abs() / want;
    assert!(err <= tolerance, "{what}: got {got}, want {want} (off by {:.3}%)", err * 100.0);
    println!("{what}: {got:.1} (expected {want:.1}, off by {:.4}%)", err * 100.0);
}

fn iface<'a>(r: &'a Report, name: &str) -> &'a nicstat::InterfaceRates {
    r.interfaces
        .iter()
        .find(|i| i.name == name)
        .unwrap_or_else(|| panic!("{name} not reported: {r:?}"))
}

const DATAGRAMS: u64 = 20_000;
const PAYLOAD: usize = 1000;

/// Sends `DATAGRAMS` datagrams from namespace a to b's port, paced so a quiet host drops none.
fn send_udp(lab: &Lab, port: u16) {
    let dst: SocketAddrV4 = format!("{}:{port}", lab.addr(2)).parse().unwrap();
    let a = lab.a.clone();
    std::thread::spawn(move || {
        enter(&a);
        let sock = UdpSocket::bind("0.0.0.0:0").unwrap();
        let payload = vec![0x5au8; PAYLOAD];
        for i in 0..DATAGRAMS {
            sock.send_to(&payload, dst).unwrap();
            if i % 200 == 199 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    })
    .join()
    .unwrap();
}

/// A receiver in namespace b that reads until `quiet` passes without a datagram; returns the count.
fn receive_udp(lab: &Lab, port: u16) -> (std::thread::JoinHandle<u64>, mpsc::Receiver<()>) {
    let (bound_tx, bound_rx) = mpsc::channel();
    let (b, addr) = (lab.b.clone(), lab.addr(2));
    let handle = std::thread::spawn(move || {
        enter(&b);
        let sock = UdpSocket::bind(format!("{addr}:{port}")).unwrap();
        // Room for the whole burst, so the count does not depend on scheduling (root may force it).
        let size: libc::c_int = 64 << 20;
        // SAFETY: the option value is a live c_int of the size passed.
        unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        sock.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        bound_tx.send(()).unwrap();
        let mut buf = [0u8; 2048];
        let mut count = 0u64;
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            match sock.recv(&mut buf) {
                Ok(_) => count += 1,
                Err(_) if count > 0 => break,
                Err(_) => {}
            }
        }
        count
    });
    (handle, bound_rx)
}

#[live]
fn udp_packets_and_kilobytes_match_as_root() {
    let Some(lab) = Lab::new("udp_packets_and_kilobytes_match_as_root") else { return };
    let (recv, bound) = receive_udp(&lab, 9100);
    bound.recv().unwrap();
    let (ready_a, ready) = mpsc::channel();
    let ready_b = ready_a.clone();
    let (go_a, wait_a) = mpsc::channel();
    let (go_b, wait_b) = mpsc::channel();
    // -x -u: interface lines come with -u only when -x asks for them (as in nicstat).
    let mon_a = watch(
        lab.a.clone(),
        Options { udp: true, extended: true, ..opts("veth0") },
        ready_a,
        wait_a,
    );
    let mon_b = watch(
        lab.b.clone(),
        Options { udp: true, extended: true, ..opts("veth1") },
        ready_b,
        wait_b,
    );
    ready.recv().unwrap();
    ready.recv().unwrap();
    send_udp(&lab, 9100);
    let received = recv.join().unwrap();
    go_a.send(()).unwrap();
    go_b.send(()).unwrap();
    let (ra, rb) = (mon_a.join().unwrap(), mon_b.join().unwrap());
    let stamp = Stamp::fixed("live", "0");
    print!(
        "{}",
        render_report(&ra, &Options { udp: true, extended: true, ..opts("veth0") }, &stamp, true)
    );
    print!(
        "{}",
        render_report(&rb, &Options { udp: true, extended: true, ..opts("veth1") }, &stamp, true)
    );

    let frame = (PAYLOAD as u64 + UDP_OVERHEAD) as f64;
    let (tx, rx) = (iface(&ra, "veth0"), iface(&rb, "veth1"));
    // The socket sent every datagram; what crossed the pair is what the receiver read (its buffer
    // holds the whole burst). A loaded host can drop a few at the peer's backlog: veth counts
    // those as transmit drops, not bytes, so sent = crossed + dropped is checked as well.
    let crossed = received as f64;
    assert!(crossed >= 0.9 * DATAGRAMS as f64, "only {received} of {DATAGRAMS} crossed the pair");
    let crossed_kb = crossed * frame / 1024.0;
    // What nicstat prints is a rate; rate × interval is what the counters moved.
    within("veth0 wPk", tx.tx_packets_per_s * ra.elapsed_s, crossed, 0.01);
    within("veth0 wKB", tx.tx_bytes_per_s * ra.elapsed_s / 1024.0, crossed_kb, 0.01);
    within("veth1 rPk", rx.rx_packets_per_s * rb.elapsed_s, crossed, 0.01);
    within("veth1 rKB", rx.rx_bytes_per_s * rb.elapsed_s / 1024.0, crossed_kb, 0.01);
    let dropped = tx.tx_drops_per_s * ra.elapsed_s;
    within("veth0 wPk + drops (all sent)", crossed + dropped, DATAGRAMS as f64, 0.01);
    let udp_a = ra.udp.as_ref().unwrap();
    let udp_b = rb.udp.as_ref().unwrap();
    within("UDP OutDG (a)", udp_a.out_datagrams as f64, DATAGRAMS as f64, 0.01);
    within("UDP InDG (b)", udp_b.in_datagrams as f64, crossed, 0.01);
    assert!(!tx.counters_restarted && !rx.counters_restarted);
}

#[live]
fn speed_override_gives_the_arithmetic_utilization_as_root() {
    let Some(lab) = Lab::new("speed_override_gives_the_arithmetic_utilization_as_root") else {
        return;
    };
    let (recv, bound) = receive_udp(&lab, 9200);
    bound.recv().unwrap();
    let (ready_tx, ready) = mpsc::channel();
    let (go, wait) = mpsc::channel();
    let options =
        Options { speeds: vec!["veth0:1000fd".parse().unwrap()], wire: false, ..opts("veth0") };
    let mon = watch(lab.a.clone(), options.clone(), ready_tx, wait);
    ready.recv().unwrap();
    send_udp(&lab, 9200);
    let received = recv.join().unwrap();
    go.send(()).unwrap();
    let r = mon.join().unwrap();
    print!("{}", render_report(&r, &options, &Stamp::fixed("live", "0"), true));
    let v = iface(&r, "veth0");
    assert_eq!(
        (v.speed_mbps, v.duplex, v.speed_source),
        (Some(1000), Duplex::Full, SpeedSource::CommandLine)
    );
    // %Util = max(read, write) bits/s over 1000 Mbit/s (full duplex); here writes dominate. What
    // crossed the pair is what the receiver read: a loaded host can drop a few at the peer's
    // backlog, and veth counts those as drops, not bytes (CI once lost 1% that way).
    assert!(received >= DATAGRAMS * 9 / 10, "only {received} of {DATAGRAMS} crossed the pair");
    let bytes = received as f64 * (PAYLOAD as u64 + UDP_OVERHEAD) as f64;
    let want = bytes * 8.0 / r.elapsed_s / 1e9 * 100.0;
    within("%Util with -S veth0:1000fd", v.util_pct.unwrap(), want, 0.01);
    within("%wUtil", v.tx_util_pct.unwrap(), want, 0.01);
    // With --wire each packet also carries 24 bytes of framing.
    let wire = (bytes + received as f64 * 24.0) * 8.0 / r.elapsed_s / 1e9 * 100.0;
    let again = nicstat::utilization_pct(
        0.0,
        (v.tx_bytes as f64 + v.tx_packets as f64 * 24.0) * 8.0 / r.elapsed_s,
        Some(1000),
        Duplex::Full,
    );
    within("%Util --wire arithmetic", again.unwrap(), wire, 0.01);
}

#[live]
fn tcp_bytes_and_segments_appear_with_t_as_root() {
    let Some(lab) = Lab::new("tcp_bytes_and_segments_appear_with_t_as_root") else { return };
    const BYTES: usize = 8 << 20;
    let (b, addr) = (lab.b.clone(), lab.addr(2));
    let (bound_tx, bound_rx) = mpsc::channel();
    let server = std::thread::spawn(move || {
        enter(&b);
        let listener = TcpListener::bind(format!("{addr}:9300")).unwrap();
        bound_tx.send(()).unwrap();
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut got = 0usize;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match conn.read(&mut buf).unwrap() {
                0 => break,
                n => got += n,
            }
        }
        got
    });
    bound_rx.recv().unwrap();
    let (ready_tx, ready) = mpsc::channel();
    let (go, wait) = mpsc::channel();
    let options = Options { tcp: true, extended: true, ..opts("veth0") };
    let mon = watch(lab.a.clone(), options.clone(), ready_tx, wait);
    ready.recv().unwrap();
    let (a, dst) = (lab.a.clone(), format!("{}:9300", lab.addr(2)));
    std::thread::spawn(move || {
        enter(&a);
        let mut conn =
            TcpStream::connect_timeout(&dst.parse().unwrap(), Duration::from_secs(10)).unwrap();
        conn.write_all(&vec![0xa5u8; BYTES]).unwrap();
        conn.shutdown(std::net::Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        let _ = conn.read_to_end(&mut rest);
    })
    .join()
    .unwrap();
    assert_eq!(server.join().unwrap(), BYTES);
    go.send(()).unwrap();
    let r = mon.join().unwrap();
    print!("{}", render_report(&r, &options, &Stamp::fixed("live", "0"), true));
    let tcp = r.tcp.as_ref().unwrap();
    assert!(tcp.out_segs > 0 && tcp.in_segs > 0, "{tcp:?}");
    // At least one segment per MSS-sized piece of payload (1448 bytes with timestamps on a 1500 MTU).
    assert!(tcp.out_segs as usize >= BYTES / 1448, "{tcp:?}");
    // Every veth packet (GSO or not) carries one Ethernet+IP+TCP header; SYN has 8 more bytes.
    let v = iface(&r, "veth0");
    let want = (BYTES as u64 + v.tx_packets * TCP_OVERHEAD + 8) as f64 / 1024.0;
    let got = v.tx_bytes_per_s * r.elapsed_s / 1024.0;
    // On a loaded host the veth queue can drop and TCP resends: every retransmitted segment adds at
    // most one MSS of payload again (its header is already in tx_packets).
    let resent = (tcp.retrans_segs * 1448) as f64 / 1024.0;
    if resent > 0.0 && got > want {
        println!("{} segments retransmitted: up to {resent:.1} KB resent", tcp.retrans_segs);
        assert!(got <= want + resent, "veth0 wKB {got} beyond payload {want} + resent {resent}");
    } else {
        within("veth0 wKB for the TCP stream", got, want, 0.01);
    }
}

#[live]
fn tcp_retransmits_appear_with_t_as_root() {
    let Some(lab) = Lab::new("tcp_retransmits_appear_with_t_as_root") else { return };
    let (b, addr) = (lab.b.clone(), lab.addr(2));
    let (bound_tx, bound_rx) = mpsc::channel();
    let server = std::thread::spawn(move || {
        enter(&b);
        let listener = TcpListener::bind(format!("{addr}:9400")).unwrap();
        bound_tx.send(()).unwrap();
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut all = Vec::new();
        conn.read_to_end(&mut all).unwrap();
        all.len()
    });
    bound_rx.recv().unwrap();
    let (ready_tx, ready) = mpsc::channel();
    let (go, wait) = mpsc::channel();
    let options = Options { tcp: true, extended: true, ..opts("veth0") };
    let mon = watch(lab.a.clone(), options.clone(), ready_tx, wait);
    ready.recv().unwrap();
    let (a, dst) = (lab.a.clone(), format!("{}:9400", lab.addr(2)));
    let (peer, a_addr) = (lab.b.clone(), lab.addr(1));
    std::thread::spawn(move || {
        enter(&a);
        let mut conn =
            TcpStream::connect_timeout(&dst.parse().unwrap(), Duration::from_secs(10)).unwrap();
        conn.write_all(&[1u8; 1000]).unwrap();
        // The far end goes down: what is sent now is lost and must be retransmitted.
        ip(&["-n", &peer, "link", "set", "veth1", "down"]).unwrap();
        conn.write_all(&[2u8; 20_000]).unwrap();
        std::thread::sleep(Duration::from_millis(1200));
        ip(&["-n", &peer, "link", "set", "veth1", "up"]).unwrap();
        // Its neighbour entry went with the link: put it back so the retransmission gets through.
        let _ = ip(&[
            "-n",
            &peer,
            "neigh",
            "replace",
            &a_addr,
            "lladdr",
            "02:00:00:00:00:01",
            "dev",
            "veth1",
        ]);
        conn.shutdown(std::net::Shutdown::Write).unwrap();
    })
    .join()
    .unwrap();
    assert_eq!(server.join().unwrap(), 21_000);
    go.send(()).unwrap();
    let r = mon.join().unwrap();
    let stamp = Stamp::fixed("live", "0");
    let text = render_report(&r, &options, &stamp, true);
    print!("{text}");
    let tcp = r.tcp.as_ref().unwrap();
    assert!(tcp.retrans_segs > 0, "no retransmission counted: {tcp:?}");
    assert!(tcp.retrans_pct > 0.0 && tcp.retrans_pct <= 100.0, "{tcp:?}");
    assert!(tcp.timeouts_per_s.unwrap_or(0.0) > 0.0, "{tcp:?}");
    // What the down peer cost shows as transmit drops on veth0, apart from errors (-x).
    let v = iface(&r, "veth0");
    assert!(v.tx_drops_per_s > 0.0 && v.tx_errors_per_s == 0.0, "{v:?}");
    // The %ReTX column shows it.
    let line = text.lines().find(|l| l.starts_with("TCP")).unwrap();
    let retx: f64 = line.split_whitespace().nth(7).unwrap().parse().unwrap();
    assert!(retx > 0.0, "{line}");
}

#[live]
fn list_shows_the_veth_pair_as_root() {
    let Some(lab) = Lab::new("list_shows_the_veth_pair_as_root") else { return };
    let mut lines = Vec::new();
    for (ns, dev) in [(lab.a.clone(), "veth0"), (lab.b.clone(), "veth1")] {
        let listed = std::thread::spawn(move || {
            enter(&ns);
            let mut m = Monitor::new(FsRoot::thread_netns(), Options::default()).unwrap();
            m.list().unwrap()
        })
        .join()
        .unwrap();
        let text = render_list(&listed, false);
        print!("{text}");
        let v = listed.iter().find(|l| l.name == dev).unwrap_or_else(|| panic!("{dev} not listed"));
        // veth reports 10000 Mbit/s full duplex through ETHTOOL_GLINKSETTINGS.
        assert_eq!(
            (v.speed_mbps, v.duplex, v.speed_source, v.up),
            (Some(10_000), Duplex::Full, SpeedSource::Ethtool, true)
        );
        assert!(listed.iter().any(|l| l.name == "lo" && l.loopback));
        lines.push(text.lines().find(|l| l.starts_with(dev)).unwrap().to_string());
    }
    assert_eq!(
        lines,
        ["veth0          No    10000   full    up", "veth1          No    10000   full    up"]
    );
}
