//! The SLB kit's semaphore: the System V semaphore that `create_sem` makes, every `memhammer`
//! waits on, and `trigger` opens, releasing them all at once. `mem slb --processes` uses a
//! private one of the same shape to start its worker processes together.
//!
//! The set has two semaphores:
//!
//! - the **gate** (0): 1 while armed; memhammers wait for it to reach zero, so one operation
//!   by `trigger` releases every waiter at the same instant, and a second `trigger` can tell
//!   that it already ran;
//! - **arriving** (1): memhammers that have started but are still allocating and initializing
//!   their memory. Each adds one when it starts and takes it back when it begins to wait (with
//!   `SEM_UNDO`, so one that dies meanwhile does not hold `trigger` up). `trigger` waits until
//!   at least one memhammer has shown up and none is still arriving, so a script's
//!   `memhammer … &` followed at once by `trigger` starts every memhammer together.
//!
//! The set lives at a fixed IPC key, [`DEFAULT_KEY`], unless `PLATSCOPE_SLB_KEY` names another
//! (so that parallel runs, tests among them, do not share one).
//!
//! ```no_run
//! use membench::kit::{key_from_env, SlbSemaphore};
//! use std::time::Duration;
//! let key = key_from_env()?;
//! SlbSemaphore::create(key)?;                       // create_sem
//! // … memhammers: SlbSemaphore::open(key)?.arrive()?, allocate, ready_and_wait() …
//! let released = SlbSemaphore::open(key)?.trigger(Duration::from_secs(5))?; // trigger
//! # Ok::<(), membench::kit::KitError>(())
//! ```

use std::io;
use std::time::{Duration, Instant};

use measure::stop;

pub mod tools;

/// The IPC key of the SLB semaphore unless [`KEY_ENV`] says otherwise ("SLB!" in ASCII).
pub const DEFAULT_KEY: libc::key_t = 0x534C_4221;
/// Environment variable that overrides [`DEFAULT_KEY`] (decimal or `0x` hex, not 0).
pub const KEY_ENV: &str = "PLATSCOPE_SLB_KEY";
/// How long `trigger` waits for the first memhammer to show up.
pub const ARRIVAL_PATIENCE: Duration = Duration::from_secs(5);
/// How long the waiters must stay unchanged, none arriving, before `trigger` opens the gate:
/// a memhammer forked just before `trigger` gets this long to announce itself.
const QUIET: Duration = Duration::from_millis(100);
const POLL: Duration = Duration::from_millis(2);

const GATE: u16 = 0;
const ARRIVING: u16 = 1;
const NSEMS: libc::c_int = 2;

/// Why a semaphore operation failed; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum KitError {
    #[error("no SLB semaphore (IPC key {key:#x}): run create_sem first")]
    NoSemaphore { key: libc::key_t },
    #[error(
        "the SLB semaphore (IPC key {key:#x}) was already triggered (trigger ran twice, or \
         create_sem was not run for this round): run create_sem to arm it again, start the \
         memhammers, then trigger"
    )]
    AlreadyTriggered { key: libc::key_t },
    #[error(
        "no memhammer is waiting on the SLB semaphore (IPC key {key:#x}) after {secs} s \
         (trigger already ran?): start memhammer processes after create_sem, then trigger"
    )]
    NoWaiters { key: libc::key_t, secs: u64 },
    #[error(
        "IPC key {key:#x} holds a semaphore set that is not an SLB semaphore: remove it with \
         `ipcrm -S {key:#x}` or choose another key with {KEY_ENV}"
    )]
    NotOurs { key: libc::key_t },
    #[error(
        "permission denied on the SLB semaphore (IPC key {key:#x}): it belongs to another user; \
         remove it as that user (`ipcrm -S {key:#x}`) or choose another key with {KEY_ENV}"
    )]
    PermissionDenied { key: libc::key_t },
    #[error(
        "the SLB semaphore was removed while in use (ipcrm?): start again (memhammer: after \
         create_sem)"
    )]
    Removed,
    #[error("{KEY_ENV}={0:?} is not a usable IPC key: give a non-zero number, decimal or 0x hex")]
    BadKey(String),
    #[error("interrupted while waiting for the trigger: nothing was measured")]
    Interrupted,
    #[error("{call} failed: {source}")]
    Syscall {
        call: &'static str,
        #[source]
        source: io::Error,
    },
}

