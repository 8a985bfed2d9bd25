//! Pinning threads and processes to CPUs.

use std::io;

use crate::PlaceError;

fn cpu_set(cpus: &[u32]) -> Result<libc::cpu_set_t, PlaceError> {
    // SAFETY: cpu_set_t is plain bits; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let capacity = 8 * std::mem::size_of::<libc::cpu_set_t>();
    for &cpu in cpus {
        if cpu as usize >= capacity {
            return Err(PlaceError::NoSuchId {
                kind: "CPU",
                id: cpu,
                valid: format!("0-{}", capacity - 1),
            });
        }
        // SAFETY: cpu is below the set's capacity, checked above.
        unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    }
    Ok(set)
}

/// Restricts a process or thread (`0`: the calling thread) to `cpus`. Children forked later
/// inherit the restriction, which is how `cpu_bind $$ CPU` works.
pub fn pin(pid: libc::pid_t, cpus: &[u32]) -> Result<(), PlaceError> {
    let set = cpu_set(cpus)?;
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        let source = io::Error::last_os_error();
        return Err(match source.raw_os_error() {
            Some(libc::ESRCH) => PlaceError::NoSuchProcess(pid),
            Some(libc::EPERM) => PlaceError::PermissionDenied(format!(
                "setting the CPU affinity of process {pid} needs the same user or CAP_SYS_NICE"
            )),
            _ => PlaceError::Syscall { call: "sched_setaffinity", source },
        });
    }
    Ok(())
}

/// Pins the calling thread to `cpus`.
pub fn pin_current_thread(cpus: &[u32]) -> Result<(), PlaceError> {
    pin(0, cpus)
}

/// The CPUs a process or thread (`0`: the calling thread) may run on.
pub fn affinity(pid: libc::pid_t) -> Result<Vec<u32>, PlaceError> {
    // SAFETY: all-zero is a valid empty cpu_set_t.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is valid for writes of the size passed.
    let rc =
        unsafe { libc::sched_getaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(PlaceError::Syscall {
            call: "sched_getaffinity",
            source: io::Error::last_os_error(),
        });
    }
    let capacity = 8 * std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: every index is below the set's capacity.
    Ok((0..capacity).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).map(|c| c as u32).collect())
}

/// The CPU the calling thread is running on right now.
pub fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu has no preconditions; -1 means error.
    let cpu = unsafe { libc::sched_getcpu() };
    u32::try_from(cpu).ok()
}
