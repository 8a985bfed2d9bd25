//! The stop flag as a process sees it: the first SIGINT or SIGTERM sets it and names its cause,
//! installing twice changes nothing, and a second signal ends the process by that signal after
//! removing the registered System V semaphore set. Each case runs in a child process (this test
//! binary again, with `STOP_TEST_CASE` set), since the flag and the handlers are per process.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output};

use measure::stop;

const CASE: &str = "STOP_TEST_CASE";

fn child(case: &str) -> Output {
    Command::new(std::env::current_exe().unwrap())
        .args(["child_case", "--exact", "--nocapture", "--test-threads=1"])
        .env(CASE, case)
        .output()
        .unwrap()
}

/// The line the child printed after `marker`.
fn said(out: &Output, marker: &str) -> Option<String> {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines().find_map(|l| l.split_once(marker).map(|(_, rest)| rest.trim().to_string()))
}

fn raise(signal: libc::c_int) {
    // SAFETY: raise has no memory effects; the handler runs before it returns.
    assert_eq!(unsafe { libc::raise(signal) }, 0);
}

/// Not a test on its own: the child the other tests start.
#[test]
fn child_case() {
    let Ok(case) = std::env::var(CASE) else { return };
    match case.as_str() {
        "once" => {
            assert!(!stop::requested());
            assert_eq!(stop::cause(), "a stop request");
            stop::install();
            stop::install(); // twice: still one action per signal
            raise(libc::SIGTERM);
            println!(
                "RESULT {} {} {:?} {}",
                stop::requested(),
                stop::flag().load(std::sync::atomic::Ordering::Relaxed),
                stop::signal(),
                stop::cause()
            );
            println!("CHECK {}", stop::check("touching the buffer").unwrap_err());
            assert!(!stop::sleep_until(
                std::time::Instant::now() + std::time::Duration::from_secs(60)
            ));
        }
        "twice" => {
            stop::install();
            // SAFETY: semget with IPC_PRIVATE creates a new set; no memory is passed.
            let id = unsafe { libc::semget(libc::IPC_PRIVATE, 1, 0o600 | libc::IPC_CREAT) };
            assert!(id >= 0);
            assert!(stop::remove_on_kill(id));
            println!("SEMID {id}");
            raise(libc::SIGINT);
            println!("AFTER-FIRST {}", stop::cause());
            raise(libc::SIGINT);
            println!("STILL ALIVE");
        }
        other => panic!("unknown case {other}"),
    }
}

#[test]
fn the_first_signal_sets_the_flag_and_names_its_cause() {
    let out = child("once");
    assert!(out.status.success(), "{out:?}");
    let sigterm = libc::SIGTERM;
    assert_eq!(said(&out, "RESULT").unwrap(), format!("true true Some({sigterm}) SIGTERM"));
    assert_eq!(
        said(&out, "CHECK").unwrap(),
        "stopped by SIGTERM while preparing (touching the buffer); nothing was measured"
    );
}

#[test]
fn a_second_signal_kills_after_removing_the_semaphore() {
    let out = child("twice");
    assert_eq!(out.status.signal(), Some(libc::SIGINT), "{out:?}");
    assert_eq!(said(&out, "AFTER-FIRST").unwrap(), "Ctrl-C");
    assert!(said(&out, "STILL ALIVE").is_none());
    let id: libc::c_int = said(&out, "SEMID").unwrap().parse().unwrap();
    // SAFETY: IPC_STAT into a live local buffer; fails when the set no longer exists.
    let mut ds: libc::semid_ds = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let rc = unsafe { libc::semctl(id, 0, libc::IPC_STAT, &mut ds as *mut libc::semid_ds) };
    assert_eq!(rc, -1, "semaphore set {id} outlived the process");
}
