//! Windows in which the server was away: each connection's, merged across connections.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A window in which connections were lost: from the first failure to the first transaction
/// that completed after it (merged across connections when they overlap).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outage {
    /// When the first connection was found lost, s after the first intended start.
    pub start_s: f64,
    /// When the last connection lost in the window was open again (`None`: not before the end).
    pub reconnected_s: Option<f64>,
    /// When the last of them completed a transaction again (`None`: not before the end).
    pub first_success_s: Option<f64>,
    /// Connections lost in the window.
    pub connections: u32,
    /// Transactions that failed in the window (the one that found the connection lost, and every
    /// one due while there was none).
    pub failed: u64,
    /// Those failures by cause: `connection lost`, `connection refused`, or the SQLSTATE the
    /// server answered a connection attempt with (`57P03`: starting up).
    pub causes: BTreeMap<String, u64>,
}

impl Outage {
    /// From the loss to the first success after it, s.
    pub fn time_to_first_success_s(&self) -> Option<f64> {
        self.first_success_s.map(|t| t - self.start_s)
    }
}

/// Merges each connection's outages into windows: overlapping ones (one connection lost while
/// another still was) become one; an open one runs to `end_s`.
pub fn merge_outages(mut each: Vec<Outage>, end_s: f64) -> Vec<Outage> {
    each.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    let until = |o: &Outage| o.first_success_s.unwrap_or(end_s);
    let mut out: Vec<Outage> = Vec::new();
    for o in each {
        match out.last_mut() {
            Some(last) if o.start_s <= until(last) => {
                last.first_success_s = match (last.first_success_s, o.first_success_s) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
                last.reconnected_s = match (last.reconnected_s, o.reconnected_s) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
                last.connections += o.connections;
                last.failed += o.failed;
                for (k, v) in o.causes {
                    *last.causes.entry(k).or_insert(0) += v;
                }
            }
            _ => out.push(o),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::CONNECTION_REFUSED;

    fn o(start_s: f64, first: Option<f64>, failed: u64) -> Outage {
        Outage {
            start_s,
            reconnected_s: first.map(|t| t - 0.05),
            first_success_s: first,
            connections: 1,
            failed,
            causes: [(CONNECTION_REFUSED.to_string(), failed)].into(),
        }
    }

    #[test]
    fn overlapping_connection_outages_merge_into_one_window() {
        let merged = merge_outages(
            vec![o(5.0, Some(6.0), 3), o(1.0, Some(2.0), 10), o(1.5, Some(2.5), 12)],
            10.0,
        );
        assert_eq!(merged.len(), 2, "{merged:?}");
        let first = &merged[0];
        assert_eq!((first.start_s, first.first_success_s), (1.0, Some(2.5)));
        assert_eq!((first.connections, first.failed), (2, 22));
        assert_eq!(first.causes[CONNECTION_REFUSED], 22);
        assert_eq!(first.reconnected_s, Some(2.45));
        assert_eq!(first.time_to_first_success_s(), Some(1.5));
        assert_eq!(merged[1].start_s, 5.0);
        // One connection never back: the window is open to the end and swallows later losses.
        let open = merge_outages(vec![o(1.0, None, 4), o(7.0, Some(8.0), 1)], 10.0);
        assert_eq!(open.len(), 1, "{open:?}");
        assert_eq!((open[0].first_success_s, open[0].reconnected_s), (None, None));
        assert_eq!(open[0].time_to_first_success_s(), None);
        assert!(merge_outages(Vec::new(), 1.0).is_empty());
    }
}
