//! Where the CPUs sat through a report: each step whose figures depend on it was probed before
//! and after (`experiment::placement`); here the steps are classified together
//! ([`measure::placement::classify`]) and their figures labelled with the placement they were
//! taken in — the same way when the report runs and when `report --from-db` draws it again.

use std::ops::Range;

use chart::Part;
use measure::placement::{classify, Regime, RunPlacement};
use report::html::ReportData;
use results::StoredRun;

/// A probed step of a report: its label, its placement, and the page's parts it drew.
#[derive(Debug, Clone)]
pub struct ProbedStep {
    pub label: String,
    pub placement: RunPlacement,
    /// Its parts in [`ReportData::parts`].
    pub parts: Range<usize>,
}

/// The placement a stored run was measured in, if it was probed.
pub fn of_run(run: &StoredRun) -> Option<RunPlacement> {
    RunPlacement::from_parameters(&run.parameters)
}

/// A step's sections say the placement it was measured in, from its own probes alone (so a
/// run drawn alone draws the same section as in its report).
pub fn label_sections(parts: &mut [Part], placement: Option<&RunPlacement>) {
    if let Some(p) = placement {
        experiment::placement::label_sections(parts, p);
    }
}

/// Classifies the probed steps of a page together, labels each step's figures with the
/// placement (and, when the run saw more than one, the regime) they were taken in, and keeps
/// the classification with the page (its notes, its table, its JSON).
pub fn finish(data: &mut ReportData, probed: &[ProbedStep]) {
    if probed.is_empty() {
        data.placement = None;
        return;
    }
    let steps: Vec<(String, RunPlacement)> =
        probed.iter().map(|s| (s.label.clone(), s.placement.clone())).collect();
    let summary = classify(&steps);
    for (step, regime) in probed.iter().zip(&summary.steps) {
        // The word when it tells something: two placements in the run, or a far one.
        let regime = (summary.changed || regime.regime != Regime::Near).then_some(regime.regime);
        if let Some(parts) = data.parts.get_mut(step.parts.clone()) {
            experiment::placement::label_headlines(parts, &step.placement, regime);
        }
    }
    data.placement = Some(summary);
}

#[cfg(test)]
mod tests {
    use super::*;
    use chart::{Area, Figure, Headline};
    use measure::placement::{PairProbe, Probe};

    fn placed(before: f64, after: f64) -> RunPlacement {
        let probe = |ns| Probe { pairs: vec![PairProbe::new(0, 1, "same L3", true, ns)] };
        RunPlacement::probed(vec![0, 1], Some(probe(before)), Some(probe(after)))
    }

    fn part(id: &str) -> Part {
        let mut p = Part::new(Area::Memory, id, id, false)
            .with_figure(Some(Figure { svg: "<svg/>".into(), ..Figure::default() }));
        p.headlines.push(Headline::new(id, "1", "detail"));
        p
    }

    #[test]
    fn a_report_that_saw_two_placements_labels_each_steps_figures_with_its_own() {
        let topology = topo::Topology::from_synthetic("pack:1 [numa(memory=1GiB)] core:2 pu:1")
            .expect("topology");
        let mut data = ReportData::new("quick", "test", topology, None);
        data.parts = vec![part("chart-a"), part("chart-b"), part("chart-c")];
        let probed = vec![
            ProbedStep { label: "a".into(), placement: placed(80.0, 85.0), parts: 0..1 },
            // chart-b was drawn by a step without probes.
            ProbedStep { label: "c".into(), placement: placed(370.0, 380.0), parts: 2..3 },
        ];
        finish(&mut data, &probed);
        let summary = data.placement.as_ref().expect("a summary");
        assert!(summary.changed);
        assert_eq!(summary.regime_of("c"), Some(Regime::Far));
        let detail = |i: usize| data.parts[i].headlines[0].detail.clone();
        assert_eq!(detail(0), "detail; placement near: 0↔1 80–85 ns");
        assert_eq!(detail(1), "detail");
        assert_eq!(detail(2), "detail; placement far: 0↔1 370–380 ns");
        // The page says it: the change in the notes, each step in the table.
        let html = report::html::render_html(&data);
        assert!(html.contains("The placement of the CPUs changed during this run"), "notes");
        assert!(html.contains("<tr class=\"regime-far\"><td>c</td><td>far</td>"), "table");
        // One placement throughout: the figures carry the hand-off, no regime word.
        let mut data = ReportData::new("quick", "test", data.topology.clone(), None);
        data.parts = vec![part("chart-a")];
        finish(
            &mut data,
            &[ProbedStep { label: "a".into(), placement: placed(80.0, 85.0), parts: 0..1 }],
        );
        assert_eq!(data.parts[0].headlines[0].detail, "detail; placement 0↔1 80–85 ns");
        assert!(!data.placement.as_ref().is_some_and(|p| p.changed));
        let html = report::html::render_html(&data);
        assert!(html.contains("<td>a</td><td>one throughout</td><td>0↔1 80–85 ns</td>"), "{html}");
        // Nothing probed: no summary.
        let mut data = ReportData::new("quick", "test", data.topology.clone(), None);
        finish(&mut data, &[]);
        assert!(data.placement.is_none());
    }
}
