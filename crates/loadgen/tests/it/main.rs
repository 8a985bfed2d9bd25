//! The integration tests of `loadgen`, one binary with a module per former test file (as
//! cargo and ripgrep keep theirs): the crate's tests link once. Tier tests of one module
//! never run beside another module's (`test_tier::enter`), as when each was a binary.

mod live;
mod workload_fuzz;
