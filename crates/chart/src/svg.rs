//! Chart primitives for the HTML report: escaping, number formats, scales with ticks, axes and
//! colour ramps. Everything returns SVG text; nothing here knows what was measured.

use std::fmt::Write as _;

/// Escapes text for HTML and SVG, in element content and in quoted attribute values alike.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A figure for people: three significant digits (`0.912`, `4.12`, `92.1`, `812`), whole
/// numbers from 1000 up (`1234`), `–` when not a number.
pub fn fmt3(v: f64) -> String {
    if !v.is_finite() {
        return "–".to_string();
    }
    let a = v.abs();
    if a == 0.0 {
        return "0".to_string();
    }
    if a >= 100.0 {
        return format!("{v:.0}");
    }
    // Decimals so that three significant digits show: 2 for [1, 10), 1 for [10, 100), …
    let decimals = (2 - a.log10().floor() as i32).clamp(0, 9) as usize;
    let text = format!("{v:.decimals$}");
    // Rounding can carry into a new digit (9.996 → "10.00"): redo with one decimal fewer.
    let significant =
        text.trim_start_matches(['-', '0', '.']).chars().filter(char::is_ascii_digit).count();
    if decimals > 0 && significant > 3 {
        return format!("{v:.prec$}", prec = decimals - 1);
    }
    text
}

/// A number for a `data-value` attribute: full precision, so tests and tools read back
/// exactly what was measured.
pub fn exact(v: f64) -> String {
    format!("{v}")
}

/// A coordinate in SVG user units.
pub fn px(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

/// Bytes as people write cache and buffer sizes: `48 KiB`, `1.25 MiB`, `1 GiB`.
pub fn bytes_label(bytes: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{} {}", trim_zeros(&fmt3(value)), UNITS[unit])
}

/// `1.50` → `1.5`, `48.0` → `48`; whole numbers stay as they are.
pub fn trim_zeros(text: &str) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text.to_string()
    }
}

/// How an axis maps values to positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScaleKind {
    Linear,
    /// Powers of two (sizes in bytes).
    Log2,
    /// Powers of ten (latencies spanning L1 to DRAM).
    Log10,
}

/// A value axis: domain `lo..hi` onto pixels `from..to` (`to < from` for a y axis).
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    pub kind: ScaleKind,
    pub lo: f64,
    pub hi: f64,
    pub from: f64,
    pub to: f64,
}

/// One tick: where, and its label (minor ticks have none).
#[derive(Debug, Clone)]
pub struct Tick {
    pub value: f64,
    pub label: Option<String>,
}

impl Scale {
    fn t(&self, v: f64) -> f64 {
        let (v, lo, hi) = match self.kind {
            ScaleKind::Linear => (v, self.lo, self.hi),
            ScaleKind::Log2 => (v.max(f64::MIN_POSITIVE).log2(), self.lo.log2(), self.hi.log2()),
            ScaleKind::Log10 => {
                (v.max(f64::MIN_POSITIVE).log10(), self.lo.log10(), self.hi.log10())
            }
        };
        if hi > lo {
            (v - lo) / (hi - lo)
        } else {
            0.5
        }
    }

    /// The pixel position of `v`.
    pub fn map(&self, v: f64) -> f64 {
        self.from + (self.to - self.from) * self.t(v)
    }

    /// Ticks across the domain, about `target` of them labelled (log2 ticks read as sizes).
    pub fn ticks(&self, target: usize) -> Vec<Tick> {
        match self.kind {
            ScaleKind::Linear => linear_ticks(self.lo, self.hi, target),
            ScaleKind::Log2 => log2_ticks(self.lo, self.hi, target),
            ScaleKind::Log10 => log10_ticks(self.lo, self.hi, target),
        }
    }
}

