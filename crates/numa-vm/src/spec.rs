//! Guest description, its validation and the QEMU command line built from it.

use std::path::Path;
use std::time::Duration;

/// One guest NUMA node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestNode {
    /// CPUs in this node; 0 makes a memory-only node (allowed only after all nodes with CPUs).
    pub cpus: u32,
    /// Memory in MiB (at least 32, even).
    pub mem_mib: u64,
}

/// A guest machine: its NUMA nodes, their SLIT distances, and how long the whole run may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestSpec {
    /// Nodes in node-id order. Nodes with CPUs must come first: Linux numbers nodes with CPUs
    /// before memory-only ones, so any other order would not match the ids inside the guest.
    pub nodes: Vec<GuestNode>,
    /// `distances[i][j]` is the SLIT distance from node `i` to node `j`: 10 on the diagonal,
    /// 11..=255 elsewhere; asymmetric matrices are allowed. An empty matrix gives the guest no
    /// SLIT at all (Linux then assumes 10 local, 20 remote).
    pub distances: Vec<Vec<u8>>,
    /// Wall-clock limit for the whole run, from QEMU's start to its exit.
    pub timeout: Duration,
    /// Extra kernel command-line arguments, e.g. `numa_balancing=disable`.
    pub extra_kernel_args: Vec<String>,
    /// QEMU's CPU model (`-cpu`): `max` (every feature TCG can emulate) by default, or a named
    /// model such as `Cascadelake-Server` or `EPYC-Rome` ([`crate::cpu_models`] lists them),
    /// which sets the CPUID the guest sees: vendor, family, highest leaves, caches, TLBs.
    pub cpu: String,
}

/// Most nodes a spec may have.
pub const MAX_NODES: usize = 16;
/// Most CPUs a spec may have (TCG on a small machine gets slow beyond this).
pub const MAX_CPUS: u32 = 16;
/// Smallest node, in MiB.
pub const MIN_NODE_MIB: u64 = 32;
/// Smallest node 0, in MiB: it holds the kernel image and the unpacked initramfs.
pub const MIN_NODE0_MIB: u64 = 128;

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
const DEFAULT_CPU: &str = "max";

impl GuestSpec {
    /// Builds a spec from `(cpus, mem_mib)` pairs and a distance matrix, with the default
    /// timeout (120 s) and no extra kernel arguments.
    pub fn new(nodes: &[(u32, u64)], distances: Vec<Vec<u8>>) -> Self {
        GuestSpec {
            nodes: nodes.iter().map(|&(cpus, mem_mib)| GuestNode { cpus, mem_mib }).collect(),
            distances,
            timeout: DEFAULT_TIMEOUT,
            extra_kernel_args: Vec::new(),
            cpu: DEFAULT_CPU.to_string(),
        }
    }

    /// Two nodes, one CPU and 512 MiB each, distance 20 between them.
    pub fn two_nodes() -> Self {
        Self::new(&[(1, 512), (1, 512)], vec![vec![10, 20], vec![20, 10]])
    }

    /// Four nodes of 256 MiB: node 0 has CPUs 0-1, node 1 CPU 2, node 2 CPU 3, node 3 no CPU
    /// (memory only). The distance matrix is asymmetric (`d[i][j] != d[j][i]`).
    pub fn four_nodes_with_memory_only() -> Self {
        Self::new(
            &[(2, 256), (1, 256), (1, 256), (0, 256)],
            vec![
                vec![10, 20, 30, 40],
                vec![21, 10, 22, 32],
                vec![31, 23, 10, 24],
                vec![41, 33, 25, 10],
            ],
        )
    }

    /// Replaces the timeout.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Replaces the CPU model (QEMU's `-cpu`; default `max`).
    #[must_use]
    pub fn with_cpu(mut self, model: impl Into<String>) -> Self {
        self.cpu = model.into();
        self
    }

    /// Adds a kernel command-line argument.
    #[must_use]
    pub fn with_kernel_arg(mut self, arg: impl Into<String>) -> Self {
        self.extra_kernel_args.push(arg.into());
        self
    }

    /// Total CPUs over all nodes.
    pub fn total_cpus(&self) -> u32 {
        self.nodes.iter().map(|n| n.cpus).sum()
    }

    /// Total memory over all nodes, in MiB.
    pub fn total_mem_mib(&self) -> u64 {
        self.nodes.iter().map(|n| n.mem_mib).sum()
    }

