//! Notes: what a run could not measure, or a caveat, each tied to the section it explains by
//! the step that wrote it — never by matching words in its text.

use serde::{Deserialize, Serialize};

/// The part of the page a note belongs to: one section, by its chart's id (the drawing crate's
/// `chart::Section::id`), or the run as a whole.
///
/// Stored as the id without its `chart-` prefix (`loaded-latency`), or `run`: the names the
/// sections' notes have always been stored under, so notes of earlier reports still land on
/// their sections.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Section {
    /// The section whose chart has this id (`chart-loaded-latency`).
    Chart(String),
    /// The run as a whole (an interruption, a caveat for every section).
    Run,
}

/// How [`Section::Run`] is stored.
const RUN: &str = "run";

impl Section {
    /// The section of `section`'s chart.
    pub fn of(section: chart::Section) -> Self {
        Section::Chart(section.id.to_string())
    }

    /// The id of the section's chart on the page; `None` for the whole run.
    pub fn chart_id(&self) -> Option<&str> {
        match self {
            Section::Chart(id) => Some(id),
            Section::Run => None,
        }
    }
}

impl Serialize for Section {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Section::Chart(id) => serializer.serialize_str(id.strip_prefix("chart-").unwrap_or(id)),
            Section::Run => serializer.serialize_str(RUN),
        }
    }
}

impl<'de> Deserialize<'de> for Section {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Ok(if name == RUN { Section::Run } else { Section::Chart(format!("chart-{name}")) })
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

    /// Notes are stored with the page: every section name earlier versions wrote reads back onto
    /// its section, and what is written now is what they wrote.
    #[test]
    fn notes_read_and_write_the_section_names_stored_before() {
        for (stored, id) in [
            ("latency-size", "chart-latency-size"),
            ("latency-matrix", "chart-latency-matrix"),
            ("bandwidth-matrix", "chart-bandwidth-matrix"),
            ("bandwidth-threads", "chart-bandwidth-threads"),
            ("loaded-latency", "chart-loaded-latency"),
            ("slb", "chart-slb"),
            ("cpu-scale", "chart-cpu-scale"),
            ("c2c", "chart-c2c"),
            ("contention", "chart-contention"),
        ] {
            let json = format!("{{\"section\":\"{stored}\",\"text\":\"t\"}}");
            let note: Note = serde_json::from_str(&json).unwrap();
            assert_eq!(note.section.chart_id(), Some(id), "{stored}");
            assert_eq!(serde_json::to_string(&note).unwrap(), json);
        }
        let run: Note = serde_json::from_str("{\"section\":\"run\",\"text\":\"t\"}").unwrap();
        assert_eq!(run.section, Section::Run);
        assert_eq!(serde_json::to_value(&run).unwrap()["section"], "run");
    }

    #[test]
    fn a_section_gets_its_own_notes_then_the_runs() {
        let notes = vec![
            Note::new(
                Section::Chart("chart-slb".into()),
                "SLB with 2 workers: not measured (no memory)",
            ),
            Note::new(Section::Run, "interrupted with Ctrl-C"),
        ];
        assert_eq!(not_measured_reason("chart-slb", &notes), notes[0].text);
        assert_eq!(not_measured_reason("chart-loaded-latency", &notes), "interrupted with Ctrl-C");
        assert_eq!(not_measured_reason("chart-slb", &[]), "no data for this section in this run");
        // Words in the text do not move a note: this one mentions the SLB but is the matrix's.
        let matrix = [Note::new(Section::Chart("chart-latency-matrix".into()), "slb-like words")];
        assert_eq!(
            not_measured_reason("chart-slb", &matrix),
            "no data for this section in this run"
        );
    }
}
