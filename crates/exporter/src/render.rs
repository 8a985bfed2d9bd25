//! The two text renderings: OpenMetrics 1.0 (what `serve` answers by default and Prometheus
//! prefers) and the Prometheus text format 0.0.4 (what node_exporter's textfile collector and
//! `promtool check metrics` read, and what a scraper gets when its `Accept` asks for it).

use std::fmt::Write as _;

use crate::{Family, Kind, Labels, Value};

/// A text exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0.0.
    OpenMetrics,
    /// Prometheus text format 0.0.4.
    Text004,
}

impl Format {
    /// The `Content-Type` to answer with. Prometheus only parses OpenMetrics when it is
    /// labelled exactly so.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Text004 => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// Picks the format for a request's `Accept` header: the acceptable type with the highest
/// `q`; OpenMetrics when there is no header, only `*/*`, or a tie.
pub fn negotiate(accept: Option<&str>) -> Format {
    let Some(accept) = accept else { return Format::OpenMetrics };
    let mut best: Option<(f64, Format)> = None;
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let mut q = 1.0;
        let mut version = None;
        for param in parts {
            if let Some((key, value)) = param.split_once('=') {
                match key.trim().to_ascii_lowercase().as_str() {
                    "q" => q = value.trim().parse().unwrap_or(0.0),
                    "version" => version = Some(value.trim().to_string()),
                    _ => {}
                }
            }
        }
        let format = match media.as_str() {
            "application/openmetrics-text" => match version.as_deref() {
                None | Some("1.0.0") => Format::OpenMetrics,
                // 0.0.1 is the draft we do not speak; the scraper offers others beside it.
                Some(_) => continue,
            },
            "text/plain" => Format::Text004,
            "*/*" | "application/*" => Format::OpenMetrics,
            _ => continue,
        };
        if q <= 0.0 {
            continue;
        }
        let better = match best {
            None => true,
            Some((best_q, best_format)) => {
                q > best_q
                    || (q == best_q && format == Format::OpenMetrics && best_format != format)
            }
        };
        if better {
            best = Some((q, format));
        }
    }
    best.map_or(Format::OpenMetrics, |(_, format)| format)
}

/// Renders families in the given format. Families with no samples are left out (a `# TYPE`
/// with nothing under it tells a reader nothing).
pub fn render(families: &[Family], format: Format) -> String {
    // Sized for the whole body at once: a large scrape grown by doubling copies it repeatedly.
    let samples: usize = families.iter().map(|f| f.samples.len()).sum();
    let mut out = String::with_capacity(families.len() * 256 + samples * 80);
    for family in families.iter().filter(|f| !f.samples.is_empty()) {
        render_family(&mut out, family, format);
    }
    if format == Format::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

fn render_family(out: &mut String, family: &Family, format: Format) {
    let name = &family.name;
    // The name on `# TYPE`/`# HELP` lines and the one on samples, per type and format.
    let (header_name, sample_name, type_word) = match (family.kind, format) {
        (Kind::Counter, Format::OpenMetrics) => (name.clone(), format!("{name}_total"), "counter"),
        (Kind::Counter, Format::Text004) => {
            (format!("{name}_total"), format!("{name}_total"), "counter")
        }
        (Kind::Gauge, _) => (name.clone(), name.clone(), "gauge"),
        (Kind::Info, Format::OpenMetrics) => (name.clone(), format!("{name}_info"), "info"),
        (Kind::Info, Format::Text004) => (format!("{name}_info"), format!("{name}_info"), "gauge"),
        (Kind::Histogram, _) => (name.clone(), name.clone(), "histogram"),
    };
    let _ = writeln!(out, "# HELP {header_name} {}", escape_help(&family.help, format));
    let _ = writeln!(out, "# TYPE {header_name} {type_word}");
    if let (Some(unit), Format::OpenMetrics) = (family.unit, format) {
        let _ = writeln!(out, "# UNIT {header_name} {}", unit.as_str());
    }
    for sample in &family.samples {
        match &sample.value {
            Value::Number(value) => {
                out.push_str(&sample_name);
                write_labels(out, &sample.labels, None);
                out.push(' ');
                write_number(out, *value);
                out.push('\n');
            }
            Value::Histogram { buckets, sum } => {
                let mut cumulative = 0u64;
                for (upper, count) in buckets {
                    cumulative += count;
                    out.push_str(&sample_name);
                    out.push_str("_bucket");
                    write_labels(out, &sample.labels, Some(&bound(*upper)));
                    let _ = writeln!(out, " {cumulative}");
                }
                out.push_str(&sample_name);
                out.push_str("_bucket");
                write_labels(out, &sample.labels, Some("+Inf"));
                let _ = writeln!(out, " {cumulative}");
                out.push_str(&sample_name);
                out.push_str("_sum");
                write_labels(out, &sample.labels, None);
                let _ = writeln!(out, " {}", number(*sum));
                out.push_str(&sample_name);
                out.push_str("_count");
                write_labels(out, &sample.labels, None);
                let _ = writeln!(out, " {cumulative}");
            }
        }
    }
}

fn write_labels(out: &mut String, labels: &Labels, le: Option<&str>) {
    let rendered = labels.rendered();
    if rendered.is_empty() && le.is_none() {
        return;
    }
    out.push('{');
    out.push_str(rendered);
    if let Some(bound) = le {
        if !rendered.is_empty() {
            out.push(',');
        }
        out.push_str("le=\"");
        out.push_str(bound);
        out.push('"');
    }
    out.push('}');
}

fn escape_help(help: &str, format: Format) -> String {
    let mut escaped = String::with_capacity(help.len());
    for c in help.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '\n' => escaped.push_str("\\n"),
            // OpenMetrics escapes quotes in HELP too; 0.0.4 does not.
            '"' if format == Format::OpenMetrics => escaped.push_str("\\\""),
            c => escaped.push(c),
        }
    }
    escaped
}

