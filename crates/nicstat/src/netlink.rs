//! Every interface's counters in one rtnetlink dump (`RTM_GETSTATS`, 64-bit link statistics):
//! what `serve`'s NIC collector reads at each scrape instead of `/proc/net/dev`, whose 1,000
//! formatted lines cost the kernel more than the counters themselves.
//!
//! The dump names interfaces by index only; names come from one `RTM_GETLINK` dump, kept up to
//! date from the kernel's link announcements (a second socket subscribed to `RTNLGRP_LINK` is
//! drained at each read; each announcement carries the link), so a renamed interface shows its
//! new name at the next read. The dump is read again when an index is new to the names or
//! announcements were lost. Counters are mapped to `/proc/net/dev`'s columns the way the kernel
//! prints them there (drops include missed packets; frame and carrier columns are sums).
//!
//! Link speed and duplex come from one ethtool generic-netlink dump (`ETHTOOL_MSG_LINKMODES_GET`,
//! Linux 5.6+) for every interface at once, instead of two sysfs files per interface, or from
//! one request per interface when only a few are wanted. Which interfaces may have new ones is
//! what the kernel announces: link changes on rtnetlink (a renegotiated speed comes with a
//! carrier change) and ethtool's `monitor` group (a speed or duplex set with ethtool), both
//! collected by [`LinkStats::take_announced`].
//!
//! Written here, not taken from crates: rust-netlink's netlink-packet-route (0.34) parses the
//! rtnetlink half (`RTM_NEWSTATS` with `IFLA_STATS_LINK_64`, `RTM_NEWLINK`) and netlink-sys
//! opens a blocking socket, but ethtool's family comes as a crate (ethtool 0.3) only behind an
//! async handle (tokio or async-std, through netlink-proto), and the collector reads inside a
//! blocking scrape. This file takes only the messages and attributes it reads, with the
//! kernel's numbers from libc where libc has them, and its parsers are tested on hand-built messages.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::duplex::Duplex;
use crate::netdev::NetDevCounters;

// Netlink numbers libc has, with the same values: those it declares with the type of the field
// they fill are used as they are; those it declares as `c_int` are narrowed to that type by
// `u8_field`, `u16_field` and `u32_field`, which fail the build if a value does not fit.
use libc::{
    IFLA_IFNAME, NETLINK_ADD_MEMBERSHIP, NETLINK_GENERIC, RTM_DELLINK, RTM_GETLINK, RTM_GETSTATS,
    RTM_NEWLINK, RTM_NEWSTATS, SOL_NETLINK,
};
const NLMSG_ERROR: u16 = u16_field(libc::NLMSG_ERROR);
const NLMSG_DONE: u16 = u16_field(libc::NLMSG_DONE);
const NLM_F_REQUEST: u16 = u16_field(libc::NLM_F_REQUEST);
const NLM_F_ACK: u16 = u16_field(libc::NLM_F_ACK);
const NLM_F_DUMP: u16 = u16_field(libc::NLM_F_DUMP);
const NLA_F_NESTED: u16 = u16_field(libc::NLA_F_NESTED);
const RTMGRP_LINK: u32 = u32_field(libc::RTMGRP_LINK);
const IFF_UP: u32 = u32_field(libc::IFF_UP);
// Generic netlink: the controller (to find ethtool's family number).
const GENL_ID_CTRL: u16 = u16_field(libc::GENL_ID_CTRL);
const CTRL_CMD_GETFAMILY: u8 = u8_field(libc::CTRL_CMD_GETFAMILY);
const CTRL_ATTR_FAMILY_ID: u16 = u16_field(libc::CTRL_ATTR_FAMILY_ID);
const CTRL_ATTR_FAMILY_NAME: u16 = u16_field(libc::CTRL_ATTR_FAMILY_NAME);
const CTRL_ATTR_MCAST_GROUPS: u16 = u16_field(libc::CTRL_ATTR_MCAST_GROUPS);
const CTRL_ATTR_MCAST_GRP_NAME: u16 = u16_field(libc::CTRL_ATTR_MCAST_GRP_NAME);
const CTRL_ATTR_MCAST_GRP_ID: u16 = u16_field(libc::CTRL_ATTR_MCAST_GRP_ID);

const fn u8_field(value: libc::c_int) -> u8 {
    assert!(value >= 0 && value <= u8::MAX as libc::c_int, "does not fit a u8 field");
    value as u8
}
const fn u16_field(value: libc::c_int) -> u16 {
    assert!(value >= 0 && value <= u16::MAX as libc::c_int, "does not fit a u16 field");
    value as u16
}
const fn u32_field(value: libc::c_int) -> u32 {
    assert!(value >= 0, "does not fit a u32 field");
    value as u32
}

// Netlink numbers and sizes libc lacks (values from the kernel's uapi headers: netlink.h,
// rtnetlink.h, if_link.h, genetlink.h, ethtool.h and ethtool_netlink.h).
/// `struct nlmsghdr`.
const NLMSG_HDR: usize = 16;
/// `struct ifinfomsg` and `struct if_stats_msg`.
const IFINFOMSG: usize = 16;
const IF_STATS_MSG: usize = 12;
const IFLA_STATS_LINK_64: u16 = 1;
/// `struct rtnl_link_stats64` up to `tx_compressed` (23 counters; later kernels add more).
const STATS64_LEN: usize = 23 * 8;
/// `struct genlmsghdr`: command, version, reserved.
const GENL_HDR: usize = 4;
// Ethtool's link modes over generic netlink.
/// The group ethtool announces settings changes on (`ETHTOOL_MCGRP_MONITOR_NAME`).
const ETHTOOL_MONITOR_GROUP: &[u8] = b"monitor";
/// Every ethtool message's first attribute is its request header (`ETHTOOL_A_*_HEADER`).
const ETHTOOL_A_HEADER: u16 = 1;
const ETHTOOL_MSG_LINKMODES_GET: u8 = 4;
const ETHTOOL_GENL_VERSION: u8 = 1;
const ETHTOOL_A_LINKMODES_HEADER: u16 = 1;
const ETHTOOL_A_LINKMODES_SPEED: u16 = 5;
const ETHTOOL_A_LINKMODES_DUPLEX: u16 = 6;
const ETHTOOL_A_HEADER_DEV_INDEX: u16 = 1;
const ETHTOOL_A_HEADER_FLAGS: u16 = 3;
/// Link-mode bit sets as a list of set bits, not two full masks: a smaller answer.
const ETHTOOL_FLAG_COMPACT_BITSETS: u32 = 1;
const SPEED_UNKNOWN: u32 = u32::MAX;
const DUPLEX_HALF: u8 = 0;
const DUPLEX_FULL: u8 = 1;

