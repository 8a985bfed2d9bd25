//! `/proc/net/snmp` and `/proc/net/netstat`: pairs of lines, `Proto: Name Name…` then
//! `Proto: value value…`.
//!
//! Kernels add fields over time (and distributions backport some), so a field is found by its
//! name in the header that precedes its value, never by its position; a field a kernel does not
//! print is `None`. The Linux nicstat 1.95 read `/proc/net/netstat` at fixed positions and, on
//! current kernels, silently reported TCP drops as 0.

use serde::Serialize;

use measure::ParseError;

/// One `Proto:` header/value pair. `IcmpMsg` may come as several pairs; each is a section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Section {
    pub name: String,
    pub fields: Vec<(String, i128)>,
}

/// A parsed `/proc/net/snmp` or `/proc/net/netstat`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProtoTable {
    pub sections: Vec<Section>,
}

impl ProtoTable {
    /// Parses the pairs of lines. A value line must repeat its header's prefix and have as many
    /// values as the header has names.
    pub fn parse(text: &str) -> Result<Self, ParseError> {
        let mut sections = Vec::new();
        let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
        while let Some((hi, header)) = lines.next() {
            let (name, names) = split_prefix(header, hi + 1)?;
            let Some((vi, values)) = lines.next() else {
                return Err(ParseError::new(hi + 1, format!("'{name}:' header has no value line")));
            };
            let (value_name, values) = split_prefix(values, vi + 1)?;
            if value_name != name {
                return Err(ParseError::new(
                    vi + 1,
                    format!("'{value_name}:' values follow the '{name}:' header"),
                ));
            }
            let names: Vec<&str> = names.split_whitespace().collect();
            let values: Vec<&str> = values.split_whitespace().collect();
            if names.len() != values.len() {
                return Err(ParseError::new(
                    vi + 1,
                    format!("'{name}:' has {} names but {} values", names.len(), values.len()),
                ));
            }
            let mut fields = Vec::with_capacity(names.len());
            for (field, value) in names.into_iter().zip(values) {
                let value: i128 = value.parse().map_err(|_| {
                    ParseError::new(vi + 1, format!("{name} {field}: '{value}' is not a number"))
                })?;
                fields.push((field.to_string(), value));
            }
            sections.push(Section { name: name.to_string(), fields });
        }
        Ok(Self { sections })
    }

    /// A field as a counter (`None` when absent or negative).
    pub fn get(&self, section: &str, field: &str) -> Option<u64> {
        u64::try_from(self.get_signed(section, field)?).ok()
    }

    /// A field as printed, signed (`Tcp: MaxConn` is -1 on Linux).
    pub fn get_signed(&self, section: &str, field: &str) -> Option<i128> {
        self.sections
            .iter()
            .filter(|s| s.name == section)
            .find_map(|s| s.fields.iter().find(|(name, _)| name == field).map(|(_, v)| *v))
    }

    /// Whether a section is present at all.
    pub fn has_section(&self, section: &str) -> bool {
        self.sections.iter().any(|s| s.name == section)
    }
}

fn split_prefix(line: &str, number: usize) -> Result<(&str, &str), ParseError> {
    let (name, rest) =
        line.split_once(':').ok_or_else(|| ParseError::new(number, "expected 'Proto: fields'"))?;
    Ok((name.trim(), rest))
}

/// TCP counters (RFC 4022 names as Linux prints them in `/proc/net/snmp`, plus two from
/// `TcpExt` in `/proc/net/netstat`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TcpCounters {
    pub active_opens: u64,
    pub passive_opens: u64,
    pub attempt_fails: u64,
    pub estab_resets: u64,
    pub in_segs: u64,
    /// Segments sent, not counting retransmissions (Linux counts those in `retrans_segs`).
    pub out_segs: u64,
    pub retrans_segs: u64,
    pub in_errs: Option<u64>,
    pub out_rsts: Option<u64>,
    /// Since Linux 3.10.
    pub in_csum_errors: Option<u64>,
    /// `TcpExt: ListenOverflows` — accept queue full.
    pub listen_overflows: Option<u64>,
    /// `TcpExt: ListenDrops` — every SYN or connection dropped at a listener, overflows included.
    pub listen_drops: Option<u64>,
    /// `TcpExt: TCPTimeouts` — retransmission timer expiries.
    pub timeouts: Option<u64>,
}

