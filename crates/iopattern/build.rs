//! Compiles `src/bpf/iopattern.bpf.c` into a libbpf-rs skeleton (see `bpfkit::build`).

fn main() {
    bpfkit::build::build_programs(&["iopattern"], &["iopattern.h"]);
}
