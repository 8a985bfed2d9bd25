//! The memory the firmware describes (SMBIOS/DMI type 17 memory devices), and the theoretical
//! peak bandwidth it implies. Readable as root where DMI is present; VMs often have none.

use serde::{Deserialize, Serialize};

use crate::sysfs::SysRoot;

/// Theoretical peak from SMBIOS memory devices (DMI type 17), in GB/s: Σ configured MT/s × 8
/// bytes over populated devices, an upper bound that assumes one DIMM per channel.
pub fn peak_gbs(devices: &[MemoryDevice]) -> Option<f64> {
    let populated: Vec<&MemoryDevice> =
        devices.iter().filter(|d| d.size_mib > 0 && d.mts > 0).collect();
    (!populated.is_empty()).then(|| populated.iter().map(|d| d.mts as f64 * 8.0 / 1000.0).sum())
}

/// A DMI type-17 memory device (one slot; `size_mib` 0 when empty).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryDevice {
    pub size_mib: u64,
    /// Configured speed in MT/s (falls back to the rated speed).
    pub mts: u64,
    /// `DDR4`, `DDR5`, `LPDDR5`, `HBM2`, … (byte 0x12); `None` when "Other"/"Unknown".
    #[serde(default)]
    pub memory_type: Option<String>,
    /// Data width in bits (0x0A), without ECC bits; `None` when unknown.
    #[serde(default)]
    pub data_width_bits: Option<u16>,
    /// The slot's label on the board (device locator string, 0x10), e.g. `DIMM_A1`.
    #[serde(default)]
    pub locator: Option<String>,
    /// The bank locator string (0x11), e.g. `P0 CHANNEL A` — free text whose meaning varies by
    /// vendor, so channels are not inferred from it.
    #[serde(default)]
    pub bank: Option<String>,
}

/// What the firmware says of memory: its type-17 devices, or why they could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DmiMemory {
    /// Every memory device listed (populated and empty slots), in table order.
    Devices(Vec<MemoryDevice>),
    /// Why there are none: `no DMI tables` (common in VMs), `reading DMI tables needs root`.
    Unavailable(String),
}

/// The SMBIOS memory type names (DMTF SMBIOS 3.x, "Memory Device — Type") that describe main
/// memory; the other codes are shown as numbers.
pub fn memory_type_name(code: u8) -> Option<String> {
    let name = match code {
        0x00..=0x02 => return None, // unset, "Other", "Unknown"
        0x03 => "DRAM",
        0x07 => "RAM",
        0x0F => "SDRAM",
        0x12 => "DDR",
        0x13 => "DDR2",
        0x14 => "DDR2 FB-DIMM",
        0x18 => "DDR3",
        0x19 => "FBD2",
        0x1A => "DDR4",
        0x1B => "LPDDR",
        0x1C => "LPDDR2",
        0x1D => "LPDDR3",
        0x1E => "LPDDR4",
        0x1F => "logical non-volatile device",
        0x20 => "HBM",
        0x21 => "HBM2",
        0x22 => "DDR5",
        0x23 => "LPDDR5",
        0x24 => "HBM3",
        other => return Some(format!("type {other:#04x}")),
    };
    Some(name.to_string())
}

