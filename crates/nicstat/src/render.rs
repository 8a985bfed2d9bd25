//! nicstat's line formats, as strings (so tests compare text).
//!
//! Column layouts are those of nicstat 1.95: the default
//! `Time Int rKB/s wKB/s rPk/s wPk/s rAvs wAvs %Util Sat`, `-x`, `-t`, `-u`, `-s`, `-l` and the
//! `-p` parseable lines (`time:Int:…`, KB/s even with `-M`). Additions go at the end of a line,
//! so scripts that read columns by position keep working: `-x` appends `IDrop ODrop`, and adds
//! softnet lines per CPU after the interfaces. Figures Linux does not have are `-`.
//!
//! Numbers in text columns have two decimals, one from 100 up, none when that does not fit the
//! column; parseable numbers have about four significant digits (three decimals below 10, two
//! below 100, one below 10000).

use std::fmt::Write;

use super::{
    InterfaceRates, Options, Report, SoftnetRates, TcpRates, UdpRates, WIRE_OVERHEAD_BYTES,
};
use crate::link::LinkFacts;
use measure::time::Stamp;

/// A value in a text column: two decimals, one from 100 up, none when that does not fit.
pub fn cell(value: f64, width: usize) -> String {
    let v = if value.is_finite() && value > 0.0 { value } else { 0.0 };
    for decimals in [2usize, 1, 0] {
        if decimals == 2 && v >= 100.0 {
            continue;
        }
        let text = format!("{v:.decimals$}");
        if text.len() <= width || decimals == 0 {
            return format!("{text:>width$}");
        }
    }
    format!("{v:>width$.0}")
}

fn opt_cell(value: Option<f64>, width: usize) -> String {
    match value {
        Some(v) => cell(v, width),
        None => format!("{:>width$}", "-"),
    }
}

/// A value in a parseable line: about four significant digits.
pub fn pnum(value: f64) -> String {
    let v = if value.is_finite() && value > 0.0 { value } else { 0.0 };
    let decimals = if v < 10.0 {
        3
    } else if v < 100.0 {
        2
    } else if v < 10000.0 {
        1
    } else {
        0
    };
    format!("{v:.decimals$}")
}

fn opt_pnum(value: Option<f64>) -> String {
    value.map(pnum).unwrap_or_else(|| "-".into())
}

fn opt_fixed(value: Option<f64>, decimals: usize) -> String {
    match value {
        Some(v) if v.is_finite() => format!("{:.decimals$}", v.max(0.0)),
        _ => "-".into(),
    }
}

const KIB: f64 = 1024.0;

/// Throughput as shown: KB/s (1024 bytes), or Mbit/s with `-M` (never in parseable lines).
fn throughput(bytes_per_s: f64, opts: &Options) -> f64 {
    if opts.mbps && !opts.parseable {
        bytes_per_s * 8.0 / 1e6
    } else {
        bytes_per_s / KIB
    }
}

/// The one-line note printed before the first report with `--wire`.
pub fn wire_note() -> String {
    format!(
        "Note: %Util includes Ethernet framing, {WIRE_OVERHEAD_BYTES} bytes per packet (preamble+SFD 8, FCS 4, \
         inter-frame gap 12); padding of frames under 64 bytes is not counted."
    )
}

/// Renders one report. `header` asks for the default/summary column header (nicstat repeats
/// it every interval when several interfaces are shown); `-x`, `-t`, `-u` and softnet lines
/// always carry their timestamped header, `-p` lines never do.
pub fn render_report(report: &Report, opts: &Options, stamp: &Stamp, header: bool) -> String {
    let mut out = String::new();
    if let Some(tcp) = &report.tcp {
        tcp_lines(&mut out, tcp, opts, stamp);
    }
    if let Some(udp) = &report.udp {
        udp_lines(&mut out, udp, opts, stamp);
    }
    if opts.show_interfaces() {
        if opts.summary {
            summary_lines(&mut out, &report.interfaces, opts, stamp, header);
        } else if opts.extended {
            extended_lines(&mut out, &report.interfaces, opts, stamp);
        } else {
            default_lines(&mut out, &report.interfaces, opts, stamp, header);
        }
    }
    if let Some(cpus) = &report.softnet {
        softnet_lines(&mut out, cpus, opts, stamp);
    }
    out
}

