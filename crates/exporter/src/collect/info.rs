//! `info`: `platscope_build_info` and `platscope_host_info`, read once at start-up (neither
//! changes while `serve` runs) and answered at every scrape. No host name label: Prometheus adds
//! `instance`.

use measure::FsRoot;

use super::{CollectError, Collector, Config};
use crate::{Family, Kind};

/// The `info` collector; every scrape carries it.
#[derive(Debug)]
pub struct Info {
    build: Vec<(&'static str, String)>,
    host: Vec<(&'static str, String)>,
}

impl Info {
    /// Reads the host's facts through `config.root`.
    pub fn new(config: &Config) -> Self {
        let build = vec![
            ("version", env!("CARGO_PKG_VERSION").to_string()),
            ("revision", config.revision.clone()),
            ("arch", std::env::consts::ARCH.to_string()),
        ];
        Info { build, host: host_labels(&config.root) }
    }
}

/// `kernel`, `cpu_model` and `cpus` of the host ("unknown" when a file is missing).
fn host_labels(root: &FsRoot) -> Vec<(&'static str, String)> {
    let read = |rel: &str| std::fs::read_to_string(root.path(rel)).unwrap_or_default();
    let kernel = read("proc/sys/kernel/osrelease").trim().to_string();
    let cpuinfo = read("proc/cpuinfo");
    let (model, cpus) = parse_cpuinfo(&cpuinfo);
    let or_unknown = |s: String| if s.is_empty() { "unknown".to_string() } else { s };
    vec![
        ("kernel", or_unknown(kernel)),
        ("cpu_model", or_unknown(model)),
        ("cpus", cpus.to_string()),
    ]
}

/// The first `model name` (x86) or `Model`/`CPU part` line, and the number of `processor`
/// entries.
fn parse_cpuinfo(text: &str) -> (String, usize) {
    let mut model = String::new();
    let mut cpus = 0;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else { continue };
        match key.trim() {
            "processor" => cpus += 1,
            "model name" | "Model" if model.is_empty() => model = value.trim().to_string(),
            _ => {}
        }
    }
    (model, cpus)
}

impl Collector for Info {
    fn name(&self) -> &'static str {
        "info"
    }

    fn collect(&self, out: &mut Vec<Family>) -> Result<(), CollectError> {
        for (name, help, labels) in [
            ("platscope_build", "The platscope build answering (value 1).", &self.build),
            ("platscope_host", "The host's kernel and CPU (value 1).", &self.host),
        ] {
            let mut family = Family::new(name, Kind::Info, None, help);
            let pairs: Vec<(&'static str, &str)> =
                labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
            family.push(&pairs, 1.0);
            out.push(family);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{render, Format};

    #[test]
    fn cpuinfo_model_and_count() {
        let text = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13\n";
        assert_eq!(parse_cpuinfo(text), ("AMD EPYC 7B13".to_string(), 2));
    }

    #[test]
    fn info_families_render_as_info_and_as_gauge() {
        let info = Info::new(&Config::default());
        let mut out = Vec::new();
        info.collect(&mut out).unwrap();
        let om = render(&out, Format::OpenMetrics);
        assert!(om.contains("# TYPE platscope_build info\n"), "{om}");
        assert!(om.contains("platscope_host_info{kernel=\""), "{om}");
        assert!(!om.contains("host=") && !om.contains("hostname"), "{om}");
        let text = render(&out, Format::Text004);
        assert!(text.contains("# TYPE platscope_build_info gauge\n"), "{text}");
    }
}
