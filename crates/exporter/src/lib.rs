//! What the fleet sees: platscope's figures as metric families, rendered as an OpenMetrics
//! endpoint (`platscope serve`) or as a node_exporter textfile (`platscope results textfile`).
//!
//! Collectors compute [`Family`] values at scrape time from the same code as the monitors;
//! [`render`](mod@render) turns them into OpenMetrics 1.0 or the Prometheus text format 0.0.4.
//! Conventions: prefix `platscope_`, base units (bytes, seconds, ratios), `_total` on counters,
//! no `pid` or `host` labels (Prometheus adds `instance`).

pub mod collect;
pub mod commands;
pub mod error;
pub mod family;
pub mod http;
pub mod render;
pub mod server;
pub mod textfile;
pub mod web;

pub use error::ServeError;
pub use family::{Family, Kind, Labels, Sample, Unit, Value};
pub use render::{negotiate, render, Format};
pub use server::{Exporter, Limits, Server};
pub use web::WebConfig;
