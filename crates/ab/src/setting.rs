//! The settings an A/B changes, in the words people already use: `thp=never`,
//! `thp-defrag=defer`, `numa-balancing=0`, a memory policy for the workload in numactl's words
//! (`numa=interleave:all`, `numa=membind:0`, `numa=localalloc`, `numa=cpunodebind:1`), an
//! allocator (`alloc=jemalloc`, `alloc=glibc:arena_max=2`), any `/proc/sys` key
//! (`sysctl:vm.swappiness=10`), any file under `/sys` (`sysfs:/sys/block/sda/queue/scheduler=none`)
//! and the cpufreq governor (`governor=performance`).
//!
//! Parsing ([`Setting::parse`]) is pure; [`plan_arm`] checks one side's settings against the
//! machine (the file is there and readable, the value is one it offers, the nodes exist, the
//! allocator is installed) and [`check_writable`] that every file can be written, so a setting
//! the machine cannot take is refused before anything changes.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use allocbench::allocator::{Allocator, CacheEntry};
use measure::FsRoot;
use place::{PlacementArgs, PlacementRequest};
use serde::{Deserialize, Serialize};
use topo::Topology;

use crate::{files, AbError};

/// Transparent huge pages: when the kernel uses them.
pub const THP_ENABLED: &str = "sys/kernel/mm/transparent_hugepage/enabled";
/// Transparent huge pages: how hard a fault tries to make one.
pub const THP_DEFRAG: &str = "sys/kernel/mm/transparent_hugepage/defrag";
/// Automatic NUMA balancing.
pub const NUMA_BALANCING: &str = "proc/sys/kernel/numa_balancing";
/// cpufreq's policies, each with its `scaling_governor`.
pub const CPUFREQ: &str = "sys/devices/system/cpu/cpufreq";

const THP_CHOICES: &[&str] = &["always", "madvise", "never"];
const DEFRAG_CHOICES: &[&str] = &["always", "defer", "defer+madvise", "madvise", "never"];
/// numactl's options a `numa=` setting takes, and whether each takes a list.
const NUMA_WORDS: &[(&str, bool)] = &[
    ("membind", true),
    ("interleave", true),
    ("preferred", true),
    ("localalloc", false),
    ("cpunodebind", true),
    ("physcpubind", true),
];

/// One setting as given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Setting {
    Thp {
        value: String,
    },
    ThpDefrag {
        value: String,
    },
    NumaBalancing {
        value: String,
    },
    /// numactl's option (`membind`, …, `cpunodebind`) and its list, for the workload only.
    Numa {
        option: String,
        list: Option<String>,
    },
    /// An allocator name as the bake-off takes it (`jemalloc`, `glibc:arena_max=2`).
    Alloc {
        name: String,
    },
    /// A `/proc/sys` key in sysctl's dotted (or slashed) form.
    Sysctl {
        name: String,
        value: String,
    },
    /// A file under `/sys`, as given.
    Sysfs {
        path: String,
        value: String,
    },
    Governor {
        value: String,
    },
}

fn usage(message: impl Into<String>) -> AbError {
    AbError::Usage(message.into())
}

const VOCABULARY: &str = "thp=, thp-defrag=, numa-balancing=, numa=, alloc=, governor=, \
                          sysctl:NAME=VALUE, sysfs:PATH=VALUE";

