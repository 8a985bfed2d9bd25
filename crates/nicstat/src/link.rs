//! Interface facts: speed, duplex, state, type — from sysfs, else from the kernel via ioctl.
//!
//! `/sys/class/net/IF/speed` holds the speed in Mbit/s as a signed 32-bit number; `-1` means the
//! driver does not know (a virtual NIC, a link without carrier), and reading it fails with EINVAL
//! while the interface is down. Both are "unknown" here — never 65535, which is what the Linux
//! nicstat 1.95 printed after keeping only the low 16 bits of the ethtool speed (it showed a
//! 100 GbE link as 34464 Mbit/s). An unknown duplex stays unknown rather than becoming "half".

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::duplex::Duplex;
use crate::ioctl;
use measure::FsRoot;
use measure::UsageError;

/// Where a link's speed and duplex came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SpeedSource {
    /// `/sys/class/net/IF/speed` and `duplex`.
    Sysfs,
    /// `SIOCETHTOOL` (`ETHTOOL_GLINKSETTINGS`, or `ETHTOOL_GSET` on kernels before 4.6).
    Ethtool,
    /// One ethtool generic-netlink dump for every interface (`ETHTOOL_MSG_LINKMODES_GET`).
    EthtoolNetlink,
    /// The user's `-S IF:SPEED[fd|hd]`.
    CommandLine,
    /// Nothing said.
    Unknown,
}

impl fmt::Display for SpeedSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SpeedSource::Sysfs => "sysfs",
            SpeedSource::Ethtool => "ethtool",
            SpeedSource::EthtoolNetlink => "ethtool-netlink",
            SpeedSource::CommandLine => "-S",
            SpeedSource::Unknown => "-",
        })
    }
}

/// What is known about one interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LinkFacts {
    pub name: String,
    pub ifindex: Option<u32>,
    /// Mbit/s; `None` when unknown.
    pub speed_mbps: Option<u32>,
    pub duplex: Duplex,
    pub speed_source: SpeedSource,
    /// RFC 2863 operational state as sysfs spells it (`up`, `down`, `unknown`, …).
    pub operstate: Option<String>,
    /// ARPHRD type (1 Ethernet, 772 loopback, …).
    pub link_type: Option<u32>,
    pub loopback: bool,
    /// Administratively up (`IFF_UP`); nicstat shows only interfaces that are up unless named.
    pub up: bool,
    pub mtu: Option<u32>,
}

impl LinkFacts {
    /// Nothing known yet but the name.
    pub fn unknown(name: &str) -> Self {
        Self {
            name: name.to_string(),
            ifindex: None,
            speed_mbps: None,
            duplex: Duplex::Unknown,
            speed_source: SpeedSource::Unknown,
            operstate: None,
            link_type: None,
            loopback: false,
            up: true,
            mtu: None,
        }
    }

    /// Applies a `-S` override (speed and duplex from the user win over what the kernel says).
    pub fn apply(&mut self, over: &SpeedOverride) {
        self.speed_mbps = Some(over.speed_mbps);
        self.duplex = over.duplex;
        self.speed_source = SpeedSource::CommandLine;
    }

    /// The `type` as a word for `-l -v`.
    pub fn type_name(&self) -> String {
        match self.link_type {
            Some(1) => "ether".into(),
            Some(772) => "loopback".into(),
            Some(776) => "sit".into(),
            Some(778) => "gre".into(),
            Some(65534) => "none".into(),
            Some(other) => other.to_string(),
            None => "-".into(),
        }
    }
}

/// Parses `/sys/class/net/IF/speed`: a full signed 32-bit value; `-1`, `0` and anything out of
/// range mean unknown.
pub fn parse_sysfs_speed(text: &str) -> Option<u32> {
    let value: i64 = text.trim().parse().ok()?;
    if value <= 0 || value > i64::from(i32::MAX) {
        None
    } else {
        u32::try_from(value).ok()
    }
}

/// Parses `/sys/class/net/IF/duplex` (`full`, `half`, `unknown`).
pub fn parse_sysfs_duplex(text: &str) -> Duplex {
    match text.trim() {
        "full" => Duplex::Full,
        "half" => Duplex::Half,
        _ => Duplex::Unknown,
    }
}

/// `/sys/class/net/IF/flags` is hexadecimal (`0x1003`); `IFF_LOOPBACK` is bit 3.
pub fn parse_sysfs_flags(text: &str) -> Option<u32> {
    let t = text.trim();
    u32::from_str_radix(t.strip_prefix("0x").unwrap_or(t), 16).ok()
}

