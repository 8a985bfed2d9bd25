//! Ctrl-C and SIGTERM as a request to stop: the first SIGINT or SIGTERM (what `timeout` and
//! systemd send) sets a flag that workers poll between batches and set-up loops poll between
//! pages, so what was measured is kept and printed and what platscope created is removed; a
//! second one ends the process as usual.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// The signals that ask a run to stop.
const STOP_SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

extern "C" fn on_signal(signal: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
    SIGNAL.store(signal, Ordering::Relaxed);
    for s in STOP_SIGNALS {
        // SAFETY: signal() is async-signal-safe; restoring the default makes a second Ctrl-C or
        // SIGTERM fatal.
        unsafe { libc::signal(s, libc::SIG_DFL) };
    }
}

/// Routes SIGINT and SIGTERM to the stop flag. Call once before a long run (set-up included).
pub fn install() {
    for s in STOP_SIGNALS {
        // SAFETY: on_signal only touches atomics and calls an async-signal-safe function.
        unsafe { libc::signal(s, on_signal as *const () as libc::sighandler_t) };
    }
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