impl Setting {
    /// One setting from its text (`thp=never`, `sysctl:vm.swappiness=10`).
    pub fn parse(text: &str) -> Result<Self, AbError> {
        let text = text.trim();
        if let Some(rest) = text.strip_prefix("sysctl:") {
            let (name, value) = split_value(text, rest)?;
            check_sysctl_name(name)?;
            return Ok(Setting::Sysctl { name: name.into(), value: value.into() });
        }
        if let Some(rest) = text.strip_prefix("sysfs:") {
            let (path, value) = split_value(text, rest)?;
            sysfs_relative(path)?;
            return Ok(Setting::Sysfs { path: path.into(), value: value.into() });
        }
        let (key, value) = text.split_once('=').ok_or_else(|| {
            usage(format!("setting '{text}' is not KEY=VALUE (one of {VOCABULARY})"))
        })?;
        let one_of = |choices: &[&str]| -> Result<String, AbError> {
            if choices.contains(&value) {
                Ok(value.to_string())
            } else {
                Err(usage(format!("{key}={value}: {key} takes {}", choices.join(", "))))
            }
        };
        Ok(match key {
            "thp" => Setting::Thp { value: one_of(THP_CHOICES)? },
            "thp-defrag" => Setting::ThpDefrag { value: one_of(DEFRAG_CHOICES)? },
            "numa-balancing" => Setting::NumaBalancing { value: one_of(&["0", "1"])? },
            "numa" => parse_numa(value)?,
            "alloc" if !value.is_empty() => Setting::Alloc { name: value.to_string() },
            "governor" if !value.is_empty() => Setting::Governor { value: value.to_string() },
            "alloc" | "governor" => return Err(usage(format!("{key}= needs a value"))),
            _ => {
                return Err(usage(format!(
                    "unknown setting '{key}' in '{text}' (known: {VOCABULARY})"
                )))
            }
        })
    }

    /// What it sets, one name per thing set: `thp`, `numa` (the workload's memory policy),
    /// `numa-cpus`, `alloc`, `sysctl:vm.swappiness`, `sysfs:/sys/…`.
    pub fn key(&self) -> String {
        match self {
            Setting::Thp { .. } => "thp".into(),
            Setting::ThpDefrag { .. } => "thp-defrag".into(),
            Setting::NumaBalancing { .. } => "numa-balancing".into(),
            Setting::Numa { option, .. } if is_cpu_option(option) => "numa-cpus".into(),
            Setting::Numa { .. } => "numa".into(),
            Setting::Alloc { .. } => "alloc".into(),
            Setting::Sysctl { name, .. } => format!("sysctl:{name}"),
            Setting::Sysfs { path, .. } => format!("sysfs:{path}"),
            Setting::Governor { .. } => "governor".into(),
        }
    }

    /// Its value as given (`never`, `interleave:all`, `jemalloc`).
    pub fn value(&self) -> String {
        match self {
            Setting::Thp { value }
            | Setting::ThpDefrag { value }
            | Setting::NumaBalancing { value }
            | Setting::Sysctl { value, .. }
            | Setting::Sysfs { value, .. }
            | Setting::Governor { value } => value.clone(),
            Setting::Numa { option, list: Some(list) } => format!("{option}:{list}"),
            Setting::Numa { option, list: None } => option.clone(),
            Setting::Alloc { name } => name.clone(),
        }
    }

    /// Whether it changes the machine (a file) rather than only how the workload starts.
    pub fn is_system(&self) -> bool {
        !matches!(self, Setting::Numa { .. } | Setting::Alloc { .. })
    }
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Setting::Sysctl { .. } | Setting::Sysfs { .. } => {
                write!(f, "{}={}", self.key(), self.value())
            }
            Setting::Numa { .. } => write!(f, "numa={}", self.value()),
            _ => write!(f, "{}={}", self.key(), self.value()),
        }
    }
}

fn split_value<'a>(text: &str, rest: &'a str) -> Result<(&'a str, &'a str), AbError> {
    match rest.split_once('=') {
        Some((name, value)) if !name.is_empty() && !value.trim().is_empty() => {
            Ok((name, value.trim()))
        }
        _ => Err(usage(format!("setting '{text}' needs a name and a value (NAME=VALUE)"))),
    }
}

fn is_cpu_option(option: &str) -> bool {
    option == "cpunodebind" || option == "physcpubind"
}

fn parse_numa(value: &str) -> Result<Setting, AbError> {
    let (option, list) = match value.split_once(':') {
        Some((option, list)) => (option, Some(list)),
        None => (value, None),
    };
    let words = || NUMA_WORDS.iter().map(|w| w.0).collect::<Vec<_>>().join(", ");
    let Some(&(_, takes_list)) = NUMA_WORDS.iter().find(|w| w.0 == option) else {
        return Err(usage(format!(
            "numa={value}: numactl's option '{option}' is not one of {} (numa=interleave:all, \
             numa=membind:0, numa=localalloc, numa=cpunodebind:1)",
            words()
        )));
    };
    match (takes_list, list) {
        (true, Some(list)) if !list.is_empty() => {
            Ok(Setting::Numa { option: option.into(), list: Some(list.into()) })
        }
        (true, _) => Err(usage(format!("numa={value}: {option} takes a list ({option}:0-1)"))),
        (false, None) => Ok(Setting::Numa { option: option.into(), list: None }),
        (false, Some(_)) => Err(usage(format!("numa={value}: {option} takes no list"))),
    }
}

