//! `fleet.html` in headless Chromium (the browser tier): a synthetic fleet's page builds every
//! section with nothing logged, marks the steady host's figure as an outlier, gives every host
//! with an injected shift a timeline and a row among the changes, and lists the configuration
//! change that moved nothing.
//!
//! Needs `/usr/bin/chromium` (Debian package `chromium`); a passing run leaves the page and its
//! screenshot in `target/tmp/report-browser/`.

use std::path::Path;
use test_tier::browser;

use fleet::analysis::{analyse, Options};
use fleet::synthetic::{generate, made_up_machine, Plan};
use results::fleet::ReportFigures;
use test_support::browser::open_page;

/// Three made-up reports of one machine.
fn machine() -> Vec<ReportFigures> {
    made_up_machine(
        &[
            ("Idle DRAM latency", "ns", 100.0, 1.0),
            ("Peak bandwidth", "GB/s", 20.0, -0.2),
            ("compress lz4", "MB/s", 800.0, 8.0),
        ],
        &[("CPU model", "Xeon"), ("Kernel", "6.1"), ("THP", "madvise"), ("Microcode", "0x1")],
    )
}

#[browser]
fn fleet_page_in_headless_chromium_marks_what_was_injected() {
    let (reports, truth) = generate(&machine(), &Plan::new(24, 30, 2, 3)).expect("fleet");
    let analysis = analyse(&reports, &Options::default());
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let page = tmp.join(format!("fleet-{}.html", std::process::id()));
    let html = fleet::page::render(&analysis, "a synthetic fleet", "", "test");
    std::fs::write(&page, &html).expect("write the page");
    let dom = open_page(tmp, &page, "fleet");
    let _ = std::fs::remove_file(&page);
    for id in
        ["sec-fleet", "sec-class-0", "sec-class-1", "sec-changes", "sec-config", "sec-timelines"]
    {
        assert!(dom.contains(&format!("<section id=\"{id}\"")), "no section {id}");
    }
    for shift in &truth.shifts {
        assert!(
            dom.contains(&format!("id=\"host-{}\"", shift.host)),
            "no timeline of {}",
            shift.host
        );
        assert!(
            dom.contains(&format!("<tr data-host=\"{}\" data-at=", shift.host)),
            "no change row of {}",
            shift.host
        );
    }
    let steady = truth.steady.as_ref().expect("a steady host");
    let row = dom
        .split(&format!("<tr data-host=\"{}\">", steady.host))
        .nth(1)
        .and_then(|rest| rest.split("</tr>").next())
        .expect("the steady host's row");
    assert!(
        row.contains(&format!("worse outlier\" data-figure=\"{}\"", steady.figure)),
        "the steady host's {} is not marked: {row}",
        steady.figure
    );
    let quiet = truth.config_only.as_ref().expect("a configuration-only change");
    let config = dom.split("<section id=\"sec-config\"").nth(1).expect("the section");
    assert!(config.contains(&format!("<tr data-host=\"{}\">", quiet.host)), "{config}");
}
