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
    #[allow(clippy::expect_used)] // tests may panic with a reason
    let out = Command::new("ip").args(args).output().expect("running ip");
    assert!(out.status.success(), "ip {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}
