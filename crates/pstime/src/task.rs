//! `/proc/PID/stat`, `/proc/PID/schedstat` and their per-thread twins under
//! `/proc/PID/task/TID/`: parsers over the bytes the kernel printed, allocating nothing.
//!
//! - **stat**: [`parse_stat`], the workspace's one parser of it, lives in `measure::procstat`
//!   (re-exported here) so crates that only need a task's state or parent share it.
//! - **schedstat**: `on-CPU ns, run-queue wait ns, timeslices`. The on-CPU time is the
//!   scheduler's own sum (`se.sum_exec_runtime`), exact, but for a task running at the moment of
//!   reading it is as of the task's last tick or switch. A kernel without `CONFIG_SCHED_INFO`
//!   prints `0 0 0` for every task.
//!
//! ```
//! use pstime::task::parse_schedstat;
//! let s = parse_schedstat(b"1500000 20000 7\n").unwrap();
//! assert_eq!(s.cpu_ns, 1_500_000);
//! ```

use std::fmt;

use serde::{Serialize, Serializer};

use measure::procstat::parse_u64;
pub use measure::procstat::{parse_stat, TaskStat};
use measure::ParseError;

/// The longest name `/proc/PID/stat` prints (a kernel worker's `kworker/u8:2-events_unbound`;
/// the kernel's buffer is 64 bytes); longer ones are cut.
pub const COMM_MAX: usize = 64;

/// A task's name as the kernel keeps it: bytes, not necessarily UTF-8, stored inline.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Comm {
    len: u8,
    bytes: [u8; COMM_MAX],
}

impl Comm {
    /// The first [`COMM_MAX`] bytes of `name`.
    pub fn new(name: &[u8]) -> Self {
        let len = name.len().min(COMM_MAX);
        let mut bytes = [0; COMM_MAX];
        bytes[..len].copy_from_slice(&name[..len]);
        Self { len: len as u8, bytes }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The name as text, invalid UTF-8 replaced.
    pub fn to_string_lossy(&self) -> String {
        String::from_utf8_lossy(self.as_bytes()).into_owned()
    }
}

impl Default for Comm {
    fn default() -> Self {
        Self::new(b"")
    }
}

impl fmt::Display for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.as_bytes()))
    }
}

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_bytes()))
    }
}

impl Serialize for Comm {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&String::from_utf8_lossy(self.as_bytes()))
    }
}

/// `/proc/PID/schedstat` (or a thread's): the scheduler's own figures for one task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SchedStat {
    /// Time on a CPU, ns (exact; as of the last tick or switch for a running task).
    pub cpu_ns: u64,
    /// Time runnable but waiting on a run queue, ns.
    pub run_delay_ns: u64,
    /// Times it was given a CPU.
    pub timeslices: u64,
}

impl SchedStat {
    /// Whether the kernel keeps these figures (`CONFIG_SCHED_INFO`): a kernel without it prints
    /// `0 0 0` for every task, which no task that ever ran shows otherwise.
    pub fn is_kept(&self) -> bool {
        self.cpu_ns != 0 || self.timeslices != 0
    }
}

/// Parses one `schedstat` file: three numbers on one line.
pub fn parse_schedstat(text: &[u8]) -> Result<SchedStat, ParseError> {
    let mut words = text.split(|b| b.is_ascii_whitespace()).filter(|w| !w.is_empty());
    let mut next = |name: &str| {
        let word = words.next().ok_or_else(|| {
            ParseError::new(1, format!("missing {name} (expected three numbers)"))
        })?;
        parse_u64(word).ok_or_else(|| {
            ParseError::new(1, format!("{name} is {:?}", String::from_utf8_lossy(word)))
        })
    };
    Ok(SchedStat {
        cpu_ns: next("on-CPU ns")?,
        run_delay_ns: next("run-queue wait ns")?,
        timeslices: next("timeslices")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat() {
        let s = parse_schedstat(b"241498257 51488262 621\n").unwrap();
        assert_eq!((s.cpu_ns, s.run_delay_ns, s.timeslices), (241_498_257, 51_488_262, 621));
        assert!(!parse_schedstat(b"0 0 0\n").unwrap().is_kept());
        assert!(parse_schedstat(b"1 2").is_err());
    }

    #[test]
    fn comm_is_cut_not_refused() {
        let long = [b'x'; 100];
        assert_eq!(Comm::new(&long).as_bytes().len(), COMM_MAX);
        assert_eq!(Comm::new(b"a) b").to_string(), "a) b");
    }
}
