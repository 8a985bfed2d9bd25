//! report: the HTML page of `platscope report` — a self-contained file with inline SVG charts,
//! rendered from [`html::ReportData`] (live, or read back from the results store). Text output
//! and the memory charts live with the crate that measured them (`membench::render`,
//! `membench::chart`, `topo::render`, …).
//!
//! The page is plain HTML and SVG (no script), so it can be mailed, archived and opened anywhere.

pub mod compare;
pub mod file;
pub mod html;
pub mod redact;