    /// The guest CPU ids of each node, as `(first, last)`; `None` for memory-only nodes.
    pub fn cpu_ranges(&self) -> Vec<Option<(u32, u32)>> {
        let mut next = 0;
        self.nodes
            .iter()
            .map(|n| {
                if n.cpus == 0 {
                    return None;
                }
                let range = (next, next + n.cpus - 1);
                next += n.cpus;
                Some(range)
            })
            .collect()
    }

    /// Checks the spec; the error says what is wrong and how to fix it.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.nodes.len();
        if n == 0 {
            return Err("a guest needs at least one node".into());
        }
        if n > MAX_NODES {
            return Err(format!("{n} nodes; at most {MAX_NODES} are supported"));
        }
        if self.nodes[0].cpus == 0 {
            return Err("node 0 has no CPUs; give CPUs to the lowest-numbered nodes".into());
        }
        if let Some(i) = self.nodes.windows(2).position(|w| w[0].cpus == 0 && w[1].cpus > 0) {
            return Err(format!(
                "node {} has CPUs but node {i} before it has none; Linux numbers nodes with CPUs \
                 first, so put memory-only nodes last",
                i + 1
            ));
        }
        let cpus = self.total_cpus();
        if cpus > MAX_CPUS {
            return Err(format!("{cpus} CPUs in total; at most {MAX_CPUS} are supported"));
        }
        for (i, node) in self.nodes.iter().enumerate() {
            if node.mem_mib < MIN_NODE_MIB || node.mem_mib % 2 != 0 {
                return Err(format!(
                    "node {i} has {} MiB; each node needs an even size of at least {MIN_NODE_MIB} MiB",
                    node.mem_mib
                ));
            }
        }
        if self.nodes[0].mem_mib < MIN_NODE0_MIB {
            return Err(format!(
                "node 0 has {} MiB; it needs at least {MIN_NODE0_MIB} MiB for the kernel and initramfs",
                self.nodes[0].mem_mib
            ));
        }
        if !self.distances.is_empty() {
            if self.distances.len() != n || self.distances.iter().any(|row| row.len() != n) {
                return Err(format!("the distance matrix must be {n}x{n} (or empty for no SLIT)"));
            }
            for (i, row) in self.distances.iter().enumerate() {
                for (j, &d) in row.iter().enumerate() {
                    if i == j && d != 10 {
                        return Err(format!(
                            "distance[{i}][{i}] is {d}; local distances must be 10"
                        ));
                    }
                    if i != j && d <= 10 {
                        return Err(format!(
                            "distance[{i}][{j}] is {d}; remote distances must be above 10 \
                             (Linux ignores a SLIT with remote distances <= 10)"
                        ));
                    }
                }
            }
        }
        let model_char = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
        if self.cpu.is_empty() || !self.cpu.chars().all(model_char) {
            return Err(format!(
                "CPU model {:?}: give one of the names `qemu-system-x86_64 -cpu help` lists \
                 (letters, digits, '-', '_', '.')",
                self.cpu
            ));
        }
        if self.timeout.is_zero() {
            return Err("the timeout is zero".into());
        }
        Ok(())
    }
}

/// The model names of `qemu-system-x86_64 -cpu help`: the second word of each `x86 NAME …`
/// line (aliases included), in its order; the feature flags it lists after them are not models.
pub(crate) fn parse_cpu_models(help: &str) -> Vec<String> {
    help.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("x86")).then(|| words.next()).flatten().map(str::to_string)
        })
        .collect()
}

/// Files QEMU reads and writes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct QemuFiles<'a> {
    pub kernel: &'a Path,
    pub initrd: &'a Path,
    /// Serial port 0: the kernel console and init's progress messages.
    pub console: &'a Path,
    /// Serial port 1: the result channel (markers and base64).
    pub results: &'a Path,
}

/// Escapes a value for QEMU's `key=value,...` option syntax (a comma is written twice).
fn opt_value(path: &Path) -> String {
    path.to_string_lossy().replace(',', ",,")
}

/// The kernel command line for a spec.
pub(crate) fn kernel_cmdline(spec: &GuestSpec) -> String {
    let mut args = vec!["console=ttyS0".to_string(), "panic=-1".into(), "rdinit=/init".into()];
    args.extend(spec.extra_kernel_args.iter().cloned());
    args.join(" ")
}

