//! The measuring commands of this crate, behind the experiment seam.

pub mod pagecache;