/// The fields `-p` lines of the default and `-x` layouts share: time, name, throughput,
/// packets and utilization, each followed by a colon.
fn parseable_throughput(out: &mut String, r: &InterfaceRates, opts: &Options, stamp: &Stamp) {
    let _ = write!(
        out,
        "{}:{}:{}:{}:{}:{}:",
        stamp.epoch,
        r.name,
        pnum(throughput(r.rx_bytes_per_s, opts)),
        pnum(throughput(r.tx_bytes_per_s, opts)),
        pnum(r.rx_packets_per_s),
        pnum(r.tx_packets_per_s)
    );
    if opts.split_util {
        let _ = write!(out, "{}:{}:", opt_fixed(r.rx_util_pct, 2), opt_fixed(r.tx_util_pct, 2));
    } else {
        let _ = write!(out, "{}:", opt_fixed(r.util_pct, 2));
    }
}

fn default_lines(
    out: &mut String,
    rows: &[InterfaceRates],
    opts: &Options,
    stamp: &Stamp,
    header: bool,
) {
    let t = stamp.width();
    if opts.parseable {
        for r in rows {
            parseable_throughput(out, r, opts, stamp);
            let _ = writeln!(out, "{:.2}", r.sat_per_s);
        }
        return;
    }
    let (rh, wh) = if opts.mbps { ("rMbps", "wMbps") } else { ("rKB/s", "wKB/s") };
    if header {
        let _ = write!(
            out,
            "{:>t$} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}",
            "Time", "Int", rh, wh, "rPk/s", "wPk/s", "rAvs", "wAvs"
        );
        if opts.split_util {
            let _ = writeln!(out, " {:>6} {:>6}", "%rUtil", "%wUtil");
        } else {
            let _ = writeln!(out, " {:>5} {:>6}", "%Util", "Sat");
        }
    }
    for r in rows {
        let _ = write!(
            out,
            "{:>t$} {:>8} {} {} {} {} {} {}",
            stamp.clock,
            r.name,
            cell(throughput(r.rx_bytes_per_s, opts), 7),
            cell(throughput(r.tx_bytes_per_s, opts), 7),
            cell(r.rx_packets_per_s, 7),
            cell(r.tx_packets_per_s, 7),
            cell(r.rx_avg_bytes, 7),
            cell(r.tx_avg_bytes, 7)
        );
        if opts.split_util {
            let _ = writeln!(out, " {} {}", opt_cell(r.rx_util_pct, 6), opt_cell(r.tx_util_pct, 6));
        } else {
            let _ = writeln!(out, " {} {}", opt_cell(r.util_pct, 5), cell(r.sat_per_s, 6));
        }
    }
}

fn summary_lines(
    out: &mut String,
    rows: &[InterfaceRates],
    opts: &Options,
    stamp: &Stamp,
    header: bool,
) {
    let t = stamp.width();
    if opts.parseable {
        for r in rows {
            let _ = writeln!(
                out,
                "{}:{}:{}:{}",
                stamp.epoch,
                r.name,
                pnum(throughput(r.rx_bytes_per_s, opts)),
                pnum(throughput(r.tx_bytes_per_s, opts))
            );
        }
        return;
    }
    let (rh, wh) = if opts.mbps { ("rMbps", "wMbps") } else { ("rKB/s", "wKB/s") };
    if header {
        let _ = writeln!(out, "{:>t$} {:>8} {:>14} {:>14}", "Time", "Int", rh, wh);
    }
    for r in rows {
        let _ = writeln!(
            out,
            "{:>t$} {:>8} {:>14.3} {:>14.3}",
            stamp.clock,
            r.name,
            throughput(r.rx_bytes_per_s, opts),
            throughput(r.tx_bytes_per_s, opts)
        );
    }
}

