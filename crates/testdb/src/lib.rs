//! Throwaway servers for tests and benches: the databases of `scratchdb` (re-exported here, so a
//! test names them all from one place) and a Prometheus instance, in their own temp dirs, on a
//! private port, started in a few seconds and gone again when the handle is dropped — and a
//! Prometheus node_exporter ([`NodeExporter`]) reading a textfile directory, for tests of what
//! platscope writes for it. A test harness only: nothing in the product depends on it.
//!
//! Each server is started as a direct child of this process and stopped by that PID on drop.
//!
//! ```no_run
//! use testdb::{Postgres, PgOptions};
//!
//! let pg = Postgres::start(&PgOptions::default().setting("autovacuum", "off"))?;
//! assert_eq!(pg.sql("SELECT 1 + 1")?, "2");
//! # Ok::<(), testdb::Error>(())
//! ```

mod node_exporter;
mod prometheus;

pub use node_exporter::{NodeExporter, NodeExporterOptions};
pub use prometheus::{url_encode, PromOptions, Prometheus};
pub use scratchdb::{Error, MariaDb, MariaDbOptions, PgOptions, Postgres, Result};
