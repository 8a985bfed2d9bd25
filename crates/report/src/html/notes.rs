//! Notes: what a run could not measure, or a caveat, each tied to the section it explains by
//! the step that wrote it — never by matching words in its text.

use serde::{Deserialize, Serialize};

/// A part of the page a note belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Section {
    /// Latency by working-set size (and the prefetch self-check drawn with it).
    LatencySize,
    LatencyMatrix,
    BandwidthMatrix,
    BandwidthThreads,
    LoadedLatency,
    /// The SLB by worker count and by placement.
    Slb,
    /// Throughput by threads and units (`report --full`).
    CpuScale,
    /// Cache-line hand-off between CPU pairs (`report --full`).
    C2c,
    /// Lock contention in shared memory (`report --full`).
    Contention,
    /// The run as a whole (an interruption, a caveat for every section).
    Run,
}

impl Section {
    /// The id of the section's chart on the page; `None` for the whole run.
    pub fn chart_id(self) -> Option<&'static str> {
        Some(match self {
            Section::LatencySize => "chart-latency-size",
            Section::LatencyMatrix => "chart-latency-matrix",
            Section::BandwidthMatrix => "chart-bandwidth-matrix",
            Section::BandwidthThreads => "chart-bandwidth-threads",
            Section::LoadedLatency => "chart-loaded-latency",
            Section::Slb => "chart-slb",
            Section::CpuScale => "chart-cpu-scale",
            Section::C2c => "chart-c2c",
            Section::Contention => "chart-contention",
            Section::Run => return None,
        })
    }
}

/// One sentence for the reader, and the section it explains.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    pub section: Section,
    pub text: String,
}

impl Note {
    pub fn new(section: Section, text: impl Into<String>) -> Self {
        Self { section, text: text.into() }
    }
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// Why the section with chart `id` has no chart: its own notes, else the run's, else a plain
/// statement.
pub(super) fn not_measured_reason(id: &str, notes: &[Note]) -> String {
    let own: Vec<&str> = notes
        .iter()
        .filter(|n| n.section.chart_id() == Some(id))
        .map(|n| n.text.as_str())
        .collect();
    if !own.is_empty() {
        return own.join(" ");
    }
    let run: Vec<&str> =
        notes.iter().filter(|n| n.section == Section::Run).map(|n| n.text.as_str()).collect();
    if run.is_empty() {
        "no data for this section in this run".to_string()
    } else {
        run.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_gets_its_own_notes_then_the_runs() {
        let notes = vec![
            Note::new(Section::Slb, "SLB with 2 workers: not measured (no memory)"),
            Note::new(Section::Run, "interrupted with Ctrl-C"),
        ];
        assert_eq!(not_measured_reason("chart-slb", &notes), notes[0].text);
        assert_eq!(not_measured_reason("chart-loaded-latency", &notes), "interrupted with Ctrl-C");
        assert_eq!(not_measured_reason("chart-slb", &[]), "no data for this section in this run");
        // Words in the text do not move a note: this one mentions the SLB but is the matrix's.
        let matrix = [Note::new(Section::LatencyMatrix, "slb-like words")];
        assert_eq!(
            not_measured_reason("chart-slb", &matrix),
            "no data for this section in this run"
        );
    }
}
