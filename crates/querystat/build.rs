//! Compiles `src/bpf/querystat.bpf.c` with clang and generates its skeleton.
//!
//! `vmlinux.h` (the kernel's types for CO-RE) is dumped from the build machine's BTF with
//! bpftool; CO-RE relocations make the object run on other kernels that have BTF.

use std::path::{Path, PathBuf};
use std::process::Command;

use libbpf_cargo::SkeletonBuilder;

const SOURCE: &str = "src/bpf/querystat.bpf.c";
const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let include = out.join("include");
    std::fs::create_dir_all(&include).expect("create OUT_DIR/include");
    dump_vmlinux_header(&include.join("vmlinux.h"));

    // libbpf's usdt.bpf.h includes <linux/errno.h>, which Debian keeps under the
    // multiarch include directory (not searched by clang -target bpf).
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_else(|_| "x86_64".into());
    let multiarch = format!("/usr/include/{arch}-linux-gnu");
    SkeletonBuilder::new()
        .source(SOURCE)
        .clang_args([
            "-I".as_ref(),
            include.as_os_str(),
            "-I".as_ref(),
            multiarch.as_ref(),
            "-Wall".as_ref(),
            "-Werror".as_ref(),
        ])
        .build_and_generate(out.join("querystat.skel.rs"))
        .unwrap_or_else(|e| panic!("building {SOURCE}: {e:#}"));
    println!("cargo:rerun-if-changed={SOURCE}");
    println!("cargo:rerun-if-changed=src/bpf/querystat.h");
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