impl KitError {
    /// Whether the user's input was wrong (exit code 2) rather than the run failing (1).
    pub fn is_usage(&self) -> bool {
        matches!(self, KitError::BadKey(_))
    }
}

impl measure::Usage for KitError {
    fn is_usage(&self) -> bool {
        KitError::is_usage(self)
    }
}

/// Parses an IPC key: decimal (negative allowed, as `key_t` is signed) or `0x` hex up to 32
/// bits. 0 is `IPC_PRIVATE`, which cannot be shared, so it is refused.
pub fn parse_key(text: &str) -> Result<libc::key_t, KitError> {
    let t = text.trim();
    let bad = || KitError::BadKey(text.to_string());
    let value: i64 = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => i64::from_str_radix(hex, 16).map_err(|_| bad())?,
        None => t.parse().map_err(|_| bad())?,
    };
    if value == 0 || value < i64::from(i32::MIN) || value > i64::from(u32::MAX) {
        return Err(bad());
    }
    // Keys above i32::MAX are the same 32 bits read as negative, as C's key_t holds them.
    Ok(value as u32 as libc::key_t)
}

/// The key to use: [`KEY_ENV`] if set, else [`DEFAULT_KEY`].
pub fn key_from_env() -> Result<libc::key_t, KitError> {
    match std::env::var(KEY_ENV) {
        Ok(text) => parse_key(&text),
        Err(std::env::VarError::NotPresent) => Ok(DEFAULT_KEY),
        Err(std::env::VarError::NotUnicode(t)) => Err(KitError::BadKey(t.to_string_lossy().into())),
    }
}

/// `semctl`'s fourth argument.
#[repr(C)]
union Semun {
    val: libc::c_int,
    buf: *mut libc::c_void,
}

/// An SLB semaphore set, by id. Dropping it leaves the set in place (it is shared); see
/// [`PrivateGate`] for one that is removed.
#[derive(Debug)]
pub struct SlbSemaphore {
    id: libc::c_int,
    key: libc::key_t,
}

fn errno() -> io::Error {
    io::Error::last_os_error()
}

impl SlbSemaphore {
    /// Creates the set at `key`, or finds the existing one, and arms it (create_sem). Waiters
    /// from an earlier round that was never triggered keep waiting for the next trigger.
    pub fn create(key: libc::key_t) -> Result<Self, KitError> {
        // SAFETY: semget takes plain integers.
        let id = unsafe { libc::semget(key, NSEMS, libc::IPC_CREAT | 0o600) };
        let sem = Self::from_semget(id, key)?;
        sem.set(GATE, 1)?;
        Ok(sem)
    }

    /// Opens the existing set at `key` (memhammer, trigger).
    pub fn open(key: libc::key_t) -> Result<Self, KitError> {
        // SAFETY: semget takes plain integers.
        let id = unsafe { libc::semget(key, NSEMS, 0) };
        Self::from_semget(id, key)
    }

    /// The set with this id, as a child process receives it from [`PrivateGate::id`].
    pub fn attach(id: libc::c_int) -> Self {
        SlbSemaphore { id, key: libc::IPC_PRIVATE }
    }

    fn from_semget(id: libc::c_int, key: libc::key_t) -> Result<Self, KitError> {
        if id >= 0 {
            return Ok(SlbSemaphore { id, key });
        }
        let source = errno();
        Err(match source.raw_os_error() {
            Some(libc::ENOENT) => KitError::NoSemaphore { key },
            // An existing set with fewer semaphores than ours.
            Some(libc::EINVAL) => KitError::NotOurs { key },
            Some(libc::EACCES) | Some(libc::EPERM) => KitError::PermissionDenied { key },
            _ => KitError::Syscall { call: "semget", source },
        })
    }

    /// The set's id.
    pub fn id(&self) -> libc::c_int {
        self.id
    }

    /// The IPC key (`IPC_PRIVATE`, 0, for a private set).
    pub fn key(&self) -> libc::key_t {
        self.key
    }

