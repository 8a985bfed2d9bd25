//! A veth pair for tests that need a link of their own (root): one end here, its peer in a
//! network namespace made for the test, a /30 per run; both gone on drop, even when the test
//! fails.

use std::process::Command;

/// The pair. Made by [`Veth::create`] (links only), addressed and brought up by [`Veth::up`],
/// so a test can set the links up its own way in between.
#[derive(Debug)]
pub struct Veth {
    /// The namespace holding the peer.
    pub ns: String,
    /// This end's interface name.
    pub host: String,
    /// The peer's interface name (inside `ns`).
    pub peer: String,
    pub host_ip: String,
    pub peer_ip: String,
}

impl Veth {
    /// Creates the namespace and the pair, named `{tag}{pid}` (at most 6 letters of tag:
    /// interface names hold 15 bytes), with addresses from `10.{octet}.x.y/30`: a subnet of its
    /// own per process, so parallel runs do not share a route.
    pub fn create(tag: &str, octet: u8) -> Veth {
        let id = std::process::id();
        let (a, b) = ((id >> 6) % 250, (id & 0x3f) << 2);
        let veth = Veth {
            ns: format!("ps{tag}{id}"),
            host: format!("{tag}{id}a"),
            peer: format!("{tag}{id}b"),
            host_ip: format!("10.{octet}.{a}.{}", b + 1),
            peer_ip: format!("10.{octet}.{a}.{}", b + 2),
        };
        ip(&["netns", "add", &veth.ns]);
        ip(&[
            "link", "add", &veth.host, "type", "veth", "peer", "name", &veth.peer, "netns",
            &veth.ns,
        ]);
        veth
    }

    /// Gives both ends their /30 address and brings them up.
    pub fn up(&self) {
        ip(&["addr", "add", &format!("{}/30", self.host_ip), "dev", &self.host]);
        ip(&["-n", &self.ns, "addr", "add", &format!("{}/30", self.peer_ip), "dev", &self.peer]);
        ip(&["link", "set", &self.host, "up"]);
        ip(&["-n", &self.ns, "link", "set", &self.peer, "up"]);
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", &self.host]).status();
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
    }
}

/// `ip ARGS`, which must succeed.
pub fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("running ip");
    assert!(out.status.success(), "ip {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Sets interface `name`'s speed (Mbit/s) and duplex with the legacy ethtool ioctl
/// (`ETHTOOL_GSET`, then `ETHTOOL_SSET` with the two fields changed), as `ethtool -s NAME speed
/// S duplex D` does; for a tap device, which keeps whatever it is given. The kernel announces
/// it on ethtool's netlink monitor group.
pub fn set_link_speed(name: &str, mbps: u32, full_duplex: bool) -> std::io::Result<()> {
    const ETHTOOL_GSET: u32 = 1;
    const ETHTOOL_SSET: u32 = 2;
    /// `struct ethtool_cmd`, aligned for its u32 fields.
    #[repr(C, align(8))]
    struct Cmd([u8; 44]);
    // SAFETY: socket(2) takes no pointers; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a new descriptor nothing else owns.
    let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let mut cmd = Cmd([0; 44]);
    // SAFETY: ifreq is plain data; all zeroes is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes().take(libc::IFNAMSIZ - 1)) {
        *dst = src as libc::c_char;
    }
    let mut call = |op: u32, cmd: &mut Cmd| {
        cmd.0[0..4].copy_from_slice(&op.to_ne_bytes());
        req.ifr_ifru.ifru_data = cmd.0.as_mut_ptr().cast();
        // SAFETY: req names the interface and points at a 44-byte ethtool_cmd that outlives
        // the call.
        let rc = unsafe {
            libc::ioctl(std::os::fd::AsRawFd::as_raw_fd(&fd), libc::SIOCETHTOOL as _, &mut req)
        };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    };
    call(ETHTOOL_GSET, &mut cmd)?;
    cmd.0[12..14].copy_from_slice(&((mbps & 0xffff) as u16).to_ne_bytes());
    cmd.0[28..30].copy_from_slice(&((mbps >> 16) as u16).to_ne_bytes());
    cmd.0[14] = u8::from(full_duplex);
    call(ETHTOOL_SSET, &mut cmd)
}