/// QEMU's arguments (without the program name) for a validated spec.
pub(crate) fn qemu_args(spec: &GuestSpec, files: &QemuFiles<'_>) -> Vec<String> {
    let cpus = spec.total_cpus();
    let mut a: Vec<String> = [
        "-accel",
        "tcg",
        "-machine",
        "pc",
        "-cpu",
        spec.cpu.as_str(),
        "-nodefaults",
        "-no-user-config",
        "-display",
        "none",
        "-no-reboot",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // One socket per CPU: sockets never straddle nodes, so the guest kernel sees a sane
    // package/node topology whatever the node layout.
    a.extend([
        "-m".into(),
        format!("{}M", spec.total_mem_mib()),
        "-smp".into(),
        format!("{cpus},sockets={cpus},cores=1,threads=1"),
        "-kernel".into(),
        files.kernel.to_string_lossy().into_owned(),
        "-initrd".into(),
        files.initrd.to_string_lossy().into_owned(),
        "-append".into(),
        kernel_cmdline(spec),
        "-chardev".into(),
        format!("file,id=console,path={}", opt_value(files.console)),
        "-serial".into(),
        "chardev:console".into(),
        "-chardev".into(),
        format!("file,id=results,path={}", opt_value(files.results)),
        "-serial".into(),
        "chardev:results".into(),
    ]);
    for (i, (node, cpus)) in spec.nodes.iter().zip(spec.cpu_ranges()).enumerate() {
        a.push("-object".into());
        a.push(format!("memory-backend-ram,size={}M,id=m{i}", node.mem_mib));
        let cpus = match cpus {
            Some((first, last)) if first == last => format!(",cpus={first}"),
            Some((first, last)) => format!(",cpus={first}-{last}"),
            None => String::new(),
        };
        a.push("-numa".into());
        a.push(format!("node,memdev=m{i}{cpus},nodeid={i}"));
    }
    for (i, row) in spec.distances.iter().enumerate() {
        for (j, d) in row.iter().enumerate() {
            if i != j {
                a.push("-numa".into());
                a.push(format!("dist,src={i},dst={j},val={d}"));
            }
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> QemuFiles<'static> {
        QemuFiles {
            kernel: Path::new("/c/vmlinux"),
            initrd: Path::new("/t/initrd.cpio"),
            console: Path::new("/t/console.log"),
            results: Path::new("/t/a,b/results.log"),
        }
    }

    fn windows(args: &[String], key: &str) -> Vec<String> {
        args.windows(2).filter(|w| w[0] == key).map(|w| w[1].clone()).collect()
    }

    #[test]
    fn presets_are_valid() {
        GuestSpec::two_nodes().validate().unwrap();
        GuestSpec::four_nodes_with_memory_only().validate().unwrap();
    }

    #[test]
    fn two_node_args() {
        let args = qemu_args(&GuestSpec::two_nodes(), &files());
        assert_eq!(windows(&args, "-m"), ["1024M"]);
        assert_eq!(windows(&args, "-smp"), ["2,sockets=2,cores=1,threads=1"]);
        assert_eq!(windows(&args, "-accel"), ["tcg"]);
        assert_eq!(windows(&args, "-cpu"), ["max"]);
        let rome = qemu_args(&GuestSpec::two_nodes().with_cpu("EPYC-Rome"), &files());
        assert_eq!(windows(&rome, "-cpu"), ["EPYC-Rome"]);
        assert_eq!(windows(&args, "-kernel"), ["/c/vmlinux"]);
        assert_eq!(windows(&args, "-initrd"), ["/t/initrd.cpio"]);
        assert_eq!(windows(&args, "-append"), ["console=ttyS0 panic=-1 rdinit=/init"]);
        assert_eq!(
            windows(&args, "-object"),
            ["memory-backend-ram,size=512M,id=m0", "memory-backend-ram,size=512M,id=m1"]
        );
        assert_eq!(
            windows(&args, "-numa"),
            [
                "node,memdev=m0,cpus=0,nodeid=0",
                "node,memdev=m1,cpus=1,nodeid=1",
                "dist,src=0,dst=1,val=20",
                "dist,src=1,dst=0,val=20",
            ]
        );
        assert_eq!(
            windows(&args, "-chardev"),
            ["file,id=console,path=/t/console.log", "file,id=results,path=/t/a,,b/results.log"]
        );
        assert_eq!(windows(&args, "-serial"), ["chardev:console", "chardev:results"]);
        assert!(args.iter().any(|a| a == "-no-reboot"));
    }

    #[test]
    fn four_node_args_with_memory_only_node() {
        let spec =
            GuestSpec::four_nodes_with_memory_only().with_kernel_arg("numa_balancing=disable");
        let args = qemu_args(&spec, &files());
        assert_eq!(windows(&args, "-m"), ["1024M"]);
        assert_eq!(windows(&args, "-smp"), ["4,sockets=4,cores=1,threads=1"]);
        assert_eq!(
            windows(&args, "-append"),
            ["console=ttyS0 panic=-1 rdinit=/init numa_balancing=disable"]
        );
        let numa = windows(&args, "-numa");
        assert_eq!(
            numa[..4],
            [
                "node,memdev=m0,cpus=0-1,nodeid=0",
                "node,memdev=m1,cpus=2,nodeid=1",
                "node,memdev=m2,cpus=3,nodeid=2",
                "node,memdev=m3,nodeid=3",
            ]
        );
        let dists = &numa[4..];
        assert_eq!(dists.len(), 12, "every off-diagonal pair: {dists:?}");
        assert!(dists.contains(&"dist,src=0,dst=3,val=40".to_string()));
        assert!(dists.contains(&"dist,src=3,dst=0,val=41".to_string()));
        assert!(dists.contains(&"dist,src=2,dst=3,val=24".to_string()));
        assert!(!dists.iter().any(|d| d.contains("val=10")));
    }

    #[test]
    fn no_slit_without_distances() {
        let spec = GuestSpec::new(&[(1, 256), (1, 256)], vec![]);
        spec.validate().unwrap();
        let args = qemu_args(&spec, &files());
        assert!(!windows(&args, "-numa").iter().any(|a| a.starts_with("dist")));
    }

    #[test]
    fn parses_qemu_cpu_help() {
        // The shape of QEMU 7.2's `-cpu help`, trimmed.
        let help = "Available CPUs:\n\
            x86 486                   (alias configured by machine type)\n\
            x86 Cascadelake-Server    (alias configured by machine type)\n\
            x86 Cascadelake-Server-v1  Intel Xeon Processor (Cascadelake)\n\
            x86 EPYC-Rome             (alias configured by machine type)\n\
            x86 max                   Enables all features supported by the accelerator\n\
            \n\
            Recognized CPUID flags:\n  3dnow 3dnowext\n";
        assert_eq!(
            parse_cpu_models(help),
            ["486", "Cascadelake-Server", "Cascadelake-Server-v1", "EPYC-Rome", "max"]
        );
        assert!(parse_cpu_models("").is_empty());
    }

    #[test]
    fn cpu_ranges_follow_node_order() {
        let spec = GuestSpec::new(&[(3, 256), (2, 256), (0, 64)], vec![]);
        assert_eq!(spec.cpu_ranges(), [Some((0, 2)), Some((3, 4)), None]);
        assert_eq!(spec.total_cpus(), 5);
        assert_eq!(spec.total_mem_mib(), 576);
    }

    #[test]
    fn rejects_bad_specs() {
        let bad = |spec: GuestSpec, needle: &str| {
            let err = spec.validate().unwrap_err();
            assert!(err.contains(needle), "{err:?} should mention {needle:?}");
        };
        bad(GuestSpec::new(&[], vec![]), "at least one node");
        bad(GuestSpec::new(&[(0, 256), (1, 256)], vec![]), "node 0 has no CPUs");
        bad(GuestSpec::new(&[(1, 256), (0, 256), (1, 256)], vec![]), "memory-only nodes last");
        bad(GuestSpec::new(&[(1, 256), (1, 16)], vec![]), "at least 32 MiB");
        bad(GuestSpec::new(&[(1, 256), (1, 33)], vec![]), "even size");
        bad(GuestSpec::new(&[(1, 64)], vec![]), "node 0 has 64 MiB");
        bad(GuestSpec::new(&[(17, 256)], vec![]), "at most 16");
        bad(GuestSpec::new(&[(1, 256), (1, 256)], vec![vec![10, 20]]), "2x2");
        bad(GuestSpec::new(&[(1, 256), (1, 256)], vec![vec![10, 20], vec![20, 11]]), "must be 10");
        bad(GuestSpec::new(&[(1, 256), (1, 256)], vec![vec![10, 10], vec![20, 10]]), "above 10");
        bad(GuestSpec::two_nodes().with_timeout(Duration::ZERO), "timeout");
        bad(GuestSpec::two_nodes().with_cpu(""), "CPU model");
        bad(GuestSpec::two_nodes().with_cpu("EPYC,+pdpe1gb"), "-cpu help");
    }
}