/// A sysctl name: words of letters, digits, `_` and `-` joined by dots or slashes.
fn check_sysctl_name(name: &str) -> Result<(), AbError> {
    let ok = !name.starts_with(['.', '/'])
        && name.split(['.', '/']).all(|w| {
            !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))
        });
    if ok {
        Ok(())
    } else {
        Err(usage(format!(
            "sysctl:{name}: not a sysctl name (vm.swappiness, kernel.sched_autogroup_enabled)"
        )))
    }
}

/// The path of a `sysfs:` setting below `/sys` (`/sys/a/b`, `a/b`): never above it.
fn sysfs_relative(path: &str) -> Result<PathBuf, AbError> {
    let below = path.strip_prefix("/sys/").or_else(|| path.strip_prefix("sys/")).unwrap_or(path);
    let below = Path::new(below);
    let plain = below.components().all(|c| matches!(c, Component::Normal(_)));
    if below.as_os_str().is_empty() || !plain {
        return Err(usage(format!(
            "sysfs:{path}: give a file under /sys (/sys/block/sda/queue/scheduler), without '..'"
        )));
    }
    Ok(below.to_path_buf())
}

/// One file an arm writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Write {
    /// The setting's key ([`Setting::key`]).
    pub setting: String,
    pub path: PathBuf,
    pub value: String,
}

/// One side of the A/B, checked against the machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Arm {
    pub settings: Vec<Setting>,
    /// The files it writes, one per file.
    pub writes: Vec<Write>,
    /// Where the workload runs and takes memory from (numactl's words).
    pub placement: PlacementRequest,
    /// The allocator preloaded into the workload.
    pub allocator: Option<Allocator>,
}

impl Arm {
    /// `thp=never numa=interleave:all`.
    pub fn describe(&self) -> String {
        let words: Vec<String> = self.settings.iter().map(ToString::to_string).collect();
        words.join(" ")
    }

    /// Settings by key, as the JSON's `settings.a` and `settings.b` show them.
    pub fn as_map(&self) -> BTreeMap<String, String> {
        self.settings.iter().map(|s| (s.key(), s.value())).collect()
    }
}

/// What settings are checked against.
#[derive(Debug, Clone, Copy)]
pub struct Machine<'a> {
    pub root: &'a FsRoot,
    pub topology: &'a Topology,
    /// `ldconfig -p`, for the allocators' libraries.
    pub libraries: &'a [CacheEntry],
}