/// One interface's link speed and duplex, as ethtool reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkMode {
    /// The interface's name.
    pub name: String,
    /// Mbit/s; `None` when unknown (no link, or the interface is down).
    pub speed_mbps: Option<u32>,
    /// Full, half, or unknown.
    pub duplex: Duplex,
}

/// Interfaces whose link facts may have changed: what the kernel announced since the last
/// [`LinkStats::take_announced`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Announced {
    /// These interfaces, by name, sorted (one that is gone since is left out).
    Links(Vec<String>),
    /// Any of them: an announcement queue overflowed, or one named no interface.
    All,
}

/// Announcements not yet taken, by interface index.
#[derive(Debug, Default)]
struct Pending {
    indexes: Vec<u32>,
    all: bool,
}

impl Pending {
    fn note(&mut self, index: Option<u32>) {
        match index {
            Some(index) if !self.all => self.indexes.push(index),
            Some(_) => {}
            None => self.all = true,
        }
    }

    /// Announcements were lost (a queue overflowed): any interface may have changed.
    fn note_lost(&mut self, lost: bool) {
        self.all |= lost;
    }
}

/// The sockets and the names they have learnt.
#[derive(Debug)]
pub struct LinkStats {
    dump: OwnedFd,
    events: OwnedFd,
    /// Every interface, sorted by index: looked up by binary search.
    names: Vec<Link>,
    /// The generic-netlink socket for link modes, opened at the first link-modes read.
    ethtool: Ethtool,
    /// ethtool's `monitor` group, on a socket of its own (not mixed with answers); `None`
    /// before ethtool is opened or where the family has no such group.
    ethtool_events: Option<OwnedFd>,
    announced: Pending,
    buf: Vec<u8>,
    seq: u32,
}

/// One interface as `RTM_GETLINK` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Link {
    index: u32,
    name: String,
    /// Administratively up (`IFF_UP`).
    up: bool,
}

/// The ethtool generic-netlink socket's state.
#[derive(Debug)]
enum Ethtool {
    Unopened,
    /// The kernel has no ethtool family (before 5.6, or built without it).
    Absent,
    /// The socket and ethtool's family number.
    Open(OwnedFd, u16),
}

fn socket() -> io::Result<OwnedFd> {
    netlink_socket(libc::NETLINK_ROUTE)
}

