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
//! runs of an Intel Xeon KVM guest (2 vCPUs, 23.5 GiB; platscope at git 40aede5, test
//! build, run one after another while other jobs kept the load average at 10–13), as
//! `platscope fleet` reads them from the store (`examples/synthetic_fleet --save-real`).

use fleet::analysis::{analyse, Analysis, Options};
use fleet::synthetic::{generate, Plan, Truth};
use results::fleet::ReportFigures;

fn real() -> Vec<ReportFigures> {
    fleet::synthetic::fixture_reports().expect("the fixture")
}

fn fleet(seed: u64) -> (Plan, Analysis, Truth) {
    let plan = Plan::new(40, 30, 2, seed);
    let (reports, truth) = generate(&real(), &plan).expect("a fleet");
    assert_eq!(reports.len(), 1200);
    (plan.clone(), analyse(&reports, &Options::default()), truth)
}

fn check(plan: &Plan, analysis: &Analysis, truth: &Truth) {
    assert_eq!(analysis.report.hosts, 40);
    assert_eq!(analysis.report.classes.len(), 2);
    assert!(
        truth.shifts.len() >= 5 && truth.shifts.iter().any(|s| !s.config.is_empty()),
        "{truth:?}"
    );
    let misses = truth.misses(plan, &analysis.report);
    assert!(misses.is_empty(), "{}", misses.join("\n"));
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
    let changed = |series: &[usize]| {
        series.iter().filter(|&&i| analysis.found_changes.iter().any(|c| c.series == i)).count()
    };
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

#[test]
fn the_check_says_what_an_analysis_missed() {
    let plan = Plan::new(40, 30, 2, 1);
    let (_, truth) = generate(&real(), &plan).expect("a fleet");
    let (quiet, _) = generate(&real(), &plan.clone().quiet()).expect("a fleet");
    let misses = truth.misses(&plan, &analyse(&quiet, &Options::default()).report);
    for shift in &truth.shifts {
        assert!(
            misses.iter().any(|m| m.contains(&format!("{} {}", shift.host, shift.figure))),
            "{misses:?}"
        );
    }
    assert!(misses.iter().any(|m| m.contains("is not an outlier")), "{misses:?}");
    assert!(misses.iter().any(|m| m.contains("not listed as moving nothing")), "{misses:?}");
}
