//! The bake-off as text: one table per thread count (throughput and relative to glibc, CPU per
//! operation, memory), then the verdicts, refusals and missing libraries.

use std::fmt::Write as _;

use crate::bakeoff::{BakeOff, Figure, Group, Verdict};

/// Three significant figures with an SI suffix (`12.3M`).
pub fn si(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let (d, suffix) = match v.abs() {
        a if a >= 1e9 => (1e9, "G"),
        a if a >= 1e6 => (1e6, "M"),
        a if a >= 1e3 => (1e3, "k"),
        _ => (1.0, ""),
    };
    let x = v / d;
    let text = if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    };
    format!("{text}{suffix}")
}

/// Bytes in IEC units (`64.0 MiB`), signed.
pub fn bytes(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let a = v.abs();
    let (d, unit) = match a {
        a if a >= (1u64 << 30) as f64 => ((1u64 << 30) as f64, "GiB"),
        a if a >= (1u64 << 20) as f64 => ((1u64 << 20) as f64, "MiB"),
        a if a >= 1024.0 => (1024.0, "KiB"),
        _ => (1.0, "B"),
    };
    if unit == "B" {
        format!("{v:.0} B")
    } else {
        format!("{:.1} {unit}", v / d)
    }
}

fn spread(f: &Figure) -> String {
    if f.samples.len() < 2 || f.median == 0.0 {
        return String::new();
    }
    format!("±{:.0}%", (f.max - f.min) / 2.0 / f.median.abs() * 100.0)
}

fn mem(f: &Option<Figure>) -> String {
    f.as_ref().map_or("–".into(), |f| bytes(f.median))
}

fn cpu_us(v: f64) -> String {
    if !v.is_finite() {
        "–".into()
    } else if v >= 100.0 {
        format!("{v:.0} µs")
    } else if v >= 1.0 {
        format!("{v:.2} µs")
    } else {
        format!("{:.0} ns", v * 1e3)
    }
}

fn verdict(g: &Group, baseline: &str) -> String {
    let words = match g.verdict {
        Verdict::Baseline => return "baseline".into(),
        Verdict::NoSignificantDifference => format!("no significant difference from {baseline}"),
        Verdict::Faster => format!("faster than {baseline}"),
        Verdict::Slower => format!("slower than {baseline}"),
        Verdict::NotJudged => {
            "not ranked (at least 2 runs a side, with some spread, are needed)".to_string()
        }
    };
    match g.grounds() {
        grounds if grounds.is_empty() => words,
        grounds => format!("{words}: {grounds}"),
    }
}

/// The whole bake-off as text.
pub fn render(b: &BakeOff) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "allocator bake-off — {}", b.workload);
    let _ = writeln!(
        out,
        "{} round(s), allocators interleaved round-robin; medians, ± half the min–max range",
        b.repeat
    );
    let baseline = b.baseline.clone().unwrap_or_else(|| "glibc".into());
    let family = b.groups.iter().filter(|g| g.judgement.is_some()).count();
    if family > 0 {
        let _ = writeln!(
            out,
            "verdicts: each allocator's runs against {baseline}'s at the same thread count, the ratio \
             of geometric means with its {:.0}% interval; faster or slower only at p < {} after \
             Holm's adjustment over the {family} comparison(s)",
            measure::verdict::CONFIDENCE * 100.0,
            measure::verdict::ALPHA
        );
    }
    for note in &b.notes {
        let _ = writeln!(out, "note: {note}");
    }
    for &t in &b.threads {
        let groups: Vec<&Group> = b.groups.iter().filter(|g| g.threads == t).collect();
        if groups.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\nthreads {t}");
        let _ = writeln!(
            out,
            "  {:<20} {:>9} {:>5} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>11} {:>11} {:>9}",
            "allocator",
            "ops/s",
            "±",
            "vs glibc",
            "CPU/op",
            "machine/op",
            "peak RSS",
            "RSS end",
            "PSS end",
            "AS growth¹",
            "VSZ growth",
            "minflt"
        );
        for g in &groups {
            let _ = writeln!(
                out,
                "  {:<20} {:>9} {:>5} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>11} {:>11} {:>9}",
                g.allocator,
                si(g.throughput.median),
                spread(&g.throughput),
                g.relative.map_or("–".into(), |r| format!("{r:.2}×")),
                cpu_us(g.cpu_per_op_us.median),
                cpu_us(g.machine_cpu_per_op_us.median),
                mem(&g.hwm_bytes),
                mem(&g.rss_bytes),
                mem(&g.pss_bytes),
                bytes(g.accessible_growth_bytes.median),
                bytes(g.total_growth_bytes.median),
                si(g.minor_faults.median),
            );
        }
        for g in &groups {
            if g.verdict != Verdict::Baseline {
                let _ = writeln!(out, "  {}: {}", g.allocator, verdict(g, &baseline));
            }
        }
    }
    let _ = writeln!(
        out,
        "\n¹ address-space growth without PROT_NONE reservations (glibc reserves 64 MiB per \
         arena); VSZ growth counts them. CPU/op: the measured process (tree); machine/op: every \
         CPU's busy time from /proc/stat."
    );
    for r in &b.refused {
        let _ = writeln!(
            out,
            "refused: {} at {} thread(s), round {}: {}",
            r.allocator,
            r.threads,
            r.round + 1,
            r.reason
        );
    }
    for m in &b.missing {
        let _ = writeln!(out, "missing: {m}");
    }
    if b.interrupted {
        let _ = writeln!(out, "interrupted: the figures cover the runs finished before the stop");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(si(12_345_678.0), "12.3M");
        assert_eq!(si(950.0), "950");
        assert_eq!(bytes(64.0 * 1048576.0), "64.0 MiB");
        assert_eq!(bytes(-2048.0), "-2.0 KiB");
        assert_eq!(cpu_us(0.25), "250 ns");
    }
}