/// A step of 1, 2 or 5 × 10^k that cuts `span` into about `target` pieces.
pub fn nice_step(span: f64, target: usize) -> f64 {
    if span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / target.max(1) as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let norm = raw / magnitude;
    let nice = if norm < 1.5 {
        1.0
    } else if norm < 3.0 {
        2.0
    } else if norm < 7.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// The upper end of a linear axis from zero: `max` plus headroom, rounded up to a whole step.
pub fn nice_max(max: f64, target: usize) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    // The ticks of 0..hi use nice_step(hi): iterate until the top is one of them.
    let want = max * 1.08;
    let mut hi = want;
    for _ in 0..6 {
        let step = nice_step(hi, target);
        let next = (want / step).ceil() * step;
        if (next - hi).abs() < 1e-9 * next {
            break;
        }
        hi = next;
    }
    hi
}

fn decimals_for(step: f64) -> usize {
    if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()).clamp(0.0, 9.0) as usize
    }
}

/// Ticks at whole numbers in 1..=`max` (thread counts): every one when there are at most
/// `target`, else the multiples of a round step (5, 10, 20 …).
pub fn integer_ticks(max: usize, target: usize) -> Vec<Tick> {
    let step =
        if max <= target { 1 } else { (nice_step(max as f64, target).round() as usize).max(1) };
    (1..=max)
        .filter(|n| step == 1 || n % step == 0)
        .map(|n| Tick { value: n as f64, label: Some(n.to_string()) })
        .collect()
}

fn linear_ticks(lo: f64, hi: f64, target: usize) -> Vec<Tick> {
    let step = nice_step(hi - lo, target);
    let decimals = decimals_for(step);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last)
        .map(|i| {
            let value = i as f64 * step;
            Tick { value, label: Some(format!("{value:.decimals$}")) }
        })
        .collect()
}

fn log2_ticks(lo: f64, hi: f64, target: usize) -> Vec<Tick> {
    let (first, last) = (lo.log2().ceil() as i32, hi.log2().floor() as i32);
    let count = (last - first + 1).max(1) as usize;
    let every = count.div_ceil(target.max(1)).max(1) as i32;
    (first..=last)
        .map(|e| {
            let value = 2f64.powi(e);
            let label = (e.rem_euclid(every) == 0).then(|| bytes_label(value));
            Tick { value, label }
        })
        .collect()
}

fn log10_ticks(lo: f64, hi: f64, target: usize) -> Vec<Tick> {
    let (first, last) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let within = |v: f64| v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9);
    let with = |mantissas: &[f64]| -> Vec<f64> {
        (first..=last)
            .flat_map(|k| mantissas.iter().map(move |m| m * 10f64.powi(k)))
            .filter(|v| within(*v))
            .collect()
    };
    let mut labelled = with(&[1.0, 2.0, 5.0]);
    if labelled.len() > target {
        labelled = with(&[1.0]);
    }
    let minor = with(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    minor
        .into_iter()
        .map(|value| {
            let label =
                labelled.iter().any(|l| (l / value - 1.0).abs() < 1e-9).then(|| trim_number(value));
            Tick { value, label }
        })
        .collect()
}

/// `0.5`, `2`, `100`: a tick value without trailing zeros.
fn trim_number(v: f64) -> String {
    trim_zeros(&format!("{v:.3}"))
}

/// A plot area inside an SVG of `width` × `height`, with margins for the axes.
#[derive(Debug, Clone, Copy)]
pub struct Plot {
    pub width: f64,
    pub height: f64,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
}

impl Plot {
    pub fn x_scale(&self, kind: ScaleKind, lo: f64, hi: f64) -> Scale {
        Scale { kind, lo, hi, from: self.left, to: self.width - self.right }
    }

    pub fn y_scale(&self, kind: ScaleKind, lo: f64, hi: f64) -> Scale {
        Scale { kind, lo, hi, from: self.height - self.bottom, to: self.top }
    }

    pub fn x0(&self) -> f64 {
        self.left
    }

