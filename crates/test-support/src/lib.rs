//! test-support: what the workspace's tests share, so each test file does not grow its own
//! copy. A dev-dependency only; nothing here is part of platscope.
//!
//! - [`cli`]: run the `platscope` binary as users do ([`platscope`], [`text`]).
//! - [`burner`]: a child process that burns a known amount of its own CPU time on request; a
//!   busy loop pinned to one CPU ([`burner::Spinner`]).
//! - [`browser`]: Debian's headless Chromium on a page: screenshot, DOM, what it logged.
//! - [`fuzz`]: the runner and generators of the fuzz-style property tests (arbitrary and mutated
//!   valid inputs), pure tier and live tier.
//! - [`net`]: a veth pair with its peer in a namespace of its own ([`net::Veth`]); a link's
//!   speed and duplex set as `ethtool -s` does ([`net::set_link_speed`]).
//! - [`serve`]: a `platscope serve` on loopback, stopped by PID ([`serve::Serve`]).
//! - [`tree`]: a `/proc` + `/sys` fixture tree in a temporary directory ([`Tree`]).
//!
//! ```no_run
//! let out = test_support::platscope(&["topo", "--json"]);
//! assert!(out.status.success(), "{}", test_support::text(&out.stderr));
//! ```

pub mod browser;
pub mod burner;
pub mod cli;
pub mod fuzz;
pub mod net;
pub mod serve;
pub mod tree;

pub use burner::{Burner, Spinner};
pub use cli::{
    bin, command, newest_run, page_sections, platscope, platscope_with_stdin, quick_report, signal,
    stderr, stdout, text, wait_within,
};
pub use tree::Tree;
