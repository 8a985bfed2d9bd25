//! The integration tests of `pstime`, one binary with a module per former test file (as
//! cargo and ripgrep keep theirs): the crate's tests link once. Tier tests of one module
//! never run beside another module's (`test_tier::enter`), as when each was a binary.

mod proc_fuzz;
mod pstime_live;
mod sampler;
mod tasks_live;

/// Not a test on its own: the burner the other tests start ([`test_support::burner::child`]),
/// at the binary's root so that its name is `burner_child` exactly.
#[test_tier::live]
fn burner_child() {
    test_support::burner::child();
}