    fn fail(&self, call: &'static str) -> KitError {
        let source = errno();
        match source.raw_os_error() {
            Some(libc::EIDRM) | Some(libc::EINVAL) => KitError::Removed,
            Some(libc::EACCES) | Some(libc::EPERM) => KitError::PermissionDenied { key: self.key },
            _ => KitError::Syscall { call, source },
        }
    }

    fn ctl(&self, num: u16, cmd: libc::c_int) -> Result<u32, KitError> {
        // SAFETY: GETVAL, GETZCNT and GETNCNT take no fourth argument and only read the set.
        let rc = unsafe { libc::semctl(self.id, libc::c_int::from(num), cmd) };
        u32::try_from(rc).map_err(|_| self.fail("semctl"))
    }

    fn set(&self, num: u16, val: libc::c_int) -> Result<(), KitError> {
        // SAFETY: SETVAL reads the `val` member of the union passed by value.
        let rc =
            unsafe { libc::semctl(self.id, libc::c_int::from(num), libc::SETVAL, Semun { val }) };
        if rc < 0 {
            return Err(self.fail("semctl(SETVAL)"));
        }
        Ok(())
    }

    /// Performs `ops` atomically. `Ok(false)`: `IPC_NOWAIT` was given and it would block, or
    /// a signal interrupted it.
    fn op(&self, ops: &mut [libc::sembuf]) -> Result<bool, KitError> {
        // SAFETY: `ops` is a valid array of ops.len() sembufs for the duration of the call.
        let rc = unsafe { libc::semop(self.id, ops.as_mut_ptr(), ops.len()) };
        if rc == 0 {
            return Ok(true);
        }
        match io::Error::last_os_error().raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(false),
            _ => Err(self.fail("semop")),
        }
    }

    /// Whether the gate is still closed (armed, not yet triggered).
    pub fn is_armed(&self) -> Result<bool, KitError> {
        Ok(self.ctl(GATE, libc::GETVAL)? > 0)
    }

    /// Processes blocked at the gate.
    pub fn waiting(&self) -> Result<u32, KitError> {
        self.ctl(GATE, libc::GETZCNT)
    }

    /// Memhammers that have started but are not yet waiting.
    pub fn arriving(&self) -> Result<u32, KitError> {
        self.ctl(ARRIVING, libc::GETVAL)
    }

    /// A memhammer announces itself before allocating, so `trigger` waits for it. Refuses when
    /// the gate is already open: this round was triggered and would not wait for it.
    pub fn arrive(&self) -> Result<(), KitError> {
        if !self.is_armed()? {
            return Err(KitError::AlreadyTriggered { key: self.key });
        }
        let flags = libc::SEM_UNDO as libc::c_short;
        let mut ops = [libc::sembuf { sem_num: ARRIVING, sem_op: 1, sem_flg: flags }];
        while !self.op(&mut ops)? {}
        Ok(())
    }

    /// After [`arrive`](Self::arrive) and getting ready: stops counting as arriving, then
    /// blocks until the gate opens.
    pub fn ready_and_wait(&self) -> Result<(), KitError> {
        let flags = (libc::SEM_UNDO | libc::IPC_NOWAIT) as libc::c_short;
        let mut ops = [libc::sembuf { sem_num: ARRIVING, sem_op: -1, sem_flg: flags }];
        if !self.op(&mut ops)? && stop::requested() {
            return Err(KitError::Interrupted);
        }
        self.wait_open()
    }

    /// Blocks until the gate opens. Ctrl-C (see [`measure::stop`]) ends the wait with
    /// [`KitError::Interrupted`]; other signals resume it.
    pub fn wait_open(&self) -> Result<(), KitError> {
        let mut ops = [libc::sembuf { sem_num: GATE, sem_op: 0, sem_flg: 0 }];
        loop {
            // semop is never restarted after a signal handler: Ctrl-C while blocked returns
            // EINTR and lands here; Ctrl-C before blocking is seen here too.
            if stop::requested() {
                return Err(KitError::Interrupted);
            }
            if self.op(&mut ops)? {
                return Ok(());
            }
        }
    }

    /// Opens the gate now if it is closed, releasing every waiter at once; returns how many
    /// were waiting just before.
    pub fn release(&self) -> Result<u32, KitError> {
        let waiting = self.waiting()?;
        let mut ops = [libc::sembuf {
            sem_num: GATE,
            sem_op: -1,
            sem_flg: libc::IPC_NOWAIT as libc::c_short,
        }];
        if !self.op(&mut ops)? {
            return Err(KitError::AlreadyTriggered { key: self.key });
        }
        Ok(waiting)
    }

    /// The `trigger` tool: waits up to `patience` for the first memhammer to show up, then
    /// until none is still arriving and the waiters have stayed the same for a moment, and
    /// opens the gate. Returns how many it released.
    pub fn trigger(&self, patience: Duration) -> Result<u32, KitError> {
        if !self.is_armed()? {
            return Err(KitError::AlreadyTriggered { key: self.key });
        }
        let started = Instant::now();
        let mut last = (u32::MAX, u32::MAX);
        let mut steady_since = Instant::now();
        loop {
            let now = (self.arriving()?, self.waiting()?);
            if now != last {
                last = now;
                steady_since = Instant::now();
            }
            match now {
                (0, 0) if started.elapsed() >= patience => {
                    return Err(KitError::NoWaiters { key: self.key, secs: patience.as_secs() });
                }
                (0, waiting) if waiting > 0 && steady_since.elapsed() >= QUIET => {
                    // Atomically: none arriving, and the gate still closed.
                    let nowait = libc::IPC_NOWAIT as libc::c_short;
                    let mut ops = [
                        libc::sembuf { sem_num: ARRIVING, sem_op: 0, sem_flg: nowait },
                        libc::sembuf { sem_num: GATE, sem_op: -1, sem_flg: nowait },
                    ];
                    if self.op(&mut ops)? {
                        return Ok(waiting);
                    }
                    if !self.is_armed()? {
                        return Err(KitError::AlreadyTriggered { key: self.key });
                    }
                }
                _ => {}
            }
            std::thread::sleep(POLL);
        }
    }

    /// Removes the set (`ipcrm`); waiters get [`KitError::Removed`].
    pub fn remove(&self) -> Result<(), KitError> {
        // SAFETY: IPC_RMID takes no fourth argument.
        if unsafe { libc::semctl(self.id, 0, libc::IPC_RMID) } < 0 {
            return Err(self.fail("semctl(IPC_RMID)"));
        }
        Ok(())
    }
}

