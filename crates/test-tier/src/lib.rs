//! A test's tier said by one attribute (a dev-dependency only).
//!
//! Plain `cargo test` runs the pure tier; the other tiers are `#[ignore]`d tests that
//! `cargo test -- --ignored` (and `scripts/test.sh`) run. `#[ignore = "…"]` takes a literal
//! only, so the reason of each tier lives here, once, and a test names its tier instead of
//! pasting the sentence:
//!
//! ```text
//! use test_tier::live;
//!
//! #[live]                                   // #[test] #[ignore = "live tier: runs on this machine (root for BPF, veth, huge pages); scripts/test.sh runs it"]
//! fn bandwidth_on_node_0() { … }
//!
//! #[live("starts PostgreSQL 15 (root)")]    // #[test] #[ignore = "live tier: starts PostgreSQL 15 (root); scripts/test.sh runs it"]
//! fn sweep_rate() { … }
//! ```
//!
//! The attribute adds `#[test]` itself. An argument, a string literal, replaces the tier's
//! default of what the test needs.
//!
//! A crate's integration tests are one binary (`tests/it/main.rs`, a module per file), so
//! tests of different files would run side by side where, as binaries of their own, they ran
//! one file after the other: a quiet report beside another file's benchmark, two files
//! changing the same machine setting. A tier test therefore first [`enter`]s its file's turn:
//! tier tests of one file under `tests/` still run in parallel with each other, never beside
//! another file's. (Pure tests are not held: they do not run in the tier runs.)

pub use test_tier_macros::{browser, guest, live};

use std::sync::{Condvar, Mutex, PoisonError};

/// Which file's tier tests are running, and how many.
struct Turn {
    file: Option<&'static str>,
    running: usize,
}

static TURN: Mutex<Turn> = Mutex::new(Turn { file: None, running: 0 });
static CHANGED: Condvar = Condvar::new();

/// Held by a running tier test: while any is held, only tests of its file enter.
#[derive(Debug)]
#[must_use = "the turn ends when this is dropped"]
pub struct Entered {
    held: bool,
}

/// Waits until no other file's tier test runs, then holds `file`'s turn until the returned
/// value drops. Tier attributes call it with the test's `file!()`; a test outside `tests/`
/// (a unit test of a library, one binary since always) is not held.
pub fn enter(file: &'static str) -> Entered {
    if !file.contains("tests/") {
        return Entered { held: false };
    }
    let mut turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
    while turn.file.is_some_and(|f| f != file) {
        turn = CHANGED.wait(turn).unwrap_or_else(PoisonError::into_inner);
    }
    turn.file = Some(file);
    turn.running += 1;
    Entered { held: true }
}

impl Drop for Entered {
    fn drop(&mut self) {
        if !self.held {
            return;
        }
        let mut turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
        turn.running -= 1;
        if turn.running == 0 {
            turn.file = None;
            CHANGED.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Barrier};

    #[test]
    fn one_file_at_a_time_and_a_file_in_parallel() {
        // Two tests of file a enter together; file b's waits until both have left.
        let a1 = enter("crates/x/tests/it/a.rs");
        let a2 = enter("crates/x/tests/it/a.rs");
        let b_in = Arc::new(AtomicUsize::new(0));
        let started = Arc::new(Barrier::new(2));
        let b = {
            let (b_in, started) = (b_in.clone(), started.clone());
            std::thread::spawn(move || {
                started.wait();
                let _b = enter("crates/x/tests/it/b.rs");
                b_in.store(1, Ordering::SeqCst);
            })
        };
        started.wait();
        drop(a1);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(b_in.load(Ordering::SeqCst), 0, "b entered while a test of a ran");
        drop(a2);
        b.join().unwrap();
        assert_eq!(b_in.load(Ordering::SeqCst), 1);
        // Library unit tests are never held.
        let _a = enter("crates/x/tests/it/a.rs");
        let _lib = enter("crates/x/src/lib.rs");
    }
}