fn netlink_socket(protocol: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the descriptor is owned from here on.
    let fd =
        unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, protocol) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a new descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn bind(fd: &OwnedFd, groups: u32) -> io::Result<()> {
    // SAFETY: sockaddr_nl is plain data; zeroed is its "any" value.
    let mut addr: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    addr.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    addr.nl_groups = groups;
    // SAFETY: the address is a valid sockaddr_nl of the size passed.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            std::ptr::addr_of!(addr).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl LinkStats {
    /// Opens the sockets (in this thread's network namespace) and learns the names.
    pub fn open() -> io::Result<Self> {
        let dump = socket()?;
        bind(&dump, 0)?;
        let events = socket()?;
        bind(&events, RTMGRP_LINK)?;
        let mut stats = LinkStats {
            dump,
            events,
            names: Vec::new(),
            ethtool: Ethtool::Unopened,
            ethtool_events: None,
            announced: Pending::default(),
            buf: vec![0; 64 << 10],
            seq: 0,
        };
        stats.learn_names()?;
        Ok(stats)
    }

    /// Every interface's counters now, in index order.
    pub fn read(&mut self) -> io::Result<Vec<NetDevCounters>> {
        self.follow_link_events()?;
        let mut by_index = Vec::new();
        self.dump_request(RTM_GETSTATS, |kind, body| {
            if kind == RTM_NEWSTATS {
                if let Some(entry) = parse_stats(body) {
                    by_index.push(entry);
                }
            }
        })?;
        by_index.sort_by_key(|&(index, _)| index);
        if by_index.iter().any(|(index, _)| self.name_of(*index).is_none()) {
            self.learn_names()?;
        }
        Ok(by_index
            .into_iter()
            .filter_map(|(index, mut counters)| {
                // An interface gone between the two dumps is left out, as /proc would.
                counters.name = self.name_of(index)?.to_string();
                Some(counters)
            })
            .collect())
    }

    fn name_of(&self, index: u32) -> Option<&str> {
        self.link(index).map(|link| link.name.as_str())
    }

    fn link(&self, index: u32) -> Option<&Link> {
        let at = self.names.binary_search_by_key(&index, |link| link.index).ok()?;
        self.names.get(at)
    }

    /// Every interface's speed and duplex from one ethtool dump; `Ok(None)` when the kernel has
    /// no ethtool netlink family (before 5.6, or built without it): read them per interface.
    /// As sysfs does, an interface that is down has no speed; one whose driver reports no link
    /// settings (loopback) is left out.
    pub fn link_modes(&mut self) -> io::Result<Option<Vec<LinkMode>>> {
        let Some(family) = self.ethtool_family()? else { return Ok(None) };
        let request = self.link_modes_request(family, None);
        let mut found = Vec::new();
        self.ethtool_exchange(&request, |kind, body| {
            if kind == family {
                found.extend(parse_link_mode(body));
            }
        })?;
        Ok(Some(self.as_link_modes(found)))
    }

    /// The speed and duplex of the interfaces named, one request each: cheaper than the dump
    /// for a few. Interfaces that are gone or report no link settings (loopback) are left out.
    /// `Ok(None)` as for [`LinkStats::link_modes`].
    pub fn link_modes_of(&mut self, names: &[&str]) -> io::Result<Option<Vec<LinkMode>>> {
        let Some(family) = self.ethtool_family()? else { return Ok(None) };
        // One pass over the known links, not one search per name.
        let wanted: std::collections::HashSet<&str> = names.iter().copied().collect();
        let indexes: Vec<u32> = self
            .names
            .iter()
            .filter(|l| wanted.contains(l.name.as_str()))
            .map(|l| l.index)
            .collect();
        let mut found = Vec::new();
        for index in indexes {
            let request = self.link_modes_request(family, Some(index));
            let answer = self.ethtool_exchange(&request, |kind, body| {
                if kind == family {
                    found.extend(parse_link_mode(body));
                }
            });
            match answer {
                Ok(()) => {}
                // Gone since the names were learnt, or no link settings: as in the dump.
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENODEV | libc::EOPNOTSUPP)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Some(self.as_link_modes(found)))
    }

    /// Which interfaces' link facts may have changed since the last call, as the kernel
    /// announced it; the announcements are taken (an empty list: none).
    pub fn take_announced(&mut self) -> io::Result<Announced> {
        self.follow_link_events()?;
        if let Some(fd) = &self.ethtool_events {
            let pending = &mut self.announced;
            let overflowed =
                drain(fd, &mut self.buf, |_, body| pending.note(parse_ethtool_index(body)))?;
            pending.note_lost(overflowed);
        }
        let pending = std::mem::take(&mut self.announced);
        if pending.all {
            return Ok(Announced::All);
        }
        let mut names: Vec<String> =
            pending.indexes.iter().filter_map(|&i| self.name_of(i).map(str::to_string)).collect();
        names.sort_unstable();
        names.dedup();
        Ok(Announced::Links(names))
    }

    /// ethtool's family number, opening its sockets at the first call (and learning names
    /// again if links changed); `None` when the kernel has no such family.
    fn ethtool_family(&mut self) -> io::Result<Option<u16>> {
        self.follow_link_events()?;
        if let Ethtool::Unopened = self.ethtool {
            self.ethtool = self.open_ethtool()?;
        }
        Ok(match self.ethtool {
            Ethtool::Open(_, family) => Some(family),
            _ => None,
        })
    }

    /// `ETHTOOL_MSG_LINKMODES_GET` for one interface (acknowledged), or a dump of all.
    fn link_modes_request(&mut self, family: u16, index: Option<u32>) -> Vec<u8> {
        self.seq = self.seq.wrapping_add(1);
        let mut header = attr(ETHTOOL_A_HEADER_FLAGS, &ETHTOOL_FLAG_COMPACT_BITSETS.to_ne_bytes());
        let flags = match index {
            Some(index) => {
                header.extend(attr(ETHTOOL_A_HEADER_DEV_INDEX, &index.to_ne_bytes()));
                NLM_F_REQUEST | NLM_F_ACK
            }
            None => NLM_F_REQUEST | NLM_F_DUMP,
        };
        header = attr(ETHTOOL_A_LINKMODES_HEADER | NLA_F_NESTED, &header);
        genl_request(family, flags, self.seq, ETHTOOL_MSG_LINKMODES_GET, &header)
    }

    fn ethtool_exchange(&mut self, request: &[u8], each: impl FnMut(u16, &[u8])) -> io::Result<()> {
        let Ethtool::Open(fd, _) = &self.ethtool else {
            return Err(io::Error::new(io::ErrorKind::NotConnected, "ethtool socket not open"));
        };
        exchange(fd, &mut self.buf, self.seq, request, each)
    }

    /// (index, speed, duplex) answers as named link modes; an interface that is down has no
    /// speed, as sysfs gives none (EINVAL).
    fn as_link_modes(&self, found: Vec<(u32, Option<u32>, Duplex)>) -> Vec<LinkMode> {
        found
            .into_iter()
            .filter_map(|(index, speed_mbps, duplex)| {
                let link = self.link(index)?;
                let (speed_mbps, duplex) =
                    if link.up { (speed_mbps, duplex) } else { (None, Duplex::Unknown) };
                Some(LinkMode { name: link.name.clone(), speed_mbps, duplex })
            })
            .collect()
    }

    /// The generic-netlink socket and ethtool's family number; `Absent` when there is no such
    /// family (ENOENT from the controller).
    fn open_ethtool(&mut self) -> io::Result<Ethtool> {
        let fd = netlink_socket(NETLINK_GENERIC)?;
        bind(&fd, 0)?;
        self.seq = self.seq.wrapping_add(1);
        let request = genl_request(
            GENL_ID_CTRL,
            NLM_F_REQUEST | NLM_F_ACK,
            self.seq,
            CTRL_CMD_GETFAMILY,
            &attr(CTRL_ATTR_FAMILY_NAME, b"ethtool\0"),
        );
        let (mut family, mut monitor) = (None, None);
        match exchange(&fd, &mut self.buf, self.seq, &request, |kind, body| {
            if kind == GENL_ID_CTRL {
                family = family.or(parse_family_id(body));
                monitor = monitor.or(parse_group_id(body, ETHTOOL_MONITOR_GROUP));
            }
        }) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(Ethtool::Absent),
            Err(e) => return Err(e),
        }
        let Some(family) = family else { return Ok(Ethtool::Absent) };
        if let Some(group) = monitor {
            let events = netlink_socket(NETLINK_GENERIC)?;
            bind(&events, 0)?;
            join_group(&events, group)?;
            self.ethtool_events = Some(events);
        }
        Ok(Ethtool::Open(fd, family))
    }

    /// Takes the link announcements queued since the last call, keeping which interfaces for
    /// [`LinkStats::take_announced`] (an overflowed queue counts as a change of every
    /// interface). Each announcement carries the link as a dump would: a new or renamed link
    /// replaces its entry, a deleted one is removed. Only when some were lost or unreadable are
    /// all names learnt again with a dump (at 1,000 links, a dump per link event was most of
    /// the work of a scrape after one).
    fn follow_link_events(&mut self) -> io::Result<()> {
        let (pending, names) = (&mut self.announced, &mut self.names);
        let mut unreadable = false;
        let overflowed = drain(&self.events, &mut self.buf, |kind, body| {
            if kind != RTM_NEWLINK && kind != RTM_DELLINK {
                return;
            }
            let index = link_index(body);
            pending.note(index);
            match (kind, parse_link(body), index) {
                (RTM_NEWLINK, Some(link), _) => learn_link(names, link),
                (RTM_DELLINK, _, Some(index)) => forget_link(names, index),
                _ => unreadable = true,
            }
        })?;
        pending.note_lost(overflowed);
        if unreadable || overflowed {
            self.learn_names()?;
        }
        Ok(())
    }

    /// Index → name for every interface (one `RTM_GETLINK` dump).
    fn learn_names(&mut self) -> io::Result<()> {
        let mut names = Vec::new();
        self.dump_request(RTM_GETLINK, |kind, body| {
            if kind == RTM_NEWLINK {
                if let Some(link) = parse_link(body) {
                    names.push(link);
                }
            }
        })?;
        names.sort_by_key(|link| link.index);
        names.dedup_by_key(|link| link.index);
        self.names = names;
        Ok(())
    }

    /// Sends one dump request and passes each answer's type and body to `each` until the end.
    fn dump_request(&mut self, kind: u16, each: impl FnMut(u16, &[u8])) -> io::Result<()> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        // The request: header, then an ifinfomsg or if_stats_msg asking for every interface
        // (for statistics, the 64-bit link counters only).
        let mut req = [0u8; NLMSG_HDR + IFINFOMSG];
        let body_len = if kind == RTM_GETSTATS { IF_STATS_MSG } else { IFINFOMSG };
        let len = NLMSG_HDR + body_len;
        req[0..4].copy_from_slice(&(len as u32).to_ne_bytes());
        req[4..6].copy_from_slice(&kind.to_ne_bytes());
        req[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
        req[8..12].copy_from_slice(&seq.to_ne_bytes());
        if kind == RTM_GETSTATS {
            let mask = 1u32 << (IFLA_STATS_LINK_64 - 1);
            req[NLMSG_HDR + 8..NLMSG_HDR + 12].copy_from_slice(&mask.to_ne_bytes());
        }
        exchange(&self.dump, &mut self.buf, seq, &req[..len], each)
    }
}

