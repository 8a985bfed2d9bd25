//! The settings that change memory results, captured with every measurement so a result read
//! back later explains itself.

use serde::{Deserialize, Serialize};

use crate::model::HugePagePool;
use crate::smbios::DmiMemory;
use crate::sysfs::{bracketed_choice, MthpSize, SysRoot, Vulnerability};

/// Kernel and firmware settings that move memory latency and bandwidth figures.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    pub kernel: Option<String>,
    /// Base page size in bytes.
    pub page_bytes: u64,
    /// Transparent huge pages: `always`, `madvise` or `never`.
    pub thp_enabled: Option<String>,
    pub thp_defrag: Option<String>,
    /// Automatic NUMA balancing (`/proc/sys/kernel/numa_balancing`): 0 off, 1 on, 2 tiering.
    pub numa_balancing: Option<String>,
    /// `/proc/sys/vm/zone_reclaim_mode`: non-zero makes the kernel reclaim locally before going
    /// remote.
    pub zone_reclaim_mode: Option<String>,
    pub clocksource: Option<String>,
    pub available_clocksources: Vec<String>,
    /// cpufreq governors in use and the CPUs using each; empty when there is no cpufreq
    /// (common in VMs).
    pub governors: Vec<Governor>,
    /// SMT control (`on`, `off`, `forceoff`, `notsupported`, `notimplemented`).
    pub smt_control: Option<String>,
    /// Hypervisor vendor when running virtualized (CPUID signature or sysfs), else `None`.
    pub hypervisor: Option<String>,
    /// DMI system vendor and product, when readable.
    pub system: Option<String>,
    /// Machine-wide hugetlb pools.
    pub hugepages: Vec<HugePagePool>,
    /// `MemTotal` of `/proc/meminfo`. Some VMs hot-plug memory on demand, so the nodes' sizes
    /// can add up to less than this and grow as memory is used.
    pub machine_memory_bytes: Option<u64>,
    /// THP's PMD-sized page (`transparent_hugepage/hpage_pmd_size`): 2 MiB on x86-64.
    #[serde(default)]
    pub thp_pmd_bytes: Option<u64>,
    /// Multi-size THP sizes and their policies (since Linux 6.8; empty before).
    #[serde(default)]
    pub mthp: Vec<MthpSize>,
    /// The kernel's word on each hardware vulnerability (since Linux 4.15), by name.
    #[serde(default)]
    pub vulnerabilities: Vec<Vulnerability>,
    /// SMBIOS memory devices, or why none could be read; `None` in topologies stored before
    /// platscope read them.
    #[serde(default)]
    pub dmi_memory: Option<DmiMemory>,
    /// The firmware's version and date (DMI `bios_version`, `bios_date`); `None` in topologies
    /// stored before platscope read them.
    #[serde(default)]
    pub bios: Option<Bios>,
}

/// The firmware as DMI names it; both `None` where there is no DMI (some VMs, arm64 boards).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bios {
    pub version: Option<String>,
    pub date: Option<String>,
}

/// One cpufreq governor and the CPUs it drives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Governor {
    pub name: String,
    pub cpus: Vec<u32>,
}

impl Environment {
    /// Reads the facts under `root`; CPU ids for the governor scan come from `cpus`.
    pub fn read(root: &SysRoot, cpus: &[u32]) -> Self {
        let choice =
            |path: &str| root.read(path).and_then(|t| bracketed_choice(&t).map(String::from));
        let mut governors: Vec<Governor> = Vec::new();
        for &cpu in cpus {
            let path = format!("sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor");
            let Some(name) = root.read(&path) else { continue };
            match governors.iter_mut().find(|g| g.name == name) {
                Some(g) => g.cpus.push(cpu),
                None => governors.push(Governor { name, cpus: vec![cpu] }),
            }
        }
        let dmi = |f: &str| root.read(&format!("sys/class/dmi/id/{f}")).filter(|s| !s.is_empty());
        let system = match (dmi("sys_vendor"), dmi("product_name")) {
            (Some(v), Some(p)) => Some(format!("{v} {p}")),
            (v, p) => v.or(p),
        };
        Self {
            kernel: root.read("proc/sys/kernel/osrelease"),
            page_bytes: page_size(),
            thp_enabled: choice("sys/kernel/mm/transparent_hugepage/enabled"),
            thp_defrag: choice("sys/kernel/mm/transparent_hugepage/defrag"),
            numa_balancing: root.read("proc/sys/kernel/numa_balancing"),
            zone_reclaim_mode: root.read("proc/sys/vm/zone_reclaim_mode"),
            clocksource: root
                .read("sys/devices/system/clocksource/clocksource0/current_clocksource"),
            available_clocksources: root
                .read("sys/devices/system/clocksource/clocksource0/available_clocksource")
                .map(|s| s.split_whitespace().map(String::from).collect())
                .unwrap_or_default(),
            governors,
            smt_control: root.read("sys/devices/system/cpu/smt/control"),
            hypervisor: root.read("sys/hypervisor/type").filter(|s| !s.is_empty()),
            system,
            hugepages: root.global_hugepages(),
            machine_memory_bytes: root.meminfo_bytes("MemTotal"),
            thp_pmd_bytes: root.read_u64("sys/kernel/mm/transparent_hugepage/hpage_pmd_size"),
            mthp: root.mthp_sizes(),
            vulnerabilities: root.vulnerabilities(),
            dmi_memory: Some(crate::smbios::read_dmi_memory(root)),
            bios: Some(Bios { version: dmi("bios_version"), date: dmi("bios_date") }),
        }
    }

