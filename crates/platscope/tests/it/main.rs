//! The integration tests of `platscope`, one binary with a module per former test file (as
//! cargo and ripgrep keep theirs): the crate's tests link once. Tier tests of one module
//! never run beside another module's (`test_tier::enter`), as when each was a binary.

mod ab_cli;
mod alloc_cli;
mod ansible_role;
mod cli;
mod common;
mod compress_cli;
mod cpu_cli;
mod db_cli;
mod deb;
mod deb_package;
mod faults;
mod fleet_cli;
mod fleet_store;
mod grafana_dashboards;
mod guest_c2c;
mod guest_cpu_models;
mod guest_numa;
mod guest_pagecache;
mod guest_slb;
mod house;
mod io_cli;
mod load_cli;
mod mem_cli;
mod net_cli;
mod pagecache_cli;
mod placement_drift;
mod registry;
mod report_cli;
mod report_compare;
mod report_rounds;
mod results_pg;
mod results_textfile;
mod secrets_cli;
mod serve_prometheus;
mod shell_cli;
mod slb_kit;

/// Not a test on its own: the burner the other tests start ([`test_support::burner::child`]),
/// at the binary's root so that its name is `burner_child` exactly.
#[test_tier::live]
fn burner_child() {
    test_support::burner::child();
}
