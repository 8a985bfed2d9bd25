//! bpfkit: what platscope's BPF crates (`iopattern`, `cpuacct`, and the database tracers) share.
//!
//! - `build` (feature `build`, for `build.rs`): compiles `src/bpf/*.bpf.c` against the vendored
//!   `vmlinux.h` into libbpf-rs skeletons.
//! - [`preflight`] and [`missing_tracepoints`]: say why a program cannot load before trying.
//! - [`Error`]: no BTF, missing privileges, or what libbpf said — each naming the fix.
//! - [`as_bytes`], [`from_bytes`], [`c_string`]: plain `repr(C)` values to and from map bytes.
//!
//! These machines have no kprobes and refuse fentry, so every program is `tp_btf`, a raw
//! tracepoint, an iterator, a uprobe or a USDT probe.
//!
//! ```
//! let name = bpfkit::c_string(&[b'p' as i8, b's' as i8, 0, b'x' as i8]);
//! assert_eq!(name, "ps");
//! ```

#[cfg(feature = "build")]
pub mod build;
mod error;

use std::path::Path;

pub use error::{Error, Result};

const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";

/// Checks what every program here needs before trying to load one, so the error says why.
pub fn preflight() -> Result<()> {
    if !Path::new(KERNEL_BTF).exists() {
        return Err(Error::NoBtf);
    }
    // libbpf's own warnings go to stderr by default; the errors we return say what failed.
    // PLATSCOPE_BPF_LOG=1 keeps them (the verifier's log when a program is refused).
    if std::env::var_os("PLATSCOPE_BPF_LOG").is_none() {
        libbpf_rs::set_print(None);
    }
    Ok(())
}

/// Which of `names` the running kernel has as tracepoints `tp_btf` can attach to (the
/// kernel's BTF, several MB, is parsed once for all of them).
pub fn missing_tracepoints<'a>(names: &[&'a str]) -> Vec<&'a str> {
    let Ok(btf) = libbpf_rs::btf::Btf::from_vmlinux() else { return names.to_vec() };
    names
        .iter()
        .copied()
        .filter(|name| {
            btf.type_by_name::<libbpf_rs::btf::types::Typedef<'_>>(&format!("btf_trace_{name}"))
                .is_none()
        })
        .collect()
}

/// The bytes of a plain `#[repr(C)]` value, to write into a map.
pub fn as_bytes<T: Copy>(value: &T) -> &[u8] {
    // SAFETY: T is one of the generated repr(C) map types: plain integers and arrays with no
    // padding bytes (the C header lays them out that way), so every byte is initialised.
    unsafe { std::slice::from_raw_parts((value as *const T).cast::<u8>(), size_of::<T>()) }
}

/// A plain `#[repr(C)]` value read back from a map's bytes; `None` if the size is wrong.
pub fn from_bytes<T: Copy>(bytes: &[u8]) -> Option<T> {
    if bytes.len() < size_of::<T>() {
        return None;
    }
    // SAFETY: the length is checked; T is a generated repr(C) type of integers and arrays,
    // valid for any bit pattern; read_unaligned has no alignment requirement.
    Some(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<T>()) })
}

/// A C char array up to its NUL, lossily as UTF-8.
pub fn c_string(chars: &[i8]) -> String {
    let bytes: Vec<u8> = chars.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Bytes up to the first NUL (a map key or value holding a C string), lossily as UTF-8.
pub fn c_string_bytes(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}
