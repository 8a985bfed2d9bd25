//! `platscope topo` as text: the full view, the `numactl --hardware` layout and the machine
//! facts table; and the facts as the report's "Machine" section ([`facts_part`]).

use std::fmt::Write as _;

use chart::svg::esc;
use chart::{Area, Figure, Part, Section};

use crate::facts::{config_diff, page_label, Fact, MISSING};
use crate::units::format_bytes;
use crate::{idlist, Topology};

/// `numactl --hardware`'s exact layout: node count and ids, CPUs, size and free in MB
/// (2^20 bytes, truncated), and the distance table.
pub fn numactl_hardware(t: &Topology) -> String {
    let mut out = String::new();
    let ids = t.node_ids();
    let _ = writeln!(out, "available: {} nodes ({})", ids.len(), idlist::format(&ids));
    for node in &t.nodes {
        let _ = write!(out, "node {} cpus:", node.id);
        for cpu in &node.cpus {
            let _ = write!(out, " {cpu}");
        }
        out.push('\n');
        let _ = writeln!(out, "node {} size: {} MB", node.id, node.total_bytes >> 20);
        match node.memory {
            Some(m) => {
                let _ = writeln!(out, "node {} free: {} MB", node.id, m.free_bytes >> 20);
            }
            None => {
                let _ = writeln!(out, "node {} free: unknown", node.id);
            }
        }
    }
    match &t.distances {
        Some(d) => {
            out.push_str("node distances:\nnode ");
            for n in &d.nodes {
                let _ = write!(out, "{n:3} ");
            }
            out.push('\n');
            for (n, row) in d.nodes.iter().zip(&d.matrix) {
                let _ = write!(out, "{n:3}: ");
                for value in row {
                    let _ = write!(out, "{value:3} ");
                }
                out.push('\n');
            }
        }
        None => out.push_str("No distance information available.\n"),
    }
    out
}

fn or_unknown(value: Option<&str>) -> &str {
    value.unwrap_or("unknown")
}