/// Checks one side's settings against the machine: every file exists and reads, every value
/// is one the file offers, no two settings set the same thing, the nodes and CPUs exist, the
/// allocator is installed. Nothing is written.
pub fn plan_arm(settings: &[Setting], machine: Machine<'_>) -> Result<Arm, AbError> {
    let mut seen: BTreeMap<String, &Setting> = BTreeMap::new();
    for s in settings {
        if let Some(first) = seen.insert(s.key(), s) {
            return Err(usage(format!("{first} and {s} both set {}; give one", s.key())));
        }
    }
    let mut writes: Vec<Write> = Vec::new();
    let mut placement = PlacementArgs::default();
    let mut allocator = None;
    for s in settings {
        match s {
            Setting::Thp { value } => {
                writes.push(file_write(s, machine.root.path(THP_ENABLED), value)?)
            }
            Setting::ThpDefrag { value } => {
                writes.push(file_write(s, machine.root.path(THP_DEFRAG), value)?)
            }
            Setting::NumaBalancing { value } => {
                writes.push(file_write(s, machine.root.path(NUMA_BALANCING), value)?)
            }
            Setting::Sysctl { name, value } => {
                let path = machine.root.path(&format!("proc/sys/{}", name.replace('.', "/")));
                writes.push(file_write(s, path, value)?);
            }
            Setting::Sysfs { path, value } => {
                let path = sysfs_file(machine.root, path)?;
                writes.push(file_write(s, path, value)?);
            }
            Setting::Governor { value } => writes.extend(governor_writes(s, machine.root, value)?),
            Setting::Numa { option, list } => {
                let list = list.clone();
                match option.as_str() {
                    "membind" => placement.membind = list,
                    "interleave" => placement.interleave = list,
                    "preferred" => placement.preferred = list,
                    "localalloc" => placement.localalloc = true,
                    "cpunodebind" => placement.cpunodebind = list,
                    _ => placement.physcpubind = list,
                }
            }
            Setting::Alloc { name } => {
                let resolved = allocbench::allocator::resolve(
                    std::slice::from_ref(name),
                    &[],
                    machine.libraries,
                )
                .map_err(|e| usage(format!("alloc={name}: {e}")))?;
                allocator = resolved.allocators.into_iter().next();
            }
        }
    }
    // One file set twice under two names (`thp=` and `sysfs:…/enabled`).
    for (i, w) in writes.iter().enumerate() {
        if let Some(other) = writes[..i].iter().find(|o| o.path == w.path) {
            return Err(usage(format!(
                "{} and {} both write {}; give one",
                other.setting,
                w.setting,
                w.path.display()
            )));
        }
    }
    let placement = PlacementRequest::resolve(&placement, machine.topology)
        .map_err(|e| usage(format!("numa: {e}")))?;
    Ok(Arm { settings: settings.to_vec(), writes, placement, allocator })
}

/// The file of a setting, checked: it exists, reads, and offers the value when it lists its
/// choices.
fn file_write(setting: &Setting, path: PathBuf, value: &str) -> Result<Write, AbError> {
    let key = setting.key();
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(usage(format!(
                "{setting}: this machine has no {} ({})",
                path.display(),
                absent_because(setting)
            )))
        }
        Err(e) => {
            return Err(usage(format!(
                "{setting}: {} cannot be read ({e}), so it could not be put back",
                path.display()
            )))
        }
    };
    if let Some(choices) = files::choices(&text) {
        if !choices.iter().any(|c| c == value) {
            return Err(usage(format!(
                "{setting}: {} offers {}",
                path.display(),
                choices.join(", ")
            )));
        }
    }
    Ok(Write { setting: key, path, value: value.to_string() })
}

fn absent_because(setting: &Setting) -> &'static str {
    match setting {
        Setting::Thp { .. } | Setting::ThpDefrag { .. } => {
            "a kernel without transparent huge pages"
        }
        Setting::NumaBalancing { .. } => "a kernel without automatic NUMA balancing",
        Setting::Sysctl { .. } => "no such sysctl on this kernel",
        _ => "no such file",
    }
}

/// A `sysfs:` path as a file under the root's `/sys`, symbolic links followed, never outside.
fn sysfs_file(root: &FsRoot, given: &str) -> Result<PathBuf, AbError> {
    let below = sysfs_relative(given)?;
    let sys = root.path("sys");
    let path = sys.join(&below);
    let real = std::fs::canonicalize(&path)
        .map_err(|e| usage(format!("sysfs:{given}: {} ({e})", path.display())))?;
    let real_sys = std::fs::canonicalize(&sys).unwrap_or(sys);
    if !real.starts_with(&real_sys) || !real.is_file() {
        return Err(usage(format!("sysfs:{given}: {} is not a file under /sys", path.display())));
    }
    Ok(real)
}

