//! The placement probe around a run whose figures depend on where its CPUs sit
//! ([`Experiment::placement_cpus`](crate::Experiment::placement_cpus)): a short cache-line
//! hand-off between those CPUs just before the run and just after it, kept with the run
//! (`parameters.placement`) and said with its figures. The probe itself is measured by
//! `membench` and handed in by the binary ([`Globals::placement_probe`](crate::Globals)), so
//! this crate needs no benchmark.
//!
//! What it means is [`measure::placement`]'s: regimes, a change, a contradiction with the
//! topology, and which runs cannot be compared.

use std::fmt::Write as _;

use chart::svg::esc;
use chart::Part;
use measure::placement::{Probe, Regime, RunPlacement};
use topo::Topology;

/// Measures one probe between `cpus` (at least two) on `topology`: `Err(why)` in one line when
/// it cannot (a CPU not allowed, Ctrl-C).
pub type ProbeFn = fn(&[u32], &Topology) -> Result<Probe, String>;

/// The probe before (or after) a run on `cpus`, or why there is none.
pub(crate) fn probe(
    probe: Option<ProbeFn>,
    cpus: &[u32],
    topology: &Topology,
) -> Result<Probe, String> {
    match probe {
        Some(probe) => probe(cpus, topology),
        None => Err("this build has no placement probe".into()),
    }
}

/// Says a run's placement in each section it draws, under its chart: what the probes
/// measured, and whether the placement changed during the run ([`RunPlacement::describe`]).
/// The same from the run alone, wherever it is drawn: at run time, in a report, from the store.
pub fn label_sections(parts: &mut [Part], placement: &RunPlacement) {
    let sentence = placement.describe();
    for part in parts.iter_mut() {
        if let Some(figure) = &mut part.figure {
            let _ = write!(figure.after, "<p class=\"placement\">{}</p>", esc(&sentence));
        }
    }
}

/// Labels a run's headline and compared figures with the placement they were taken in: the
/// hand-off in a few words, and the regime when the run it belongs to saw more than one
/// (`regime`: from [`measure::placement::classify`] over the whole report).
pub fn label_headlines(parts: &mut [Part], placement: &RunPlacement, regime: Option<Regime>) {
    if !placement.measured() {
        return;
    }
    let hand_off = placement.short();
    let label = match regime {
        Some(r @ (Regime::Near | Regime::Far | Regime::Moved)) => {
            format!("placement {}: {hand_off}", r.name())
        }
        _ if placement.moved().is_some() => format!("placement moved: {hand_off}"),
        _ => format!("placement {hand_off}"),
    };
    for part in parts.iter_mut() {
        for h in part.headlines.iter_mut().chain(part.compared.iter_mut()) {
            if h.detail.is_empty() {
                h.detail = label.clone();
            } else {
                h.detail = format!("{}; {label}", h.detail);
            }
        }
    }
}

/// The line the terminal prints after a run's own text.
pub fn text_line(placement: &RunPlacement) -> String {
    format!("{}\n", placement.describe())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chart::{Area, Figure, Headline};
    use measure::placement::PairProbe;

    fn placed(before: f64, after: f64) -> RunPlacement {
        let probe = |ns| Probe { pairs: vec![PairProbe::new(0, 1, "same L3", true, ns)] };
        RunPlacement::probed(vec![0, 1], Some(probe(before)), Some(probe(after)))
    }

    fn part() -> Part {
        let mut part = Part::new(Area::Memory, "chart-x", "X", false)
            .with_figure(Some(Figure { svg: "<svg/>".into(), ..Figure::default() }));
        part.headlines.push(Headline::new("bandwidth", "57 GB/s", "2 threads"));
        part.compared.push(Headline::new("bandwidth, 2 threads", "57 GB/s", ""));
        part
    }

    #[test]
    fn sections_and_figures_carry_the_placement() {
        let mut parts = vec![part(), Part::new(Area::Memory, "chart-empty", "Empty", false)];
        label_sections(&mut parts, &placed(82.0, 85.0));
        let after = &parts[0].figure.as_ref().map(|f| f.after.clone()).unwrap_or_default();
        assert!(
            after.starts_with("<p class=\"placement\">Placement: a cache line&#39;s round trip"),
            "{after}"
        );
        assert!(after.contains("0↔1 (same L3) 82–85 ns"), "{after}");
        assert!(parts[1].figure.is_none(), "a section without a chart gets nothing");
        label_headlines(&mut parts, &placed(82.0, 85.0), None);
        assert_eq!(parts[0].headlines[0].detail, "2 threads; placement 0↔1 82–85 ns");
        assert_eq!(parts[0].compared[0].detail, "placement 0↔1 82–85 ns");
        // In a report that saw two placements, the regime's word.
        let mut parts = vec![part()];
        label_headlines(&mut parts, &placed(380.0, 390.0), Some(Regime::Far));
        assert_eq!(parts[0].headlines[0].detail, "2 threads; placement far: 0↔1 380–390 ns");
        // A run that moved says so, alone too.
        let mut parts = vec![part()];
        label_headlines(&mut parts, &placed(82.0, 380.0), None);
        assert_eq!(parts[0].headlines[0].detail, "2 threads; placement moved: 0↔1 82→380 ns");
        // Nothing probed: the figures stay as they were.
        let mut parts = vec![part()];
        label_headlines(&mut parts, &RunPlacement::default(), Some(Regime::Unprobed));
        assert_eq!(parts[0].headlines[0].detail, "2 threads");
    }
}
