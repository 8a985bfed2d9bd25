//! Which allocators to compare, where their libraries are, and how a child process is given one.
//!
//! A *preloaded* allocator is a shared library put first in the dynamic linker's search with
//! `LD_PRELOAD`; glibc's own allocator is the baseline, and its tunables
//! (`GLIBC_TUNABLES=glibc.malloc.arena_max=2`) make pseudo-allocators (`glibc:arena_max=2`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::Error;

/// An allocator Debian ships as a preloadable library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Known {
    /// The name on the command line (`jemalloc`).
    pub name: &'static str,
    /// The library's file name, as `ldconfig -p` lists it.
    pub library: &'static str,
    /// The Debian package that installs it.
    pub package: &'static str,
}

/// The allocators Debian 12 ships (REFERENCE.md: "The workload side"). tbbmalloc is preloaded
/// through its proxy, which replaces malloc and loads `libtbbmalloc.so.2`.
pub const KNOWN: &[Known] = &[
    Known { name: "jemalloc", library: "libjemalloc.so.2", package: "libjemalloc2" },
    Known {
        name: "tcmalloc",
        library: "libtcmalloc_minimal.so.4",
        package: "libtcmalloc-minimal4",
    },
    Known { name: "mimalloc", library: "libmimalloc.so.2", package: "libmimalloc2.0" },
    Known { name: "tbb", library: "libtbbmalloc_proxy.so.2", package: "libtbbmalloc2" },
];

/// The default list: glibc first (the baseline), then every known allocator.
pub const DEFAULT_LIST: &[&str] = &["glibc", "jemalloc", "tcmalloc", "mimalloc", "tbb"];

/// glibc malloc tunables accepted after `glibc:` (glibc 2.36, `tunables(7)`).
pub const GLIBC_TUNABLES: &[&str] = &[
    "arena_max",
    "arena_test",
    "tcache_count",
    "tcache_max",
    "tcache_unsorted_limit",
    "mmap_threshold",
    "mmap_max",
    "trim_threshold",
    "top_pad",
    "perturb",
    "mxfast",
    "hugetlb",
];

/// How an allocator is applied to a child process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Kind {
    /// glibc's malloc, with `GLIBC_TUNABLES` entries (`glibc.malloc.arena_max=2`), maybe none.
    Glibc { tunables: Vec<String> },
    /// A library given in `LD_PRELOAD`.
    Preload { library: PathBuf },
}

/// One allocator of the bake-off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allocator {
    /// Its label in tables and metrics (`glibc`, `jemalloc`, `glibc:arena_max=2`).
    pub name: String,
    #[serde(flatten)]
    pub kind: Kind,
}

impl Allocator {
    /// glibc's malloc untuned: the baseline relative throughput is measured against.
    pub fn glibc() -> Self {
        Allocator { name: "glibc".into(), kind: Kind::Glibc { tunables: Vec::new() } }
    }

    /// Whether this is glibc's malloc without tunables.
    pub fn is_baseline(&self) -> bool {
        matches!(&self.kind, Kind::Glibc { tunables } if tunables.is_empty())
    }

    /// The value of `GLIBC_TUNABLES`, if any.
    pub fn tunables(&self) -> Option<String> {
        match &self.kind {
            Kind::Glibc { tunables } if !tunables.is_empty() => Some(tunables.join(":")),
            _ => None,
        }
    }

    /// Sets (or clears) `LD_PRELOAD` and `GLIBC_TUNABLES` on `cmd`: a child runs under this
    /// allocator and nothing inherited from the caller's environment.
    pub fn apply(&self, cmd: &mut Command) {
        cmd.env_remove("LD_PRELOAD").env_remove("GLIBC_TUNABLES");
        for (k, v) in self.environment() {
            cmd.env(k, v);
        }
    }

    /// The environment variables this allocator sets.
    pub fn environment(&self) -> Vec<(&'static str, String)> {
        match &self.kind {
            Kind::Preload { library } => vec![("LD_PRELOAD", library.display().to_string())],
            Kind::Glibc { .. } => {
                self.tunables().map(|t| vec![("GLIBC_TUNABLES", t)]).unwrap_or_default()
            }
        }
    }
}

/// An allocator asked for whose library is not installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Missing {
    pub name: String,
    pub library: String,
    /// The Debian package to install.
    pub package: String,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} not found (apt-get install {})", self.name, self.library, self.package)
    }
}

/// The allocators that will run and those that cannot.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Resolved {
    pub allocators: Vec<Allocator>,
    pub missing: Vec<Missing>,
}

/// One line of `ldconfig -p`: a library's file name and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    pub name: String,
    /// The ABI tag in parentheses (`libc6,x86-64`).
    pub abi: String,
    pub path: PathBuf,
}

