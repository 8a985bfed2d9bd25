//! Rendering results for people and for the tools they already parse.
//!
//! Every renderer returns a `String` (or writes to `impl Write`), so tests compare text and the
//! binary decides where it goes.
//!
//! ```
//! let topo = topo::Topology::from_synthetic("pack:2 [numa(memory=1GiB)] core:1 pu:1").unwrap();
//! let text = report::numactl_hardware(&topo);
//! assert!(text.starts_with("available: 2 nodes (0-1)\n"));
//! ```

pub mod bandwidth;
pub mod html;
pub mod mem;
pub mod pagecache;
mod placement_view;
pub mod summary;
pub mod timer;
mod topo_view;

pub use placement_view::placement_text;
pub use topo_view::{numactl_hardware, topology_text};
