//! What the fleet reader (`platscope fleet`) needs of each stored report, kept compact: who ran
//! it and when, the machine and configuration facts it ran under, and its headline figures,
//! each a median with its spread. One row per report and one per headline figure, written when a
//! report is stored or pushed (and for stores written before, on the fleet reader's first read),
//! so a fleet of thousands of hosts × months of daily reports is read without its heavy runs.

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;

use serde::{Deserialize, Serialize};

use crate::{ResultStore, StoreError};

/// The command a whole report's run is stored under (its steps have their own).
pub const REPORT_COMMAND: &str = "report";

/// One report's headline figures and the facts it was measured under.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReportFigures {
    /// The `report` run's UUID: the same in every store the run is pushed to.
    pub uuid: String,
    /// The host that recorded it.
    pub host: String,
    /// As stored: `2026-11-23T21:57:23.123Z` (UTC).
    pub recorded_at: String,
    /// platscope's version line when it ran.
    pub version: String,
    /// The machine table of the report (`topo::machine_facts`: setting → value): the hardware
    /// that classes hosts and the configuration whose changes explain a shift.
    pub facts: BTreeMap<String, String>,
    /// Which fact set `facts` is ([`facts_digest`]): filled when read from a store, so a reader
    /// tells a configuration change by comparing two digests. Recording ignores it and
    /// digests `facts` itself.
    #[serde(default)]
    pub facts_digest: String,
    pub figures: Vec<HeadlineFigure>,
}

/// One headline figure of a report, as its summary names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeadlineFigure {
    /// The page's area (`Memory`, `Compression`).
    pub area: String,
    /// The figure's name as the report shows it (`idle DRAM latency`).
    pub name: String,
    /// The stored metric that backs it (`Metric::key`).
    pub metric: String,
    /// The unit's symbol (`ns`, `GB/s`): also which way is better.
    pub unit: String,
    pub median: f64,
    pub p25: f64,
    pub p75: f64,
    /// How many samples the median is of.
    pub samples: u32,
}

impl ReportFigures {
    /// The digest of [`ReportFigures::facts`] ([`facts_digest`]).
    pub fn digest(&self) -> String {
        facts_digest(&self.facts)
    }
}

/// The digest a set of facts is stored under: the first 128 bits of the SHA-256 of its JSON
/// (keys sorted), in hex. Two reports share it exactly when their facts are the same, so a
/// host's configuration changes where the digest of consecutive reports differs.
pub fn facts_digest(facts: &BTreeMap<String, String>) -> String {
    use sha2::{Digest, Sha256};
    let json = facts_json(facts);
    let hash = Sha256::digest(json.as_bytes());
    hash.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// The facts as stored: a JSON object, keys in order.
pub(crate) fn facts_json(facts: &BTreeMap<String, String>) -> String {
    // A map of strings always serialises.
    serde_json::to_string(facts).unwrap_or_else(|_| "{}".into())
}

/// Which reports the fleet reader wants. Times are compared as stored (RFC 3339 UTC text), so
/// a date stands for its midnight: `since: 2026-11-01` keeps the first of November,
/// `until: 2026-12-01` ends with the last of November.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FleetFilter {
    /// Reports recorded at or after this.
    pub since: Option<String>,
    /// Reports recorded before this.
    pub until: Option<String>,
    /// Host name patterns (`*` any run of characters, `?` one character), matched without
    /// regard to ASCII case; a report is kept when its host matches any. Empty: every host.
    pub hosts: Vec<String>,
}

impl FleetFilter {
    /// The `WHERE` clause over `fleet_reports r` and its parameters, numbered `$1, $2, …` in
    /// order of appearance (as both drivers bind them).
    pub(crate) fn clause(&self) -> (String, Vec<String>) {
        let mut terms = Vec::new();
        let mut values = Vec::new();
        let next = |value: String, values: &mut Vec<String>| {
            values.push(value);
            format!("${}", values.len())
        };
        if let Some(since) = &self.since {
            terms.push(format!("r.recorded_at >= {}", next(since.clone(), &mut values)));
        }
        if let Some(until) = &self.until {
            terms.push(format!("r.recorded_at < {}", next(until.clone(), &mut values)));
        }
        if !self.hosts.is_empty() {
            let any: Vec<String> = self
                .hosts
                .iter()
                .map(|glob| {
                    format!(
                        "lower(r.host) LIKE {} ESCAPE '\\'",
                        next(like_pattern(glob), &mut values)
                    )
                })
                .collect();
            terms.push(format!("({})", any.join(" OR ")));
        }
        let clause =
            if terms.is_empty() { String::new() } else { format!("WHERE {}", terms.join(" AND ")) };
        (clause, values)
    }