/// Parses `ldconfig -p` output (`\tlibjemalloc.so.2 (libc6,x86-64) => /usr/lib/…`); the header
/// line and anything else unrecognised are skipped.
pub fn parse_ldconfig(text: &str) -> Vec<CacheEntry> {
    text.lines()
        .filter_map(|line| {
            let (left, path) = line.split_once(" => ")?;
            let left = left.trim();
            let (name, rest) = left.split_once(" (")?;
            let abi = rest.split(')').next()?.to_string();
            Some(CacheEntry { name: name.to_string(), abi, path: PathBuf::from(path.trim()) })
        })
        .collect()
}

/// `ldconfig -p` on this system (empty when it cannot run: the fixed directories still work).
pub fn ldconfig_cache() -> Vec<CacheEntry> {
    let out = Command::new("/sbin/ldconfig").arg("-p").output();
    match out {
        Ok(o) if o.status.success() => parse_ldconfig(&String::from_utf8_lossy(&o.stdout)),
        _ => Vec::new(),
    }
}

/// The ABI tag of libraries this process can preload into a child like itself.
fn native_abi() -> &'static str {
    if cfg!(target_arch = "x86_64") {
        "x86-64"
    } else if cfg!(target_arch = "aarch64") {
        "AArch64"
    } else {
        ""
    }
}

fn find_in_cache(cache: &[CacheEntry], pred: impl Fn(&str) -> bool) -> Option<&Path> {
    let abi = native_abi();
    cache.iter().find(|e| pred(&e.name) && e.abi.contains(abi)).map(|e| e.path.as_path())
}

/// Parses one `--allocators` entry that is glibc or a glibc pseudo-allocator:
/// `glibc`, `glibc:arena_max=2`, `glibc:arena_max=1:tcache_count=0`.
pub fn parse_glibc(spec: &str) -> Result<Option<Allocator>, Error> {
    let Some(rest) = spec.strip_prefix("glibc") else { return Ok(None) };
    if rest.is_empty() {
        return Ok(Some(Allocator::glibc()));
    }
    let Some(rest) = rest.strip_prefix(':') else { return Ok(None) };
    let mut tunables = Vec::new();
    for part in rest.split(':') {
        let (key, value) = part.split_once('=').ok_or_else(|| {
            Error::usage(format!(
                "'{spec}': '{part}' is not NAME=VALUE (e.g. glibc:arena_max=2, glibc:tcache_count=0)"
            ))
        })?;
        if !GLIBC_TUNABLES.contains(&key) {
            return Err(Error::usage(format!(
                "'{spec}': unknown glibc malloc tunable '{key}' (known: {})",
                GLIBC_TUNABLES.join(", ")
            )));
        }
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Error::usage(format!(
                "'{spec}': {key} takes a whole number, not '{value}'"
            )));
        }
        tunables.push(format!("glibc.malloc.{key}={value}"));
    }
    Ok(Some(Allocator { name: spec.to_string(), kind: Kind::Glibc { tunables } }))
}

/// Resolves the names asked for (`--allocators`) and the custom libraries (`--allocator
/// NAME=PATH`) against the linker cache. Known allocators that are not installed are listed in
/// [`Resolved::missing`] with their package; an unknown name found nowhere, a custom path that
/// does not exist, or a name given twice is a usage error.
pub fn resolve(
    names: &[String],
    custom: &[(String, PathBuf)],
    cache: &[CacheEntry],
) -> Result<Resolved, Error> {
    let mut out = Resolved::default();
    let mut seen = std::collections::BTreeSet::new();
    for name in names {
        let name = name.trim();
        if name.is_empty() {
            continue;
        }
        if !seen.insert(name.to_string()) {
            return Err(Error::usage(format!("allocator '{name}' is named twice")));
        }
        if let Some(a) = parse_glibc(name)? {
            out.allocators.push(a);
            continue;
        }
        if let Some(k) = KNOWN.iter().find(|k| k.name == name) {
            match find_in_cache(cache, |n| n == k.library) {
                Some(path) => out.allocators.push(Allocator {
                    name: name.to_string(),
                    kind: Kind::Preload { library: path.to_path_buf() },
                }),
                None => out.missing.push(Missing {
                    name: name.to_string(),
                    library: k.library.to_string(),
                    package: k.package.to_string(),
                }),
            }
            continue;
        }
        // Any other name: a library called lib<name>.so… in the linker cache (hoard, …).
        let prefix = format!("lib{name}.so");
        match find_in_cache(cache, |n| n.starts_with(&prefix)) {
            Some(path) => out.allocators.push(Allocator {
                name: name.to_string(),
                kind: Kind::Preload { library: path.to_path_buf() },
            }),
            None => {
                return Err(Error::usage(format!(
                    "unknown allocator '{name}': not one of glibc, {}, and no {prefix}* in \
                     `ldconfig -p`; give its library with --allocator {name}=PATH",
                    KNOWN.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
                )))
            }
        }
    }
    for (name, path) in custom {
        if !seen.insert(name.clone()) {
            return Err(Error::usage(format!("allocator '{name}' is named twice")));
        }
        if !path.is_file() {
            return Err(Error::usage(format!(
                "--allocator {name}={}: no such file (give the path of a shared library)",
                path.display()
            )));
        }
        out.allocators
            .push(Allocator { name: name.clone(), kind: Kind::Preload { library: path.clone() } });
    }
    if out.allocators.is_empty() {
        let missing: Vec<String> = out.missing.iter().map(ToString::to_string).collect();
        return Err(Error::usage(format!(
            "no allocator to run ({})",
            if missing.is_empty() { "none named".to_string() } else { missing.join("; ") }
        )));
    }
    Ok(out)
}