const IFF_UP: u32 = 0x1;
const IFF_LOOPBACK: u32 = 0x8;
const IFF_RUNNING: u32 = 0x40;

/// Reads an interface's facts. From sysfs when it belongs to the namespace being read; the speed
/// and duplex from ethtool only when sysfs lacks them (no file, or no sysfs for this namespace)
/// and the root is the live system. Without `detail`, only what sampling needs (ifindex, flags,
/// speed, duplex): operstate, type and MTU are for `-l`.
pub fn read_link_facts(
    root: &FsRoot,
    socket: Option<&ioctl::Socket>,
    name: &str,
    detail: bool,
) -> LinkFacts {
    let mut facts = LinkFacts::unknown(name);
    let mut speed_read = false;
    if root.has_sysfs() {
        let attr = |a: &str| root.class_net(name, a);
        facts.ifindex = attr("ifindex").ok().and_then(|s| s.parse().ok());
        if detail {
            facts.operstate = attr("operstate").ok();
            facts.link_type = attr("type").ok().and_then(|s| s.parse().ok());
            facts.mtu = attr("mtu").ok().and_then(|s| s.parse().ok());
        }
        let flags = attr("flags").ok().and_then(|s| parse_sysfs_flags(&s));
        facts.loopback =
            flags.is_some_and(|f| f & IFF_LOOPBACK != 0) || facts.link_type == Some(772);
        facts.up = flags.is_none_or(|f| f & IFF_UP != 0);
        match attr("speed") {
            Ok(text) => {
                speed_read = true;
                facts.speed_mbps = parse_sysfs_speed(&text);
                facts.duplex =
                    attr("duplex").map(|d| parse_sysfs_duplex(&d)).unwrap_or(Duplex::Unknown);
                facts.speed_source = SpeedSource::Sysfs;
            }
            // EINVAL: the interface is down; the kernel has no speed to give either way.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                speed_read = true;
                facts.speed_source = SpeedSource::Sysfs;
            }
            Err(_) => {}
        }
    }
    if let (Some(sock), true) = (socket, root.is_live()) {
        if !root.has_sysfs() {
            facts.ifindex = sock.ifindex(name).ok();
            if detail {
                facts.mtu = sock.mtu(name).ok();
            }
            if let Ok(flags) = sock.flags(name) {
                facts.loopback = flags & IFF_LOOPBACK != 0;
                facts.up = flags & IFF_UP != 0;
                let up = flags & IFF_UP != 0 && flags & IFF_RUNNING != 0;
                facts.operstate = Some(if up { "up" } else { "down" }.to_string());
            }
        }
        if !speed_read {
            if let Ok(settings) = sock.link_settings(name) {
                facts.speed_mbps = settings.speed_mbps;
                facts.duplex = settings.duplex;
                facts.speed_source = SpeedSource::Ethtool;
            }
        }
    }
    if facts.loopback {
        // A loopback device has no line rate: nicstat prints '-'.
        facts.speed_mbps = None;
    }
    facts
}

/// What can change under a running interface: speed, duplex and flags (up, loopback); the
/// other fields of the result are unknown.
pub fn refresh_link(root: &FsRoot, socket: Option<&ioctl::Socket>, name: &str) -> LinkFacts {
    if !root.has_sysfs() {
        return read_link_facts(root, socket, name, false);
    }
    let mut facts = LinkFacts::unknown(name);
    let flags = root.class_net(name, "flags").ok().and_then(|s| parse_sysfs_flags(&s));
    facts.loopback = flags.is_some_and(|f| f & IFF_LOOPBACK != 0);
    facts.up = flags.is_none_or(|f| f & IFF_UP != 0);
    match root.class_net(name, "speed") {
        Ok(text) => {
            facts.speed_mbps = parse_sysfs_speed(&text);
            facts.duplex = root
                .class_net(name, "duplex")
                .map(|d| parse_sysfs_duplex(&d))
                .unwrap_or(Duplex::Unknown);
            facts.speed_source = SpeedSource::Sysfs;
        }
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => facts.speed_source = SpeedSource::Sysfs,
        Err(_) => {
            if let (Some(sock), true) = (socket, root.is_live()) {
                if let Ok(s) = sock.link_settings(name) {
                    facts.speed_mbps = s.speed_mbps;
                    facts.duplex = s.duplex;
                    facts.speed_source = SpeedSource::Ethtool;
                }
            }
        }
    }
    if facts.loopback {
        facts.speed_mbps = None;
    }
    facts
}

