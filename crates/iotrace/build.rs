//! Compiles the BPF programs in `src/bpf/` with clang and generates their skeletons.
//!
//! `vmlinux.h` (the kernel's types for CO-RE) is dumped from the build machine's BTF with
//! bpftool; CO-RE relocations make the objects run on other kernels that have BTF.

use std::path::{Path, PathBuf};
use std::process::Command;

use libbpf_cargo::SkeletonBuilder;

const PROGRAMS: &[&str] = &["iopattern", "cputime", "tasks"];
const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let include = out.join("include");
    std::fs::create_dir_all(&include).expect("create OUT_DIR/include");
    dump_vmlinux_header(&include.join("vmlinux.h"));

    for name in PROGRAMS {
        let source = format!("src/bpf/{name}.bpf.c");
        SkeletonBuilder::new()
            .source(&source)
            .clang_args(["-I".as_ref(), include.as_os_str(), "-Wall".as_ref(), "-Werror".as_ref()])
            .build_and_generate(out.join(format!("{name}.skel.rs")))
            .unwrap_or_else(|e| panic!("building {source}: {e:#}"));
        println!("cargo:rerun-if-changed={source}");
    }
    println!("cargo:rerun-if-changed=src/bpf/iotrace.h");
}

fn dump_vmlinux_header(path: &Path) {
    if !Path::new(KERNEL_BTF).exists() {
        panic!(
            "{KERNEL_BTF} is missing: building the BPF programs needs a kernel with BTF \
             (CONFIG_DEBUG_INFO_BTF=y)"
        );
    }
    let output = Command::new("bpftool")
        .args(["btf", "dump", "file", KERNEL_BTF, "format", "c"])
        .output()
        .unwrap_or_else(|e| {
            panic!("running bpftool: {e} (install it: scripts/setup.sh --deps, or apt install bpftool)")
        });
    if !output.status.success() {
        panic!("bpftool btf dump failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    std::fs::write(path, output.stdout).expect("write vmlinux.h");
}
