//! The memory benchmarks' text output: tables, the original tools' line formats (memhammer's line,
//! thread_read's summary), matrices with SLIT ratios. Each function returns a `String`, so tests
//! compare text and the binary decides where it goes.

pub mod bandwidth;
pub mod c2c;
pub mod mem;
pub mod timer;