fn extended_lines(out: &mut String, rows: &[InterfaceRates], opts: &Options, stamp: &Stamp) {
    let t = stamp.width();
    if opts.parseable {
        for r in rows {
            parseable_throughput(out, r, opts, stamp);
            let _ = writeln!(
                out,
                "{:.2}:{:.2}:{:.2}:{:.2}:-:-:{:.2}:{:.2}",
                r.sat_per_s,
                r.rx_errors_per_s,
                r.tx_errors_per_s,
                r.collisions_per_s,
                r.rx_drops_per_s,
                r.tx_drops_per_s
            );
        }
        return;
    }
    let (rh, wh) = if opts.mbps { ("RdMbps", "WrMbps") } else { ("RdKB", "WrKB") };
    let _ = write!(
        out,
        "{:<t$}{:>10}{:>8}{:>8}{:>8}{:>7}{:>6}{:>6}{:>6}{:>6}",
        stamp.clock, rh, wh, "RdPkt", "WrPkt", "IErr", "OErr", "Coll", "NoCP", "Defer"
    );
    if opts.split_util {
        let _ = write!(out, "{:>7}{:>7}", "%rUtil", "%wUtil");
    } else {
        let _ = write!(out, "{:>7}", "%Util");
    }
    let _ = writeln!(out, "{:>7}{:>7}", "IDrop", "ODrop");
    for r in rows {
        let _ = write!(
            out,
            "{:<t$} {} {} {} {} {} {} {} {:>5} {:>5}",
            r.name,
            cell(throughput(r.rx_bytes_per_s, opts), 9),
            cell(throughput(r.tx_bytes_per_s, opts), 7),
            cell(r.rx_packets_per_s, 7),
            cell(r.tx_packets_per_s, 7),
            cell(r.rx_errors_per_s, 6),
            cell(r.tx_errors_per_s, 5),
            cell(r.collisions_per_s, 5),
            "-",
            "-"
        );
        if opts.split_util {
            let _ = write!(out, " {} {}", opt_cell(r.rx_util_pct, 6), opt_cell(r.tx_util_pct, 6));
        } else {
            let _ = write!(out, " {}", opt_cell(r.util_pct, 6));
        }
        let _ = writeln!(out, " {} {}", cell(r.rx_drops_per_s, 6), cell(r.tx_drops_per_s, 6));
    }
}

fn tcp_lines(out: &mut String, tcp: &TcpRates, opts: &Options, stamp: &Stamp) {
    let t = stamp.width();
    if opts.parseable {
        let _ = writeln!(
            out,
            "{}:TCP:-:-:{}:{}:{}:{}:{:.3}:{}:{}:{}",
            stamp.epoch,
            pnum(tcp.in_segs_per_s),
            pnum(tcp.out_segs_per_s),
            pnum(tcp.estab_resets_per_s),
            pnum(tcp.attempt_fails_per_s),
            tcp.retrans_pct,
            pnum(tcp.passive_opens_per_s),
            pnum(tcp.active_opens_per_s),
            opt_pnum(tcp.listen_drops_per_s)
        );
        return;
    }
    let _ = writeln!(
        out,
        "{:<t$}{:>8}{:>8}{:>8}{:>8}{:>6}{:>6}{:>6}{:>7}{:>7}{:>6}",
        stamp.clock,
        "InKB",
        "OutKB",
        "InSeg",
        "OutSeg",
        "Reset",
        "AttF",
        "%ReTX",
        "InConn",
        "OutCon",
        "Drops"
    );
    let _ = writeln!(
        out,
        "{:<t$} {:>7} {:>7} {} {} {} {} {:>5.3} {} {} {}",
        "TCP",
        "-",
        "-",
        cell(tcp.in_segs_per_s, 7),
        cell(tcp.out_segs_per_s, 7),
        cell(tcp.estab_resets_per_s, 5),
        cell(tcp.attempt_fails_per_s, 5),
        tcp.retrans_pct,
        cell(tcp.passive_opens_per_s, 6),
        cell(tcp.active_opens_per_s, 6),
        opt_cell(tcp.listen_drops_per_s, 5)
    );
}