/// Parses `--allocator NAME=PATH`.
pub fn parse_custom(text: &str) -> Result<(String, PathBuf), Error> {
    match text.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => {
            Ok((name.to_string(), PathBuf::from(path)))
        }
        _ => Err(Error::usage(format!(
            "--allocator '{text}': expected NAME=PATH (e.g. hoard=/opt/hoard/libhoard.so)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Captured from `ldconfig -p` on Debian 12 (x86-64) with the four packages installed.
    const LDCONFIG_DEBIAN_12: &str = "\
1234 libs found in cache `/etc/ld.so.cache'
\tlibtcmalloc_minimal.so.4 (libc6,x86-64) => /lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
\tlibtbbmalloc_proxy.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libtbbmalloc_proxy.so.2
\tlibmimalloc.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libmimalloc.so.2
\tlibjemalloc.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libjemalloc.so.2
\tlibjemalloc.so.2 (libc6) => /lib/i386-linux-gnu/libjemalloc.so.2
\tlibhoard.so (libc6,x86-64) => /usr/local/lib/libhoard.so
";

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn ldconfig_lines_parse() {
        let cache = parse_ldconfig(LDCONFIG_DEBIAN_12);
        assert_eq!(cache.len(), 6);
        assert_eq!(cache[3].name, "libjemalloc.so.2");
        assert_eq!(cache[3].abi, "libc6,x86-64");
        assert_eq!(cache[3].path, PathBuf::from("/lib/x86_64-linux-gnu/libjemalloc.so.2"));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn known_and_other_names_resolve_from_the_cache() {
        let cache = parse_ldconfig(LDCONFIG_DEBIAN_12);
        let r = resolve(&names(&["glibc", "jemalloc", "tbb", "hoard"]), &[], &cache).unwrap();
        let got: Vec<_> = r.allocators.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(got, ["glibc", "jemalloc", "tbb", "hoard"]);
        assert_eq!(
            r.allocators[1].kind,
            Kind::Preload { library: "/lib/x86_64-linux-gnu/libjemalloc.so.2".into() }
        );
        assert!(r.missing.is_empty());
    }

    #[test]
    fn missing_libraries_name_their_package_and_the_others_still_run() {
        let r = resolve(&names(&["glibc", "mimalloc"]), &[], &[]).unwrap();
        assert_eq!(r.allocators.len(), 1);
        assert_eq!(r.missing[0].package, "libmimalloc2.0");
        assert!(r.missing[0].to_string().contains("apt-get install libmimalloc2.0"));
        let all_missing = resolve(&names(&["mimalloc"]), &[], &[]).unwrap_err();
        assert!(all_missing.to_string().contains("libmimalloc2.0"), "{all_missing}");
    }

    #[test]
    fn glibc_tunables_become_pseudo_allocators() {
        let a = parse_glibc("glibc:arena_max=2:tcache_count=0").unwrap().unwrap();
        assert_eq!(
            a.tunables().as_deref(),
            Some("glibc.malloc.arena_max=2:glibc.malloc.tcache_count=0")
        );
        assert_eq!(a.environment(), vec![("GLIBC_TUNABLES", a.tunables().unwrap_or_default())]);
        assert!(Allocator::glibc().environment().is_empty());
        assert!(parse_glibc("glibc:arena_mox=2").unwrap_err().to_string().contains("arena_max"));
        assert!(parse_glibc("glibc:arena_max=two").is_err());
        assert!(parse_glibc("glibc:arena_max").is_err());
        assert_eq!(parse_glibc("jemalloc").unwrap(), None);
    }

    #[test]
    fn unknown_names_bogus_paths_and_duplicates_are_usage_errors() {
        let e = resolve(&names(&["hoardx"]), &[], &[]).unwrap_err();
        assert!(e.is_usage() && e.to_string().contains("--allocator hoardx=PATH"), "{e}");
        let e = resolve(&[], &[("x".into(), "/nonexistent/libx.so".into())], &[]).unwrap_err();
        assert!(e.is_usage() && e.to_string().contains("no such file"), "{e}");
        assert!(resolve(&names(&["glibc", "glibc"]), &[], &[]).is_err());
        assert!(parse_custom("x").is_err());
        assert_eq!(parse_custom("x=/a/b").unwrap(), ("x".to_string(), PathBuf::from("/a/b")));
    }
}
