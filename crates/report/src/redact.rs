//! `--redact`: host names, IP and MAC addresses and serial numbers replaced by stable
//! pseudonyms, so a report can be posted. A pseudonym is the value's keyed hash (HMAC-SHA-256
//! under a key kept beside the local results database), so the same host gets the same
//! pseudonym in every report of this machine, and nobody without the key can map it back.
//!
//! Values are found two ways: the ones this machine knows it has (its host names, every
//! interface's addresses and MAC, the DMI serial numbers, and any the caller adds, such as a
//! baseline's host) are replaced wherever they appear; and anything shaped like an IPv4 or MAC
//! address is replaced too, whoever's it is.

use std::collections::BTreeMap;
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// What a value is, which names its pseudonym (`host-1a2b3c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Host,
    Ip,
    Mac,
    Serial,
}

impl Kind {
    fn prefix(self) -> &'static str {
        match self {
            Kind::Host => "host",
            Kind::Ip => "ip",
            Kind::Mac => "mac",
            Kind::Serial => "serial",
        }
    }
}

/// Replaces sensitive values with pseudonyms.
#[derive(Debug, Clone)]
pub struct Redactor {
    key: Vec<u8>,
    /// Known values, longest first when applied (so `db1.example` goes before `db1`).
    known: BTreeMap<String, Kind>,
}

impl Redactor {
    /// A redactor with `key` and no known values yet.
    pub fn with_key(key: &[u8]) -> Self {
        Self { key: key.to_vec(), known: BTreeMap::new() }
    }

    /// The redactor of this machine: the key beside the results database (made on first use,
    /// readable by its owner only) and every value this machine knows it has.
    pub fn for_this_machine(key_dir: &Path) -> io::Result<Self> {
        let mut r = Self::with_key(&load_or_make_key(&key_dir.join("redact.key"))?);
        for host in local_host_names() {
            r.add(Kind::Host, &host);
        }
        for (ip, mac) in local_addresses() {
            r.add(Kind::Ip, &ip);
            if let Some(mac) = mac {
                r.add(Kind::Mac, &mac);
            }
        }
        for serial in dmi_serials() {
            r.add(Kind::Serial, &serial);
        }
        Ok(r)
    }

    /// Adds a value to replace wherever it appears (empty and trivial values are ignored).
    pub fn add(&mut self, kind: Kind, value: &str) {
        let value = value.trim();
        let trivial = matches!(
            value.to_ascii_lowercase().as_str(),
            "" | "localhost"
                | "127.0.0.1"
                | "::1"
                | "00:00:00:00:00:00"
                | "none"
                | "unknown"
                | "not specified"
                | "to be filled by o.e.m."
                | "default string"
                | "0"
        );
        if !trivial && value.len() >= 2 {
            self.known.insert(value.to_string(), kind);
        }
    }

    /// The pseudonym of `value` (stable for one key).
    pub fn pseudonym(&self, kind: Kind, value: &str) -> String {
        let mut mac = match Hmac::<Sha256>::new_from_slice(&self.key) {
            Ok(m) => m,
            // Any key length is accepted by HMAC; this arm is never taken.
            Err(_) => return format!("{}-redacted", kind.prefix()),
        };
        mac.update(value.as_bytes());
        let digest = mac.finalize().into_bytes();
        let hex: String = digest.iter().take(3).map(|b| format!("{b:02x}")).collect();
        format!("{}-{hex}", kind.prefix())
    }

    /// `text` with every known value and every IPv4- or MAC-shaped token replaced.
    pub fn apply(&self, text: &str) -> String {
        let mut known: Vec<(&String, &Kind)> = self.known.iter().collect();
        known.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
        let mut out = text.to_string();
        for (value, kind) in known {
            if out.contains(value.as_str()) {
                out = replace_whole(&out, value, &self.pseudonym(*kind, value));
            }
        }
        self.replace_shaped(&out)
    }

    /// Replaces IPv4 addresses (four dotted numbers up to 255, not part of a longer dotted run)
    /// and MAC addresses (six colon-separated hex pairs).
    fn replace_shaped(&self, text: &str) -> String {
        let bytes = text.as_bytes();
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        while i < bytes.len() {
            let boundary_before = i == 0 || !is_token_byte(bytes[i - 1]);
            if boundary_before {
                if let Some(len) = mac_at(&bytes[i..]) {
                    let token = &text[i..i + len];
                    out.push_str(&self.pseudonym(Kind::Mac, &token.to_ascii_lowercase()));
                    i += len;
                    continue;
                }
                if let Some(len) = ipv4_at(&bytes[i..]) {
                    out.push_str(&self.pseudonym(Kind::Ip, &text[i..i + len]));
                    i += len;
                    continue;
                }
            }
            let ch_len = text[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&text[i..i + ch_len]);
            i += ch_len;
        }
        out
    }
}