/// Reads only the ifindex, to tell a re-created interface from a counter wrap.
pub fn read_ifindex(root: &FsRoot, socket: Option<&ioctl::Socket>, name: &str) -> Option<u32> {
    if root.has_sysfs() {
        return root.class_net(name, "ifindex").ok().and_then(|s| s.parse().ok());
    }
    match (socket, root.is_live()) {
        (Some(sock), true) => sock.ifindex(name).ok(),
        _ => None,
    }
}

/// One `-S IF:SPEED[fd|hd]` item: speed in Mbit/s, duplex full unless the suffix says half.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpeedOverride {
    pub interface: String,
    pub speed_mbps: u32,
    pub duplex: Duplex,
}

impl FromStr for SpeedOverride {
    type Err = UsageError;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let bad =
            |reason: &str| UsageError::BadSpeed { spec: spec.to_string(), reason: reason.into() };
        let (interface, rest) =
            spec.split_once(':').ok_or_else(|| bad("no ':' after the interface"))?;
        if interface.is_empty() {
            return Err(bad("no interface name"));
        }
        if interface.len() > 15 || interface.contains(['/', ' ', '\t']) {
            return Err(bad("not an interface name"));
        }
        let digits_end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let (digits, suffix) = rest.split_at(digits_end);
        if digits.is_empty() {
            return Err(bad("no speed"));
        }
        let speed_mbps: u32 = digits.parse().map_err(|_| bad("speed does not fit in 32 bits"))?;
        if speed_mbps == 0 {
            return Err(bad("speed must be greater than 0"));
        }
        let duplex = match suffix.to_ascii_lowercase().as_str() {
            "" | "f" | "fd" | "full" => Duplex::Full,
            "h" | "hd" | "half" => Duplex::Half,
            _ => return Err(bad(&format!("unknown duplex '{suffix}'"))),
        };
        Ok(Self { interface: interface.to_string(), speed_mbps, duplex })
    }
}

/// A comma-separated `-S` value (`eth0:1000,eth1:100hd`).
pub fn parse_speed_overrides(text: &str) -> Result<Vec<SpeedOverride>, UsageError> {
    text.split(',').map(str::parse).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speeds_are_read_in_full_32_bits() {
        assert_eq!(parse_sysfs_speed("100000\n"), Some(100_000));
        assert_eq!(parse_sysfs_speed("400000"), Some(400_000));
        assert_eq!(parse_sysfs_speed("-1"), None);
        assert_eq!(parse_sysfs_speed("0"), None);
        assert_eq!(parse_sysfs_speed("4294967295"), None);
        assert_eq!(parse_sysfs_speed("fast"), None);
    }

    #[test]
    fn unknown_duplex_stays_unknown() {
        assert_eq!(parse_sysfs_duplex("unknown"), Duplex::Unknown);
        assert_eq!(parse_sysfs_duplex(""), Duplex::Unknown);
        assert_eq!(parse_sysfs_duplex("half\n"), Duplex::Half);
    }

    #[test]
    fn speed_overrides_parse_like_nicstat() {
        let o: SpeedOverride = "veth0:1000fd".parse().unwrap();
        assert_eq!((o.interface.as_str(), o.speed_mbps, o.duplex), ("veth0", 1000, Duplex::Full));
        assert_eq!("eth0:10h".parse::<SpeedOverride>().unwrap().duplex, Duplex::Half);
        assert_eq!("eth0:100".parse::<SpeedOverride>().unwrap().duplex, Duplex::Full);
        assert_eq!("eth0:100HD".parse::<SpeedOverride>().unwrap().duplex, Duplex::Half);
        assert_eq!(parse_speed_overrides("a:1,b:2hd").unwrap().len(), 2);
    }

    #[test]
    fn malformed_speed_overrides_say_why() {
        for (spec, why) in [
            ("eth0", "no ':'"),
            (":100", "no interface"),
            ("eth0:", "no speed"),
            ("eth0:fast", "no speed"),
            ("eth0:0", "greater than 0"),
            ("eth0:99999999999", "32 bits"),
            ("eth0:100xd", "unknown duplex 'xd'"),
            ("eth0:-5", "no speed"),
        ] {
            let err = spec.parse::<SpeedOverride>().unwrap_err().to_string();
            assert!(err.contains(why), "{spec}: {err}");
        }
    }
}