/// A private SLB semaphore (`IPC_PRIVATE`), armed, for worker processes a parent starts
/// together. Removed when dropped, and by the stop handler if a second Ctrl-C or SIGTERM kills
/// the parent ([`measure::stop::remove_on_kill`]); only SIGKILL leaves it behind (`ipcs -s`).
#[derive(Debug)]
pub struct PrivateGate {
    sem: SlbSemaphore,
}

impl PrivateGate {
    pub fn create() -> Result<Self, KitError> {
        // SAFETY: semget takes plain integers.
        let id = unsafe { libc::semget(libc::IPC_PRIVATE, NSEMS, libc::IPC_CREAT | 0o600) };
        let gate = PrivateGate { sem: SlbSemaphore::from_semget(id, libc::IPC_PRIVATE)? };
        measure::stop::remove_on_kill(id);
        gate.sem.set(GATE, 1)?;
        Ok(gate)
    }

    /// The id children pass to [`SlbSemaphore::attach`].
    pub fn id(&self) -> libc::c_int {
        self.sem.id
    }

    /// Children blocked at the gate.
    pub fn waiting(&self) -> Result<u32, KitError> {
        self.sem.waiting()
    }

    /// Releases every waiting child at once.
    pub fn release(&self) -> Result<u32, KitError> {
        self.sem.release()
    }
}