/// Puts `link` into `names` (sorted by index), replacing the entry of the same index.
fn learn_link(names: &mut Vec<Link>, link: Link) {
    match names.binary_search_by_key(&link.index, |l| l.index) {
        Ok(at) => {
            if let Some(slot) = names.get_mut(at) {
                *slot = link;
            }
        }
        Err(at) => names.insert(at, link),
    }
}

/// Removes the entry of `index` from `names`, if there is one.
fn forget_link(names: &mut Vec<Link>, index: u32) {
    if let Ok(at) = names.binary_search_by_key(&index, |l| l.index) {
        names.remove(at);
    }
}

/// Receives every announcement queued on `fd` without waiting, passing each message's type and
/// body to `each`; `true` when the queue overflowed (announcements were lost: the caller must
/// assume anything changed).
fn drain(fd: &OwnedFd, buf: &mut [u8], mut each: impl FnMut(u16, &[u8])) -> io::Result<bool> {
    let mut overflowed = false;
    loop {
        // SAFETY: receives into our own buffer, at most its length, without blocking.
        let n = unsafe {
            libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT)
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) => return Ok(overflowed),
                Some(libc::ENOBUFS) => overflowed = true,
                Some(libc::EINTR) => {}
                _ => return Err(e),
            }
            continue;
        }
        let mut data = &buf[..n as usize];
        while let Some((kind, body, rest)) = next_message(data) {
            each(kind, body);
            data = rest;
        }
        // A malformed datagram: what it said is unknown.
        if !data.is_empty() {
            overflowed = true;
        }
    }
}

/// The first message of `data`: its type, its body and what follows; `None` at the end or at
/// a malformed length.
fn next_message(data: &[u8]) -> Option<(u16, &[u8], &[u8])> {
    let len = u32::from_ne_bytes(data.get(0..4)?.try_into().ok()?) as usize;
    let kind = u16::from_ne_bytes(data.get(4..6)?.try_into().ok()?);
    if len < NLMSG_HDR || len > data.len() {
        return None;
    }
    Some((kind, &data[NLMSG_HDR..len], &data[align4(len).min(data.len())..]))
}