fn udp_lines(out: &mut String, udp: &UdpRates, opts: &Options, stamp: &Stamp) {
    let t = stamp.width();
    if opts.parseable {
        let _ = writeln!(
            out,
            "{}:UDP:{}:{}:{}:{}",
            stamp.epoch,
            pnum(udp.in_datagrams_per_s),
            pnum(udp.out_datagrams_per_s),
            pnum(udp.in_errors_per_s),
            opt_pnum(udp.out_errors_per_s)
        );
        return;
    }
    let _ = writeln!(
        out,
        "{:<t$}{:>24}{:>8}{:>10}{:>8}",
        stamp.clock, "InDG", "OutDG", "InErr", "OutErr"
    );
    let _ = writeln!(
        out,
        "{:<t$}{:>24}{:>8}{:>10}{:>8}",
        "UDP",
        cell(udp.in_datagrams_per_s, 7),
        cell(udp.out_datagrams_per_s, 7),
        cell(udp.in_errors_per_s, 9),
        opt_cell(udp.out_errors_per_s, 7)
    );
}

fn cpu_label(c: &SoftnetRates) -> String {
    if c.cpu_known {
        c.cpu.to_string()
    } else {
        format!("row{}", c.cpu)
    }
}

fn softnet_lines(out: &mut String, cpus: &[SoftnetRates], opts: &Options, stamp: &Stamp) {
    let t = stamp.width();
    if opts.parseable {
        for c in cpus {
            let _ = writeln!(
                out,
                "{}:softnet:{}:{}:{}:{}",
                stamp.epoch,
                cpu_label(c),
                pnum(c.processed_per_s),
                pnum(c.dropped_per_s),
                pnum(c.squeezed_per_s)
            );
        }
        return;
    }
    let _ = writeln!(
        out,
        "{:<t$}{:>10}{:>10}{:>8}{:>10}",
        stamp.clock, "CPU", "Proc/s", "Drop/s", "Squeeze/s"
    );
    for c in cpus {
        let _ = writeln!(
            out,
            "{:<t$}{:>10} {} {} {}",
            "softnet",
            cpu_label(c),
            cell(c.processed_per_s, 9),
            cell(c.dropped_per_s, 7),
            cell(c.squeezed_per_s, 9)
        );
    }
}

/// `-l`: interfaces with loopback, speed, duplex and state (`up` when administratively up, as
/// nicstat); `verbose` (`-l -v`) adds the operational state, link type, MTU and where the speed
/// came from.
pub fn render_list(links: &[LinkFacts], verbose: bool) -> String {
    let mut out = String::new();
    let _ =
        write!(out, "{:<8}{:>9}{:>9}{:>7}{:>6}", "Int", "Loopback", "Mbit/s", "Duplex", "State");
    if verbose {
        out.push_str("      Operstate      Type    MTU  Speed-from");
    }
    out.push('\n');
    for l in links {
        let speed = match (l.loopback, l.speed_mbps) {
            (true, _) => "-".to_string(),
            (false, Some(s)) => s.to_string(),
            (false, None) => "unknown".to_string(),
        };
        let _ = write!(
            out,
            "{:<8}{:>9}{:>9}{:>7}{:>6}",
            l.name,
            if l.loopback { "Yes" } else { "No" },
            speed,
            l.duplex.short(),
            if l.up { "up" } else { "down" }
        );
        if verbose {
            let mtu = l.mtu.map(|m| m.to_string()).unwrap_or_else(|| "-".into());
            let oper = l.operstate.as_deref().unwrap_or("-");
            let _ = write!(out, " {:>14}{:>10}{:>7}  {}", oper, l.type_name(), mtu, l.speed_source);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_keep_four_significant_digits_and_fit() {
        assert_eq!(cell(0.43, 7), "   0.43");
        assert_eq!(cell(10.92, 7), "  10.92");
        assert_eq!(cell(563.84, 7), "  563.8");
        assert_eq!(cell(52853.9, 7), "52853.9");
        assert_eq!(cell(1234567.0, 7), "1234567");
        assert_eq!(cell(5688.0, 5), " 5688");
        assert_eq!(cell(-1.0, 5), " 0.00");
        assert_eq!(cell(f64::NAN, 5), " 0.00");
    }

    #[test]
    fn parseable_numbers_match_nicstat_precision() {
        assert_eq!(pnum(0.0042), "0.004");
        assert_eq!(pnum(10.921), "10.92");
        assert_eq!(pnum(563.84), "563.8");
        assert_eq!(pnum(5712.24), "5712.2");
        assert_eq!(pnum(12174.2), "12174");
    }
}