impl TcpCounters {
    /// Reads the `Tcp:` section of `/proc/net/snmp` and, when given, `TcpExt:` of
    /// `/proc/net/netstat`. Fails only when `Tcp:` lacks a field every Linux prints.
    pub fn from_tables(
        snmp: &ProtoTable,
        netstat: Option<&ProtoTable>,
    ) -> Result<Self, ParseError> {
        let need = |field: &str| {
            snmp.get("Tcp", field)
                .ok_or_else(|| ParseError::new(0, format!("no 'Tcp: {field}' in /proc/net/snmp")))
        };
        let ext = |field: &str| netstat.and_then(|t| t.get("TcpExt", field));
        Ok(Self {
            active_opens: need("ActiveOpens")?,
            passive_opens: need("PassiveOpens")?,
            attempt_fails: need("AttemptFails")?,
            estab_resets: need("EstabResets")?,
            in_segs: need("InSegs")?,
            out_segs: need("OutSegs")?,
            retrans_segs: need("RetransSegs")?,
            in_errs: snmp.get("Tcp", "InErrs"),
            out_rsts: snmp.get("Tcp", "OutRsts"),
            in_csum_errors: snmp.get("Tcp", "InCsumErrors"),
            listen_overflows: ext("ListenOverflows"),
            listen_drops: ext("ListenDrops"),
            timeouts: ext("TCPTimeouts"),
        })
    }
}

/// UDP counters from the `Udp:` section of `/proc/net/snmp`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct UdpCounters {
    pub in_datagrams: u64,
    pub no_ports: u64,
    pub in_errors: u64,
    pub out_datagrams: u64,
    /// Receive buffer full (absent from the oldest 2.6 kernels).
    pub rcvbuf_errors: Option<u64>,
    /// Send buffer full (absent from the oldest 2.6 kernels).
    pub sndbuf_errors: Option<u64>,
    /// Since Linux 3.10.
    pub in_csum_errors: Option<u64>,
    /// Multicast and broadcast datagrams no socket wanted (not in 3.x kernels).
    pub ignored_multi: Option<u64>,
    /// Memory accounting failures (newer kernels; not in 4.14).
    pub mem_errors: Option<u64>,
}

impl UdpCounters {
    pub fn from_table(snmp: &ProtoTable) -> Result<Self, ParseError> {
        let need = |field: &str| {
            snmp.get("Udp", field)
                .ok_or_else(|| ParseError::new(0, format!("no 'Udp: {field}' in /proc/net/snmp")))
        };
        let opt = |field: &str| snmp.get("Udp", field);
        Ok(Self {
            in_datagrams: need("InDatagrams")?,
            no_ports: need("NoPorts")?,
            in_errors: need("InErrors")?,
            out_datagrams: need("OutDatagrams")?,
            rcvbuf_errors: opt("RcvbufErrors"),
            sndbuf_errors: opt("SndbufErrors"),
            in_csum_errors: opt("InCsumErrors"),
            ignored_multi: opt("IgnoredMulti"),
            mem_errors: opt("MemErrors"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_matched_to_names_not_positions() {
        let a = ProtoTable::parse("Tcp: A B C\nTcp: 1 2 3\n").unwrap();
        let b = ProtoTable::parse("Tcp: C A B\nTcp: 3 1 2\n").unwrap();
        for field in ["A", "B", "C"] {
            assert_eq!(a.get("Tcp", field), b.get("Tcp", field));
        }
    }

    #[test]
    fn signed_fields_are_kept() {
        let t = ProtoTable::parse("Tcp: MaxConn InSegs\nTcp: -1 7\n").unwrap();
        assert_eq!(t.get_signed("Tcp", "MaxConn"), Some(-1));
        assert_eq!(t.get("Tcp", "MaxConn"), None);
        assert_eq!(t.get("Tcp", "InSegs"), Some(7));
    }

    #[test]
    fn a_count_mismatch_is_an_error() {
        let err = ProtoTable::parse("Udp: A B\nUdp: 1\n").unwrap_err();
        assert_eq!(err.line, 2);
    }

    #[test]
    fn a_value_line_of_another_section_is_an_error() {
        let err = ProtoTable::parse("Udp: A\nTcp: 1\n").unwrap_err();
        assert!(err.message.contains("'Tcp:' values follow the 'Udp:' header"), "{err}");
    }
}
