//! The integration tests of `tamp`, one binary with a module per former test file (as
//! cargo and ripgrep keep theirs): the crate's tests link once. Tier tests of one module
//! never run beside another module's (`test_tier::enter`), as when each was a binary.

mod common;
mod corpus;
mod errors;
mod frame_fuzz;
mod procstat_fuzz;
mod roundtrip;
mod scaling;
