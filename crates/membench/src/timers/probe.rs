//! vDSO or kernel, observed: a seccomp filter on a short-lived thread makes the clock system
//! calls fail with a marker errno, so a timer call that fails entered the kernel ([`CallPath`]);
//! where the probe cannot run, the path is inferred from cost against the raw system call.

use serde::{Deserialize, Serialize};

use super::TimerKind;

/// Whether a call went through the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallPath {
    /// Answered in user space by the vDSO: no system call.
    Vdso,
    /// A system call on every call.
    Kernel,
    /// Some calls entered the kernel, some did not.
    Mixed,
    /// A user-space instruction; no library, no kernel (a hypervisor may still trap it).
    Instruction,
    /// Not determined.
    Unknown,
}

/// How the path was determined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "method", content = "detail")]
pub enum PathMethod {
    /// Observed with the seccomp probe (see the module documentation).
    Seccomp,
    /// Inferred from cost against the raw system call, because the probe could not run.
    Cost(String),
}

/// The errno the probe's filter returns: unlikely from a clock call for any other reason.
const PROBE_ERRNO: i32 = libc::ENOTRECOVERABLE;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64

#[cfg(target_arch = "x86_64")]
const CLOCK_SYSCALLS: &[libc::c_long] =
    &[libc::SYS_clock_gettime, libc::SYS_gettimeofday, libc::SYS_time];
#[cfg(target_arch = "aarch64")]
const CLOCK_SYSCALLS: &[libc::c_long] = &[libc::SYS_clock_gettime, libc::SYS_gettimeofday];

/// A classic-BPF seccomp program: the clock system calls of this architecture fail with
/// [`PROBE_ERRNO`], everything else is allowed.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn probe_filter() -> Vec<libc::sock_filter> {
    let stmt = |code: u32, k: u32| libc::sock_filter { code: code as u16, jt: 0, jf: 0, k };
    let jeq = |k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    };
    let n = CLOCK_SYSCALLS.len() as u8;
    // seccomp_data: nr at offset 0, arch at offset 4.
    let mut prog = vec![
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 4),
        jeq(AUDIT_ARCH, 0, n + 1), // another ABI: allow
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
    ];
    for (i, &nr) in CLOCK_SYSCALLS.iter().enumerate() {
        prog.push(jeq(nr as u32, n - i as u8, 0));
    }
    prog.push(stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW));
    prog.push(stmt(
        libc::BPF_RET | libc::BPF_K,
        libc::SECCOMP_RET_ERRNO | (PROBE_ERRNO as u32 & libc::SECCOMP_RET_DATA),
    ));
    prog
}

/// Whether one call of `kind` failed with the probe's errno (so it made a system call).
fn entered_kernel(kind: TimerKind) -> bool {
    let failed = match kind {
        TimerKind::ClockGettime(c) => {
            let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: `ts` is valid for writes.
            unsafe { libc::clock_gettime(c.id(), &mut ts) != 0 }
        }
        TimerKind::Gettimeofday => {
            let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
            // SAFETY: `tv` is valid for writes.
            unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) != 0 }
        }
        TimerKind::Time => {
            // SAFETY: a null pointer asks only for the return value; -1 is the error value.
            let t = unsafe { libc::time(std::ptr::null_mut()) };
            t == -1
        }
        TimerKind::SyscallMonotonic => {
            let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: the raw system call writes one timespec to a valid pointer.
            unsafe { libc::syscall(libc::SYS_clock_gettime, libc::CLOCK_MONOTONIC, &mut ts) != 0 }
        }
        _ => false,
    };
    failed && std::io::Error::last_os_error().raw_os_error() == Some(PROBE_ERRNO)
}

/// Runs the seccomp probe on a thread of its own (the filter and no_new_privs stay with that
/// thread and end with it). Returns, per timer, how many of `calls` entered the kernel.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) fn seccomp_probe(kinds: &[TimerKind], calls: u32) -> Result<Vec<u32>, String> {
    let filter = probe_filter();
    std::thread::scope(|s| {
        s.spawn(|| {
            let prog =
                libc::sock_fprog { len: filter.len() as u16, filter: filter.as_ptr().cast_mut() };
            // SAFETY: sets a flag on the calling thread only; required to install a filter
            // without CAP_SYS_ADMIN.
            if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
                return Err(format!(
                    "prctl(PR_SET_NO_NEW_PRIVS): {}",
                    std::io::Error::last_os_error()
                ));
            }
            // SAFETY: `prog` points at a valid filter that outlives the call (the kernel copies
            // it); without SECCOMP_FILTER_FLAG_TSYNC it applies to this thread only.
            let rc = unsafe {
                libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                    &prog as *const libc::sock_fprog,
                    0,
                    0,
                )
            };
            if rc != 0 {
                return Err(format!(
                    "installing a seccomp filter: {}",
                    std::io::Error::last_os_error()
                ));
            }
            // The control: the raw system call must be caught, or nothing here is trusted.
            if !entered_kernel(TimerKind::SyscallMonotonic) {
                return Err(
                    "the seccomp filter did not catch a raw clock_gettime system call".into()
                );
            }
            Ok(kinds
                .iter()
                .map(|&k| {
                    if k.is_instruction() {
                        0
                    } else {
                        (0..calls).filter(|_| entered_kernel(k)).count() as u32
                    }
                })
                .collect())
        })
        .join()
        .map_err(|_| "the probe thread panicked".to_string())?
    })
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(super) fn seccomp_probe(_kinds: &[TimerKind], _calls: u32) -> Result<Vec<u32>, String> {
    Err("the probe knows only x86-64 and arm64 system call numbers".into())
}

/// The path from the probe's count.
pub fn path_from_probe(kind: TimerKind, kernel_calls: u32, calls: u32) -> CallPath {
    if kind.is_instruction() {
        CallPath::Instruction
    } else if kernel_calls == 0 {
        CallPath::Vdso
    } else if kernel_calls >= calls {
        CallPath::Kernel
    } else {
        CallPath::Mixed
    }
}

/// The path inferred from cost when the probe cannot run: a library call costing at least
/// 60% of the raw system call is taken to be one.
pub fn path_from_cost(kind: TimerKind, ns: f64, syscall_ns: Option<f64>) -> CallPath {
    match (kind, syscall_ns) {
        (k, _) if k.is_instruction() => CallPath::Instruction,
        (TimerKind::SyscallMonotonic, _) => CallPath::Kernel,
        (_, Some(sys)) if ns >= 0.6 * sys => CallPath::Kernel,
        (_, Some(_)) => CallPath::Vdso,
        _ => CallPath::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timers::Clock;

    #[test]
    fn probe_counts_become_paths() {
        let mono = TimerKind::ClockGettime(Clock::Monotonic);
        assert_eq!(path_from_probe(mono, 0, 1000), CallPath::Vdso);
        assert_eq!(path_from_probe(mono, 1000, 1000), CallPath::Kernel);
        assert_eq!(path_from_probe(mono, 3, 1000), CallPath::Mixed);
        assert_eq!(path_from_probe(TimerKind::Rdtsc, 0, 1000), CallPath::Instruction);
        assert_eq!(path_from_cost(mono, 25.0, Some(200.0)), CallPath::Vdso);
        assert_eq!(path_from_cost(mono, 190.0, Some(200.0)), CallPath::Kernel);
        assert_eq!(path_from_cost(mono, 25.0, None), CallPath::Unknown);
    }
}
