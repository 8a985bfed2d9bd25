//! Which note explains which section: a note is attached to a chart's section when it mentions
//! the section's subject ([`SECTION_KEYWORDS`]); a section without data shows its notes as the
//! reason, or the run's interruption, or a plain statement.

/// Words that attach a note to a section, by chart id (case-insensitive substrings). A note
/// that matches none of them is still listed under "Notes" at the end of the page.
pub const SECTION_KEYWORDS: &[(&str, &[&str])] = &[
    ("chart-latency-size", &["latency at", "latency by", "working-set", "working set", "sweep"]),
    ("chart-latency-matrix", &["node×node latency", "latency matrix", "node x node latency"]),
    (
        "chart-bandwidth-matrix",
        &["node×node bandwidth", "bandwidth matrix", "node x node bandwidth"],
    ),
    ("chart-bandwidth-threads", &["bandwidth by thread", "thread count", "bandwidth scaling"]),
    ("chart-loaded-latency", &["loaded latency", "loaded-latency"]),
    ("chart-slb", &["slb", "silly little benchmark"]),
    ("chart-c2c", &["core to core", "c2c"]),
    ("chart-contention", &["lock contention"]),
];

/// Why a section has no chart: its notes, or a plain statement.
pub(super) fn not_measured_reason(id: &str, notes: &[String]) -> String {
    let keywords = SECTION_KEYWORDS.iter().find(|(k, _)| *k == id).map_or(&[][..], |(_, w)| *w);
    let matching: Vec<&str> = notes
        .iter()
        .filter(|n| {
            let lower = n.to_lowercase();
            keywords.iter().any(|k| lower.contains(k))
        })
        .map(String::as_str)
        .collect();
    if !matching.is_empty() {
        return matching.join(" ");
    }
    match notes.iter().find(|n| n.to_lowercase().contains("interrupted")) {
        Some(n) => n.clone(),
        None => "no data for this section in this run".to_string(),
    }
}
