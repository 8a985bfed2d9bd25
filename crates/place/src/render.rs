//! Where an arena's pages are, as text.

use std::fmt::Write as _;

use crate::{HugeSource, PageSize, Placement};
use topo::units::format_bytes;

/// Requested versus actual placement: one line of what was asked, a row per node.
pub fn placement_text(p: &Placement, touched_from_cpu: Option<u32>) -> String {
    let mut out = String::new();
    let cpu = touched_from_cpu.map_or("an unknown CPU".to_string(), |c| format!("CPU {c}"));
    // THP is only asked for: the first line says so, the last what the kernel gave.
    let pages = if p.page == PageSize::Thp { "thp requested".into() } else { p.pages_label() };
    let _ = writeln!(
        out,
        "{} in {pages}, policy {}, first touched from {}",
        format_bytes(p.bytes),
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
    if p.page == PageSize::Thp {
        let source = match p.thp_source {
            Some(HugeSource::Kpageflags) => " (per page: pagemap and kpageflags)",
            Some(HugeSource::Smaps) => " (AnonHugePages in smaps)",
            None => "",
        };
        let _ = writeln!(out, "  got {}{source}", p.pages_label());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemPolicy, NodePages};

    #[test]
    fn a_thp_arena_says_what_it_got() {
        let mut p = Placement {
            requested: MemPolicy::Local,
            page: PageSize::Thp,
            bytes: 512 << 20,
            page_bytes: 4096,
            per_node: vec![NodePages { node: 0, pages: 131_072 }],
            not_present: 0,
            thp_bytes: Some(0),
            thp_source: Some(HugeSource::Smaps),
            thp_mode: Some("never".into()),
        };
        let text = placement_text(&p, Some(1));
        assert!(text
            .starts_with("512.0 MiB in thp requested, policy local, first touched from CPU 1\n"));
        assert!(
            text.ends_with(
                "  got thp requested: 0 of 512 MiB huge; THP is 'never' (AnonHugePages in smaps)\n"
            ),
            "{text}"
        );
        p.page = PageSize::Base;
        (p.thp_bytes, p.thp_source, p.thp_mode) = (None, None, None);
        let text = placement_text(&p, None);
        assert!(text.starts_with("512.0 MiB in 4k pages, policy local"), "{text}");
        assert!(!text.contains("got"), "{text}");
    }
}