    /// Reads the running system, including the CPUID hypervisor signature.
    pub fn detect(cpus: &[u32]) -> Self {
        let mut env = Self::read(&SysRoot::live(), cpus);
        if let Some(name) = cpuid_hypervisor() {
            env.hypervisor = Some(name);
        }
        env
    }
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions; it returns -1 on error, handled below.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).unwrap_or(4096)
}

/// Maps a CPUID hypervisor vendor signature to a name.
pub fn hypervisor_name(signature: &str) -> String {
    let known = [
        ("KVMKVMKVM", "KVM"),
        ("Linux KVM Hv", "KVM (Hyper-V enlightened)"),
        ("Microsoft Hv", "Microsoft Hyper-V"),
        ("VMwareVMware", "VMware"),
        ("XenVMMXenVMM", "Xen"),
        ("TCGTCGTCGTCG", "QEMU TCG"),
        ("bhyve bhyve ", "bhyve"),
        ("ACRNACRNACRN", "ACRN"),
        (" lrpepyh  vr", "Parallels"),
        ("VBoxVBoxVBox", "VirtualBox"),
        ("QNXQVMBSQG", "QNX"),
        ("EVMMEVMMEVMM", "Intel EVMM"),
    ];
    let trimmed = signature.trim_end_matches('\0');
    known
        .iter()
        .find(|(sig, _)| trimmed == sig.trim_end() || trimmed.starts_with(sig.trim_end()))
        .map(|(_, name)| (*name).to_string())
        .unwrap_or_else(|| format!("unknown ({})", trimmed.trim()))
}

/// The hypervisor's name from its CPUID vendor leaf; `None` on bare metal or off x86-64.
fn cpuid_hypervisor() -> Option<String> {
    // Leaf 1 always answers.
    let leaf1 = crate::cpuid::query(1, 0)?;
    if leaf1.ecx & (1 << 31) == 0 {
        return None; // the "hypervisor present" bit is clear: bare metal
    }
    // With the hypervisor bit set, leaf 0x4000_0000 is the hypervisor's vendor leaf.
    let leaf = crate::cpuid::query(0x4000_0000, 0)?;
    let bytes: Vec<u8> =
        [leaf.ebx, leaf.ecx, leaf.edx].iter().flat_map(|r| r.to_le_bytes()).collect();
    Some(hypervisor_name(&String::from_utf8_lossy(&bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_hypervisor_signatures() {
        assert_eq!(hypervisor_name("KVMKVMKVM\0\0\0"), "KVM");
        assert_eq!(hypervisor_name("Microsoft Hv"), "Microsoft Hyper-V");
        assert_eq!(hypervisor_name("TCGTCGTCGTCG"), "QEMU TCG");
        assert_eq!(hypervisor_name("NewVisor1234"), "unknown (NewVisor1234)");
    }

    #[test]
    fn reads_a_fabricated_tree() {
        let dir = std::env::temp_dir().join(format!("platscope-env-{}", std::process::id()));
        let write = |rel: &str, text: &str| {
            let path = dir.join(rel);
            std::fs::create_dir_all(path.parent().expect("has parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        };
        write("proc/sys/kernel/osrelease", "6.1.0-test\n");
        write("sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
        write("sys/kernel/mm/transparent_hugepage/defrag", "[defer] madvise never\n");
        write("proc/sys/kernel/numa_balancing", "1\n");
        write("sys/class/dmi/id/bios_version", "1.16.3-debian-1.16.3-2\n");
        write("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n");
        write("sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "powersave\n");
        write("sys/devices/system/cpu/cpu2/cpufreq/scaling_governor", "performance\n");
        write("sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "8\n");
        write("sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "6\n");
        write("sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "2097152\n");
        write(
            "sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled",
            "always inherit madvise [never]\n",
        );
        write(
            "sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled",
            "always [inherit] madvise never\n",
        );
        write("sys/devices/system/cpu/vulnerabilities/meltdown", "Not affected\n");
        write(
            "sys/devices/system/cpu/vulnerabilities/spectre_v1",
            "Mitigation: usercopy/swapgs barriers\n",
        );
        let env = Environment::read(&SysRoot::at(&dir), &[0, 1, 2, 3]);
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(env.kernel.as_deref(), Some("6.1.0-test"));
        assert_eq!(env.thp_enabled.as_deref(), Some("madvise"));
        assert_eq!(env.thp_defrag.as_deref(), Some("defer"));
        assert_eq!(env.numa_balancing.as_deref(), Some("1"));
        assert_eq!(env.clocksource, None);
        assert_eq!(
            env.governors,
            vec![
                Governor { name: "performance".into(), cpus: vec![0, 2] },
                Governor { name: "powersave".into(), cpus: vec![1] },
            ]
        );
        assert_eq!(env.hugepages, vec![HugePagePool { page_bytes: 2 << 20, total: 8, free: 6 }]);
        assert_eq!(env.thp_pmd_bytes, Some(2 << 20));
        assert_eq!(
            env.mthp,
            vec![
                MthpSize { page_bytes: 64 << 10, enabled: "never".into() },
                MthpSize { page_bytes: 2 << 20, enabled: "inherit".into() },
            ]
        );
        let names: Vec<&str> = env.vulnerabilities.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["meltdown", "spectre_v1"]);
        assert_eq!(env.dmi_memory, Some(DmiMemory::Unavailable("no DMI tables".into())));
        assert_eq!(
            env.bios,
            Some(Bios { version: Some("1.16.3-debian-1.16.3-2".into()), date: None })
        );
    }
}