    pub fn x1(&self) -> f64 {
        self.width - self.right
    }

    pub fn y0(&self) -> f64 {
        self.height - self.bottom
    }

    pub fn y1(&self) -> f64 {
        self.top
    }

    /// Grid lines, tick marks, tick labels and the two axis titles (with their units).
    pub fn axes(&self, x: &Scale, x_ticks: &[Tick], y: &Scale, y_ticks: &[Tick]) -> String {
        let mut out = String::from("<g class=\"axes\">");
        for t in y_ticks {
            let py = px(y.map(t.value));
            let class = if t.label.is_some() { "grid" } else { "grid minor" };
            let _ = write!(
                out,
                "<line class=\"{class}\" x1=\"{}\" x2=\"{}\" y1=\"{py}\" y2=\"{py}\"/>",
                px(self.x0()),
                px(self.x1())
            );
            if let Some(label) = &t.label {
                let _ = write!(
                    out,
                    "<line class=\"tick\" x1=\"{}\" x2=\"{}\" y1=\"{py}\" y2=\"{py}\"/>\
                     <text class=\"tick-label\" x=\"{}\" y=\"{py}\" dy=\"0.32em\" text-anchor=\"end\">{}</text>",
                    px(self.x0() - 5.0),
                    px(self.x0()),
                    px(self.x0() - 8.0),
                    esc(label)
                );
            }
        }
        for t in x_ticks {
            let pxv = px(x.map(t.value));
            let (len, class) = if t.label.is_some() { (5.0, "grid") } else { (3.0, "grid minor") };
            let _ = write!(
                out,
                "<line class=\"{class}\" x1=\"{pxv}\" x2=\"{pxv}\" y1=\"{}\" y2=\"{}\"/>\
                 <line class=\"tick\" x1=\"{pxv}\" x2=\"{pxv}\" y1=\"{}\" y2=\"{}\"/>",
                px(self.y1()),
                px(self.y0()),
                px(self.y0()),
                px(self.y0() + len)
            );
            if let Some(label) = &t.label {
                let _ = write!(
                    out,
                    "<text class=\"tick-label\" x=\"{pxv}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                    px(self.y0() + 19.0),
                    esc(label)
                );
            }
        }
        let _ = write!(
            out,
            "<line class=\"axis\" x1=\"{x0}\" x2=\"{x1}\" y1=\"{y0}\" y2=\"{y0}\"/>\
             <line class=\"axis\" x1=\"{x0}\" x2=\"{x0}\" y1=\"{y0}\" y2=\"{y1}\"/>",
            x0 = px(self.x0()),
            x1 = px(self.x1()),
            y0 = px(self.y0()),
            y1 = px(self.y1())
        );
        out.push_str("</g>");
        out
    }

    /// The x axis title under the tick labels, centred on the plot.
    pub fn x_title(&self, title: &str) -> String {
        format!(
            "<text class=\"axis-title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            px((self.x0() + self.x1()) / 2.0),
            px(self.y0() + 40.0),
            esc(title)
        )
    }

    /// The y axis title, turned to read bottom-up along the axis.
    pub fn y_title(&self, title: &str) -> String {
        let (x, y) = (px(16.0), px((self.y0() + self.y1()) / 2.0));
        format!(
            "<text class=\"axis-title\" x=\"{x}\" y=\"{y}\" text-anchor=\"middle\" \
             transform=\"rotate(-90 {x} {y})\">{}</text>",
            esc(title)
        )
    }
}

/// Opens a chart: `<svg>` with its id, a `viewBox` that scales to the page width, and the
/// `<title>` that names it for screen readers and tooltips.
pub fn open(id: &str, width: f64, height: f64, title: &str) -> String {
    format!(
        "<svg id=\"{id}\" class=\"chart\" viewBox=\"0 0 {} {}\" role=\"img\" \
         aria-labelledby=\"{id}-title\"><title id=\"{id}-title\">{}</title>",
        px(width),
        px(height),
        esc(title),
        id = esc(id)
    )
}