/// Every cpufreq policy's `scaling_governor`, each offering `value`.
fn governor_writes(setting: &Setting, root: &FsRoot, value: &str) -> Result<Vec<Write>, AbError> {
    let dir = root.path(CPUFREQ);
    let mut policies: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("policy"))
                .map(|e| e.path())
                .filter(|p| p.join("scaling_governor").is_file())
                .collect()
        })
        .unwrap_or_default();
    policies.sort();
    if policies.is_empty() {
        return Err(usage(format!(
            "{setting}: this machine has no cpufreq driver (no {}/policy*/scaling_governor; \
             virtual machines usually have none)",
            dir.display()
        )));
    }
    let mut writes = Vec::new();
    for policy in policies {
        if let Ok(offered) = std::fs::read_to_string(policy.join("scaling_available_governors")) {
            if !offered.split_whitespace().any(|g| g == value) {
                return Err(usage(format!(
                    "{setting}: {} offers {}",
                    policy.display(),
                    offered.split_whitespace().collect::<Vec<_>>().join(", ")
                )));
            }
        }
        writes.push(file_write(setting, policy.join("scaling_governor"), value)?);
    }
    Ok(writes)
}

/// Checks that every file of `writes` can be written (opened for writing, nothing written):
/// one line naming the setting, and root when this process is not root.
pub fn check_writable(writes: &[Write]) -> Result<(), AbError> {
    for w in writes {
        if let Err(e) = files::writable(&w.path) {
            // SAFETY: geteuid has no preconditions and cannot fail.
            let root = unsafe { libc::geteuid() } == 0;
            let why = if e.kind() == std::io::ErrorKind::PermissionDenied && !root {
                "needs root".to_string()
            } else if e.kind() == std::io::ErrorKind::PermissionDenied {
                "the file is read-only".to_string()
            } else {
                e.to_string()
            };
            return Err(usage(format!(
                "{}: {} cannot be written ({why}); nothing was changed",
                w.setting,
                w.path.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Setting {
        Setting::parse(text).unwrap()
    }

    fn refused(text: &str) -> String {
        Setting::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn every_kind_parses_in_its_own_words() {
        assert_eq!(parse("thp=never"), Setting::Thp { value: "never".into() });
        assert_eq!(parse("thp-defrag=defer+madvise").value(), "defer+madvise");
        assert_eq!(parse("numa-balancing=1").key(), "numa-balancing");
        let numa = parse("numa=interleave:all");
        assert_eq!((numa.key(), numa.value()), ("numa".into(), "interleave:all".into()));
        assert_eq!(parse("numa=cpunodebind:1").key(), "numa-cpus");
        assert_eq!(parse("numa=localalloc").to_string(), "numa=localalloc");
        assert_eq!(parse("alloc=glibc:arena_max=2").value(), "glibc:arena_max=2");
        let sysctl = parse("sysctl:vm.swappiness=10");
        assert_eq!(sysctl.to_string(), "sysctl:vm.swappiness=10");
        assert!(sysctl.is_system());
        let sysfs = parse("sysfs:/sys/block/sda/queue/scheduler=none");
        assert_eq!(sysfs.key(), "sysfs:/sys/block/sda/queue/scheduler");
        assert_eq!(parse("governor=performance").value(), "performance");
        assert!(!parse("alloc=jemalloc").is_system());
    }

    #[test]
    fn bad_settings_say_what_is_accepted_on_one_line() {
        for (text, needle) in [
            ("thp=sometimes", "thp takes always, madvise, never"),
            ("numa-balancing=2", "takes 0, 1"),
            ("numa=bind:0", "not one of membind"),
            ("numa=membind", "membind takes a list"),
            ("numa=localalloc:0", "takes no list"),
            ("sysctl:vm.swappiness", "needs a name and a value"),
            ("sysctl:../etc=1", "not a sysctl name"),
            ("sysfs:/sys/../etc/passwd=x", "without '..'"),
            ("swap=1", "unknown setting 'swap'"),
            ("thp", "not KEY=VALUE"),
            ("alloc=", "needs a value"),
        ] {
            let e = refused(text);
            assert!(e.contains(needle), "{text}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    /// A made-up machine: THP, NUMA balancing, a sysctl, a sysfs file and two cpufreq policies.
    fn fake_machine() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let put = |rel: &str, text: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put(THP_ENABLED, "always [madvise] never\n");
        put(THP_DEFRAG, "always defer defer+madvise [madvise] never\n");
        put(NUMA_BALANCING, "0\n");
        put("proc/sys/vm/swappiness", "60\n");
        put("sys/block/vda/queue/scheduler", "[none] mq-deadline\n");
        for p in ["policy0", "policy1"] {
            put(&format!("{CPUFREQ}/{p}/scaling_governor"), "schedutil\n");
            put(&format!("{CPUFREQ}/{p}/scaling_available_governors"), "performance schedutil\n");
        }
        dir
    }

    fn plan(root: &Path, texts: &[&str]) -> Result<Arm, AbError> {
        let topology =
            topo::Topology::from_synthetic("pack:1 [numa(memory=1GiB)] core:2 pu:1").unwrap();
        let settings: Vec<Setting> = texts.iter().map(|t| parse(t)).collect();
        let root = FsRoot::at(root);
        plan_arm(&settings, Machine { root: &root, topology: &topology, libraries: &[] })
    }

    #[test]
    fn an_arm_is_checked_against_the_machine() {
        let dir = fake_machine();
        let arm = plan(
            dir.path(),
            &[
                "thp=never",
                "thp-defrag=defer",
                "numa-balancing=1",
                "sysctl:vm.swappiness=10",
                "sysfs:/sys/block/vda/queue/scheduler=mq-deadline",
                "governor=performance",
                "numa=membind:0",
                "alloc=glibc",
            ],
        )
        .unwrap();
        let files: Vec<String> = arm
            .writes
            .iter()
            .map(|w| {
                let rel = w
                    .path
                    .strip_prefix(dir.path().canonicalize().unwrap())
                    .unwrap_or(w.path.strip_prefix(dir.path()).unwrap());
                format!("{}={}", rel.display(), w.value)
            })
            .collect();
        assert_eq!(
            files,
            [
                "sys/kernel/mm/transparent_hugepage/enabled=never",
                "sys/kernel/mm/transparent_hugepage/defrag=defer",
                "proc/sys/kernel/numa_balancing=1",
                "proc/sys/vm/swappiness=10",
                "sys/block/vda/queue/scheduler=mq-deadline",
                "sys/devices/system/cpu/cpufreq/policy0/scaling_governor=performance",
                "sys/devices/system/cpu/cpufreq/policy1/scaling_governor=performance",
            ]
        );
        assert_eq!(arm.placement.policy, place::MemPolicy::Bind(vec![0]));
        assert_eq!(arm.allocator.as_ref().map(|a| a.name.as_str()), Some("glibc"));
        assert_eq!(arm.as_map()["numa"], "membind:0");
        assert!(check_writable(&arm.writes).is_ok());
    }

    #[test]
    fn what_the_machine_cannot_take_is_refused_in_one_line() {
        let dir = fake_machine();
        for (texts, needle) in [
            (&["sysctl:vm.swapiness=1"][..], "no such sysctl on this kernel"),
            (&["sysfs:/sys/block/vda/queue/scheduler=bfq"], "offers none, mq-deadline"),
            (&["sysfs:block/sdz/queue/scheduler=none"], "sysfs:block/sdz/queue/scheduler"),
            (&["governor=turbo"], "offers performance, schedutil"),
            (&["numa=membind:3"], "numa: "),
            (&["numa=membind:0", "numa=interleave:all"], "both set numa"),
            (
                &["thp=never", "sysfs:/sys/kernel/mm/transparent_hugepage/enabled=always"],
                "both write",
            ),
            (&["alloc=tbb"], "alloc=tbb: "),
        ] {
            let e = plan(dir.path(), texts).unwrap_err().to_string();
            assert!(e.contains(needle), "{texts:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        // Without cpufreq (a virtual machine): the governor is refused by name.
        std::fs::remove_dir_all(dir.path().join(CPUFREQ)).unwrap();
        let e = plan(dir.path(), &["governor=performance"]).unwrap_err().to_string();
        assert!(e.contains("no cpufreq driver"), "{e}");
        // A file that cannot be opened for writing: refused before anything changes.
        let write = Write {
            setting: "sysctl:vm.nope".into(),
            path: dir.path().join("proc/sys/vm/nope"),
            value: "1".into(),
        };
        let e = check_writable(&[write]).unwrap_err().to_string();
        assert!(e.contains("sysctl:vm.nope") && e.contains("nothing was changed"), "{e}");
    }
}
