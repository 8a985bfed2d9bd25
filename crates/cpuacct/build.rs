//! Compiles the CPU-time BPF programs into libbpf-rs skeletons (see `bpfkit::build`).

fn main() {
    bpfkit::build::build_programs(&["cputime", "procsum"], &["cpuacct.h"]);
}
