//! `/proc/net/dev`: per-interface byte, packet, error and drop counters.
//!
//! The format (unchanged since Linux 2.6) has two header lines; the second names the receive
//! and transmit columns between `|` separators. Columns are found by those names, not by
//! position, and each row is `name: numbers…` — on old kernels a long counter may touch the
//! colon (`eth0:4294967295`), so the name ends at the first `:`, not at whitespace.

use serde::Serialize;

use measure::ParseError;

/// One interface's counters as the kernel printed them (all since the interface was created).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NetDevCounters {
    pub name: String,
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub rx_errs: u64,
    /// Dropped on receive (the kernel adds the driver's missed-packet count here).
    pub rx_drop: u64,
    pub rx_fifo: u64,
    /// Length, overrun, CRC and frame errors, summed by the kernel.
    pub rx_frame: u64,
    pub rx_compressed: u64,
    pub rx_multicast: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errs: u64,
    pub tx_drop: u64,
    pub tx_fifo: u64,
    pub tx_colls: u64,
    /// Carrier, aborted, window and heartbeat errors, summed by the kernel.
    pub tx_carrier: u64,
    pub tx_compressed: u64,
}

/// Receive columns, as named in the header.
const RX: [&str; 8] =
    ["bytes", "packets", "errs", "drop", "fifo", "frame", "compressed", "multicast"];
/// Transmit columns, as named in the header.
const TX: [&str; 8] =
    ["bytes", "packets", "errs", "drop", "fifo", "colls", "carrier", "compressed"];

/// Where each wanted column sits in a row's numbers.
struct Layout {
    rx: [usize; 8],
    tx: [usize; 8],
    width: usize,
}

fn layout(header: &str, line: usize) -> Result<Layout, ParseError> {
    let mut groups = header.split('|');
    let _face = groups.next();
    let (rx_names, tx_names) = match (groups.next(), groups.next()) {
        (Some(rx), Some(tx)) => (rx, tx),
        _ => {
            return Err(ParseError::new(
                line,
                "header has no '|'-separated receive and transmit groups",
            ))
        }
    };
    let rx_names: Vec<&str> = rx_names.split_whitespace().collect();
    let tx_names: Vec<&str> = tx_names.split_whitespace().collect();
    let find = |names: &[&str], wanted: &str, offset: usize, group: &str| {
        names.iter().position(|n| *n == wanted).map(|i| i + offset).ok_or_else(|| {
            ParseError::new(line, format!("header lacks the {group} column '{wanted}'"))
        })
    };
    let mut rx = [0; 8];
    let mut tx = [0; 8];
    for (slot, wanted) in rx.iter_mut().zip(RX) {
        *slot = find(&rx_names, wanted, 0, "receive")?;
    }
    for (slot, wanted) in tx.iter_mut().zip(TX) {
        *slot = find(&tx_names, wanted, rx_names.len(), "transmit")?;
    }
    Ok(Layout { rx, tx, width: rx_names.len() + tx_names.len() })
}

/// Parses the whole file. Interfaces come in the kernel's order.
pub fn parse_net_dev(text: &str) -> Result<Vec<NetDevCounters>, ParseError> {
    let mut layout_found: Option<Layout> = None;
    let mut devices = Vec::new();
    let mut numbers: Vec<u64> = Vec::with_capacity(16);
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let Some(layout) = &layout_found else {
            // Header lines: the first names the groups, the second the columns.
            if raw.contains('|') && raw.contains("bytes") {
                layout_found = Some(self::layout(raw, line)?);
            } else if !raw.contains('|') {
                return Err(ParseError::new(line, "expected the /proc/net/dev header"));
            }
            continue;
        };
        let Some((name, rest)) = raw.split_once(':') else {
            return Err(ParseError::new(line, "expected 'interface: counters'"));
        };
        numbers.clear();
        for word in rest.split_whitespace() {
            let value = word
                .parse()
                .map_err(|_| ParseError::new(line, format!("'{word}' is not a counter")))?;
            numbers.push(value);
        }
        if numbers.len() != layout.width {
            return Err(ParseError::new(
                line,
                format!("{} counters where the header names {}", numbers.len(), layout.width),
            ));
        }
        let rx = |i: usize| numbers[layout.rx[i]];
        let tx = |i: usize| numbers[layout.tx[i]];
        devices.push(NetDevCounters {
            name: name.trim().to_string(),
            rx_bytes: rx(0),
            rx_packets: rx(1),
            rx_errs: rx(2),
            rx_drop: rx(3),
            rx_fifo: rx(4),
            rx_frame: rx(5),
            rx_compressed: rx(6),
            rx_multicast: rx(7),
            tx_bytes: tx(0),
            tx_packets: tx(1),
            tx_errs: tx(2),
            tx_drop: tx(3),
            tx_fifo: tx(4),
            tx_colls: tx(5),
            tx_carrier: tx(6),
            tx_compressed: tx(7),
        });
    }
    if layout_found.is_none() {
        return Err(ParseError::new(0, "no /proc/net/dev header found"));
    }
    Ok(devices)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n";

    #[test]
    fn columns_are_found_by_name() {
        // A header with the transmit group reordered still lands each number in its field.
        let text = "Inter-|   Receive  |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|packets bytes errs drop fifo colls carrier compressed\n  x0: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n";
        let d = &parse_net_dev(text).unwrap()[0];
        assert_eq!((d.tx_packets, d.tx_bytes), (9, 10));
        assert_eq!((d.rx_bytes, d.tx_compressed), (1, 16));
    }

    #[test]
    fn a_counter_touching_the_colon_is_read() {
        let text = format!("{HEADER}  eth0:4294967295 7 0 0 0 0 0 0 1 2 0 0 0 0 0 0\n");
        let d = &parse_net_dev(&text).unwrap()[0];
        assert_eq!((d.name.as_str(), d.rx_bytes, d.rx_packets), ("eth0", 4_294_967_295, 7));
    }

    #[test]
    fn a_short_row_is_an_error_with_its_line() {
        let text = format!("{HEADER}  eth0: 1 2 3\n");
        let err = parse_net_dev(&text).unwrap_err();
        assert_eq!(err.line, 3);
        assert!(err.message.contains("3 counters"), "{err}");
    }

    #[test]
    fn a_missing_column_is_named() {
        let text = "Inter-|   Receive  |  Transmit\n face |bytes packets errs drop fifo frame compressed|bytes packets errs drop fifo colls carrier compressed\n";
        let err = parse_net_dev(text).unwrap_err();
        assert!(err.message.contains("'multicast'"), "{err}");
    }
}
