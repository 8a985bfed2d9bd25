//! Asking the kernel about an interface with ioctls on a datagram socket: ethtool link settings
//! (speed and duplex), ifindex, MTU and flags. A socket belongs to the network namespace of the
//! thread that created it, so this also works for a thread that entered another namespace.
//!
//! The ethtool reply is decoded by pure functions over its bytes ([`decode_link_settings`],
//! [`decode_gset`]) so the 32-bit speed handling is tested without hardware.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::duplex::Duplex;

const ETHTOOL_GSET: u32 = 0x0000_0001;
const ETHTOOL_GLINKSETTINGS: u32 = 0x0000_004c;
const SPEED_UNKNOWN: u32 = u32::MAX;
/// Old drivers put 0xffff in the 16-bit speed for "unknown" (nicstat 1.95 printed it as a speed).
const SPEED_UNKNOWN_16: u32 = 0xffff;
const DUPLEX_HALF: u8 = 0;
const DUPLEX_FULL: u8 = 1;

/// `struct ethtool_link_settings` is 48 bytes, followed by three bitmaps of
/// `link_mode_masks_nwords` u32 each (at most 127 words: the count is an `s8`).
const LINK_SETTINGS_HEADER: usize = 48;
const LINK_SETTINGS_BYTES: usize = LINK_SETTINGS_HEADER + 3 * 127 * 4;
/// `struct ethtool_cmd` (the pre-4.6 `ETHTOOL_GSET` reply) is 44 bytes.
const GSET_BYTES: usize = 44;

/// Speed and duplex as the driver reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkSettings {
    pub speed_mbps: Option<u32>,
    pub duplex: Duplex,
}

fn speed_from(raw: u32) -> Option<u32> {
    match raw {
        0 | SPEED_UNKNOWN_16 | SPEED_UNKNOWN => None,
        s if s > i32::MAX as u32 => None,
        s => Some(s),
    }
}

fn duplex_from(raw: u8) -> Duplex {
    match raw {
        DUPLEX_FULL => Duplex::Full,
        DUPLEX_HALF => Duplex::Half,
        _ => Duplex::Unknown,
    }
}

/// Decodes an `ETHTOOL_GLINKSETTINGS` reply: `speed` is the u32 at offset 4, `duplex` the byte at
/// offset 8 (native byte order, as the kernel wrote it).
pub fn decode_link_settings(reply: &[u8]) -> Option<LinkSettings> {
    let speed = u32::from_ne_bytes(reply.get(4..8)?.try_into().ok()?);
    Some(LinkSettings { speed_mbps: speed_from(speed), duplex: duplex_from(*reply.get(8)?) })
}

/// Decodes an `ETHTOOL_GSET` reply: the speed is split into `speed` (u16 at offset 12) and
/// `speed_hi` (u16 at offset 28); both halves are needed above 65535 Mbit/s.
pub fn decode_gset(reply: &[u8]) -> Option<LinkSettings> {
    let lo = u16::from_ne_bytes(reply.get(12..14)?.try_into().ok()?);
    let hi = u16::from_ne_bytes(reply.get(28..30)?.try_into().ok()?);
    let speed = (u32::from(hi) << 16) | u32::from(lo);
    Some(LinkSettings { speed_mbps: speed_from(speed), duplex: duplex_from(*reply.get(14)?) })
}

/// Bytes aligned for the kernel's structs (u32 fields).
#[repr(C, align(8))]
struct Aligned<const N: usize>([u8; N]);

/// An `AF_INET` datagram socket used only for interface ioctls.
#[derive(Debug)]
pub struct Socket {
    fd: OwnedFd,
}