/// The full human view: nodes with their memory split, distances, HMAT, caches, SMT and the
/// environment facts that move memory results.
pub fn topology_text(t: &Topology) -> String {
    let mut out = String::new();
    let m = &t.machine;
    let online = t.online_cpu_ids();
    let _ = writeln!(
        out,
        "{} ({}), {}: {} package(s), {} core(s), {} online CPU(s), {} NUMA node(s)",
        or_unknown(m.cpu_model.as_deref()),
        or_unknown(m.cpu_vendor.as_deref()),
        or_unknown(m.architecture.as_deref()),
        m.packages,
        m.cores,
        online.len(),
        t.nodes.len()
    );
    let offline = t.offline_cpu_ids();
    if !offline.is_empty() {
        let _ = writeln!(out, "offline CPUs: {}", idlist::format(&offline));
    }

    out.push_str("\nNUMA nodes\n");
    let _ = writeln!(
        out,
        "  {:<5} {:<12} {:>11} {:>11} {:>11} {:>11}  huge pages (free/total)",
        "node", "cpus", "total", "free", "file", "anon"
    );
    for node in &t.nodes {
        let cpus =
            if node.memory_only { "memory only".to_string() } else { idlist::format(&node.cpus) };
        let (free, file, anon) = match node.memory {
            Some(m) => {
                (format_bytes(m.free_bytes), format_bytes(m.file_bytes), format_bytes(m.anon_bytes))
            }
            None => ("?".into(), "?".into(), "?".into()),
        };
        let huge: Vec<String> = node
            .hugepages
            .iter()
            .map(|p| format!("{}: {}/{}", page_name(p.page_bytes), p.free, p.total))
            .collect();
        let _ = writeln!(
            out,
            "  {:<5} {:<12} {:>11} {:>11} {:>11} {:>11}  {}",
            node.id,
            cpus,
            format_bytes(node.total_bytes),
            free,
            file,
            anon,
            if huge.is_empty() { "-".to_string() } else { huge.join(", ") }
        );
    }

    let node_sum: u64 = t.nodes.iter().map(|n| n.total_bytes).sum();
    if let Some(machine) = t.environment.as_ref().and_then(|e| e.machine_memory_bytes) {
        if node_sum < machine / 100 * 95 {
            let _ = writeln!(
                out,
                "  note: the nodes hold {} of the kernel's {}: node sizes can grow as memory \
                 is used (memory hot-plugged into a VM)",
                format_bytes(node_sum),
                format_bytes(machine)
            );
        }
    }

    out.push_str("\nDistances (ACPI SLIT, 10 = local)\n");
    match &t.distances {
        Some(d) => {
            out.push_str("  node");
            for n in &d.nodes {
                let _ = write!(out, " {n:>4}");
            }
            out.push('\n');
            for (n, row) in d.nodes.iter().zip(&d.matrix) {
                let _ = write!(out, "  {n:>4}");
                for value in row {
                    let _ = write!(out, " {value:>4}");
                }
                out.push('\n');
            }
        }
        None => out.push_str("  not reported\n"),
    }

    out.push_str("\nHMAT access figures\n");
    if t.hmat.is_empty() {
        out.push_str("  not exposed by this firmware/kernel (no nodeN/access0 in sysfs)\n");
    }
    for h in &t.hmat {
        let fig = |v: Option<u64>, unit: &str| v.map_or("?".into(), |v| format!("{v} {unit}"));
        let _ = writeln!(
            out,
            "  node {} from node(s) {} (access{}): read {} / {}, write {} / {}",
            h.target,
            idlist::format(&h.initiators),
            h.access_class,
            fig(h.read_latency_ns, "ns"),
            fig(h.read_bandwidth_mbps, "MB/s"),
            fig(h.write_latency_ns, "ns"),
            fig(h.write_bandwidth_mbps, "MB/s"),
        );
    }

    out.push_str("\nCaches\n");
    let mut levels: Vec<String> = t.caches.iter().map(|c| c.name()).collect();
    levels.dedup();
    for name in levels {
        let of_level: Vec<_> = t.caches.iter().filter(|c| c.name() == name).collect();
        let Some(first) = of_level.first() else { continue };
        let sharing: Vec<String> = of_level.iter().map(|c| idlist::format(&c.cpus)).collect();
        let _ = writeln!(
            out,
            "  {:<4} {:>10} each, {} instance(s), line {}, {}; CPUs sharing each: {}",
            name,
            format_bytes(first.size_bytes),
            of_level.len(),
            first.line_bytes.map_or("?".into(), |l| format!("{l} B")),
            first.associativity.map_or("associativity ?".into(), |a| format!("{a}-way")),
            sharing.join(" | ")
        );
    }
    if t.caches.is_empty() {
        out.push_str("  not reported\n");
    }

    let mut smt_groups: Vec<Vec<u32>> =
        t.cpus.iter().filter(|c| c.online).map(|c| c.smt_siblings.clone()).collect();
    smt_groups.sort();
    smt_groups.dedup();
    let threads = smt_groups.iter().map(Vec::len).max().unwrap_or(1);
    let _ = write!(out, "\nSMT: {threads} thread(s) per core");
    if threads > 1 {
        let groups: Vec<String> = smt_groups.iter().map(|g| idlist::format(g)).collect();
        let _ = write!(out, " (siblings: {})", groups.join(" | "));
    }
    out.push('\n');

    if let Some(env) = &t.environment {
        out.push_str("\nEnvironment\n");
        let _ = writeln!(out, "  kernel            {}", or_unknown(env.kernel.as_deref()));
        let _ = writeln!(out, "  base page         {}", format_bytes(env.page_bytes));
        let _ = writeln!(
            out,
            "  THP               enabled={} defrag={}",
            or_unknown(env.thp_enabled.as_deref()),
            or_unknown(env.thp_defrag.as_deref())
        );
        let balancing = match env.numa_balancing.as_deref() {
            Some("0") => "0 (off)".to_string(),
            Some("1") => "1 (on: pages migrate toward the CPUs using them)".to_string(),
            Some("2") => "2 (memory tiering)".to_string(),
            Some(other) => other.to_string(),
            None => "not available".to_string(),
        };
        let _ = writeln!(out, "  numa_balancing    {balancing}");
        let _ =
            writeln!(out, "  zone_reclaim_mode {}", or_unknown(env.zone_reclaim_mode.as_deref()));
        let _ = writeln!(
            out,
            "  clocksource       {} (available: {})",
            or_unknown(env.clocksource.as_deref()),
            env.available_clocksources.join(" ")
        );
        if env.governors.is_empty() {
            out.push_str("  cpufreq governor  none (no cpufreq driver: frequency set by firmware or hypervisor)\n");
        } else {
            let g: Vec<String> = env
                .governors
                .iter()
                .map(|g| format!("{} on CPUs {}", g.name, idlist::format(&g.cpus)))
                .collect();
            let _ = writeln!(out, "  cpufreq governor  {}", g.join("; "));
        }
        let _ = writeln!(out, "  SMT control       {}", or_unknown(env.smt_control.as_deref()));
        let _ = writeln!(
            out,
            "  hypervisor        {}",
            env.hypervisor.as_deref().unwrap_or("none detected (bare metal)")
        );
        if let Some(system) = &env.system {
            let _ = writeln!(out, "  system            {system}");
        }
        if let Some(version) = env.bios.as_ref().and_then(|b| b.version.as_deref()) {
            let _ = writeln!(out, "  BIOS              {version}");
        }
        let pools: Vec<String> = env
            .hugepages
            .iter()
            .map(|p| format!("{}: {} reserved, {} free", page_name(p.page_bytes), p.total, p.free))
            .collect();
        let _ = writeln!(
            out,
            "  huge pages        {}",
            if pools.is_empty() { "no hugetlb support".to_string() } else { pools.join("; ") }
        );
    }
    out
}

