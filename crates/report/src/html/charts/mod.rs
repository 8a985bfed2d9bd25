//! The charts this crate draws itself: none of its own now. `cpu scale`'s is `tamp`'s
//! (`tamp::chart::cpu_scale`), the memory sections are drawn by `membench::chart` from the
//! outcomes they show.

pub(super) use tamp::chart::cpu_scale as chart_cpu_scale;

pub(super) use chart::Figure;
