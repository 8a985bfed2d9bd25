//! The commands that read the store and compose experiments: `report` and `results …`.

pub mod report;
pub mod results;