/// String number `index` (1-based) of an SMBIOS structure: the NUL-terminated strings that
/// follow the formatted area (`raw[1]` bytes long). 0 means "no string".
pub fn structure_string(raw: &[u8], index: u8) -> Option<String> {
    if index == 0 {
        return None;
    }
    let start = usize::from(*raw.get(1)?);
    let strings = raw.get(start..)?;
    let text = strings.split(|&b| b == 0).nth(usize::from(index) - 1)?;
    let text = String::from_utf8_lossy(text).trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// Parses a raw SMBIOS type-17 structure (`/sys/firmware/dmi/entries/17-N/raw`), per the DMTF
/// SMBIOS spec: size at 0x0C (MiB, bit 15 = KiB units; 0x7FFF = see extended size at 0x1C),
/// speed at 0x15, configured speed at 0x20 (both MT/s; 0xFFFF = see the 32-bit fields at 0x54
/// and 0x58 in SMBIOS 3.3+); data width at 0x0A (bits, 0xFFFF unknown); memory type at 0x12;
/// device and bank locator string numbers at 0x10 and 0x11.
pub fn parse_memory_device(raw: &[u8]) -> Option<MemoryDevice> {
    let word = |at: usize| raw.get(at..at + 2).map(|b| u64::from(u16::from_le_bytes([b[0], b[1]])));
    let dword = |at: usize| {
        raw.get(at..at + 4).map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
    };
    if raw.first() != Some(&17) {
        return None;
    }
    let size_mib = match word(0x0C)? {
        0 | 0xFFFF => 0,
        0x7FFF => dword(0x1C)? & 0x7FFF_FFFF,
        s if s & 0x8000 != 0 => (s & 0x7FFF) / 1024,
        s => s,
    };
    let speed = |short: usize, long: usize| match word(short) {
        Some(0xFFFF) => dword(long),
        other => other,
    };
    let mts = speed(0x20, 0x58).filter(|&s| s > 0).or_else(|| speed(0x15, 0x54)).unwrap_or(0);
    let byte = |at: usize| raw.get(at).copied();
    Some(MemoryDevice {
        size_mib,
        mts,
        memory_type: byte(0x12).and_then(memory_type_name),
        data_width_bits: word(0x0A)
            .filter(|&w| w != 0 && w != 0xFFFF)
            .and_then(|w| u16::try_from(w).ok()),
        locator: byte(0x10).and_then(|i| structure_string(raw, i)),
        bank: byte(0x11).and_then(|i| structure_string(raw, i)),
    })
}

/// The type-17 memory devices under `root` (`sys/firmware/dmi/entries/17-N/raw`), or why
/// they could not be read.
pub fn read_dmi_memory(root: &SysRoot) -> DmiMemory {
    if !root.path("sys/firmware/dmi").exists() {
        return DmiMemory::Unavailable("no DMI tables".into());
    }
    let mut entries: Vec<(u32, String)> = root
        .list_dir("sys/firmware/dmi/entries")
        .into_iter()
        .filter_map(|name| Some((name.strip_prefix("17-")?.parse().ok()?, name)))
        .collect();
    entries.sort();
    let mut devices = Vec::new();
    for (_, name) in entries {
        match std::fs::read(root.path(&format!("sys/firmware/dmi/entries/{name}/raw"))) {
            Ok(raw) => devices.extend(parse_memory_device(&raw)),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                return DmiMemory::Unavailable("reading DMI tables needs root".into());
            }
            Err(_) => {}
        }
    }
    DmiMemory::Devices(devices)
}

