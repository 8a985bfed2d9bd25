//! The fleet reader on a fleet built from real reports of one machine: 40 hosts × 30 days in
//! two hardware classes, each run's noise drawn from the spread the machine's four reports
//! really show, with shifts injected on known days (some with a kernel or THP change the same
//! day), one configuration change that moves nothing and one host steadily worse than its
//! class (`fleet::synthetic`). Every injected shift must be found on its day (± one run) with
//! its configuration change, the steady host must be the outlier of its figure, the
//! configuration-only change must not be called a regression, and a fleet with nothing
//! injected must leave at least 95 of 100 figure series without a change.
//!
//! The fixture `tests/fixtures/reports_xeon_kvm_2cpu_40aede5.json` holds four `report --quick`
//! runs of the project VM (Intel Xeon, KVM, 2 vCPUs, 23.5 GiB; platscope at git 40aede5, test
//! build, run one after another while other jobs kept the load average at 10–13), as
//! `platscope fleet` reads them from the store (`examples/synthetic_fleet --save-real`).

use fleet::analysis::{analyse, Analysis, Options};
use fleet::synthetic::{generate, Plan, Truth};
use results::fleet::ReportFigures;


fn real() -> Vec<ReportFigures> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/reports_xeon_kvm_2cpu_40aede5.json");
    let text = std::fs::read_to_string(path).expect("the fixture");
    serde_json::from_str(&text).expect("report records")
}

/// The day (0 = the plan's first) a report's time falls on.
fn day_of(plan: &Plan, at: &str) -> i64 {
    let at: jiff::Timestamp = at.parse().expect("a time");
    let start = plan.start.to_zoned(jiff::tz::TimeZone::UTC).expect("start").timestamp();
    (at.as_second() - start.as_second()).div_euclid(86_400)
}

fn fleet(seed: u64) -> (Plan, Analysis, Truth) {
    let plan = Plan::new(40, 30, 2, seed);
    let (reports, truth) = generate(&real(), &plan).expect("a fleet");
    assert_eq!(reports.len(), 1200);
    (plan.clone(), analyse(&reports, &Options::default()), truth)
}

fn check(plan: &Plan, analysis: &Analysis, truth: &Truth) {
    let report = &analysis.report;
    assert_eq!(report.hosts, 40);
    assert_eq!(report.classes.len(), 2);
    assert!(truth.shifts.len() >= 5, "{truth:?}");
    for shift in &truth.shifts {
        let found = report.changes.iter().find(|c| {
            c.host == shift.host
                && c.figure == shift.figure
                && c.unit == shift.unit
                && (day_of(plan, &c.at) - shift.day as i64).abs() <= 1
        });
        let Some(change) = found else {
            panic!("{shift:?} not found; changes of {}: {:?}", shift.host, report.changes.iter().filter(|c| c.host == shift.host).collect::<Vec<_>>());
        };
        // The change goes the way it was injected, by about as much.
        assert!((change.ratio.ln() - shift.factor.ln()).abs() < 0.5 * shift.factor.ln().abs(), "{change:?} for {shift:?}");
        for injected in &shift.config {
            assert!(change.config.contains(injected), "{change:?} lacks {injected:?}");
        }
    }
    let steady = truth.steady.as_ref().expect("a steady host");
    assert!(
        report.outliers.iter().any(|o| o.host == steady.host && o.figure == steady.figure && o.unit == steady.unit),
        "{steady:?} is not an outlier: {:?}",
        report.outliers
    );
    let quiet = truth.config_only.as_ref().expect("a configuration-only change");
    assert!(
        report
            .config_changes_without_shift
            .iter()
            .any(|q| q.host == quiet.host && q.at == quiet.at && q.config == quiet.config),
        "{quiet:?} not listed apart: {:?}",
        report.config_changes_without_shift
    );
    for change in report.changes.iter().filter(|c| c.host == quiet.host) {
        assert!(
            !change.config.iter().any(|c| quiet.config.contains(c)),
            "the configuration-only change was called a change: {change:?}"
        );
    }
}

#[test]
fn every_injected_shift_is_found_on_its_day_with_its_configuration_change() {
    let (plan, analysis, truth) = fleet(1);
    check(&plan, &analysis, &truth);
}

#[test]
fn the_same_holds_for_other_draws_of_the_fleet() {
    for seed in 2..=6 {
        let (plan, analysis, truth) = fleet(seed);
        check(&plan, &analysis, &truth);
    }
}

#[test]
fn an_unperturbed_fleet_raises_no_change_in_95_of_100_series() {
    let plan = Plan::new(40, 30, 2, 7).quiet();
    let (reports, truth) = generate(&real(), &plan).expect("a fleet");
    assert_eq!(truth, Truth::default());
    let analysis = analyse(&reports, &Options::default());
    let changed = |series: &[usize]| series.iter().filter(|&&i| analysis.found_changes.iter().any(|c| c.series == i)).count();
    let first: Vec<usize> = (0..100).collect();
    assert!(changed(&first) <= 5, "{} of the first 100 series changed", changed(&first));
    let all: Vec<usize> = (0..analysis.fleet.series.len()).collect();
    assert!(
        changed(&all) * 20 <= all.len(),
        "{} of {} series changed: {:?}",
        changed(&all),
        all.len(),
        analysis.report.changes
    );
    assert!(analysis.report.config_changes_without_shift.is_empty());
}