fn page_name(bytes: u64) -> String {
    page_label(bytes)
}

/// Width of a value column in the three-column facts table before it wraps.
const COLUMN: usize = 44;

/// Splits `text` into lines of at most `width` characters at spaces (a longer word keeps its
/// own line).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

fn pad(text: &str, width: usize) -> String {
    let n = text.chars().count();
    format!("{text}{}", " ".repeat(width.saturating_sub(n)))
}

/// Every setting of either table, `this`'s order first, with both values ([`MISSING`] where a
/// side lacks it) and whether they differ.
fn side_by_side<'a>(
    this: &'a [Fact],
    baseline: &'a [Fact],
) -> Vec<(&'a str, &'a str, &'a str, bool)> {
    let value = |facts: &'a [Fact], setting: &str| {
        facts.iter().find(|f| f.setting == setting).map_or(MISSING, |f| f.value.as_str())
    };
    let mut settings: Vec<&str> = this.iter().map(|f| f.setting.as_str()).collect();
    for f in baseline {
        if !settings.contains(&f.setting.as_str()) {
            settings.push(&f.setting);
        }
    }
    let differing = config_diff(this, baseline);
    settings
        .into_iter()
        .map(|s| {
            let differs = differing.iter().any(|d| d.setting == s);
            (s, value(this, s), value(baseline, s), differs)
        })
        .collect()
}