/// `text` with every occurrence of `value` that is a whole token (not inside a longer name or
/// number: `db1` in `db10` or `vm` in `vmovdqa` stays) replaced by `with`.
fn replace_whole(text: &str, value: &str, with: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (at, _) in text.match_indices(value) {
        if at < last {
            continue;
        }
        let end = at + value.len();
        let alone_before = at == 0 || !bytes[at - 1].is_ascii_alphanumeric();
        let alone_after = end == bytes.len() || !bytes[end].is_ascii_alphanumeric();
        if alone_before && alone_after {
            out.push_str(&text[last..at]);
            out.push_str(with);
            last = end;
        }
    }
    out.push_str(&text[last..]);
    out
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'.' || b == b':' || b == b'-' || b == b'_'
}

/// Length of a MAC address at the start of `b`, if one is there and ends at a boundary.
fn mac_at(b: &[u8]) -> Option<usize> {
    const LEN: usize = 17;
    if b.len() < LEN {
        return None;
    }
    for (k, &c) in b[..LEN].iter().enumerate() {
        let ok = if k % 3 == 2 { c == b':' } else { c.is_ascii_hexdigit() };
        if !ok {
            return None;
        }
    }
    (b.len() == LEN || !is_token_byte(b[LEN])).then_some(LEN)
}

/// Length of an IPv4 address at the start of `b`, if one is there and ends at a boundary.
fn ipv4_at(b: &[u8]) -> Option<usize> {
    let mut i = 0;
    for part in 0..4 {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() && i - start < 3 {
            i += 1;
        }
        if i == start {
            return None;
        }
        let value: u32 = std::str::from_utf8(&b[start..i]).ok()?.parse().ok()?;
        if value > 255 || (i - start > 1 && b[start] == b'0') {
            return None;
        }
        if part < 3 {
            if b.get(i) != Some(&b'.') {
                return None;
            }
            i += 1;
        }
    }
    // Not the start of a longer dotted or alphanumeric run (a version like 1.2.3.4.5).
    match b.get(i) {
        Some(&c) if c.is_ascii_alphanumeric() || c == b'_' => None,
        Some(&b'.') if b.get(i + 1).is_some_and(u8::is_ascii_digit) => None,
        _ => Some(i),
    }
}

fn load_or_make_key(path: &Path) -> io::Result<Vec<u8>> {
    if let Ok(key) = std::fs::read(path) {
        if key.len() >= 32 {
            return Ok(key);
        }
    }
    let mut key = vec![0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let partial = PathBuf::from(format!("{}.partial-{}", path.display(), std::process::id()));
    {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let mut f =
            std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&partial)?;
        f.write_all(&key)?;
        f.sync_all()?;
    }
    std::fs::rename(&partial, path)?;
    Ok(key)
}

fn local_host_names() -> Vec<String> {
    let mut names = Vec::new();
    for path in ["/proc/sys/kernel/hostname", "/etc/hostname", "/etc/mailname"] {
        if let Ok(text) = std::fs::read_to_string(path) {
            names.push(text.trim().to_string());
        }
    }
    if let Ok(name) = std::env::var("PLATSCOPE_HOST") {
        names.push(name);
    }
    if let Ok(domain) = std::fs::read_to_string("/proc/sys/kernel/domainname") {
        let domain = domain.trim();
        if domain != "(none)" {
            names.push(domain.to_string());
        }
    }
    names
}

