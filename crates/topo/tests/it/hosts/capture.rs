//! The host captures under `tests/fixtures`, parsed once for every test: CPUID registers,
//! `/proc/cpuinfo`, CPU 0's sysfs cache directories and, where captured, `topo --facts --json`.

use topo::cpuid::{CacheType, CpuidInfo, Dump};
use topo::sysfs::{parse_cache_index, parse_cache_listing, parse_cache_size, parse_cpuinfo};
use topo::sysfs::{CacheIndexFiles, CpuInfo};
use topo::{Fact, Topology};

/// One captured host kind, as the files say it.
pub struct Capture {
    /// The capture's folder or file-name stem, for messages.
    pub name: &'static str,
    pub cpuid: Dump,
    pub cpuinfo: CpuInfo,
    /// CPU 0's cache index directories, instruction caches included.
    pub caches: Vec<CacheIndexFiles>,
    /// The facts `topo --facts --json` printed on the host, when captured.
    pub facts: Option<Vec<Fact>>,
}

/// The files of one capture, as text.
struct Files {
    name: &'static str,
    cpuid: &'static str,
    cpuinfo: &'static str,
    caches: &'static str,
    facts: Option<&'static str>,
}

const FILES: [Files; 3] = [
    Files {
        name: "amd_epyc_zen3_kvm",
        cpuid: include_str!("../../fixtures/cpuid_amd_epyc_zen3_kvm.txt"),
        cpuinfo: include_str!("../../fixtures/cpuinfo_amd_epyc_kvm_6_18.txt"),
        caches: include_str!("../../fixtures/cache_cpu0_amd_epyc_kvm_6_18.txt"),
        facts: None,
    },
    Files {
        name: "intel-xeon-cascadelake-kvm",
        cpuid: include_str!("../../fixtures/hosts/intel-xeon-cascadelake-kvm/cpuid.txt"),
        cpuinfo: include_str!("../../fixtures/hosts/intel-xeon-cascadelake-kvm/cpuinfo.txt"),
        caches: include_str!("../../fixtures/hosts/intel-xeon-cascadelake-kvm/cache_cpu0.txt"),
        facts: Some(include_str!(
            "../../fixtures/hosts/intel-xeon-cascadelake-kvm/topo_facts.json"
        )),
    },
    Files {
        name: "amd-epyc-rome-kvm",
        cpuid: include_str!("../../fixtures/hosts/amd-epyc-rome-kvm/cpuid.txt"),
        cpuinfo: include_str!("../../fixtures/hosts/amd-epyc-rome-kvm/cpuinfo.txt"),
        caches: include_str!("../../fixtures/hosts/amd-epyc-rome-kvm/cache_cpu0.txt"),
        facts: Some(include_str!("../../fixtures/hosts/amd-epyc-rome-kvm/topo_facts.json")),
    },
];

impl Capture {
    /// Every capture; a file that does not parse fails the test, naming it.
    pub fn all() -> Vec<Capture> {
        FILES.iter().map(Capture::parse).collect()
    }

    /// The capture named `name`.
    pub fn named(name: &str) -> Capture {
        let files = FILES.iter().find(|f| f.name == name);
        Capture::parse(files.unwrap_or_else(|| panic!("no capture named {name}")))
    }

    fn parse(files: &Files) -> Capture {
        let name = files.name;
        let cpuid = Dump::parse(files.cpuid).unwrap_or_else(|e| panic!("{name} cpuid: {e}"));
        let caches: Vec<CacheIndexFiles> =
            parse_cache_listing(files.caches).into_iter().map(|(_, f)| f).collect();
        assert!(!caches.is_empty(), "{name}: no cache index directories");
        let facts = files.facts.map(|json| {
            serde_json::from_str(json).unwrap_or_else(|e| panic!("{name} topo_facts.json: {e}"))
        });
        Capture { name, cpuid, cpuinfo: parse_cpuinfo(files.cpuinfo), caches, facts }
    }

    pub fn decoded(&self) -> CpuidInfo {
        self.cpuid.decode()
    }

    /// Highest basic and extended leaves, as captured.
    pub fn max_leaves(&self) -> (u32, u32) {
        (self.cpuid.read(0, 0).eax, self.cpuid.read(0x8000_0000, 0).eax)
    }

    /// Each captured cache as (level, type, size, CPUs sharing it), instruction caches included.
    pub fn sysfs_caches(&self) -> Vec<(u8, CacheType, u64, usize)> {
        self.caches
            .iter()
            .map(|f| {
                let get = |v: &Option<String>, what: &str| {
                    v.clone().unwrap_or_else(|| panic!("{}: a cache without {what}", self.name))
                };
                let kind = match get(&f.kind, "type").as_str() {
                    "Data" => CacheType::Data,
                    "Instruction" => CacheType::Instruction,
                    "Unified" => CacheType::Unified,
                    other => panic!("{}: cache type {other:?}", self.name),
                };
                let level = get(&f.level, "level").parse().expect("level");
                let size = parse_cache_size(&get(&f.size, "size")).expect("size");
                let sharing = topo::idlist::parse(&get(&f.shared_cpu_list, "shared_cpu_list"))
                    .expect("shared_cpu_list")
                    .len();
                (level, kind, size, sharing)
            })
            .collect()
    }

    /// A machine with the capture's CPU count whose caches are the captured ones (CPU 0's, so
    /// one instance of each) and whose CPUID and identity are the captured ones: what
    /// `topo::facts` needs to compare and describe them.
    pub fn topology(&self) -> Topology {
        let caches: Vec<topo::Cache> = self.caches.iter().filter_map(parse_cache_index).collect();
        let cpus = caches.iter().flat_map(|c| c.cpus.iter().copied()).max().unwrap_or(0) + 1;
        let mut t =
            Topology::from_synthetic(&format!("pack:1 [numa(memory=1GB)] core:{cpus} pu:1"))
                .unwrap_or_else(|e| panic!("{}: {e}", self.name));
        t.caches = caches;
        t.machine.architecture = Some("x86_64".into());
        t.machine.cpu_vendor = self.cpuinfo.vendor_id.clone();
        t.machine.cpu_model = self.cpuinfo.model_name.clone();
        t.machine.family = self.cpuinfo.family;
        t.machine.model_number = self.cpuinfo.model;
        t.machine.stepping = self.cpuinfo.stepping;
        t.machine.microcode = self.cpuinfo.microcode.clone();
        t.machine.cpuid = Some(self.decoded());
        t
    }
}
