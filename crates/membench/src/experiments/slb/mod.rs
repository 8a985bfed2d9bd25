//! The Silly Little Benchmark's commands (moved whole into `locks`; split by command in the
//! next commit).

mod locks;

pub use locks::*;

use super::several_cpus;
