//! `fleet.html`: one self-contained page (the report's style sheet and chart primitives, no
//! script, no external URL) with
//!
//! - the fleet in cards: hosts, classes, outliers, changes, configuration changes;
//! - per class, a host × figure table: each cell the host's current value with its rank in the
//!   class (1 is the best), outliers marked ▲ (worse than the class) or ▼ (better), hosts
//!   ordered worst first;
//! - the changes, newest first, each with the configuration that changed around it, and the
//!   configuration changes that moved no figure;
//! - per host with a change or an outlier, a timeline of its figures (each as a multiple of
//!   its class's median) with a numbered marker at every change and every configuration
//!   change, the numbers written out under the chart.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use chart::svg::{self, esc, exact, fmt3, px, Plot, ScaleKind, Tick};

use chart::card;

use crate::analysis::{Analysis, Direction};
use crate::facts::describe;

/// The most host timelines drawn (hosts with the newest changes first, then outliers).
pub const TIMELINES: usize = 60;
/// The most figures on one timeline.
const LINES: usize = 6;

/// What the fleet page adds to the report's style sheet.
const FLEET_CSS: &str = "table.fleet{border-collapse:collapse;font-size:13px;width:100%}\
table.fleet th,table.fleet td{border-bottom:1px solid var(--line);padding:3px 8px 3px 0;text-align:left;vertical-align:top}\
table.fleet th{font-weight:600}\
table.fleet td.num{text-align:right;white-space:nowrap}\
table.fleet td.worse{background:#fbe3e1}\
table.fleet td.better{background:#e3eefb}\
table.fleet .rank{color:var(--muted);font-size:11.5px;margin-left:4px}\
table.fleet tr.median td{color:var(--muted);font-style:italic}\
.scroll{overflow-x:auto}\
table.fleet td:first-child{white-space:nowrap}\
h3.host{font-size:15px;margin:22px 0 4px}\
h3.host .class-name{color:var(--muted);font-weight:normal;font-size:13px}\
ol.markers{margin:6px 0 0;padding-left:22px;font-size:13px}\
svg .change-marker{stroke:var(--warn);stroke-width:1.3;stroke-dasharray:6 4}\
svg .config-marker{stroke:#7b8591;stroke-width:1.2;stroke-dasharray:2 3}\
svg .marker-number{font-size:11.5px;fill:var(--ink);font-weight:600}\
svg .series{fill:none;stroke-width:1.6}\
svg .class-median{stroke:#9aa3ad;stroke-width:1;stroke-dasharray:4 4}";

/// Line colours for a timeline's figures (distinct in print and for common colour blindness).
const COLOURS: [&str; LINES] = ["#2b6cb0", "#d97706", "#059669", "#9333ea", "#be123c", "#4b5563"];

/// An element id from a host name (letters, digits and `-` kept).
fn anchor(prefix: &str, name: &str) -> String {
    let clean: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    format!("{prefix}-{clean}")
}

/// The page of `analysis`; `source` names the store, `window` what was looked at.
pub fn render(analysis: &Analysis, source: &str, window: &str, version: &str) -> String {
    let timelines = timeline_hosts(analysis);
    let mut body = String::new();
    body.push_str(&summary(analysis, source, window));
    for class in 0..analysis.fleet.classes.len() {
        body.push_str(&class_table(analysis, class, &timelines));
    }
    body.push_str(&changes(analysis, &timelines));
    body.push_str(&quiet_changes(analysis));
    body.push_str(&timeline_section(analysis, &timelines));
    let nav = contents(analysis);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"generator\" content=\"platscope {v}\">\
         <title>platscope fleet</title><style>{css}{FLEET_CSS}</style></head><body><div class=\"page\">\n\
         <header><h1>platscope fleet</h1><p class=\"sub\">{src}{win} · platscope {v}</p></header>\n\
         {nav}<main class=\"charts\">\n{body}</main>\n</div></body></html>\n",
        v = esc(version),
        css = chart::inline_css(),
        src = esc(source),
        win = if window.is_empty() { String::new() } else { format!(" · {}", esc(window)) },
    )
}

