//! Steps that reports of earlier versions stored, read back as today's outcomes (never
//! written).

use super::{LocksOutcome, PoliciesOutcome, PolicyRow};
use crate::slb::SlbResult;

/// The SLB by placement as earlier versions' reports stored it (read back, never written).
pub(super) const LEGACY_POLICIES: &str = "report: SLB placement";

/// The SLB by worker count as earlier versions' reports stored it: the list of runs that
/// `mem scale` stores today, read back as it is.
pub(super) const LEGACY_SCALE: &str = "report: SLB scaling";

/// The lock steps of reports stored by earlier versions, each half of this outcome (read
/// back, never written).
pub(super) const LEGACY_LOCKS: &str = "report: lock contention";
pub(super) const LEGACY_LOCK_PLACEMENT: &str = "report: lock placement";

/// `mem compare-policies` from the step earlier reports stored: a list of (policy, its run or
/// why it was skipped).
pub(super) fn policies(result: serde_json::Value) -> Result<PoliciesOutcome, serde_json::Error> {
    let listed: Vec<(String, Result<SlbResult, String>)> = serde_json::from_value(result)?;
    let rows = listed
        .into_iter()
        .map(|(policy, outcome)| match outcome {
            Ok(r) => PolicyRow { policy, result: Some(r), skipped: None },
            Err(why) => PolicyRow { policy, result: None, skipped: Some(why) },
        })
        .collect();
    Ok(PoliciesOutcome { rows, interrupted: false })
}

/// `mem locks` from either half earlier reports stored: the runs ([`LEGACY_LOCKS`]) or the
/// placement scenarios ([`LEGACY_LOCK_PLACEMENT`]).
pub(super) fn locks(
    kind: &str,
    result: serde_json::Value,
) -> Result<LocksOutcome, serde_json::Error> {
    Ok(if kind == LEGACY_LOCKS {
        LocksOutcome { runs: serde_json::from_value(result)?, ..LocksOutcome::default() }
    } else {
        LocksOutcome { placement: serde_json::from_value(result)?, ..LocksOutcome::default() }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use experiment::Outcome;
    use serde_json::json;

    /// Reports of earlier versions stored the placement step as a list of (policy, run or
    /// why not), and the lock step as two lists: each reads back as today's outcome.
    #[test]
    fn earlier_reports_placement_and_lock_steps_read_back() {
        let stored = json!([["local", { "Err": "skipped: no memory" }], ["remote", { "Err": "skipped: one node" }]]);
        let read = PoliciesOutcome::from_stored("report: SLB placement", stored).unwrap();
        assert_eq!(read.rows.len(), 2);
        assert_eq!(read.rows[1].policy, "remote");
        assert_eq!(read.rows[1].skipped.as_deref(), Some("skipped: one node"));
        assert!(read.rows.iter().all(|r| r.result.is_none()));

        let placed = json!([["line remote", { "Err": "skipped: one node" }]]);
        let locks = LocksOutcome::from_stored("report: lock placement", placed).unwrap();
        assert!(locks.runs.is_empty() && locks.placement.len() == 1);
        let runs = LocksOutcome::from_stored("report: lock contention", json!([])).unwrap();
        assert!(runs.runs.is_empty() && runs.placement.is_empty());
        // Today's kind is the outcome as stored.
        let again = LocksOutcome::from_stored("mem locks", serde_json::to_value(&locks).unwrap());
        assert_eq!(again.unwrap().placement[0].0, "line remote");
        assert!(LocksOutcome::KINDS.contains(&"report: lock placement"));
        assert_eq!(LocksOutcome::default().kind(), "mem locks", "never written under an old kind");
    }
}