impl Drop for PrivateGate {
    fn drop(&mut self) {
        measure::stop::forget_on_kill(self.sem.id);
        let _ = self.sem.remove();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key no other test or run uses: the test's pid and a per-test tag.
    fn test_key(tag: u32) -> libc::key_t {
        (0x5100_0000 | ((std::process::id() & 0xFFFF) << 8) | tag) as libc::key_t
    }

    struct Cleanup(libc::key_t);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            if let Ok(s) = SlbSemaphore::open(self.0) {
                let _ = s.remove();
            }
        }
    }

    #[test]
    fn keys_parse_or_say_why_not() {
        assert_eq!(parse_key("0x534C4221").unwrap(), DEFAULT_KEY);
        assert_eq!(parse_key(" 12345 ").unwrap(), 12345);
        assert_eq!(parse_key("-7").unwrap(), -7);
        assert_eq!(parse_key("0xFFFFFFFF").unwrap(), -1);
        for bad in ["0", "0x0", "", "abc", "0x1FFFFFFFF", "99999999999"] {
            let err = parse_key(bad).unwrap_err();
            assert!(err.is_usage());
            assert!(err.to_string().contains("PLATSCOPE_SLB_KEY"), "{err}");
        }
    }

    #[test]
    fn messages_say_the_fix() {
        let key = DEFAULT_KEY;
        let cases: [(KitError, &str); 5] = [
            (
                KitError::NoSemaphore { key },
                "no SLB semaphore (IPC key 0x534c4221): run create_sem first",
            ),
            (KitError::AlreadyTriggered { key }, "run create_sem to arm it again"),
            (KitError::NoWaiters { key, secs: 5 }, "no memhammer is waiting"),
            (KitError::NotOurs { key }, "ipcrm -S 0x534c4221"),
            (KitError::PermissionDenied { key }, "PLATSCOPE_SLB_KEY"),
        ];
        for (err, needle) in cases {
            let text = err.to_string();
            assert!(text.contains(needle), "{text:?} lacks {needle:?}");
            assert!(!text.contains('\n'), "one line: {text:?}");
            assert!(!err.is_usage());
        }
        assert!(KitError::NoWaiters { key, secs: 5 }.to_string().contains("trigger already ran?"));
    }

    #[test]
    fn open_before_create_says_run_create_sem() {
        let key = test_key(1);
        let err = SlbSemaphore::open(key).unwrap_err();
        assert!(matches!(err, KitError::NoSemaphore { .. }), "{err}");
    }

    #[test]
    fn trigger_releases_every_waiter_once() {
        let key = test_key(2);
        let _cleanup = Cleanup(key);
        let sem = SlbSemaphore::create(key).unwrap();
        assert!(sem.is_armed().unwrap());
        // No one came: the trigger gives up after its patience.
        let err = sem.trigger(Duration::from_millis(50)).unwrap_err();
        assert!(matches!(err, KitError::NoWaiters { .. }), "{err}");

        let released = std::thread::scope(|s| {
            let waiters: Vec<_> = (0..3)
                .map(|_| {
                    s.spawn(move || {
                        let mine = SlbSemaphore::open(key).unwrap();
                        mine.arrive().unwrap();
                        std::thread::sleep(Duration::from_millis(30)); // "allocating"
                        mine.ready_and_wait().unwrap();
                    })
                })
                .collect();
            let released = SlbSemaphore::open(key).unwrap().trigger(Duration::from_secs(5));
            for w in waiters {
                w.join().unwrap();
            }
            released
        });
        assert_eq!(released.unwrap(), 3);
        assert_eq!(sem.arriving().unwrap(), 0);
        // Twice: the gate is open.
        let err = sem.trigger(Duration::from_millis(10)).unwrap_err();
        assert!(matches!(err, KitError::AlreadyTriggered { .. }), "{err}");
        // A memhammer after the round was triggered is refused, until create_sem re-arms.
        assert!(matches!(sem.arrive(), Err(KitError::AlreadyTriggered { .. })));
        SlbSemaphore::create(key).unwrap();
        sem.arrive().unwrap();
    }

    #[test]
    fn private_gate_counts_waiters_and_is_removed() {
        let gate = PrivateGate::create().unwrap();
        let id = gate.id();
        std::thread::scope(|s| {
            let child = s.spawn(move || SlbSemaphore::attach(id).wait_open());
            while gate.waiting().unwrap() < 1 {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(gate.release().unwrap(), 1);
            child.join().unwrap().unwrap();
        });
        assert!(matches!(gate.release(), Err(KitError::AlreadyTriggered { .. })));
        drop(gate);
        assert!(matches!(SlbSemaphore::attach(id).waiting(), Err(KitError::Removed)));
    }
}
