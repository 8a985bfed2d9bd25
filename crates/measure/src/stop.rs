//! Ctrl-C and SIGTERM as a request to stop: the first SIGINT or SIGTERM (what `timeout` and
//! systemd send) sets a flag that workers poll between batches and set-up loops poll between
//! pages, so what was measured is kept and printed and what platscope created is removed; a
//! second one ends the process as usual, after removing the System V semaphore sets registered
//! with [`remove_on_kill`] (which nothing else would remove). The handler is registered through
//! `signal-hook`, which chains to any handler installed before it.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Once;

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);
static INSTALL: Once = Once::new();

/// The signals that ask a run to stop.
const STOP_SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

/// System V semaphore set ids to remove if a second signal kills the process (-1: free slot).
static SEMAPHORES: [AtomicI32; 4] = [const { AtomicI32::new(-1) }; 4];

/// What a stop signal does (called by signal-hook's handler, so only atomics and
/// async-signal-safe calls).
fn on_signal(signal: libc::c_int) {
    if STOP.swap(true, Ordering::Relaxed) {
        // The second signal: remove what would outlive the process, then die of the signal.
        for slot in &SEMAPHORES {
            let id = slot.swap(-1, Ordering::Relaxed);
            if id >= 0 {
                // SAFETY: semctl(IPC_RMID) is a plain system call on an id this process made.
                unsafe { libc::semctl(id, 0, libc::IPC_RMID) };
            }
        }
        // Restores the default action and raises the signal again, so the process ends as if
        // no handler had been installed (async-signal-safe; falls back on abort).
        let _ = signal_hook::low_level::emulate_default_handler(signal);
        return;
    }
    SIGNAL.store(signal, Ordering::Relaxed);
}

/// Registers a System V semaphore set this process created, so a second Ctrl-C or SIGTERM
/// (which ends the process without unwinding) removes it first. Returns false when every slot
/// is taken (the set is then removed only by its owner's normal clean-up).
pub fn remove_on_kill(semid: libc::c_int) -> bool {
    SEMAPHORES
        .iter()
        .any(|slot| slot.compare_exchange(-1, semid, Ordering::Relaxed, Ordering::Relaxed).is_ok())
}

/// Forgets a set registered with [`remove_on_kill`] (its owner removed it).
pub fn forget_on_kill(semid: libc::c_int) {
    for slot in &SEMAPHORES {
        let _ = slot.compare_exchange(semid, -1, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// Routes SIGINT and SIGTERM to the stop flag (through `signal-hook`). Call before a long run
/// (set-up included); calling it again changes nothing.
pub fn install() {
    INSTALL.call_once(|| {
        for s in STOP_SIGNALS {
            // SAFETY: on_signal only touches atomics and calls async-signal-safe functions
            // (semctl, signal-hook's emulate_default_handler).
            let registered = unsafe { signal_hook::low_level::register(s, move || on_signal(s)) };
            // SIGINT and SIGTERM exist everywhere; a failure would leave the default action
            // (the process ends at once), as before any handler.
            drop(registered);
        }
    });
}

/// Whether Ctrl-C or SIGTERM arrived since [`install`] (or [`request`] was called).
#[inline]
pub fn requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// The signal that asked to stop (`SIGINT` or `SIGTERM`), if a signal did.
pub fn signal() -> Option<libc::c_int> {
    match SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}

/// How the stop was asked for, for messages: "Ctrl-C", "SIGTERM" or "a stop request".
pub fn cause() -> &'static str {
    match signal() {
        Some(libc::SIGINT) => "Ctrl-C",
        Some(libc::SIGTERM) => "SIGTERM",
        _ => "a stop request",
    }
}

/// Sleeps until `due`, waking early for Ctrl-C; false when interrupted.
pub fn sleep_until(due: std::time::Instant) -> bool {
    const SLICE: std::time::Duration = std::time::Duration::from_millis(50);
    loop {
        if requested() {
            return false;
        }
        let now = std::time::Instant::now();
        if now >= due {
            return true;
        }
        std::thread::sleep((due - now).min(SLICE));
    }
}

/// Asks running workers to stop, as Ctrl-C would (used by tests and time limits).
pub fn request() {
    STOP.store(true, Ordering::Relaxed);
}

/// The flag itself, for libraries that take a `&AtomicBool` to poll (a set flag means stop).
pub fn flag() -> &'static AtomicBool {
    &STOP
}

/// A set-up step (allocating, first touch, filling a buffer) given up because a stop was asked
/// for: nothing was measured yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("stopped by {} while preparing ({what}); nothing was measured", cause())]
pub struct Interrupted {
    /// What was being prepared, e.g. "touching the 8 GiB buffer".
    pub what: &'static str,
}

/// `Err(Interrupted)` when a stop was asked for: for set-up loops that check every few MiB.
pub fn check(what: &'static str) -> Result<(), Interrupted> {
    if requested() {
        Err(Interrupted { what })
    } else {
        Ok(())
    }
}