/// Every interface's IPv4/IPv6 addresses (getifaddrs) and MAC (sysfs).
fn local_addresses() -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/sys/class/net") {
        for entry in dir.flatten() {
            if let Ok(mac) = std::fs::read_to_string(entry.path().join("address")) {
                out.push((String::new(), Some(mac.trim().to_ascii_lowercase())));
            }
        }
    }
    // SAFETY: getifaddrs fills a list the kernel owns until freeifaddrs; each node is read
    // only while the list lives, and sockaddr is cast to the family's struct after checking it.
    unsafe {
        let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
        if libc::getifaddrs(&mut list) == 0 {
            let mut node = list;
            while !node.is_null() {
                let addr = (*node).ifa_addr;
                if !addr.is_null() {
                    match i32::from((*addr).sa_family) {
                        libc::AF_INET => {
                            let sin = &*(addr.cast::<libc::sockaddr_in>());
                            let ip = std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                            out.push((ip.to_string(), None));
                        }
                        libc::AF_INET6 => {
                            let sin6 = &*(addr.cast::<libc::sockaddr_in6>());
                            let ip = std::net::Ipv6Addr::from(sin6.sin6_addr.s6_addr);
                            out.push((ip.to_string(), None));
                        }
                        _ => {}
                    }
                }
                node = (*node).ifa_next;
            }
            libc::freeifaddrs(list);
        }
    }
    out
}

fn dmi_serials() -> Vec<String> {
    ["product_serial", "board_serial", "chassis_serial", "product_uuid"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(Path::new("/sys/class/dmi/id").join(f)).ok())
        .map(|s| s.trim().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_and_shaped_addresses_get_stable_pseudonyms() {
        let mut r = Redactor::with_key(b"0123456789abcdef0123456789abcdef");
        r.add(Kind::Host, "db1.example.com");
        r.add(Kind::Host, "db1");
        r.add(Kind::Serial, "SN-998877");
        let text =
            "host db1.example.com (db1) at 10.1.2.3, mac 52:54:00:AB:cd:01, serial SN-998877";
        let out = r.apply(text);
        assert!(!out.contains("db1"), "{out}");
        assert!(!out.contains("10.1.2.3") && !out.contains("52:54") && !out.contains("998877"));
        let host = r.pseudonym(Kind::Host, "db1.example.com");
        assert!(out.contains(&host) && host.starts_with("host-") && host.len() == 11, "{out}");
        // Stable: the same input gives the same text; another key gives another pseudonym.
        assert_eq!(r.apply(text), out);
        let other = Redactor::with_key(b"another key, another mapping....");
        assert_ne!(other.pseudonym(Kind::Host, "db1.example.com"), host);
        // Upper- and lower-case MACs are one address.
        assert_eq!(r.apply("52:54:00:ab:cd:01"), r.apply("52:54:00:AB:CD:01"));
    }

    #[test]
    fn versions_and_figures_are_left_alone() {
        let r = Redactor::with_key(b"k");
        for text in [
            "platscope 0.1.0 (git abc)",
            "kernel 6.18.0-1-cloud-amd64",
            "96.4 ns at 1.25 GiB",
            "version 1.2.3.4.5",
            "256.1.1.1",
            "01.2.3.4",
            "12:34:56",
            "value=\"10.5\"",
        ] {
            assert_eq!(r.apply(text), text);
        }
        assert_ne!(r.apply("peer 192.168.0.1."), "peer 192.168.0.1.");
        assert!(r.apply("peer 192.168.0.1.").ends_with('.'));
    }

    #[test]
    fn trivial_values_are_not_replaced() {
        let mut r = Redactor::with_key(b"k");
        r.add(Kind::Host, "localhost");
        r.add(Kind::Serial, "To Be Filled By O.E.M.");
        r.add(Kind::Host, "a");
        assert_eq!(
            r.apply("localhost To Be Filled By O.E.M. a"),
            "localhost To Be Filled By O.E.M. a"
        );
        // A short host name is replaced as a whole word only.
        r.add(Kind::Host, "vm");
        let out = r.apply("run 9 of vm; vmovdqa, kvm");
        assert!(out.starts_with("run 9 of host-") && out.ends_with("; vmovdqa, kvm"), "{out}");
    }

    #[test]
    fn the_key_is_made_once_private_and_reused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let a = Redactor::for_this_machine(dir.path()).expect("made");
        let meta = std::fs::metadata(dir.path().join("redact.key")).expect("key file");
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let b = Redactor::for_this_machine(dir.path()).expect("read back");
        assert_eq!(a.pseudonym(Kind::Host, "x.example"), b.pseudonym(Kind::Host, "x.example"));
        // This machine's own host name is among the values replaced.
        let me = std::fs::read_to_string("/proc/sys/kernel/hostname").expect("hostname");
        let me = me.trim();
        if me.len() >= 2 && me != "localhost" {
            assert!(!a.apply(&format!("on {me}")).contains(me));
        }
    }
}
