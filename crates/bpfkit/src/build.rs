//! The build step every BPF crate's `build.rs` runs: compile `src/bpf/<name>.bpf.c` with clang
//! against the vendored `vmlinux.h` of the target architecture and generate `<name>.skel.rs` in
//! `OUT_DIR`.
//!
//! One header per architecture lives in `crates/bpfkit/include/<arch>/vmlinux.h`, `<arch>` being
//! cargo's `CARGO_CFG_TARGET_ARCH`; the build picks the target's and fails, naming the supported
//! ones, for any other. Each was dumped once with `bpftool btf dump file BTF format c`:
//!
//! - `x86_64`: from `/sys/kernel/btf/vmlinux` of a running Linux 6.18 (x86-64).
//! - `aarch64`: from Debian 12's arm64 kernel package `linux-image-6.1.0-56-arm64` (6.1.192-2,
//!   "Linux version 6.1.0-56-arm64"; its config has `CONFIG_DEBUG_INFO_BTF=y`). The package's
//!   `/boot/vmlinuz-6.1.0-56-arm64` is an uncompressed arm64 `Image`; its `.BTF` section was cut
//!   out at the BTF header (magic `0xEB9F` little-endian, version 1, 24-byte header) with length
//!   24 + `str_off` + `str_len`, and `bpftool btf dump … format raw` accepted the blob.
//!
//! CO-RE relocates every field access at load time, so the build needs neither bpftool nor the
//! build host's BTF, and the objects run on any kernel of that architecture with BTF. The
//! architecture still matters at build time: `pt_regs` differs, and libbpf's `bpf_tracing.h`
//! reads registers by the `-D__TARGET_ARCH_<name>` this step passes. Regenerate a header only to
//! use a type its kernel lacks.

use std::ffi::OsStr;
use std::path::PathBuf;

use libbpf_cargo::SkeletonBuilder;

pub use crate::headers::arch_include;

/// Compiles each program in `programs` (`src/bpf/<name>.bpf.c` of the calling crate) into a
/// skeleton `OUT_DIR/<name>.skel.rs` for cargo's target architecture; `headers` are the crate's
/// own shared headers, watched for changes. Fails the build with a message naming the fix.
pub fn build_programs(programs: &[&str], headers: &[&str]) {
    build_programs_with(programs, headers, &[]);
}

/// [`build_programs`] with more clang arguments, e.g. `-mcpu=v3` for the BPF instruction set
/// with atomic compare-and-swap (Linux 5.12), which clang before 20 does not target by default.
pub fn build_programs_with(programs: &[&str], headers: &[&str], clang_args: &[&str]) {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let target_arch =
        std::env::var("CARGO_CFG_TARGET_ARCH").expect("cargo sets CARGO_CFG_TARGET_ARCH");
    let (include, libbpf_arch) = arch_include(&target_arch).unwrap_or_else(|e| panic!("{e}"));
    let target_define = format!("-D__TARGET_ARCH_{libbpf_arch}");
    // The host's multiarch directory, for <asm/…> under <linux/errno.h> (usdt.bpf.h): those are
    // asm-generic on every supported architecture, so the host's serve a cross build too.
    let arch_include = format!("/usr/include/{}-linux-gnu", std::env::consts::ARCH);
    let mut args: Vec<&OsStr> = vec![
        target_define.as_ref(),
        "-I".as_ref(),
        include.as_os_str(),
        "-I".as_ref(),
        arch_include.as_ref(),
        "-Wall".as_ref(),
        "-Werror".as_ref(),
    ];
    args.extend(clang_args.iter().map(OsStr::new));
    for name in programs {
        let source = format!("src/bpf/{name}.bpf.c");
        SkeletonBuilder::new()
            .source(&source)
            .clang_args(&args)
            .build_and_generate(out.join(format!("{name}.skel.rs")))
            .unwrap_or_else(|e| {
                panic!("building {source}: {e:#} (needs clang: scripts/setup.sh --deps)")
            });
        println!("cargo:rerun-if-changed={source}");
    }
    for header in headers {
        println!("cargo:rerun-if-changed=src/bpf/{header}");
    }
    println!("cargo:rerun-if-changed={}", include.join("vmlinux.h").display());
}