/// Joins multicast group `group` (a generic-netlink group number, beyond the 32 of `bind`).
fn join_group(fd: &OwnedFd, group: u32) -> io::Result<()> {
    // SAFETY: passes a u32 of the size given.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            SOL_NETLINK,
            NETLINK_ADD_MEMBERSHIP,
            std::ptr::addr_of!(group).cast(),
            std::mem::size_of::<u32>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends one request and passes each answer's type and body to `each` until the end of the
/// dump, or the acknowledgement of a single request (asked with `NLM_F_ACK`).
fn exchange(
    fd: &OwnedFd,
    buf: &mut [u8],
    seq: u32,
    request: &[u8],
    mut each: impl FnMut(u16, &[u8]),
) -> io::Result<()> {
    // SAFETY: sends the request's bytes from its own slice.
    let sent = unsafe { libc::send(fd.as_raw_fd(), request.as_ptr().cast(), request.len(), 0) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    loop {
        // SAFETY: receives into our own buffer, at most its length.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let n = n as usize;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "netlink socket closed"));
        }
        match walk_messages(&buf[..n], seq, &mut each) {
            Walk::More => {}
            Walk::Done => return Ok(()),
            Walk::Failed(e) => return Err(e),
        }
    }
}

/// A generic-netlink request: netlink header, genl header (command, version), attributes.
fn genl_request(family: u16, flags: u16, seq: u32, command: u8, attrs: &[u8]) -> Vec<u8> {
    let len = NLMSG_HDR + GENL_HDR + attrs.len();
    let mut req = Vec::with_capacity(len);
    req.extend_from_slice(&(len as u32).to_ne_bytes());
    req.extend_from_slice(&family.to_ne_bytes());
    req.extend_from_slice(&flags.to_ne_bytes());
    req.extend_from_slice(&seq.to_ne_bytes());
    req.extend_from_slice(&0u32.to_ne_bytes()); // port: the kernel fills it in
    req.extend_from_slice(&[command, ETHTOOL_GENL_VERSION, 0, 0]);
    req.extend_from_slice(attrs);
    req
}

/// One netlink attribute, padded to 4 bytes.
fn attr(kind: u16, payload: &[u8]) -> Vec<u8> {
    let mut a = Vec::with_capacity(align4(4 + payload.len()));
    a.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
    a.extend_from_slice(&kind.to_ne_bytes());
    a.extend_from_slice(payload);
    a.resize(align4(a.len()), 0);
    a
}

/// What one received datagram said.
#[derive(Debug)]
enum Walk {
    More,
    Done,
    Failed(io::Error),
}

/// Passes each message of one datagram (answering `seq`) to `each`; stops at the dump's end or
/// an error. Malformed lengths end the walk as an error, never as a read past the datagram.
fn walk_messages(mut data: &[u8], seq: u32, each: &mut impl FnMut(u16, &[u8])) -> Walk {
    while data.len() >= NLMSG_HDR {
        let msg_seq = u32::from_ne_bytes([data[8], data[9], data[10], data[11]]);
        let Some((kind, body, rest)) = next_message(data) else {
            let len = u32::from_ne_bytes([data[0], data[1], data[2], data[3]]);
            return Walk::Failed(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("malformed netlink message (length {len})"),
            ));
        };
        if msg_seq == seq {
            match kind {
                NLMSG_DONE => return Walk::Done,
                NLMSG_ERROR => {
                    let code =
                        body.get(0..4).map_or(0, |b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                    if code != 0 {
                        return Walk::Failed(io::Error::from_raw_os_error(-code));
                    }
                    return Walk::Done;
                }
                _ => each(kind, body),
            }
        }
        data = rest;
    }
    Walk::More
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// The attributes after a fixed header: (type, payload) pairs; stops at a malformed one.
fn attributes(mut data: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if data.len() < 4 {
            return None;
        }
        let len = u16::from_ne_bytes([data[0], data[1]]) as usize;
        let kind = u16::from_ne_bytes([data[2], data[3]]) & 0x3fff; // without NLA_F_ flags
        if len < 4 || len > data.len() {
            return None;
        }
        let payload = &data[4..len];
        data = &data[align4(len).min(data.len())..];
        Some((kind, payload))
    })
}

