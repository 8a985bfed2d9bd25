//! What the platform states about the core clock: CPUID leaf 0x16 and cpufreq's files.

use crate::FsRoot;

/// Frequencies the platform states, and which sources were absent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stated {
    pub cpuid_base_mhz: Option<f64>,
    pub cpuid_max_mhz: Option<f64>,
    pub cpufreq_max_mhz: Option<f64>,
    pub cpufreq_driver: Option<String>,
    pub cpufreq_cur_mhz: Option<f64>,
    pub cpufreq_cur_cpu: Option<u32>,
    pub notes: Vec<String>,
}

impl Stated {
    /// Reads CPUID leaf 0x16 and cpufreq under `root`; the current frequency is that of the CPU
    /// the calling thread runs on.
    pub fn read(root: &FsRoot) -> Self {
        let mut stated = Stated::default();
        match cpuid_leaf_16() {
            Ok((base, max)) => {
                stated.cpuid_base_mhz = base;
                stated.cpuid_max_mhz = max;
            }
            Err(why) => stated.notes.push(why),
        }
        match read_cpufreq(root) {
            Some((mhz, driver)) => {
                stated.cpufreq_max_mhz = Some(mhz);
                stated.cpufreq_driver = driver;
            }
            None => stated.notes.push(
                "no cpufreq cpuinfo_max_freq in sysfs (usual under a hypervisor)".to_string(),
            ),
        }
        // SAFETY: sched_getcpu takes no arguments and only returns a number (-1 on error).
        let cpu = u32::try_from(unsafe { libc::sched_getcpu() }).ok();
        if let Some(cpu) = cpu {
            let path =
                root.path(&format!("sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq"));
            stated.cpufreq_cur_mhz = std::fs::read_to_string(path).ok().and_then(|t| parse_khz(&t));
            stated.cpufreq_cur_cpu = stated.cpufreq_cur_mhz.map(|_| cpu);
        }
        stated
    }
}

/// CPUID leaf 0x16: (base MHz, maximum MHz), each `None` when zero; `Err` says why the leaf is
/// absent.
#[cfg(target_arch = "x86_64")]
fn cpuid_leaf_16() -> Result<(Option<f64>, Option<f64>), String> {
    // Every other crate executes CPUID through `topo::cpuid::query`; this one cannot, as `topo`
    // depends on `measure`.
    use std::arch::x86_64::__cpuid;
    let highest = __cpuid(0).eax;
    if highest < 0x16 {
        return Err(format!(
            "no CPUID leaf 0x16 (highest basic leaf {highest:#x}; AMD does not implement it)"
        ));
    }
    let l = __cpuid(0x16);
    let mhz = |v: u32| {
        let v = v & 0xffff;
        (v != 0).then_some(v as f64)
    };
    match (mhz(l.eax), mhz(l.ebx)) {
        (None, None) => Err("CPUID leaf 0x16 states no frequency (zeros)".into()),
        (base, max) => Ok((base, max)),
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn cpuid_leaf_16() -> Result<(Option<f64>, Option<f64>), String> {
    Err("no CPUID on this architecture".into())
}

/// A cpufreq frequency file (kHz, one decimal integer) in MHz; `None` for anything else.
pub fn parse_khz(text: &str) -> Option<f64> {
    let khz: u64 = text.trim().parse().ok()?;
    // 1 MHz to 100 GHz: anything else is not a core clock.
    (1_000..=100_000_000).contains(&khz).then_some(khz as f64 / 1000.0)
}

/// The highest `cpuinfo_max_freq` over `sys/devices/system/cpu/cpu*/cpufreq`, MHz, and that
/// CPU's driver.
fn read_cpufreq(root: &FsRoot) -> Option<(f64, Option<String>)> {
    let dir = root.path("sys/devices/system/cpu");
    let mut best: Option<(f64, Option<String>)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let is_cpu = name
            .strip_prefix("cpu")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if !is_cpu {
            continue;
        }
        let cpufreq = entry.path().join("cpufreq");
        let Some(mhz) = std::fs::read_to_string(cpufreq.join("cpuinfo_max_freq"))
            .ok()
            .and_then(|t| parse_khz(&t))
        else {
            continue;
        };
        if best.as_ref().is_none_or(|(b, _)| mhz > *b) {
            let driver = std::fs::read_to_string(cpufreq.join("scaling_driver"))
                .ok()
                .map(|d| d.trim().to_string())
                .filter(|d| !d.is_empty());
            best = Some((mhz, driver));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpufreq_khz_files() {
        assert_eq!(parse_khz("4200000\n"), Some(4200.0));
        assert_eq!(parse_khz(" 800000 "), Some(800.0));
        for bad in ["", "\n", "-1", "4.2e6", "abc", "0", "999", "100000001", "42 00"] {
            assert_eq!(parse_khz(bad), None, "{bad:?}");
        }
    }

    // Property: any bytes give a frequency between 1 MHz and 100 GHz or nothing, never a panic.
    #[test]
    fn cpufreq_parser_takes_any_bytes() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let alphabet = b"0123456789 \n\t-+.eE\xff";
        for _ in 0..20_000 {
            let len = (next() % 12) as usize;
            let bytes: Vec<u8> =
                (0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect();
            let text = String::from_utf8_lossy(&bytes);
            if let Some(mhz) = parse_khz(&text) {
                assert!((1.0..=100_000.0).contains(&mhz), "{text:?} -> {mhz}");
            }
        }
    }

    #[test]
    fn cpufreq_fixture_highest_cpu_and_its_driver() {
        let dir = std::env::temp_dir().join(format!("core-clock-cpufreq-{}", std::process::id()));
        let write = |rel: &str, text: &str| {
            let p = dir.join(rel);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, text).expect("write");
        };
        // A hybrid part as intel_pstate shows it: P-cores and E-cores with different maxima.
        write("sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "5400000\n");
        write("sys/devices/system/cpu/cpu0/cpufreq/scaling_driver", "intel_pstate\n");
        write("sys/devices/system/cpu/cpu16/cpufreq/cpuinfo_max_freq", "4300000\n");
        write("sys/devices/system/cpu/cpu16/cpufreq/scaling_driver", "intel_pstate\n");
        write("sys/devices/system/cpu/cpufreq/policy0/cpuinfo_max_freq", "9900000\n");
        write("sys/devices/system/cpu/cpuidle/current_driver", "none\n");
        // The current frequency of every CPU this thread may run on: 1000 + its number, MHz.
        // SAFETY: as in Stated::read.
        let now = u32::try_from(unsafe { libc::sched_getcpu() }).expect("sched_getcpu");
        for cpu in 0..=now.max(63) + 64 {
            let khz = (1000 + cpu) * 1000;
            write(
                &format!("sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq"),
                &format!("{khz}\n"),
            );
        }
        let stated = Stated::read(&FsRoot::at(&dir));
        assert_eq!(stated.cpufreq_max_mhz, Some(5400.0));
        assert_eq!(stated.cpufreq_driver.as_deref(), Some("intel_pstate"));
        let cpu = stated.cpufreq_cur_cpu.expect("the current CPU's file was read");
        assert_eq!(stated.cpufreq_cur_mhz, Some(1000.0 + f64::from(cpu)));
        let empty = Stated::read(&FsRoot::at(dir.join("nothing")));
        assert_eq!(empty.cpufreq_max_mhz, None);
        assert_eq!((empty.cpufreq_cur_mhz, empty.cpufreq_cur_cpu), (None, None));
        assert!(empty.notes.iter().any(|n| n.contains("no cpufreq")), "{:?}", empty.notes);
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