/// The machine facts as a terminal table: `setting  value`; with a baseline, three columns
/// `setting | this | baseline`, long values wrapped, and rows that differ marked `≠`.
pub fn facts_text(this: &[Fact], baseline: Option<&[Fact]>) -> String {
    let mut out = String::new();
    let Some(baseline) = baseline else {
        let width = this.iter().map(|f| f.setting.chars().count()).max().unwrap_or(0);
        for f in this {
            let _ = writeln!(out, "{}  {}", pad(&f.setting, width), f.value);
        }
        return out;
    };
    let rows = side_by_side(this, baseline);
    let width = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0).max("setting".len());
    let this_width = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0).clamp(4, COLUMN);
    let _ = writeln!(out, "  {} | {} | baseline", pad("setting", width), pad("this", this_width));
    for (setting, a, b, differs) in &rows {
        let (a, b) = (wrap(a, COLUMN), wrap(b, COLUMN));
        for i in 0..a.len().max(b.len()) {
            let mark = if *differs && i == 0 { "≠" } else { " " };
            let name = if i == 0 { setting } else { "" };
            let left = a.get(i).map_or("", String::as_str);
            let right = b.get(i).map_or("", String::as_str);
            let line = format!("{mark} {} | {} | {right}", pad(name, width), pad(left, this_width));
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
    let differing = rows.iter().filter(|r| r.3).count();
    let _ = writeln!(
        out,
        "\n≠ marks the {differing} setting(s) that differ; {MISSING} means the machine has no such setting."
    );
    out
}

/// The machine facts' section, first on every report page.
pub const MACHINE: Section =
    Section { area: Area::Machine, id: "chart-machine", title: "Machine", wide: true };

/// The report's "Machine" section: the facts as an HTML table (`setting`, `value`), or with a
/// baseline three columns (`setting`, `this`, `baseline`) with the differing rows marked `≠`
/// (and `class="differs"`), so a configuration diff is read in place.
pub fn facts_part(this: &[Fact], baseline: Option<&[Fact]>) -> Part {
    let mut part = MACHINE.part(None);
    let mut table = String::from("<table class=\"facts-table machine-facts\">");
    let caption = match baseline {
        None => {
            table.push_str("<thead><tr><th>setting</th><th>value</th></tr></thead><tbody>");
            for f in this {
                let _ = write!(
                    table,
                    "<tr data-setting=\"{s}\"><th scope=\"row\">{s}</th><td>{}</td></tr>",
                    esc(&f.value),
                    s = esc(&f.setting)
                );
            }
            "Read from CPUID, sysfs, /proc and SMBIOS when the run was taken.".to_string()
        }
        Some(baseline) => {
            table.push_str(
                "<thead><tr><th class=\"mark\"><span class=\"sr\">differs</span></th>\
                 <th>setting</th><th>this</th><th>baseline</th></tr></thead><tbody>",
            );
            let rows = side_by_side(this, baseline);
            for (setting, a, b, differs) in &rows {
                let (class, mark) = if *differs { (" class=\"differs\"", "≠") } else { ("", "") };
                let _ = write!(
                    table,
                    "<tr{class} data-setting=\"{s}\"><td class=\"mark\">{mark}</td>\
                     <th scope=\"row\">{s}</th><td>{}</td><td>{}</td></tr>",
                    esc(a),
                    esc(b),
                    s = esc(setting)
                );
            }
            let differing = rows.iter().filter(|r| r.3).count();
            format!(
                "Read from CPUID, sysfs, /proc and SMBIOS when each run was taken. {differing} of \
                 {} settings differ (marked ≠); {MISSING} means the machine has no such setting.",
                rows.len()
            )
        }
    };
    table.push_str("</tbody></table>");
    part.figure = Some(Figure { svg: table, caption: esc(&caption), after: String::new() });
    part
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> Topology {
        let xml = include_str!("../../topo/tests/fixtures/four_nodes_memory_only_offline.xml");
        Topology::from_xml(xml).expect("fixture")
    }

    #[test]
    fn numactl_layout_matches_numactl() {
        let expected = "\
available: 4 nodes (0-3)
node 0 cpus: 0 1 2 3
node 0 size: 2048 MB
node 0 free: unknown
node 1 cpus: 4 5 6 7
node 1 size: 2048 MB
node 1 free: unknown
node 2 cpus: 8 9
node 2 size: 2048 MB
node 2 free: unknown
node 3 cpus:
node 3 size: 1024 MB
node 3 free: unknown
node distances:
node   0   1   2   3 
  0:  10  16  22  30 
  1:  16  10  16  28 
  2:  22  16  10  26 
  3:  30  28  26  10 
";
        assert_eq!(numactl_hardware(&fixture()), expected);
    }

    #[test]
    fn text_view_marks_memory_only_and_offline() {
        let text = topology_text(&fixture());
        assert!(text.contains("offline CPUs: 10-11"), "{text}");
        assert!(text.contains("memory only"), "{text}");
        assert!(text.contains("    3   30   28   26   10"), "{text}");
    }

    fn facts(pairs: &[(&str, &str)]) -> Vec<Fact> {
        pairs.iter().map(|(s, v)| Fact { setting: (*s).into(), value: (*v).into() }).collect()
    }

    #[test]
    fn facts_text_has_two_columns_and_marks_differences_with_a_baseline() {
        let a = facts(&[("CPU model", "AMD EPYC"), ("Sockets", "1"), ("THP", "madvise")]);
        let b = facts(&[("CPU model", "Xeon"), ("Sockets", "1"), ("Microcode", "0x2b")]);
        assert_eq!(facts_text(&a, None), "CPU model  AMD EPYC\nSockets    1\nTHP        madvise\n");
        let text = facts_text(&a, Some(&b));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "  setting   | this     | baseline");
        assert_eq!(lines[1], "≠ CPU model | AMD EPYC | Xeon");
        assert_eq!(lines[2], "  Sockets   | 1        | 1");
        assert_eq!(lines[3], "≠ THP       | madvise  | —");
        assert_eq!(lines[4], "≠ Microcode | —        | 0x2b");
        assert!(text.contains("marks the 3 setting(s) that differ"), "{text}");
    }

    #[test]
    fn long_values_wrap_in_the_three_column_table() {
        let long =
            "Mitigation: Retpolines; IBPB: conditional; IBRS_FW; STIBP: disabled; RSB filling";
        let a = facts(&[("Vulnerability spectre_v2", long)]);
        let b = facts(&[("Vulnerability spectre_v2", "Not affected")]);
        let text = facts_text(&a, Some(&b));
        let rows: Vec<&str> = text.lines().skip(1).take_while(|l| !l.is_empty()).collect();
        assert!(rows.len() > 1, "{text}");
        assert!(
            rows[0].starts_with("≠ Vulnerability spectre_v2 | Mitigation: Retpolines;"),
            "{text}"
        );
        assert!(rows[0].ends_with("| Not affected"), "{text}");
        // Every word of the value survives the wrapping, in order.
        let joined: Vec<&str> =
            rows.iter().map(|r| r.split('|').nth(1).unwrap_or("").trim()).collect();
        assert_eq!(joined.join(" "), long);
        for w in [5, 12, 44] {
            for line in wrap(long, w) {
                assert!(line.chars().count() <= w || !line.contains(' '), "{line:?} at {w}");
            }
        }
        assert_eq!(wrap("", 10), vec![String::new()]);
    }

    #[test]
    fn facts_part_is_the_machine_section() {
        let a = facts(&[("CPU model", "AMD <EPYC>"), ("Sockets", "1")]);
        let part = facts_part(&a, None);
        assert_eq!((part.area, part.id.as_str(), part.wide), (Area::Machine, MACHINE.id, true));
        let table = &part.figure.as_ref().expect("a table").svg;
        assert!(
            table.contains("<th scope=\"row\">CPU model</th><td>AMD &lt;EPYC&gt;</td>"),
            "{table}"
        );
        assert!(!table.contains("differs"));
        let html = chart::render_part(&part, "unused");
        assert!(html.starts_with("<section id=\"sec-machine\" class=\"wide\">"), "{html}");

        let b = facts(&[("CPU model", "Xeon"), ("Sockets", "1")]);
        let part = facts_part(&a, Some(&b));
        let table = &part.figure.as_ref().expect("a table").svg;
        assert_eq!(table.matches("<tr class=\"differs\"").count(), 1, "{table}");
        assert!(table.contains("<td class=\"mark\">≠</td><th scope=\"row\">CPU model</th><td>AMD &lt;EPYC&gt;</td><td>Xeon</td>"), "{table}");
        assert!(table.contains("<th>this</th><th>baseline</th>"));
        assert!(part.figure.as_ref().expect("figure").caption.contains("1 of 2 settings differ"));
    }
}
