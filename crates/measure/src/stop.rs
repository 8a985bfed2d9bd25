//! Ctrl-C as a request to stop: the first SIGINT sets a flag that workers poll between batches
//! (so what was measured is kept and printed); a second one ends the process as usual.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
    // SAFETY: signal() is async-signal-safe; restoring the default makes a second Ctrl-C fatal.
    unsafe { libc::signal(libc::SIGINT, libc::SIG_DFL) };
}

/// Routes SIGINT to the stop flag. Call once before a long run.
pub fn install() {
    // SAFETY: on_sigint only touches an atomic and calls an async-signal-safe function.
    unsafe { libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t) };
}

/// Whether Ctrl-C was pressed since [`install`].
#[inline]
pub fn requested() -> bool {
    STOP.load(Ordering::Relaxed)
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
