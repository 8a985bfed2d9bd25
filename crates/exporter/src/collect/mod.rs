//! Collectors: each computes its families at scrape time.
//!
//! Every collector is registered by name in [`REGISTRY`] (one line each); `--collect` picks
//! from it, and the default set is every registered one. Names that are planned but that this
//! build does not have yet are in [`PLANNED`], so asking for them is a clear usage error rather
//! than "unknown name".

pub mod bench;
pub mod cpu;
pub mod info;
pub mod io;
pub mod nic;
pub mod pagecache;
pub mod process;

use std::path::PathBuf;

use measure::{FsRoot, UsageError};

use crate::Family;

/// What went wrong collecting one source. A failing collector does not fail the scrape: its
/// error is counted in `platscope_scrape_collector_success{collector}` and the others answer.
#[derive(Debug, thiserror::Error)]
#[error("{collector}: {message}")]
pub struct CollectError {
    /// The collector's name.
    pub collector: &'static str,
    /// What failed, one line.
    pub message: String,
}

impl measure::Usage for CollectError {
    fn is_usage(&self) -> bool {
        false
    }
}

/// A source of metric families, asked at every scrape.
pub trait Collector: Send + Sync + std::fmt::Debug {
    /// Short name, as given to `--collect` (`nic`, `cpu`, `process`, `io`, `pagecache`, `bench`).
    fn name(&self) -> &'static str;
    /// Appends this source's families to `out`.
    fn collect(&self, out: &mut Vec<Family>) -> Result<(), CollectError>;
}

/// What collectors may need to set themselves up: where to read the system, the results store.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file-system root to read `/proc` and `/sys` from (the live system in `serve`).
    pub root: FsRoot,
    /// The results database (`--db`), for collectors that report stored figures.
    pub db: Option<PathBuf>,
    /// The build's source revision (the binary's git hash), for `platscope_build_info`.
    pub revision: String,
    /// The `process` collector's groups and how many it names.
    pub process: process::CollectorOptions,
    /// How long the `nic` collector reuses an interface's link facts (`--link-facts-max-age`).
    pub link_facts_max_age: std::time::Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            root: FsRoot::live(),
            db: None,
            revision: "unknown".to_string(),
            process: process::CollectorOptions::default(),
            link_facts_max_age: nic::LINK_FACTS_MAX_AGE,
        }
    }
}

/// Builds a collector from the configuration; an error is a usage error (bad configuration).
pub type Factory = fn(&Config) -> Result<Box<dyn Collector>, UsageError>;

/// Every collector this build has, by `--collect` name, in the order they are scraped.
/// Add a collector with one line here.
pub const REGISTRY: &[(&str, Factory)] = &[
    ("nic", nic::factory),
    ("cpu", cpu::factory),
    ("process", process::factory),
    ("io", io::factory),
    ("pagecache", pagecache::factory),
    ("bench", bench::factory),
];

/// Collector names that are planned but that this build does not have yet.
pub const PLANNED: &[&str] = &[];

/// The names `--collect` accepts in this build.
pub fn available() -> Vec<&'static str> {
    REGISTRY.iter().map(|(name, _)| *name).collect()
}

/// Parses a `--collect` list (`nic,cpu`, spaces and repeats allowed) into registry names.
pub fn parse_list(list: &str) -> Result<Vec<&'static str>, UsageError> {
    let mut names = Vec::new();
    for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let name = match REGISTRY.iter().find(|(name, _)| *name == word) {
            Some((name, _)) => *name,
            None if PLANNED.contains(&word) => {
                return Err(UsageError::Message(format!(
                    "--collect: collector {word} is not available in this build (available: {})",
                    available().join(",")
                )))
            }
            None => {
                return Err(UsageError::Message(format!(
                    "--collect: unknown collector {word:?} (available: {})",
                    available().join(",")
                )))
            }
        };
        if !names.contains(&name) {
            names.push(name);
        }
    }
    if names.is_empty() {
        return Err(UsageError::Message(format!(
            "--collect: name at least one collector (available: {})",
            available().join(",")
        )));
    }
    Ok(names)
}

/// Builds the named collectors (all registered ones for `None`), plus `info`
/// (`platscope_build_info`, `platscope_host_info`), which every scrape carries.
pub fn build(
    names: Option<&[&str]>,
    config: &Config,
) -> Result<Vec<Box<dyn Collector>>, UsageError> {
    let mut out: Vec<Box<dyn Collector>> = vec![Box::new(info::Info::new(config))];
    for (name, factory) in REGISTRY {
        if names.is_none_or(|wanted| wanted.contains(name)) {
            out.push(factory(config)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collect_lists_are_checked_and_deduplicated() {
        assert_eq!(parse_list("nic, nic,").unwrap(), vec!["nic"]);
        if let Some(planned_name) = PLANNED.first() {
            let planned = parse_list(&format!("nic,{planned_name}")).unwrap_err().to_string();
            let says = format!("collector {planned_name} is not available in this build");
            assert!(planned.contains(&says), "{planned}");
        }
        let unknown = parse_list("disk").unwrap_err().to_string();
        assert!(unknown.contains("unknown collector \"disk\""), "{unknown}");
        assert!(parse_list(" , ").is_err());
    }

    #[test]
    fn default_set_is_every_registered_collector_plus_info() {
        let all = build(None, &Config::default()).unwrap();
        let names: Vec<&str> = all.iter().map(|c| c.name()).collect();
        assert_eq!(names[0], "info");
        for name in available() {
            assert!(names.contains(&name), "{name} missing from {names:?}");
        }
    }
}
