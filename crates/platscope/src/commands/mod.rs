//! One module per command: each turns parsed arguments into library calls and output.

pub mod bandwidth;
pub mod compat;
pub mod compress;
pub mod cpu;
pub mod db;
pub mod io;
pub mod kit;
pub mod load;
pub mod mem;
pub mod net;
pub mod pagecache;
pub mod place;
pub mod record;
pub mod report;
pub mod results;
pub mod timer;
pub mod topo;
