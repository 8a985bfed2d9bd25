//! The memory the firmware describes (SMBIOS/DMI type 17 memory devices), and the theoretical
//! peak bandwidth it implies. Readable as root where DMI is present; VMs often have none.

use serde::{Deserialize, Serialize};

/// Theoretical peak from SMBIOS memory devices (DMI type 17), in GB/s: Σ configured MT/s × 8
/// bytes over populated devices, an upper bound that assumes one DIMM per channel.
pub fn peak_gbs(devices: &[MemoryDevice]) -> Option<f64> {
    let populated: Vec<&MemoryDevice> =
        devices.iter().filter(|d| d.size_mib > 0 && d.mts > 0).collect();
    (!populated.is_empty()).then(|| populated.iter().map(|d| d.mts as f64 * 8.0 / 1000.0).sum())
}

/// A DMI type-17 memory device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryDevice {
    pub size_mib: u64,
    /// Configured speed in MT/s (falls back to the rated speed).
    pub mts: u64,
}

/// Parses a raw SMBIOS type-17 structure (`/sys/firmware/dmi/entries/17-N/raw`), per the DMTF
/// SMBIOS spec: size at 0x0C (MiB, bit 15 = KiB units; 0x7FFF = see extended size at 0x1C),
/// speed at 0x15, configured speed at 0x20 (both MT/s; 0xFFFF = see the 32-bit fields at 0x54
/// and 0x58 in SMBIOS 3.3+).
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
    Some(MemoryDevice { size_mib, mts })
}

/// Memory devices the firmware describes, when readable (root, and DMI present).
pub fn read_memory_devices() -> Vec<MemoryDevice> {
    let dir = std::path::Path::new("/sys/firmware/dmi/entries");
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(|e| {
            let e = e.ok()?;
            e.file_name().to_str()?.starts_with("17-").then_some(())?;
            parse_memory_device(&std::fs::read(e.path().join("raw")).ok()?)
        })
        .collect()
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
        assert_eq!(d, MemoryDevice { size_mib: 16384, mts: 2933 });
        // No configured speed: the rated speed is used. Empty slot: size 0.
        assert_eq!(parse_memory_device(&type17(8192, 1066, 0)).map(|d| d.mts), Some(1066));
        assert_eq!(parse_memory_device(&type17(0, 0, 0)).map(|d| d.size_mib), Some(0));
        // Seed 001: one DDR3-1066 channel is 1066 × 8 = 8528 MB/s.
        let devices =
            [MemoryDevice { size_mib: 4096, mts: 1066 }, MemoryDevice { size_mib: 0, mts: 0 }];
        assert!((peak_gbs(&devices).expect("peak") - 8.528).abs() < 1e-9);
        assert_eq!(peak_gbs(&[]), None);
        assert_eq!(parse_memory_device(&[16, 0, 0]), None);
    }
}
