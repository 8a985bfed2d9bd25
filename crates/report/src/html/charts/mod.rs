//! The charts this crate draws itself: `cpu_scale` (seed 004's Tamp). The memory sections are
//! drawn by `membench::chart` from the outcomes they show.

mod cpu_scale;

pub(super) use cpu_scale::chart_cpu_scale;

pub(super) use chart::Figure;