    /// The reader's statement: every kept report with its figures, in (host, time) order.
    pub(crate) fn select(&self) -> (String, Vec<String>) {
        let (clause, values) = self.clause();
        let sql = format!(
            "SELECT {} FROM fleet_reports r LEFT JOIN fleet_figures f ON f.report_id = r.id \
             {clause} ORDER BY r.host, r.recorded_at, r.id, f.position",
            crate::sql::FLEET_COLUMNS
        );
        (sql, values)
    }

    /// The distinct fact sets of the kept reports.
    pub(crate) fn select_facts(&self) -> (String, Vec<String>) {
        let (clause, values) = self.clause();
        let sql = format!(
            "SELECT digest, facts FROM fleet_facts WHERE digest IN \
             (SELECT r.facts_digest FROM fleet_reports r {clause})"
        );
        (sql, values)
    }
}

/// A host glob as a `LIKE` pattern (escape `\`), lower case.
fn like_pattern(glob: &str) -> String {
    let mut out = String::with_capacity(glob.len() + 2);
    for c in glob.to_lowercase().chars() {
        match c {
            '*' => out.push('%'),
            '?' => out.push('_'),
            '%' | '_' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// What the fleet reader needs of a store: each report's figures kept compact, read back in
/// (host, time) order without loading runs. Both stores implement it ([`crate::SqliteStore`],
/// [`crate::PgStore`]).
pub trait FleetStore: ResultStore {
    /// Records one report's figures (its facts once per distinct set); `false` when a report
    /// with its UUID was there already, which is then left as it is.
    fn record_report_figures(&mut self, figures: &ReportFigures) -> Result<bool, StoreError>;

    /// Records many reports' figures in one transaction (all or none), as
    /// [`FleetStore::record_report_figures`] does each; returns how many were new. What a
    /// backfill or a bench filling a fleet uses: one commit, not one per report.
    fn record_many_report_figures(
        &mut self,
        reports: &[ReportFigures],
    ) -> Result<usize, StoreError>;

    /// Calls `each` with every report `filter` keeps, ordered by host, then time, and returns
    /// how many it was given; `each` may stop the read early ([`ControlFlow::Break`]). Rows
    /// are read as they come (SQLite) or in batches (PostgreSQL), so memory stays bounded
    /// whatever the store holds. Each report's facts come with it, and
    /// [`ReportFigures::facts_digest`] says which reports share them.
    fn report_figures(
        &self,
        filter: &FleetFilter,
        each: &mut dyn FnMut(ReportFigures) -> ControlFlow<()>,
    ) -> Result<usize, StoreError>;

    /// The ids of the `report` runs that have no figures yet, oldest first (what
    /// `suite::figures::backfill` fills in).
    fn reports_without_figures(&self) -> Result<Vec<i64>, StoreError>;

    /// Replaces the published findings with `findings`, in one transaction (the tables are
    /// made on first use): what dashboards read of the latest analysis.
    fn publish_findings(&mut self, findings: &Findings) -> Result<(), StoreError>;

    /// Every report `filter` keeps, in one vector: for tests and small stores.
    fn all_report_figures(&self, filter: &FleetFilter) -> Result<Vec<ReportFigures>, StoreError> {
        let mut out = Vec::new();
        self.report_figures(filter, &mut |r| {
            out.push(r);
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }
}

/// What filling in the figures of reports stored without them did (`results push`, and the
/// fleet reader on its first read of a store written by an older platscope).
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct Backfill {
    /// Reports whose figures were computed and stored now.
    pub stored: usize,
    /// Reports that could not be read, each with why (they stay without figures).
    pub skipped: Vec<Unreadable>,
}

/// A report run a backfill could not read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unreadable {
    pub id: i64,
    pub why: String,
}

/// The findings of one fleet analysis as dashboards read them (`platscope fleet --publish`):
/// each publication replaces the one before, so the tables always hold the latest analysis.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Findings {
    /// When the analysis ran (RFC 3339, UTC).
    pub analysed_at: String,
    /// The reports it read, in words (`every report`, `since 2026-01-01, hosts db-*`).
    pub window: String,
    pub outliers: Vec<PublishedOutlier>,
    pub changes: Vec<PublishedChange>,
}

/// A host off its class on one figure, as published.
#[derive(Debug, Clone, PartialEq)]
pub struct PublishedOutlier {
    pub host: String,
    pub class: String,
    pub figure: String,
    pub unit: String,
    pub value: f64,
    pub class_median: f64,
    pub ratio: f64,
    pub min_effect: f64,
    /// `slower` or `faster`.
    pub verdict: String,
}

/// A change point of one host's figure, as published.
#[derive(Debug, Clone, PartialEq)]
pub struct PublishedChange {
    pub host: String,
    pub figure: String,
    pub unit: String,
    /// `recorded_at` of the first run after it.
    pub at: String,
    pub before: f64,
    pub after: f64,
    pub ratio: f64,
    pub p_value: f64,
    /// The facts that changed with it, in words (`Kernel 6.1.0-25 → 6.12.1`), empty if none.
    pub config: String,
    /// `slower` or `faster`.
    pub verdict: String,
}

/// One figure row as the reader selects it: headline id, median, p25, p75, samples.
pub(crate) type FigureRow = (i64, f64, f64, f64, i64);

/// The head of a report row: uuid, host, recorded_at, version, facts digest.
pub(crate) type ReportHead = (String, String, String, String, String);

/// Turns the reader's rows (a report's columns repeated on each of its figures) into reports.
pub(crate) struct Assembler<'a> {
    /// digest → facts.
    pub facts: HashMap<String, BTreeMap<String, String>>,
    /// headline id → (area, name, metric, unit).
    pub headlines: HashMap<i64, (String, String, String, String)>,
    current: Option<(i64, ReportFigures)>,
    pub given: usize,
    each: &'a mut dyn FnMut(ReportFigures) -> ControlFlow<()>,
}

impl<'a> Assembler<'a> {
    pub fn new(each: &'a mut dyn FnMut(ReportFigures) -> ControlFlow<()>) -> Self {
        Self { facts: HashMap::new(), headlines: HashMap::new(), current: None, given: 0, each }
    }

    /// One row of report `id`: `head` is read only for a report's first row.
    pub fn row<E>(
        &mut self,
        id: i64,
        head: impl FnOnce() -> Result<ReportHead, E>,
        figure: Option<FigureRow>,
    ) -> Result<ControlFlow<()>, E> {
        let mut flow = ControlFlow::Continue(());
        if self.current.as_ref().is_none_or(|(current, _)| *current != id) {
            flow = self.flush();
            if flow.is_break() {
                return Ok(flow);
            }
            let (uuid, host, recorded_at, version, digest) = head()?;
            let facts = self.facts.get(&digest).cloned().unwrap_or_default();
            let report = ReportFigures {
                uuid,
                host,
                recorded_at,
                version,
                facts,
                facts_digest: digest,
                figures: Vec::new(),
            };
            self.current = Some((id, report));
        }
        if let (Some((headline, median, p25, p75, samples)), Some((_, report))) =
            (figure, self.current.as_mut())
        {
            if let Some((area, name, metric, unit)) = self.headlines.get(&headline) {
                report.figures.push(HeadlineFigure {
                    area: area.clone(),
                    name: name.clone(),
                    metric: metric.clone(),
                    unit: unit.clone(),
                    median,
                    p25,
                    p75,
                    samples: u32::try_from(samples.max(0)).unwrap_or(u32::MAX),
                });
            }
        }
        Ok(flow)
    }

    /// Gives the report being assembled to the caller.
    pub fn flush(&mut self) -> ControlFlow<()> {
        match self.current.take() {
            Some((_, report)) => {
                self.given += 1;
                (self.each)(report)
            }
            None => ControlFlow::Continue(()),
        }
    }
}

/// The figures worth storing: finite (SQLite keeps no NaN) and in page order.
pub(crate) fn storable(figures: &ReportFigures) -> impl Iterator<Item = &HeadlineFigure> {
    figures
        .figures
        .iter()
        .filter(|f| f.median.is_finite() && f.p25.is_finite() && f.p75.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_become_escaped_like_patterns() {
        assert_eq!(like_pattern("DB-*"), "db-%");
        assert_eq!(like_pattern("db?1"), "db_1");
        assert_eq!(like_pattern("a_b%c\\d"), "a\\_b\\%c\\\\d");
    }

    #[test]
    fn the_reader_numbers_its_parameters_in_order_for_both_drivers() {
        let filter = FleetFilter {
            since: Some("2026-11-01".into()),
            until: Some("2026-12-01".into()),
            hosts: vec!["db-*".into(), "cache?".into()],
        };
        for (sql, values) in [filter.select(), filter.select_facts()] {
            assert_eq!(values, ["2026-11-01", "2026-12-01", "db-%", "cache_"]);
            assert_eq!(crate::sql::tests::parameters(&sql), [1, 2, 3, 4], "{sql}");
        }
        let (sql, values) = FleetFilter::default().select();
        assert!(values.is_empty() && !sql.contains("WHERE"), "{sql}");
    }

    #[test]
    fn the_digest_depends_on_the_facts_only() {
        let mut a = BTreeMap::new();
        a.insert("Kernel".to_string(), "6.1.0".to_string());
        a.insert("THP".to_string(), "madvise".to_string());
        let mut b = BTreeMap::new();
        b.insert("THP".to_string(), "madvise".to_string());
        b.insert("Kernel".to_string(), "6.1.0".to_string());
        assert_eq!(facts_digest(&a), facts_digest(&b));
        assert_eq!(facts_digest(&a).len(), 32);
        b.insert("Kernel".to_string(), "6.12.1".to_string());
        assert_ne!(facts_digest(&a), facts_digest(&b));
    }
}
