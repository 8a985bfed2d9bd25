//! `platscope version [--verbose]` (also `platscope --version --verbose`): the version, and
//! with `--verbose` what this build is: its commit, date, profile and target, the BPF programs
//! compiled in and the vendored BTF header they were compiled against.

use experiment::Format;
use measure::Classified;
use serde::Serialize;

/// What `--verbose` prints (`--json`: this, as an object).
#[derive(Debug, Serialize)]
struct Build {
    version: &'static str,
    commit: &'static str,
    build_date: String,
    profile: &'static str,
    arch: &'static str,
    /// (crate, program) for every BPF program compiled in.
    bpf_programs: Vec<BpfProgram>,
    vendored_btf: Option<Btf>,
}

#[derive(Debug, Serialize)]
struct BpfProgram {
    #[serde(rename = "crate")]
    krate: &'static str,
    program: &'static str,
}

#[derive(Debug, Serialize)]
struct Btf {
    arch: &'static str,
    source: &'static str,
}

/// The build's date, `YYYY-MM-DD` UTC (SOURCE_DATE_EPOCH when the build set it).
pub fn build_date() -> String {
    let secs = env!("PLATSCOPE_BUILD_EPOCH").parse().unwrap_or(0);
    let stamp = measure::time::utc_rfc3339(secs);
    stamp.split('T').next().unwrap_or_default().to_string()
}

fn build() -> Build {
    let crates: [(&str, &[&str]); 4] = [
        ("cpuacct", cpuacct::BPF_PROGRAMS),
        ("pstime", pstime::BPF_PROGRAMS),
        ("iopattern", iopattern::BPF_PROGRAMS),
        ("querystat", querystat::BPF_PROGRAMS),
    ];
    Build {
        version: env!("CARGO_PKG_VERSION"),
        commit: env!("PLATSCOPE_GIT_HASH"),
        build_date: build_date(),
        profile: env!("PLATSCOPE_PROFILE"),
        arch: std::env::consts::ARCH,
        bpf_programs: crates
            .iter()
            .flat_map(|&(krate, programs)| {
                programs.iter().map(move |&program| BpfProgram { krate, program })
            })
            .collect(),
        vendored_btf: bpfkit::VENDORED_BTF.map(|b| Btf { arch: b.arch, source: b.source }),
    }
}

/// Prints the version (one line), or with `verbose` the build's facts.
pub fn run(verbose: bool, format: Format) -> Result<(), Classified> {
    let build = build();
    let printed = match (verbose, format) {
        (_, Format::Json) => experiment::output::emit_json(&build),
        (false, _) => experiment::output::emit(&format!("platscope {}\n", crate::cli::VERSION)),
        (true, _) => experiment::output::emit(&text(&build)),
    };
    printed.map_err(Classified::runtime)
}

fn text(build: &Build) -> String {
    let programs: Vec<String> =
        build.bpf_programs.iter().map(|p| format!("{} ({})", p.program, p.krate)).collect();
    let btf = match &build.vendored_btf {
        Some(btf) => format!("{} (dumped from {})", btf.arch, btf.source),
        None => "none for this architecture".to_string(),
    };
    format!(
        "platscope {}\ncommit        {}\nbuilt         {} ({} profile)\narch          {}\n\
         bpf programs  {}\nvendored btf  {}\n",
        build.version,
        build.commit,
        build.build_date,
        build.profile,
        build.arch,
        programs.join(", "),
        btf
    )
}

/// Whether the arguments after the program name are `--version --verbose` in either order
/// (`-V` for `--version`; `--json` may join them): clap answers `--version` as soon as it sees
/// it, so this spelling is recognised before clap parses.
pub fn asks_verbose_version(args: &[std::ffi::OsString]) -> Option<Format> {
    let is = |a: &std::ffi::OsString, names: &[&str]| names.iter().any(|n| a.to_str() == Some(*n));
    let has = |names: &[&str]| args.iter().any(|a| is(a, names));
    let known = args.iter().all(|a| is(a, &["--version", "-V", "--verbose", "--json"]));
    (known && has(&["--version", "-V"]) && has(&["--verbose"])).then(|| {
        if has(&["--json"]) {
            Format::Json
        } else {
            Format::Text
        }
    })
}
