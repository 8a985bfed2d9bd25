//! The integration tests of `cpuacct`, one binary with a module per former test file (as
//! cargo and ripgrep keep theirs): the crate's tests link once. Tier tests of one module
//! never run beside another module's (`test_tier::enter`), as when each was a binary.

mod cputime_live;
mod cpuutil;
mod mpstat_log;
mod proc_fuzz;
mod procsum_live;
