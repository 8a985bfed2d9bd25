//! The build step every BPF crate's `build.rs` runs: compile `src/bpf/<name>.bpf.c` with clang
//! against the vendored `vmlinux.h` and generate `<name>.skel.rs` in `OUT_DIR`.
//!
//! The header is vendored (`crates/bpfkit/include/vmlinux.h`, dumped once with `bpftool btf dump
//! file /sys/kernel/btf/vmlinux format c` on Linux 6.18): CO-RE relocates every field access at
//! load time, so the build needs neither bpftool nor the build host's BTF, and the objects run on
//! any kernel with BTF. Regenerate it only to use a type the vendored kernel lacks.

use std::path::{Path, PathBuf};

use libbpf_cargo::SkeletonBuilder;

/// Where `vmlinux.h` lives.
pub fn include_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include")
}

/// Compiles each program in `programs` (`src/bpf/<name>.bpf.c` of the calling crate) into a
/// skeleton `OUT_DIR/<name>.skel.rs`; `headers` are the crate's own shared headers, watched for
/// changes. Fails the build with a message naming the fix.
pub fn build_programs(programs: &[&str], headers: &[&str]) {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let include = include_dir();
    let arch_include = format!("/usr/include/{}-linux-gnu", std::env::consts::ARCH);
    for name in programs {
        let source = format!("src/bpf/{name}.bpf.c");
        SkeletonBuilder::new()
            .source(&source)
            .clang_args([
                "-I".as_ref(),
                include.as_os_str(),
                "-I".as_ref(),
                arch_include.as_ref(),
                "-Wall".as_ref(),
                "-Werror".as_ref(),
            ])
            .build_and_generate(out.join(format!("{name}.skel.rs")))
            .unwrap_or_else(|e| {
                panic!("building {source}: {e:#} (needs clang: scripts/setup.sh --deps)")
            });
        println!("cargo:rerun-if-changed={source}");
    }
    for header in headers {
        println!("cargo:rerun-if-changed=src/bpf/{header}");
    }
}
