//! Compiles `src/bpf/querystat.bpf.c` into a libbpf-rs skeleton (see `bpfkit::build`).

fn main() {
    bpfkit::build::build_programs(&["querystat"], &["querystat.h"]);
}
