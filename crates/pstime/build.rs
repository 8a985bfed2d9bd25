//! With the `bpf` feature, compiles the task iterator (`src/bpf/tasks.bpf.c`) into its libbpf-rs
//! skeleton (see `bpfkit::build`); without it there is nothing to build.

fn main() {
    #[cfg(feature = "bpf")]
    bpfkit::build::build_programs(&["tasks"], &["tasks.h"]);
}