fn contents(analysis: &Analysis) -> String {
    let mut out = String::from(
        "<nav class=\"contents\" aria-label=\"Contents\"><a href=\"#sec-fleet\">Fleet</a>",
    );
    for (i, class) in analysis.report.classes.iter().enumerate() {
        let _ = write!(
            out,
            "<a href=\"#sec-class-{i}\" title=\"{}\">Class {}</a>",
            esc(&class.class),
            i + 1
        );
    }
    out.push_str(
        "<a href=\"#sec-changes\">Changes</a><a href=\"#sec-config\">Configuration changes</a>\
         <a href=\"#sec-timelines\">Timelines</a></nav>\n",
    );
    out
}

fn summary(analysis: &Analysis, source: &str, window: &str) -> String {
    let r = &analysis.report;
    let f = &analysis.fleet;
    let mut out = String::from(
        "<section id=\"sec-fleet\" class=\"wide\"><h2>Fleet</h2><div class=\"cards\">",
    );
    let span = f
        .span()
        .map(|(a, b)| format!("{} to {}", a.strftime("%Y-%m-%d"), b.strftime("%Y-%m-%d")))
        .unwrap_or_else(|| "no reports".into());
    card(&mut out, "Hosts", &r.hosts.to_string(), &format!("{} reports, {span}", f.reports()));
    card(
        &mut out,
        "Hardware classes",
        &r.classes.len().to_string(),
        "CPU model, sockets × cores, NUMA nodes, memory as installed, hypervisor",
    );
    let slower = r.outliers.iter().filter(|o| o.verdict == Direction::Slower).count();
    card(
        &mut out,
        "Outliers",
        &r.outliers.len().to_string(),
        &format!("{slower} slower than their class"),
    );
    let regressions = r.changes.iter().filter(|c| c.verdict == Direction::Slower).count();
    card(
        &mut out,
        "Changes",
        &r.changes.len().to_string(),
        &format!("{regressions} for the worse"),
    );
    card(
        &mut out,
        "Configuration changes that moved nothing",
        &r.config_changes_without_shift.len().to_string(),
        "facts that changed on a host with no change of any figure around them",
    );
    out.push_str("</div>");
    let _ = write!(
        out,
        "<p class=\"sub\">Read from {}{}.</p>",
        esc(source),
        if window.is_empty() { String::new() } else { format!(" ({})", esc(window)) }
    );
    if !analysis.notes.is_empty() {
        out.push_str("<ul class=\"notes\">");
        for n in &analysis.notes {
            let _ = write!(out, "<li>{}</li>", esc(n));
        }
        out.push_str("</ul>");
    }
    out.push_str("</section>\n");
    out
}

