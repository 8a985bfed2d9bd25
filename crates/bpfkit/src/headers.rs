//! Which vendored `vmlinux.h` and which libbpf architecture name a target architecture builds
//! with (see [`crate::build`] for how each header was produced). Plain std, so its tests run
//! without the `build` feature.

use std::path::{Path, PathBuf};

/// The target architectures with a vendored header: cargo's `CARGO_CFG_TARGET_ARCH` value (also
/// the directory under `include/`) and libbpf's name for it in `-D__TARGET_ARCH_<name>`.
const ARCHES: [(&str, &str); 2] = [("x86_64", "x86"), ("aarch64", "arm64")];

/// The directory holding `vmlinux.h` for `target_arch` (a `CARGO_CFG_TARGET_ARCH` value) and
/// libbpf's name for that architecture; an unsupported one is a message naming those supported.
pub fn arch_include(target_arch: &str) -> Result<(PathBuf, &'static str), String> {
    match ARCHES.iter().find(|(arch, _)| *arch == target_arch) {
        Some((arch, libbpf_name)) => {
            Ok((Path::new(env!("CARGO_MANIFEST_DIR")).join("include").join(arch), libbpf_name))
        }
        None => {
            let supported: Vec<&str> = ARCHES.iter().map(|(arch, _)| *arch).collect();
            Err(format!(
                "no vendored vmlinux.h for target architecture `{target_arch}`: the BPF programs \
                 build for {} only (add crates/bpfkit/include/{target_arch}/vmlinux.h, dumped \
                 with bpftool from that architecture's kernel BTF, to support it)",
                supported.join(" and ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_supported_arch_has_its_header() {
        for (arch, _) in ARCHES {
            let (dir, _) = arch_include(arch).unwrap();
            let header = std::fs::read_to_string(dir.join("vmlinux.h")).unwrap();
            assert!(header.contains("struct task_struct {"), "{arch}: no task_struct");
            assert!(header.contains("struct pt_regs {"), "{arch}: no pt_regs");
        }
    }

    #[test]
    fn headers_are_the_right_architecture() {
        // arm64's pt_regs wraps user_pt_regs (x0..x30); x86-64's has orig_ax and no such type.
        let (arm, _) = arch_include("aarch64").unwrap();
        let arm = std::fs::read_to_string(arm.join("vmlinux.h")).unwrap();
        assert!(arm.contains("struct user_pt_regs {\n\t__u64 regs[31];"));
        let (x86, _) = arch_include("x86_64").unwrap();
        let x86 = std::fs::read_to_string(x86.join("vmlinux.h")).unwrap();
        assert!(!x86.contains("struct user_pt_regs {"));
        assert!(x86.contains("long unsigned int orig_ax;"));
    }

    #[test]
    fn the_vendored_btf_named_for_this_build_is_the_targets() {
        let btf = crate::VENDORED_BTF.unwrap();
        assert_eq!(btf.arch, std::env::consts::ARCH);
        let (dir, _) = arch_include(btf.arch).unwrap();
        assert!(dir.join("vmlinux.h").is_file());
    }

    #[test]
    fn unsupported_arch_names_the_supported_ones() {
        let e = arch_include("riscv64").unwrap_err();
        assert!(e.contains("`riscv64`"), "{e}");
        assert!(e.contains("x86_64 and aarch64"), "{e}");
    }
}