/// Memory devices the firmware describes, when readable (root, and DMI present).
pub fn read_memory_devices() -> Vec<MemoryDevice> {
    match read_dmi_memory(&SysRoot::live()) {
        DmiMemory::Devices(devices) => devices,
        DmiMemory::Unavailable(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn type17(size: u16, speed: u16, configured: u16) -> Vec<u8> {
        let mut raw = vec![0u8; 0x5C];
        raw[0] = 17;
        raw[0x0C..0x0E].copy_from_slice(&size.to_le_bytes());
        raw[0x15..0x17].copy_from_slice(&speed.to_le_bytes());
        raw[0x20..0x22].copy_from_slice(&configured.to_le_bytes());
        raw
    }

    #[test]
    fn parses_smbios_memory_devices() {
        // Built from the DMTF SMBIOS 3.3 field layout: a 16 GiB DDR4-3200 DIMM run at 2933.
        let d = parse_memory_device(&type17(16384, 3200, 2933)).expect("type 17");
        assert_eq!((d.size_mib, d.mts), (16384, 2933));
        // No configured speed: the rated speed is used. Empty slot: size 0.
        assert_eq!(parse_memory_device(&type17(8192, 1066, 0)).map(|d| d.mts), Some(1066));
        assert_eq!(parse_memory_device(&type17(0, 0, 0)).map(|d| d.size_mib), Some(0));
        // As thread_read's article worked it out: one DDR3-1066 channel is 1066 × 8 = 8528 MB/s.
        let devices = [
            MemoryDevice { size_mib: 4096, mts: 1066, ..MemoryDevice::default() },
            MemoryDevice::default(),
        ];
        assert!((peak_gbs(&devices).expect("peak") - 8.528).abs() < 1e-9);
        assert_eq!(peak_gbs(&[]), None);
        assert_eq!(parse_memory_device(&[16, 0, 0]), None);
    }

    /// A type-17 structure laid out by hand from the DMTF SMBIOS 3.3 field table (not captured):
    /// 32 GiB DDR5 (type 0x22; 32 GiB and more need the extended size at 0x1C, the word at
    /// 0x0C being 0x7FFF), 64-bit data width, 4800 MT/s, locators "DIMM_A1" / "P0 CHANNEL A".
    fn ddr5_with_strings() -> Vec<u8> {
        let mut raw = type17(0x7FFF, 4800, 4800);
        raw[0x1C..0x20].copy_from_slice(&32768u32.to_le_bytes());
        raw[1] = 0x5C; // formatted length: the strings follow
        raw[0x0A..0x0C].copy_from_slice(&64u16.to_le_bytes());
        raw[0x10] = 1;
        raw[0x11] = 2;
        raw[0x12] = 0x22;
        raw.extend_from_slice(b"DIMM_A1\0P0 CHANNEL A\0\0");
        raw
    }

    #[test]
    fn reads_type_width_and_locators() {
        let d = parse_memory_device(&ddr5_with_strings()).expect("type 17");
        assert_eq!(d.memory_type.as_deref(), Some("DDR5"));
        assert_eq!(d.data_width_bits, Some(64));
        assert_eq!(d.locator.as_deref(), Some("DIMM_A1"));
        assert_eq!(d.bank.as_deref(), Some("P0 CHANNEL A"));
        assert_eq!((d.size_mib, d.mts), (32768, 4800));
        // No string for index 0 or past the end; the formatted area alone has none.
        assert_eq!(structure_string(&ddr5_with_strings(), 0), None);
        assert_eq!(structure_string(&ddr5_with_strings(), 9), None);
        assert_eq!(memory_type_name(0x1A).as_deref(), Some("DDR4"));
        assert_eq!(memory_type_name(0x02), None);
        assert_eq!(memory_type_name(0x99).as_deref(), Some("type 0x99"));
    }

    #[test]
    fn property_mutated_structures_never_panic() {
        // Truncations and byte flips of a valid structure: parsing may fail, never panic.
        let base = ddr5_with_strings();
        let mut s: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..20_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let mut raw = base.clone();
            let at = (s % raw.len() as u64) as usize;
            raw[at] = (s >> 32) as u8;
            raw.truncate(((s >> 40) % (base.len() as u64 + 1)) as usize);
            if let Some(d) = parse_memory_device(&raw) {
                assert!(d.size_mib <= 0x7FFF_FFFF);
            }
        }
    }

    #[test]
    fn reads_a_fabricated_dmi_tree() {
        let dir = std::env::temp_dir().join(format!("platscope-dmi-{}", std::process::id()));
        let root = SysRoot::at(&dir);
        assert_eq!(read_dmi_memory(&root), DmiMemory::Unavailable("no DMI tables".into()));
        for (n, raw) in [(10, type17(0, 0, 0)), (2, ddr5_with_strings())] {
            let entry = dir.join(format!("sys/firmware/dmi/entries/17-{n}"));
            std::fs::create_dir_all(&entry).expect("mkdir");
            std::fs::write(entry.join("raw"), raw).expect("write");
        }
        std::fs::create_dir_all(dir.join("sys/firmware/dmi/entries/16-0")).expect("mkdir");
        let read = read_dmi_memory(&root);
        std::fs::remove_dir_all(&dir).ok();
        let DmiMemory::Devices(devices) = read else { panic!("devices expected: {read:?}") };
        // Numeric order (17-2 before 17-10), the empty slot kept.
        assert_eq!(devices.iter().map(|d| d.size_mib).collect::<Vec<_>>(), vec![32768, 0]);
    }
}
