//! The terminal summary of `platscope report`: what it concludes, and that an interrupted run
//! concludes nothing it did not measure.

#[path = "../../report/tests/it/common/mod.rs"]
mod common;

use common::*;
use suite::summary::summary_text;

#[test]
fn a_complete_run_states_its_conclusions() {
    let text = summary_text(&sample().page());
    println!("{text}");
    assert!(text.contains("stops growing at 3 thread(s)"), "{text}");
    assert!(text.contains("ns idle"), "{text}");
    assert!(text.contains("× the time per store with"), "{text}");
    let page = report::html::render_html(&sample().page());
    assert!(page.contains("× the time per store with"), "the page says it too");
}

#[test]
fn an_interrupted_run_draws_no_conclusion_from_what_it_missed() {
    let mut data = sample();
    if let Some(s) = data.bandwidth_scaling.as_mut() {
        s.steps.truncate(1);
        s.saturated_at = None;
        s.interrupted = true;
    }
    if let Some(c) = data.loaded_latency.as_mut() {
        c.points.truncate(1);
        c.interrupted = true;
    }
    for r in data.slb_scaling.iter_mut().skip(1) {
        r.interrupted = true;
    }
    let text = summary_text(&data.page());
    println!("{text}");
    assert!(!text.contains("still growing"), "{text}");
    assert!(text.contains("saturation unknown (interrupted"), "{text}");
    assert!(!text.contains("ns idle"), "{text}");
    assert!(text.contains("interrupted before the idle point: no comparison"), "{text}");
    assert!(!text.contains("× the time per store with"), "{text}");
    assert!(text.contains("interrupted: partial runs left out"), "{text}");
    // The page leaves the partial runs out as well.
    assert!(!report::html::render_html(&data.page()).contains("the time per store with"));
}

/// Where the core clock could not be trusted (two methods disagreed), the summary and the page
/// say "cycles unknown" rather than leaving the figure out or printing a wrong one.
#[test]
fn an_unknown_clock_says_cycles_unknown() {
    let mut data = sample();
    for p in &mut data.latency_sweep {
        p.cycles = None;
    }
    let text = summary_text(&data.page());
    assert!(text.contains("· cycles unknown ("), "{text}");
    let page = report::html::render_html(&data.page());
    assert!(page.contains("cycles unknown"), "the L1 card says so");
    let known = summary_text(&sample().page());
    assert!(!known.contains("cycles unknown") && known.contains(" cycles ("), "{known}");
}
