//! Where an arena's pages are, as text.

use std::fmt::Write as _;

use crate::Placement;
use topo::units::format_bytes;

/// Requested versus actual placement: one line of what was asked, a row per node.
pub fn placement_text(p: &Placement, touched_from_cpu: Option<u32>) -> String {
    let mut out = String::new();
    let cpu = touched_from_cpu.map_or("an unknown CPU".to_string(), |c| format!("CPU {c}"));
    let _ = writeln!(
        out,
        "{} in {} pages, policy {}, first touched from {}",
        format_bytes(p.bytes),
        p.page,
        p.requested,
        cpu
    );
    let _ = writeln!(out, "  {:<6} {:>10} {:>8}", "node", "pages", "share");
    for n in &p.per_node {
        let _ = writeln!(
            out,
            "  {:<6} {:>10} {:>7.1}%",
            n.node,
            n.pages,
            100.0 * p.fraction_on(n.node)
        );
    }
    if p.not_present > 0 {
        let _ = writeln!(out, "  {:<6} {:>10}", "absent", p.not_present);
    }
    let _ = writeln!(out, "  ({} per page counted)", format_bytes(p.page_bytes));
    if let Some(thp) = p.thp_bytes {
        let _ = writeln!(out, "  backed by transparent huge pages: {}", format_bytes(thp));
    }
    out
}