/// A colour as `#rrggbb`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    pub fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }

    /// Whether dark text reads better than white on this colour.
    pub fn is_light(self) -> bool {
        let l =
            0.2126 * f64::from(self.0) + 0.7152 * f64::from(self.1) + 0.0722 * f64::from(self.2);
        l > 150.0
    }
}

/// The colour at `t` (0..=1) along a ramp of stops.
pub fn ramp(stops: &[Rgb], t: f64) -> Rgb {
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.5 };
    match stops {
        [] => Rgb(128, 128, 128),
        [only] => *only,
        _ => {
            let pos = t * (stops.len() - 1) as f64;
            let i = (pos.floor() as usize).min(stops.len() - 2);
            let f = pos - i as f64;
            let mix =
                |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
            let (a, b) = (stops[i], stops[i + 1]);
            Rgb(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
        }
    }
}

/// Light to dark red: slower is darker.
pub const RAMP_LATENCY: &[Rgb] =
    &[Rgb(0xff, 0xf5, 0xd6), Rgb(0xfd, 0xc0, 0x7a), Rgb(0xe8, 0x6a, 0x3a), Rgb(0x9e, 0x1f, 0x2a)];

/// Light to dark blue: more is darker.
pub const RAMP_BANDWIDTH: &[Rgb] =
    &[Rgb(0xee, 0xf5, 0xfb), Rgb(0x9c, 0xc6, 0xe4), Rgb(0x3d, 0x85, 0xc0), Rgb(0x0c, 0x3c, 0x78)];

/// Colours for workers, told apart in grouped bars.
pub const SERIES: &[Rgb] = &[
    Rgb(0x2b, 0x6c, 0xb0),
    Rgb(0xdd, 0x84, 0x1c),
    Rgb(0x3a, 0x9a, 0x5b),
    Rgb(0xc0, 0x39, 0x2b),
    Rgb(0x7b, 0x5b, 0xa6),
    Rgb(0x8c, 0x6d, 0x46),
    Rgb(0xd4, 0x5d, 0xa0),
    Rgb(0x6b, 0x6b, 0x6b),
];

