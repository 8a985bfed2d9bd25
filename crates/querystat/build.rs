//! Compiles `src/bpf/querystat.bpf.c` into a libbpf-rs skeleton (see `bpfkit::build`).

fn main() {
    // v3: the programs take a thread's slot with an atomic compare-and-swap.
    bpfkit::build::build_programs_with(&["querystat"], &["querystat.h"], &["-mcpu=v3"]);
}
