//! What can go wrong loading BPF programs, each with the fix in its message.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "this kernel has no BTF (/sys/kernel/btf/vmlinux is missing): the BPF programs need a \
         kernel built with CONFIG_DEBUG_INFO_BTF=y"
    )]
    NoBtf,
    /// The detail (what was being loaded) is kept for debugging, not shown.
    #[error("loading BPF programs needs root (or CAP_BPF and CAP_PERFMON): run it with sudo")]
    Privileges(String),
    // The field is named `reason`, not `source`: the message already says it, and a `source`
    // would be printed again by the error chain.
    #[error("{what}: {reason}")]
    Bpf { what: &'static str, reason: libbpf_rs::Error },
}

impl Error {
    /// Wraps a libbpf error, naming missing privileges as such.
    pub fn bpf(what: &'static str, source: libbpf_rs::Error) -> Self {
        if source.kind() == libbpf_rs::ErrorKind::PermissionDenied {
            Error::Privileges(format!("{what}: {source}"))
        } else {
            Error::Bpf { what, reason: source }
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