/// A horizontal colour legend from `lo` to `hi` at (`x`, `y`), `w` wide.
pub fn legend_ramp(
    id: &str,
    stops: &[Rgb],
    (x, y, w): (f64, f64, f64),
    lo: &str,
    hi: &str,
) -> String {
    let mut out = format!("<defs><linearGradient id=\"{}-ramp\">", esc(id));
    for (i, s) in stops.iter().enumerate() {
        let offset = if stops.len() > 1 { i as f64 / (stops.len() - 1) as f64 } else { 0.0 };
        let _ = write!(
            out,
            "<stop offset=\"{}\" stop-color=\"{}\"/>",
            px(offset * 100.0) + "%",
            s.hex()
        );
    }
    let _ = write!(
        out,
        "</linearGradient></defs><g class=\"legend\">\
         <rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"10\" fill=\"url(#{}-ramp)\" stroke=\"#999\" stroke-width=\"0.5\"/>\
         <text class=\"tick-label\" x=\"{}\" y=\"{}\" text-anchor=\"start\">{}</text>\
         <text class=\"tick-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text></g>",
        px(x),
        px(y),
        px(w),
        esc(id),
        px(x),
        px(y + 24.0),
        esc(lo),
        px(x + w),
        px(y + 24.0),
        esc(hi)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_significant_digits() {
        assert_eq!(fmt3(0.0), "0");
        assert_eq!(fmt3(0.91234), "0.912");
        assert_eq!(fmt3(4.1234), "4.12");
        assert_eq!(fmt3(92.14), "92.1");
        assert_eq!(fmt3(812.4), "812");
        assert_eq!(fmt3(12345.6), "12346");
        assert_eq!(fmt3(9.996), "10.0");
        assert_eq!(fmt3(99.96), "100");
        assert_eq!(fmt3(0.012345), "0.0123");
        assert_eq!(fmt3(0.09996), "0.100");
        assert_eq!(fmt3(0.9996), "1.00");
        assert_eq!(fmt3(-4.1234), "-4.12");
        assert_eq!(fmt3(f64::NAN), "–");
    }

    #[test]
    fn sizes_read_like_cache_sizes() {
        assert_eq!(bytes_label(48.0 * 1024.0), "48 KiB");
        assert_eq!(bytes_label(1.25 * 1024.0 * 1024.0), "1.25 MiB");
        assert_eq!(bytes_label(1024.0 * 1024.0 * 1024.0), "1 GiB");
        assert_eq!(bytes_label(1.5 * 1024.0 * 1024.0), "1.5 MiB");
        assert_eq!(bytes_label(512.0), "512 B");
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(esc("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
    }

    #[test]
    fn ticks_are_round() {
        let t: Vec<f64> = linear_ticks(0.0, 23.0, 5).iter().map(|t| t.value).collect();
        assert_eq!(t, vec![0.0, 5.0, 10.0, 15.0, 20.0]);
        let labels: Vec<String> =
            log2_ticks(4096.0, 1073741824.0, 8).into_iter().filter_map(|t| t.label).collect();
        assert_eq!(labels, ["4 KiB", "32 KiB", "256 KiB", "2 MiB", "16 MiB", "128 MiB", "1 GiB"]);
        let labels: Vec<String> =
            log10_ticks(0.8, 150.0, 8).into_iter().filter_map(|t| t.label).collect();
        assert_eq!(labels, ["1", "2", "5", "10", "20", "50", "100"]);
        let labels: Vec<String> =
            log10_ticks(0.5, 2000.0, 8).into_iter().filter_map(|t| t.label).collect();
        assert_eq!(labels, ["1", "10", "100", "1000"]);
        let labels: Vec<String> =
            log10_ticks(3.0, 60.0, 8).into_iter().filter_map(|t| t.label).collect();
        assert_eq!(labels, ["5", "10", "20", "50"]);
        assert_eq!(nice_max(23.0, 5), 25.0);
        let whole: Vec<f64> = integer_ticks(2, 12).iter().map(|t| t.value).collect();
        assert_eq!(whole, [1.0, 2.0]);
        let whole: Vec<f64> = integer_ticks(64, 12).iter().map(|t| t.value).collect();
        assert_eq!(whole, [5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0, 45.0, 50.0, 55.0, 60.0]);
        // The top of the axis is a tick.
        for max in [0.7, 9.3, 23.0, 150.6, 162.0, 999.0, 4321.0] {
            let hi = nice_max(max, 6);
            let top = linear_ticks(0.0, hi, 6).last().map(|t| t.value).unwrap_or(0.0);
            assert!(
                (top - hi).abs() < 1e-9 * hi && hi >= max,
                "{max}: axis to {hi}, top tick {top}"
            );
        }
    }

    #[test]
    fn scales_map_ends_to_pixels() {
        let s = Scale { kind: ScaleKind::Log2, lo: 1024.0, hi: 4096.0, from: 0.0, to: 100.0 };
        assert_eq!(s.map(2048.0), 50.0);
        let y = Scale { kind: ScaleKind::Linear, lo: 0.0, hi: 10.0, from: 200.0, to: 0.0 };
        assert_eq!(y.map(5.0), 100.0);
    }

    #[test]
    fn ramps_interpolate() {
        let r = [Rgb(0, 0, 0), Rgb(200, 100, 50)];
        assert_eq!(ramp(&r, 0.5), Rgb(100, 50, 25));
        assert_eq!(ramp(&r, 2.0), Rgb(200, 100, 50));
        assert_eq!(Rgb(255, 0, 16).hex(), "#ff0010");
    }
}