/// A sample value: both formats spell the infinities and NaN the same way.
fn number(value: f64) -> String {
    let mut text = String::new();
    write_number(&mut text, value);
    text
}

/// Writes a sample value as Prometheus reads it. Whole numbers below 2^53 (most counters)
/// go through integer formatting, which prints the same digits as `f64`'s and costs less.
fn write_number(out: &mut String, value: f64) {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if value.is_nan() {
        out.push_str("NaN");
    } else if value.is_infinite() {
        out.push_str(if value > 0.0 { "+Inf" } else { "-Inf" });
    } else if value.fract() == 0.0
        && value.abs() < EXACT
        && !(value == 0.0 && value.is_sign_negative())
    {
        out.push_str(itoa::Buffer::new().format(value as i64));
    } else {
        let _ = write!(out, "{value}");
    }
}

/// A bucket bound in the canonical float form (`1.0`, not `1`).
fn bound(value: f64) -> String {
    let text = number(value);
    if value.is_finite() && !text.contains(['.', 'e']) {
        format!("{text}.0")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Unit;

    #[test]
    fn label_values_are_escaped_only_where_needed() {
        let mut fam = Family::new("platscope_x", Kind::Gauge, None, "x");
        fam.push(&[("device", "eth0"), ("path", "a\"b\\c\nd")], 1.0);
        let text = render(&[fam], Format::Text004);
        assert!(
            text.contains("platscope_x{device=\"eth0\",path=\"a\\\"b\\\\c\\nd\"} 1\n"),
            "{text}"
        );
    }

    #[test]
    fn numbers_print_as_f64_display_prints_them() {
        use test_support::fuzz::{self, proptest::prelude::*};
        let whole = (-(1i64 << 54)..(1i64 << 54)).prop_map(|v| v as f64);
        let any = any::<f64>().prop_filter("finite", |v| v.is_finite());
        let edge =
            prop::sample::select(vec![0.0, -0.0, 2f64.powi(53), -(2f64.powi(53)), 1e21, 0.5]);
        fuzz::check(fuzz::PURE, prop_oneof![whole, any, edge], |value| {
            prop_assert_eq!(number(value), format!("{value}"));
            Ok(())
        });
        assert_eq!((number(f64::NAN), number(f64::INFINITY)), ("NaN".into(), "+Inf".into()));
    }

    fn sample_families() -> Vec<Family> {
        let mut bytes = Family::new(
            "platscope_nic_receive_bytes",
            Kind::Counter,
            Some(Unit::Bytes),
            "Bytes received.",
        );
        bytes.push(&[("device", "eth0")], 1234.0).push(&[("device", "we\"ird\\")], 0.5);
        let mut info = Family::new("platscope_build", Kind::Info, None, "Build.");
        info.push(&[("version", "0.1.0")], 1.0);
        let mut sizes =
            Family::new("platscope_io_size_bytes", Kind::Histogram, Some(Unit::Bytes), "I/O size.");
        sizes.push_histogram(&[("op", "read")], vec![(512.0, 2), (4096.0, 3)], 9000.0);
        let empty = Family::new("platscope_nothing", Kind::Gauge, None, "Never filled.");
        vec![bytes, info, sizes, empty]
    }

    #[test]
    fn openmetrics_names_units_and_eof() {
        let text = render(&sample_families(), Format::OpenMetrics);
        let expected = "\
# HELP platscope_nic_receive_bytes Bytes received.
# TYPE platscope_nic_receive_bytes counter
# UNIT platscope_nic_receive_bytes bytes
platscope_nic_receive_bytes_total{device=\"eth0\"} 1234
platscope_nic_receive_bytes_total{device=\"we\\\"ird\\\\\"} 0.5
# HELP platscope_build Build.
# TYPE platscope_build info
platscope_build_info{version=\"0.1.0\"} 1
# HELP platscope_io_size_bytes I/O size.
# TYPE platscope_io_size_bytes histogram
# UNIT platscope_io_size_bytes bytes
platscope_io_size_bytes_bucket{op=\"read\",le=\"512.0\"} 2
platscope_io_size_bytes_bucket{op=\"read\",le=\"4096.0\"} 5
platscope_io_size_bytes_bucket{op=\"read\",le=\"+Inf\"} 5
platscope_io_size_bytes_sum{op=\"read\"} 9000
platscope_io_size_bytes_count{op=\"read\"} 5
# EOF
";
        assert_eq!(text, expected);
    }

    #[test]
    fn text_004_has_no_info_type_unit_or_eof() {
        let text = render(&sample_families(), Format::Text004);
        assert!(text.contains("# TYPE platscope_nic_receive_bytes_total counter\n"));
        assert!(text.contains("# TYPE platscope_build_info gauge\nplatscope_build_info{"));
        assert!(!text.contains("# UNIT"));
        assert!(!text.contains("# EOF"));
        assert!(!text.contains(" info\n"));
    }

    #[test]
    fn negotiation_follows_q_values() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(negotiate(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(negotiate(Some("text/plain;version=0.0.4")), Format::Text004);
        assert_eq!(
            negotiate(Some("text/plain;version=0.0.4;q=0.9,application/openmetrics-text;q=0.5")),
            Format::Text004
        );
        assert_eq!(negotiate(Some("*/*")), Format::OpenMetrics);
        assert_eq!(negotiate(None), Format::OpenMetrics);
        assert_eq!(negotiate(Some("application/json")), Format::OpenMetrics);
        assert_eq!(
            negotiate(Some("application/openmetrics-text;version=0.0.1")),
            Format::OpenMetrics
        );
    }

    #[test]
    fn special_values_and_help_escapes() {
        let mut gauge = Family::new("platscope_x", Kind::Gauge, None, "a \"q\" \\ b\nc");
        gauge.push(&[], f64::INFINITY).push(&[], f64::NAN);
        let om = render(std::slice::from_ref(&gauge), Format::OpenMetrics);
        assert!(om.contains("# HELP platscope_x a \\\"q\\\" \\\\ b\\nc\n"), "{om}");
        assert!(om.contains("platscope_x +Inf\nplatscope_x NaN\n"));
        let text = render(&[gauge], Format::Text004);
        assert!(text.contains("# HELP platscope_x a \"q\" \\\\ b\\nc\n"), "{text}");
    }
}