/// The host × figure table of one class, hosts worst first.
fn class_table(analysis: &Analysis, class: usize, timelines: &[usize]) -> String {
    let fleet = &analysis.fleet;
    let entry = &analysis.report.classes[class];
    let hosts: Vec<usize> = fleet.hosts_of(class).map(|(i, _)| i).collect();
    let figures: Vec<usize> = (0..fleet.figures.len())
        .filter(|&f| {
            fleet.series.iter().any(|s| s.figure == f && fleet.hosts[s.host].class == class)
        })
        .collect();
    // (host, figure) → current value; ranks per figure, 1 the best.
    let value = |h: usize, f: usize| {
        fleet.series.iter().position(|s| s.host == h && s.figure == f).map(|i| analysis.current[i])
    };
    let mut rank = vec![vec![None; fleet.figures.len()]; fleet.hosts.len()];
    let mut medians = vec![f64::NAN; fleet.figures.len()];
    for &f in &figures {
        let mut values: Vec<(usize, f64)> =
            hosts.iter().filter_map(|&h| Some((h, value(h, f)?))).collect();
        let lower = fleet.figures[f].lower_is_better;
        values.sort_by(|a, b| if lower { a.1.total_cmp(&b.1) } else { b.1.total_cmp(&a.1) });
        for (k, (h, _)) in values.iter().enumerate() {
            rank[*h][f] = Some((k + 1, values.len()));
        }
        let mut v: Vec<f64> = values.iter().map(|x| x.1).collect();
        v.sort_by(f64::total_cmp);
        if !v.is_empty() {
            medians[f] = measure::summary::quantile(&v, 0.5);
        }
    }
    let outlier =
        |h: usize, f: usize| analysis.found_outliers.iter().find(|o| o.host == h && o.figure == f);
    // Worst first: most outliers for the worse, then the mean relative rank (0 best, 1 worst).
    let score = |h: usize| {
        let worse = figures
            .iter()
            .filter(|&&f| {
                outlier(h, f).is_some_and(|o| fleet.figures[f].worse(o.class_median, o.value))
            })
            .count();
        let ranks: Vec<f64> = figures
            .iter()
            .filter_map(|&f| rank[h][f])
            .map(|(k, n)| if n > 1 { (k - 1) as f64 / (n - 1) as f64 } else { 0.0 })
            .collect();
        let mean =
            if ranks.is_empty() { 0.0 } else { ranks.iter().sum::<f64>() / ranks.len() as f64 };
        (worse, mean)
    };
    let mut ordered = hosts.clone();
    ordered.sort_by(|&a, &b| {
        let (sa, sb) = (score(a), score(b));
        sb.0.cmp(&sa.0)
            .then(sb.1.total_cmp(&sa.1))
            .then(fleet.hosts[a].name.cmp(&fleet.hosts[b].name))
    });
    let mut out = String::new();
    let _ = write!(
        out,
        "<section id=\"sec-class-{class}\" class=\"wide\"><h2>Class {}: {}</h2>\
         <p class=\"sub\">{} host(s); each cell the host's current value (the median of its latest \
         runs, none before its last change) and its rank in the class, 1 the best; ▲ an outlier \
         worse than the class, ▼ better.</p><div class=\"scroll\"><table class=\"fleet class-table\"><thead><tr><th>host</th>",
        class + 1,
        esc(&entry.class),
        hosts.len()
    );
    for &f in &figures {
        let fig = &fleet.figures[f];
        let arrow = if fig.lower_is_better { "lower is better" } else { "higher is better" };
        let _ = write!(out, "<th title=\"{arrow}\">{} ({})</th>", esc(&fig.name), esc(&fig.unit));
    }
    out.push_str("</tr></thead><tbody><tr class=\"median\"><td>class median</td>");
    for &f in &figures {
        let _ = write!(out, "<td class=\"num\">{}</td>", fmt3(medians[f]));
    }
    out.push_str("</tr>");
    for &h in &ordered {
        let host = &fleet.hosts[h];
        let name = if timelines.contains(&h) {
            format!("<a href=\"#{}\">{}</a>", anchor("host", &host.name), esc(&host.name))
        } else {
            esc(&host.name)
        };
        let _ = write!(out, "<tr data-host=\"{}\"><td>{name}</td>", esc(&host.name));
        for &f in &figures {
            match (value(h, f), rank[h][f]) {
                (Some(v), Some((k, n))) => {
                    let (class_attr, mark) = match outlier(h, f) {
                        Some(o) if fleet.figures[f].worse(o.class_median, o.value) => {
                            (" worse outlier", "▲ ")
                        }
                        Some(_) => (" better outlier", "▼ "),
                        None => ("", ""),
                    };
                    let _ = write!(
                        out,
                        "<td class=\"num{class_attr}\" data-figure=\"{}\" data-value=\"{}\">{mark}{}<span class=\"rank\">{k}/{n}</span></td>",
                        esc(&fleet.figures[f].name),
                        exact(v),
                        fmt3(v)
                    );
                }
                _ => out.push_str("<td class=\"num\">–</td>"),
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div></section>\n");
    out
}

fn changes(analysis: &Analysis, timelines: &[usize]) -> String {
    let r = &analysis.report;
    let mut out = format!(
        "<section id=\"sec-changes\" class=\"wide\"><h2>Changes, newest first ({})</h2>",
        r.changes.len()
    );
    if r.changes.is_empty() {
        out.push_str("<p>No figure of any host shifted beyond its noise.</p></section>\n");
        return out;
    }
    out.push_str(
        "<div class=\"scroll\"><table class=\"fleet changes\"><thead><tr><th>first run after</th>\
         <th>host</th><th>figure</th><th>before</th><th>after</th><th>ratio</th><th>p</th>\
         <th>configuration that changed</th></tr></thead><tbody>",
    );
    for c in &r.changes {
        let host = match analysis.fleet.hosts.iter().position(|h| h.name == c.host) {
            Some(h) if timelines.contains(&h) => {
                format!("<a href=\"#{}\">{}</a>", anchor("host", &c.host), esc(&c.host))
            }
            _ => esc(&c.host),
        };
        let class = if c.verdict == Direction::Slower {
            " class=\"num worse\""
        } else {
            " class=\"num better\""
        };
        let config =
            if c.config.is_empty() { "none".to_string() } else { esc(&describe(&c.config)) };
        let _ = write!(
            out,
            "<tr data-host=\"{}\" data-at=\"{}\"><td>{}</td><td>{host}</td><td>{}</td><td class=\"num\">{} {}</td>\
             <td class=\"num\">{} {}</td><td{class}>{}× {}</td><td class=\"num\">{}</td><td>{config}</td></tr>",
            esc(&c.host),
            esc(&c.at),
            esc(&c.at),
            esc(&c.figure),
            fmt3(c.before),
            esc(&c.unit),
            fmt3(c.after),
            esc(&c.unit),
            fmt3(c.ratio),
            c.verdict.word(),
            fmt3(c.p_value)
        );
    }
    out.push_str("</tbody></table></div></section>\n");
    out
}

fn quiet_changes(analysis: &Analysis) -> String {
    let quiet = &analysis.report.config_changes_without_shift;
    let mut out = format!(
        "<section id=\"sec-config\" class=\"wide\"><h2>Configuration changes that moved no figure ({})</h2>",
        quiet.len()
    );
    if quiet.is_empty() {
        out.push_str("<p>None: every configuration change sits on a change of a figure, or there was none.</p></section>\n");
        return out;
    }
    out.push_str("<div class=\"scroll\"><table class=\"fleet quiet\"><thead><tr><th>first run with it</th><th>host</th><th>what changed</th></tr></thead><tbody>");
    for q in quiet {
        let _ = write!(
            out,
            "<tr data-host=\"{}\"><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&q.host),
            esc(&q.at),
            esc(&q.host),
            esc(&describe(&q.config))
        );
    }
    out.push_str("</tbody></table></div></section>\n");
    out
}

/// The hosts that get a timeline: newest change first, then outliers, at most [`TIMELINES`].
fn timeline_hosts(analysis: &Analysis) -> Vec<usize> {
    let fleet = &analysis.fleet;
    let mut hosts: Vec<usize> = Vec::new();
    let index = |name: &str| fleet.hosts.iter().position(|h| h.name == name);
    let names = analysis
        .report
        .changes
        .iter()
        .map(|c| c.host.as_str())
        .chain(analysis.report.outliers.iter().map(|o| o.host.as_str()));
    for name in names {
        if let Some(h) = index(name) {
            if !hosts.contains(&h) {
                hosts.push(h);
            }
        }
        if hosts.len() == TIMELINES {
            break;
        }
    }
    hosts
}

fn timeline_section(analysis: &Analysis, hosts: &[usize]) -> String {
    let mut out = String::from("<section id=\"sec-timelines\" class=\"wide\"><h2>Timelines</h2>");
    let wanted = {
        let mut all: BTreeSet<&str> =
            analysis.report.changes.iter().map(|c| c.host.as_str()).collect();
        all.extend(analysis.report.outliers.iter().map(|o| o.host.as_str()));
        all.len()
    };
    if hosts.is_empty() {
        out.push_str("<p>No host changed or stands out of its class.</p>");
    } else {
        let _ = write!(
            out,
            "<p class=\"sub\">Each host with a change or an outlier{}: its figures as multiples of \
             their class's median (1 = the class; up is not always worse: ▲ marks in the tables \
             say which way each figure is better). Red dashed lines are changes, grey dotted ones \
             configuration changes; the numbers are written out under each chart.</p>",
            if wanted > hosts.len() {
                format!(" ({} of {wanted}, the newest changes first)", hosts.len())
            } else {
                String::new()
            }
        );
    }
    for &h in hosts {
        out.push_str(&timeline(analysis, h));
    }
    out.push_str("</section>\n");
    out
}

/// Date ticks across `lo..hi` (seconds since the epoch), about six.
fn date_ticks(lo: f64, hi: f64) -> Vec<Tick> {
    const DAY: f64 = 86_400.0;
    let span = (hi - lo).max(1.0);
    let step = (span / DAY / 6.0).ceil().max(1.0) * DAY;
    let mut ticks = Vec::new();
    let mut t = (lo / DAY).ceil() * DAY;
    while t <= hi && ticks.len() < 40 {
        let label =
            jiff::Timestamp::from_second(t as i64).map(|ts| ts.strftime("%m-%d").to_string()).ok();
        ticks.push(Tick { value: t, label });
        t += step;
    }
    ticks
}

fn timeline(analysis: &Analysis, h: usize) -> String {
    let fleet = &analysis.fleet;
    let host = &fleet.hosts[h];
    let series_of_host: Vec<usize> =
        fleet.series.iter().enumerate().filter(|(_, s)| s.host == h).map(|(i, _)| i).collect();
    // The figures that changed or stand out, then the rest, up to LINES.
    let interesting = |i: &usize| {
        analysis.found_changes.iter().any(|c| c.series == *i)
            || analysis
                .found_outliers
                .iter()
                .any(|o| o.host == h && o.figure == fleet.series[*i].figure)
    };
    let mut shown: Vec<usize> = series_of_host.iter().copied().filter(interesting).collect();
    shown.truncate(LINES);
    // Class medians of each shown figure (current values of the class's hosts).
    let class_median = |figure: usize| {
        let mut v: Vec<f64> = fleet
            .series
            .iter()
            .zip(&analysis.current)
            .filter(|(s, _)| s.figure == figure && fleet.hosts[s.host].class == host.class)
            .map(|(_, v)| *v)
            .collect();
        v.sort_by(f64::total_cmp);
        measure::summary::quantile(&v, 0.5)
    };
    let secs = |run: usize| host.runs[run].at.as_second() as f64;
    let (Some(first), Some(last)) = (host.runs.first(), host.runs.last()) else {
        return String::new();
    };
    let (x_lo, x_hi) = (
        first.at.as_second() as f64,
        (last.at.as_second() as f64).max(first.at.as_second() as f64 + 1.0),
    );
    let lines: Vec<(usize, Vec<(f64, f64)>)> = shown
        .iter()
        .map(|&i| {
            let s = &fleet.series[i];
            let m = class_median(s.figure);
            (i, s.runs.iter().zip(&s.values).map(|(&r, &v)| (secs(r), v / m)).collect())
        })
        .collect();
    let (mut y_lo, mut y_hi) = (1.0f64, 1.0f64);
    for (_, points) in &lines {
        for &(_, y) in points {
            if y.is_finite() {
                y_lo = y_lo.min(y);
                y_hi = y_hi.max(y);
            }
        }
    }
    let pad = ((y_hi - y_lo) * 0.08).max(0.02);
    let (y_lo, y_hi) = ((y_lo - pad).max(0.0), y_hi + pad);
    let plot =
        Plot { width: 900.0, height: 260.0, left: 64.0, right: 18.0, top: 26.0, bottom: 48.0 };
    let x = plot.x_scale(ScaleKind::Linear, x_lo, x_hi);
    let y = plot.y_scale(ScaleKind::Linear, y_lo, y_hi);
    let id = anchor("host", &host.name);
    let mut out = String::new();
    let _ = write!(out, "<figure class=\"timeline\" data-host=\"{}\">", esc(&host.name));
    out.push_str(&svg::open(
        &format!("chart-{id}"),
        plot.width,
        plot.height,
        &format!("{}: figures over time", host.name),
    ));
    out.push_str(&plot.axes(&x, &date_ticks(x_lo, x_hi), &y, &y.ticks(5)));
    out.push_str(&plot.x_title("recorded (UTC, month-day)"));
    out.push_str(&plot.y_title("× class median"));
    let _ = write!(
        out,
        "<line class=\"class-median\" x1=\"{}\" x2=\"{}\" y1=\"{p}\" y2=\"{p}\"/>",
        px(plot.x0()),
        px(plot.x1()),
        p = px(y.map(1.0))
    );
    for (k, (i, points)) in lines.iter().enumerate() {
        let figure = &fleet.figures[fleet.series[*i].figure];
        let path: Vec<String> = points
            .iter()
            .filter(|p| p.1.is_finite())
            .map(|&(t, v)| format!("{},{}", px(x.map(t)), px(y.map(v))))
            .collect();
        let _ = write!(
            out,
            "<polyline class=\"series\" stroke=\"{}\" points=\"{}\" data-figure=\"{}\"><title>{}</title></polyline>",
            COLOURS[k % LINES],
            path.join(" "),
            esc(&figure.name),
            esc(&figure.label())
        );
    }
    // Markers: this host's changes and its configuration changes, numbered in time order, each
    // with what changed written beside it (in full under the chart).
    struct Marker {
        run: usize,
        text: String,
        short: String,
        is_change: bool,
    }
    let short = |config: &[crate::facts::FactChange]| {
        let text: Vec<String> =
            config.iter().map(|c| format!("{} → {}", c.fact, c.after)).collect();
        let text = text.join("; ");
        if text.chars().count() > 44 {
            format!("{}…", text.chars().take(43).collect::<String>())
        } else {
            text
        }
    };
    let mut markers: Vec<Marker> = Vec::new();
    for c in analysis.found_changes.iter().filter(|c| fleet.series[c.series].host == h) {
        let figure = &fleet.figures[fleet.series[c.series].figure];
        let config = if c.config.is_empty() {
            "no configuration change".to_string()
        } else {
            describe(&c.config)
        };
        markers.push(Marker {
            run: c.run,
            text: format!(
                "{}: {} → {} {} ({}×); {config}",
                figure.name,
                fmt3(c.before),
                fmt3(c.after),
                figure.unit,
                fmt3(c.after / c.before)
            ),
            short: if c.config.is_empty() {
                "no configuration change".into()
            } else {
                short(&c.config)
            },
            is_change: true,
        });
    }
    for t in analysis.transitions.iter().filter(|t| t.host == h) {
        let on_a_change = analysis.found_changes.iter().any(|c| {
            fleet.series[c.series].host == h && c.config_from < t.run && t.run <= c.config_to
        });
        if !on_a_change {
            markers.push(Marker {
                run: t.run,
                text: format!("configuration only: {}", describe(&t.config)),
                short: short(&t.config),
                is_change: false,
            });
        }
    }
    markers.sort_by(|a, b| a.run.cmp(&b.run).then(b.is_change.cmp(&a.is_change)));
    let mut list = String::from("<ol class=\"markers\">");
    for (n, m) in markers.iter().enumerate() {
        let at = x.map(secs(m.run));
        let mx = px(at);
        let class = if m.is_change { "change-marker" } else { "config-marker" };
        // The label reads away from the nearer edge; rows alternate so neighbours do not collide.
        let (lx, anchor) = if at > plot.x0() + 0.62 * (plot.x1() - plot.x0()) {
            (at - 4.0, "end")
        } else {
            (at + 4.0, "start")
        };
        let _ = write!(
            out,
            "<g class=\"marker\" data-at=\"{}\"><title>{}</title><line class=\"{class}\" x1=\"{mx}\" x2=\"{mx}\" y1=\"{}\" y2=\"{}\"/>\
             <text class=\"marker-number\" x=\"{mx}\" y=\"{}\" text-anchor=\"middle\">{}</text>\
             <text class=\"marker-label\" x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\">{}</text></g>",
            esc(&host.runs[m.run].recorded_at),
            esc(&m.text),
            px(plot.y1()),
            px(plot.y0()),
            px(plot.y1() - 6.0),
            n + 1,
            px(lx),
            px(plot.y1() + 13.0 + 14.0 * (n % 3) as f64),
            esc(&m.short)
        );
        let _ = write!(
            list,
            "<li>{}: {}</li>",
            esc(host.runs[m.run].recorded_at.get(..10).unwrap_or(&host.runs[m.run].recorded_at)),
            esc(&m.text)
        );
    }
    list.push_str("</ol>");
    out.push_str("</svg>");
    let legend: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(k, (i, _))| {
            format!(
                "<span style=\"color:{}\">■</span> {}",
                COLOURS[k % LINES],
                esc(&fleet.figures[fleet.series[*i].figure].label())
            )
        })
        .collect();
    let class_name = &analysis.report.classes[host.class].class;
    let _ = write!(
        out,
        "<figcaption>{}</figcaption>{}</figure>",
        legend.join(" · "),
        if markers.is_empty() { String::new() } else { list }
    );
    format!(
        "<h3 class=\"host\" id=\"{id}\">{} <span class=\"class-name\">{}</span></h3>{out}",
        esc(&host.name),
        esc(class_name)
    )
}