impl Socket {
    /// Opens one in the calling thread's network namespace.
    pub fn open() -> io::Result<Self> {
        // SAFETY: socket(2) takes no pointers; the result is checked before use.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor that nothing else owns.
        Ok(Self { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    fn request(name: &str) -> io::Result<libc::ifreq> {
        let bytes = name.as_bytes();
        if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not an interface name"));
        }
        // SAFETY: ifreq is plain data (a name array and a union of integers, sockaddrs and a
        // pointer); all zeroes is a valid value of each.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, src) in req.ifr_name.iter_mut().zip(bytes) {
            *dst = *src as libc::c_char;
        }
        Ok(req)
    }

    fn ioctl(&self, op: libc::c_ulong, req: &mut libc::ifreq) -> io::Result<()> {
        // SAFETY: req is a valid, initialised ifreq that outlives the call; for SIOCETHTOOL its
        // data pointer was set by the caller to a buffer of the size the command needs.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), op as _, req as *mut libc::ifreq) };
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    fn ethtool<const N: usize>(&self, name: &str, buf: &mut Aligned<N>) -> io::Result<()> {
        let mut req = Self::request(name)?;
        req.ifr_ifru.ifru_data = buf.0.as_mut_ptr().cast();
        self.ioctl(libc::SIOCETHTOOL, &mut req)
    }

    /// Speed and duplex: `ETHTOOL_GLINKSETTINGS` (Linux 4.6+), else `ETHTOOL_GSET`. Reading
    /// them needs no privilege.
    pub fn link_settings(&self, name: &str) -> io::Result<LinkSettings> {
        let mut buf = Aligned([0u8; LINK_SETTINGS_BYTES]);
        buf.0[0..4].copy_from_slice(&ETHTOOL_GLINKSETTINGS.to_ne_bytes());
        // First call with zero mask words: the kernel answers how many it wants, negated.
        match self.ethtool(name, &mut buf) {
            Ok(()) => {
                let nwords = buf.0[15] as i8;
                if nwords < 0 {
                    buf.0.fill(0);
                    buf.0[0..4].copy_from_slice(&ETHTOOL_GLINKSETTINGS.to_ne_bytes());
                    buf.0[15] = nwords.unsigned_abs();
                    self.ethtool(name, &mut buf)?;
                }
                decode_link_settings(&buf.0)
                    .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "short reply"))
            }
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                let mut old = Aligned([0u8; GSET_BYTES]);
                old.0[0..4].copy_from_slice(&ETHTOOL_GSET.to_ne_bytes());
                self.ethtool(name, &mut old)?;
                decode_gset(&old.0)
                    .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "short reply"))
            }
            Err(e) => Err(e),
        }
    }

    /// The interface index (changes when an interface is removed and re-added).
    pub fn ifindex(&self, name: &str) -> io::Result<u32> {
        let mut req = Self::request(name)?;
        self.ioctl(libc::SIOCGIFINDEX, &mut req)?;
        // SAFETY: SIOCGIFINDEX filled the union's ifindex member.
        let index = unsafe { req.ifr_ifru.ifru_ifindex };
        u32::try_from(index).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad ifindex"))
    }

    /// The MTU in bytes.
    pub fn mtu(&self, name: &str) -> io::Result<u32> {
        let mut req = Self::request(name)?;
        self.ioctl(libc::SIOCGIFMTU, &mut req)?;
        // SAFETY: SIOCGIFMTU filled the union's mtu member.
        let mtu = unsafe { req.ifr_ifru.ifru_mtu };
        u32::try_from(mtu).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad mtu"))
    }

    /// `IFF_*` flags (16 bits through this ioctl).
    pub fn flags(&self, name: &str) -> io::Result<u32> {
        let mut req = Self::request(name)?;
        self.ioctl(libc::SIOCGIFFLAGS, &mut req)?;
        // SAFETY: SIOCGIFFLAGS filled the union's flags member.
        let flags = unsafe { req.ifr_ifru.ifru_flags };
        Ok(u32::from(flags as u16))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link_reply(speed: u32, duplex: u8) -> Vec<u8> {
        let mut b = vec![0u8; LINK_SETTINGS_HEADER];
        b[0..4].copy_from_slice(&ETHTOOL_GLINKSETTINGS.to_ne_bytes());
        b[4..8].copy_from_slice(&speed.to_ne_bytes());
        b[8] = duplex;
        b
    }

    #[test]
    fn a_100_gbe_link_is_100000_not_34464() {
        let s = decode_link_settings(&link_reply(100_000, DUPLEX_FULL)).unwrap();
        assert_eq!(s, LinkSettings { speed_mbps: Some(100_000), duplex: Duplex::Full });
    }

    #[test]
    fn unknown_speed_and_duplex_are_unknown() {
        let s = decode_link_settings(&link_reply(SPEED_UNKNOWN, 0xff)).unwrap();
        assert_eq!(s, LinkSettings { speed_mbps: None, duplex: Duplex::Unknown });
    }

    #[test]
    fn gset_speed_uses_both_halves() {
        let mut b = vec![0u8; GSET_BYTES];
        let speed: u32 = 100_000;
        b[12..14].copy_from_slice(&(speed as u16).to_ne_bytes());
        b[28..30].copy_from_slice(&((speed >> 16) as u16).to_ne_bytes());
        b[14] = DUPLEX_HALF;
        let s = decode_gset(&b).unwrap();
        assert_eq!(s, LinkSettings { speed_mbps: Some(100_000), duplex: Duplex::Half });
        // 0xffff in the low half with nothing above is an old driver's "unknown".
        b[12..14].copy_from_slice(&0xffffu16.to_ne_bytes());
        b[28..30].copy_from_slice(&0u16.to_ne_bytes());
        assert_eq!(decode_gset(&b).unwrap().speed_mbps, None);
    }
}