/// An `RTM_NEWSTATS` body: the interface index and its counters (name left empty).
fn parse_stats(body: &[u8]) -> Option<(u32, NetDevCounters)> {
    let index = u32::from_ne_bytes(body.get(4..8)?.try_into().ok()?);
    let stats = attributes(body.get(IF_STATS_MSG..)?)
        .find(|&(kind, payload)| kind == IFLA_STATS_LINK_64 && payload.len() >= STATS64_LEN)?
        .1;
    let c = |i: usize| u64::from_ne_bytes(stats[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
    // rtnl_link_stats64's order: rx_packets, tx_packets, rx_bytes, tx_bytes, rx_errors,
    // tx_errors, rx_dropped, tx_dropped, multicast, collisions, rx_length_errors,
    // rx_over_errors, rx_crc_errors, rx_frame_errors, rx_fifo_errors, rx_missed_errors,
    // tx_aborted_errors, tx_carrier_errors, tx_fifo_errors, tx_heartbeat_errors,
    // tx_window_errors, rx_compressed, tx_compressed. Summed as /proc/net/dev prints them
    // (wrapping, as the kernel's unsigned sums do).
    let sum = |idx: &[usize]| idx.iter().fold(0u64, |acc, &i| acc.wrapping_add(c(i)));
    Some((
        index,
        NetDevCounters {
            name: String::new(),
            rx_bytes: c(2),
            rx_packets: c(0),
            rx_errs: c(4),
            rx_drop: sum(&[6, 15]),
            rx_fifo: c(14),
            rx_frame: sum(&[10, 11, 12, 13]),
            rx_compressed: c(21),
            rx_multicast: c(8),
            tx_bytes: c(3),
            tx_packets: c(1),
            tx_errs: c(5),
            tx_drop: c(7),
            tx_fifo: c(18),
            tx_colls: c(9),
            tx_carrier: sum(&[17, 16, 20, 19]),
            tx_compressed: c(22),
        },
    ))
}

/// The interface index of an `RTM_NEWLINK` or `RTM_DELLINK` body (its `ifinfomsg`).
fn link_index(body: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(body.get(4..8)?.try_into().ok()?))
}

/// An `RTM_NEWLINK` body: the interface index, name, and whether it is administratively up.
fn parse_link(body: &[u8]) -> Option<Link> {
    let index = link_index(body)?;
    let flags = u32::from_ne_bytes(body.get(8..12)?.try_into().ok()?);
    let name = attributes(body.get(IFINFOMSG..)?).find(|&(kind, _)| kind == IFLA_IFNAME)?.1;
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    let name = String::from_utf8_lossy(&name[..end]).into_owned();
    Some(Link { index, name, up: flags & IFF_UP != 0 })
}

/// The controller's answer to `CTRL_CMD_GETFAMILY`: the family's number.
fn parse_family_id(body: &[u8]) -> Option<u16> {
    let id = attributes(body.get(GENL_HDR..)?).find(|&(kind, _)| kind == CTRL_ATTR_FAMILY_ID)?.1;
    Some(u16::from_ne_bytes(id.get(0..2)?.try_into().ok()?))
}

/// The number of multicast group `name` in the controller's answer to `CTRL_CMD_GETFAMILY`.
fn parse_group_id(body: &[u8], name: &[u8]) -> Option<u32> {
    let groups =
        attributes(body.get(GENL_HDR..)?).find(|&(kind, _)| kind == CTRL_ATTR_MCAST_GROUPS)?.1;
    attributes(groups).find_map(|(_, group)| {
        let mut id = None;
        let mut named = false;
        for (kind, payload) in attributes(group) {
            match kind {
                CTRL_ATTR_MCAST_GRP_NAME => {
                    named = payload.strip_suffix(&[0]).unwrap_or(payload) == name
                }
                CTRL_ATTR_MCAST_GRP_ID if payload.len() >= 4 => {
                    id = Some(u32::from_ne_bytes([payload[0], payload[1], payload[2], payload[3]]));
                }
                _ => {}
            }
        }
        id.filter(|_| named)
    })
}

/// The interface an ethtool announcement is about: the index in its header attribute.
fn parse_ethtool_index(body: &[u8]) -> Option<u32> {
    let header = attributes(body.get(GENL_HDR..)?).find(|&(kind, _)| kind == ETHTOOL_A_HEADER)?.1;
    header_index(header)
}

/// The interface index in an ethtool request header (`ETHTOOL_A_HEADER_DEV_INDEX`).
fn header_index(header: &[u8]) -> Option<u32> {
    attributes(header)
        .find(|&(k, p)| k == ETHTOOL_A_HEADER_DEV_INDEX && p.len() >= 4)
        .map(|(_, p)| u32::from_ne_bytes([p[0], p[1], p[2], p[3]]))
}

/// An `ETHTOOL_MSG_LINKMODES_GET_REPLY` body: interface index, speed (Mbit/s, `None` when
/// unknown) and duplex.
fn parse_link_mode(body: &[u8]) -> Option<(u32, Option<u32>, Duplex)> {
    let (mut index, mut speed, mut duplex) = (None, None, Duplex::Unknown);
    for (kind, payload) in attributes(body.get(GENL_HDR..)?) {
        match kind {
            ETHTOOL_A_LINKMODES_HEADER => index = header_index(payload),
            ETHTOOL_A_LINKMODES_SPEED if payload.len() >= 4 => {
                let mbps = u32::from_ne_bytes([payload[0], payload[1], payload[2], payload[3]]);
                // As sysfs prints it: SPEED_UNKNOWN and 0 are no speed; above i32::MAX too.
                speed =
                    (mbps != SPEED_UNKNOWN && mbps != 0 && mbps <= i32::MAX as u32).then_some(mbps);
            }
            ETHTOOL_A_LINKMODES_DUPLEX if !payload.is_empty() => {
                duplex = match payload[0] {
                    DUPLEX_FULL => Duplex::Full,
                    DUPLEX_HALF => Duplex::Half,
                    _ => Duplex::Unknown,
                };
            }
            _ => {}
        }
    }
    Some((index?, speed, duplex))
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_tier::live;

    fn message(kind: u16, seq: u32, body: &[u8]) -> Vec<u8> {
        let len = NLMSG_HDR + body.len();
        let mut m = Vec::new();
        m.extend_from_slice(&(len as u32).to_ne_bytes());
        m.extend_from_slice(&kind.to_ne_bytes());
        m.extend_from_slice(&0u16.to_ne_bytes());
        m.extend_from_slice(&seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(body);
        m.resize(align4(m.len()), 0);
        m
    }

    fn attr(kind: u16, payload: &[u8]) -> Vec<u8> {
        let mut a = Vec::new();
        a.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
        a.extend_from_slice(&kind.to_ne_bytes());
        a.extend_from_slice(payload);
        a.resize(align4(a.len()), 0);
        a
    }

    fn stats_body(index: u32, counters: &[u64]) -> Vec<u8> {
        let mut b = vec![0u8; IF_STATS_MSG];
        b[4..8].copy_from_slice(&index.to_ne_bytes());
        let payload: Vec<u8> = counters.iter().flat_map(|c| c.to_ne_bytes()).collect();
        b.extend(attr(IFLA_STATS_LINK_64, &payload));
        b
    }

    #[test]
    fn stats_map_to_proc_net_dev_columns() {
        let counters: Vec<u64> = (1..=25).collect();
        let (index, c) = parse_stats(&stats_body(7, &counters)).unwrap();
        assert_eq!(index, 7);
        assert_eq!((c.rx_bytes, c.rx_packets, c.tx_bytes, c.tx_packets), (3, 1, 4, 2));
        assert_eq!(c.rx_drop, 7 + 16, "drops include missed");
        assert_eq!(c.rx_frame, 11 + 12 + 13 + 14);
        assert_eq!(c.tx_carrier, 17 + 18 + 20 + 21);
        assert_eq!((c.rx_multicast, c.tx_colls, c.rx_compressed, c.tx_compressed), (9, 10, 22, 23));
        // Too few counters (an older struct) or no statistics attribute: no entry.
        assert!(parse_stats(&stats_body(7, &counters[..10])).is_none());
        assert!(parse_stats(&[0u8; IF_STATS_MSG]).is_none());
    }

    #[test]
    fn datagrams_walk_to_done_or_error_and_skip_other_answers() {
        let mut link = vec![0u8; IFINFOMSG];
        link[4..8].copy_from_slice(&3u32.to_ne_bytes());
        link.extend(attr(IFLA_IFNAME, b"eth0\0"));
        let mut data = message(RTM_NEWLINK, 5, &link);
        data.extend(message(RTM_NEWLINK, 4, &link)); // an older request's answer
        let mut seen = Vec::new();
        let walk = walk_messages(&data, 5, &mut |kind, body| {
            seen.push((kind, parse_link(body)));
        });
        assert!(matches!(walk, Walk::More));
        let eth0 = Link { index: 3, name: "eth0".to_string(), up: false };
        assert_eq!(seen, vec![(RTM_NEWLINK, Some(eth0))]);
        assert!(matches!(
            walk_messages(&message(NLMSG_DONE, 5, &[0; 4]), 5, &mut |_, _| {}),
            Walk::Done
        ));
        let err = message(NLMSG_ERROR, 5, &(-libc::EPERM).to_ne_bytes());
        match walk_messages(&err, 5, &mut |_, _| {}) {
            Walk::Failed(e) => assert_eq!(e.raw_os_error(), Some(libc::EPERM)),
            other => panic!("{other:?}"),
        }
    }

    fn link_mode_body(index: Option<u32>, speed: u32, duplex: u8) -> Vec<u8> {
        let mut b = vec![ETHTOOL_MSG_LINKMODES_GET, 1, 0, 0];
        let mut header = attr(ETHTOOL_A_HEADER_FLAGS, &0u32.to_ne_bytes());
        if let Some(index) = index {
            header.extend(attr(ETHTOOL_A_HEADER_DEV_INDEX, &index.to_ne_bytes()));
        }
        b.extend(attr(ETHTOOL_A_LINKMODES_HEADER | NLA_F_NESTED, &header));
        b.extend(attr(2, &[1])); // autoneg, skipped
        b.extend(attr(ETHTOOL_A_LINKMODES_SPEED, &speed.to_ne_bytes()));
        b.extend(attr(ETHTOOL_A_LINKMODES_DUPLEX, &[duplex]));
        b
    }

    #[test]
    fn link_modes_read_as_sysfs_prints_them() {
        let full = parse_link_mode(&link_mode_body(Some(4), 25_000, DUPLEX_FULL));
        assert_eq!(full, Some((4, Some(25_000), Duplex::Full)));
        let half = parse_link_mode(&link_mode_body(Some(2), 10, DUPLEX_HALF));
        assert_eq!(half, Some((2, Some(10), Duplex::Half)));
        // No link: SPEED_UNKNOWN and DUPLEX_UNKNOWN; a speed of 0 is no speed either.
        let none = parse_link_mode(&link_mode_body(Some(3), SPEED_UNKNOWN, 0xff));
        assert_eq!(none, Some((3, None, Duplex::Unknown)));
        assert_eq!(parse_link_mode(&link_mode_body(Some(3), 0, 1)), Some((3, None, Duplex::Full)));
        // Without an index the answer names no interface.
        assert_eq!(parse_link_mode(&link_mode_body(None, 1000, 1)), None);
        let mut ctrl = vec![1u8, 2, 0, 0];
        ctrl.extend(attr(CTRL_ATTR_FAMILY_NAME, b"ethtool\0"));
        ctrl.extend(attr(CTRL_ATTR_FAMILY_ID, &21u16.to_ne_bytes()));
        assert_eq!(parse_family_id(&ctrl), Some(21));
        assert_eq!(parse_family_id(&ctrl[..GENL_HDR]), None);
    }

    fn ctrl_family_body(groups: &[(&[u8], u32)]) -> Vec<u8> {
        let mut b = vec![1u8, 2, 0, 0];
        b.extend(attr(CTRL_ATTR_FAMILY_NAME, b"ethtool\0"));
        b.extend(attr(CTRL_ATTR_FAMILY_ID, &21u16.to_ne_bytes()));
        let mut list = Vec::new();
        for (i, (name, id)) in groups.iter().enumerate() {
            let mut group = attr(CTRL_ATTR_MCAST_GRP_ID, &id.to_ne_bytes());
            group.extend(attr(CTRL_ATTR_MCAST_GRP_NAME, name));
            list.extend(attr((i as u16 + 1) | NLA_F_NESTED, &group));
        }
        b.extend(attr(CTRL_ATTR_MCAST_GROUPS | NLA_F_NESTED, &list));
        b
    }

    #[test]
    fn the_monitor_group_is_found_by_name_among_the_family_groups() {
        let body = ctrl_family_body(&[(b"other\0", 3), (b"monitor\0", 7)]);
        assert_eq!(parse_group_id(&body, ETHTOOL_MONITOR_GROUP), Some(7));
        assert_eq!(parse_family_id(&body), Some(21));
        // A name that only starts the same, or no group by that name: none.
        let body = ctrl_family_body(&[(b"monitored\0", 3)]);
        assert_eq!(parse_group_id(&body, ETHTOOL_MONITOR_GROUP), None);
        assert_eq!(parse_group_id(&ctrl_family_body(&[]), ETHTOOL_MONITOR_GROUP), None);
    }

    #[test]
    fn ethtool_announcements_name_the_interface_in_their_header() {
        // A LINKMODES_NTF (command 5) has the same header as the GET reply.
        let mut body = link_mode_body(Some(9), 100, DUPLEX_FULL);
        body[0] = 5;
        assert_eq!(parse_ethtool_index(&body), Some(9));
        assert_eq!(parse_ethtool_index(&link_mode_body(None, 100, 1)), None);
        let mut pending = Pending::default();
        pending.note(Some(9));
        pending.note(Some(4));
        assert_eq!((pending.indexes.clone(), pending.all), (vec![9, 4], false));
        pending.note(None);
        pending.note(Some(5));
        assert!(pending.all, "an announcement naming no interface means any");
        let mut pending = Pending::default();
        pending.note_lost(false);
        assert!(!pending.all);
        pending.note(Some(2));
        pending.note_lost(true);
        assert!(pending.all, "lost announcements mean any interface");
    }

    /// A datagram socket pair: what `drain` receives from is written on the other end.
    fn pair() -> (OwnedFd, OwnedFd) {
        let mut fds = [0; 2];
        // SAFETY: socketpair fills the two descriptors, owned from here on.
        let rc = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM, 0, fds.as_mut_ptr()) };
        assert_eq!(rc, 0);
        // SAFETY: both are new descriptors nothing else owns.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    fn send(fd: &OwnedFd, data: &[u8]) {
        // SAFETY: sends our own bytes.
        let n = unsafe { libc::send(fd.as_raw_fd(), data.as_ptr().cast(), data.len(), 0) };
        assert_eq!(n, data.len() as isize);
    }

    fn link_body(index: u32, name: &str) -> Vec<u8> {
        let mut body = vec![0u8; IFINFOMSG];
        body[4..8].copy_from_slice(&index.to_ne_bytes());
        body[8..12].copy_from_slice(&IFF_UP.to_ne_bytes());
        body.extend(attr(IFLA_IFNAME, format!("{name}\0").as_bytes()));
        body
    }

    /// Announcements are applied to the names as they come: an index no dump of this
    /// namespace has (so no dump could have taught it) is learnt, renamed and forgotten; an
    /// unreadable one makes the names be learnt again from a dump, which drops that index.
    #[test]
    fn link_announcements_update_the_names_without_a_dump() {
        let mut stats = LinkStats::open().unwrap();
        let (ours, theirs) = pair();
        stats.events = ours;
        let fake = u32::MAX - 7;
        assert_eq!(stats.name_of(fake), None);

        send(&theirs, &message(RTM_NEWLINK, 0, &link_body(fake, "fake0")));
        stats.follow_link_events().unwrap();
        assert_eq!(stats.name_of(fake), Some("fake0"));
        assert!(stats.names.windows(2).all(|w| w[0].index < w[1].index), "kept sorted");

        let mut two = message(RTM_NEWLINK, 0, &link_body(fake, "renamed0"));
        two.extend(message(RTM_NEWLINK, 0, &link_body(fake - 1, "fake1")));
        send(&theirs, &two);
        stats.follow_link_events().unwrap();
        assert_eq!(stats.name_of(fake), Some("renamed0"));
        assert_eq!(stats.name_of(fake - 1), Some("fake1"));
        assert!(stats.names.windows(2).all(|w| w[0].index < w[1].index), "kept sorted");

        send(&theirs, &message(RTM_DELLINK, 0, &link_body(fake, "renamed0")));
        stats.follow_link_events().unwrap();
        assert_eq!(stats.name_of(fake), None);
        assert_eq!(stats.name_of(fake - 1), Some("fake1"));
        assert_eq!(
            stats.take_announced().unwrap(),
            Announced::Links(vec!["fake1".to_string()]),
            "the deleted one is left out"
        );

        // A new link without its name: not applied; the names come from a dump again.
        send(&theirs, &message(RTM_NEWLINK, 0, &[0u8; IFINFOMSG]));
        stats.follow_link_events().unwrap();
        assert_eq!(stats.name_of(fake - 1), None, "the dump does not have it");
    }

    /// The kernel's own overflow: with the announcement socket's receive buffer at its minimum,
    /// a burst of new links overflows it (ENOBUFS). Every interface then counts as announced,
    /// and the names come from a dump, complete. Live: root, in a network namespace of this
    /// test's own thread (`ip` children inherit it).
    #[live]
    fn an_overflowed_announcement_queue_marks_every_interface_and_relearns_the_names() {
        std::thread::spawn(|| {
            // SAFETY: unshare(2) of this thread's network namespace only.
            assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0, "unshare: needs root");
            let mut stats = LinkStats::open().unwrap();
            // The kernel raises a receive buffer of 0 to its minimum (a few KiB).
            let tiny: libc::c_int = 0;
            // SAFETY: setsockopt on our own socket with an int of the size passed.
            let rc = unsafe {
                libc::setsockopt(
                    stats.events.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_RCVBUF,
                    std::ptr::addr_of!(tiny).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            assert_eq!(rc, 0);
            let pairs = 40;
            let batch: String = (0..pairs)
                .map(|i| format!("link add ova{i} type veth peer name ovb{i}\n"))
                .collect();
            let file = std::env::temp_dir().join(format!("ps-overflow-{}", std::process::id()));
            std::fs::write(&file, batch).unwrap();
            test_support::net::ip(&["-batch", file.to_str().unwrap()]);
            std::fs::remove_file(&file).unwrap();

            assert_eq!(stats.take_announced().unwrap(), Announced::All, "the queue overflowed");
            let names: Vec<String> = stats.read().unwrap().into_iter().map(|c| c.name).collect();
            for i in 0..pairs {
                for name in [format!("ova{i}"), format!("ovb{i}")] {
                    assert!(names.contains(&name), "{name} missing from {names:?}");
                }
            }
            // Nothing since: nothing announced.
            assert_eq!(stats.take_announced().unwrap(), Announced::Links(Vec::new()));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn drain_takes_every_queued_message_and_flags_a_malformed_datagram() {
        let (ours, theirs) = pair();
        let mut buf = vec![0u8; 4096];
        let mut link = vec![0u8; IFINFOMSG];
        link[4..8].copy_from_slice(&3u32.to_ne_bytes());
        let mut two = message(RTM_NEWLINK, 0, &link);
        two.extend(message(RTM_DELLINK, 0, &link));
        send(&theirs, &two);
        send(&theirs, &message(RTM_NEWLINK, 0, &link));
        let mut seen = Vec::new();
        let overflowed =
            drain(&ours, &mut buf, |kind, body| seen.push((kind, body.len()))).unwrap();
        assert!(!overflowed);
        let n = IFINFOMSG;
        assert_eq!(seen, vec![(RTM_NEWLINK, n), (RTM_DELLINK, n), (RTM_NEWLINK, n)]);
        // Nothing queued: returns at once.
        assert!(!drain(&ours, &mut buf, |_, _| panic!("nothing was sent")).unwrap());
        let mut bad = message(RTM_NEWLINK, 0, &link);
        bad[0..4].copy_from_slice(&9999u32.to_ne_bytes());
        send(&theirs, &bad);
        assert!(drain(&ours, &mut buf, |_, _| {}).unwrap(), "a length past the datagram");
    }

    #[test]
    fn arbitrary_and_mutated_datagrams_never_panic() {
        use test_support::fuzz;
        let seeds = vec![
            message(RTM_NEWSTATS, 1, &stats_body(2, &[9; 24])),
            message(NLMSG_DONE, 1, &[0; 4]),
            message(NLMSG_ERROR, 1, &(-1i32).to_ne_bytes()),
            message(21, 1, &link_mode_body(Some(2), 1000, DUPLEX_FULL)),
            message(GENL_ID_CTRL, 1, &ctrl_family_body(&[(b"monitor\0", 7)])),
        ];
        fuzz::check(fuzz::PURE, fuzz::bytes_or_mutated(seeds, 600), |data| {
            let _ = walk_messages(&data, 1, &mut |kind, body| {
                let _ = (kind, parse_stats(body), parse_link(body));
                let _ = (parse_family_id(body), parse_link_mode(body));
                let _ = (parse_group_id(body, ETHTOOL_MONITOR_GROUP), parse_ethtool_index(body));
                let _ = next_message(body);
            });
            Ok(())
        });
    }
}
