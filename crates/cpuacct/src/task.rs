//! `/proc/PID/stat`, `/proc/PID/schedstat` and their per-thread twins under
//! `/proc/PID/task/TID/`: parsers over the bytes the kernel printed, allocating nothing.
//!
//! - **stat**: `pid (comm) state ppid …`. `comm` is whatever the task named itself (up to 15
//!   bytes, longer for kernel workers, any byte but NUL: spaces, parentheses and newlines
//!   included), so it ends at the *last* `)`. Times are in clock ticks ([`ClockTicks`]). The
//!   user/system split is tick-sampled: the kernel charges each scheduler tick to whatever
//!   was running in which mode, then scales both so that they add up to the exact runtime.
//! - **schedstat**: `on-CPU ns, run-queue wait ns, timeslices`. The on-CPU time is the
//!   scheduler's own sum (`se.sum_exec_runtime`), exact, but for a task running at the moment of
//!   reading it is as of the task's last tick or switch. A kernel without `CONFIG_SCHED_INFO`
//!   prints `0 0 0` for every task.
//!
//! [`ClockTicks`]: measure::time::ClockTicks

use std::fmt;

use serde::{Serialize, Serializer};

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

/// The fields of `/proc/PID/stat` (or `/proc/PID/task/TID/stat`) that CPU accounting uses.
/// For a process, times cover all its threads, including those that have exited; for a
/// thread, only that thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskStat<'a> {
    pub pid: u32,
    /// The name between the parentheses, raw.
    pub comm: &'a [u8],
    /// `R`, `S`, `D`, `Z`, `T`, `t`, `X`, `I` …
    pub state: u8,
    pub ppid: u32,
    pub minflt: u64,
    pub majflt: u64,
    /// User-mode time, clock ticks (tick-sampled split, see the module documentation).
    pub utime_ticks: u64,
    /// Kernel-mode time, clock ticks.
    pub stime_ticks: u64,
    /// User time of waited-for (reaped) children, clock ticks.
    pub cutime_ticks: u64,
    /// System time of waited-for children, clock ticks.
    pub cstime_ticks: u64,
    pub priority: i64,
    pub nice: i64,
    pub num_threads: u32,
    /// Start time, clock ticks after boot (`CLOCK_BOOTTIME`); with the PID, it names a process
    /// uniquely across PID reuse.
    pub start_ticks: u64,
    /// The CPU it last ran on (since Linux 2.2.8).
    pub processor: Option<u32>,
    /// Time spent waiting for block I/O, clock ticks (since 2.6.18; 0 unless delay
    /// accounting is on).
    pub blkio_ticks: Option<u64>,
}

/// Fields after the `)`, counted from 0 (`state`): stat(5)'s field number minus 3.
mod field {
    pub const STATE: usize = 0;
    pub const PPID: usize = 1;
    pub const MINFLT: usize = 7;
    pub const MAJFLT: usize = 9;
    pub const UTIME: usize = 11;
    pub const STIME: usize = 12;
    pub const CUTIME: usize = 13;
    pub const CSTIME: usize = 14;
    pub const PRIORITY: usize = 15;
    pub const NICE: usize = 16;
    pub const NUM_THREADS: usize = 17;
    pub const STARTTIME: usize = 19;
    pub const PROCESSOR: usize = 36;
    pub const BLKIO: usize = 39;
}

fn unsigned(word: &[u8]) -> Option<u64> {
    if word.is_empty() || word.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in word {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(v)
}

fn signed(word: &[u8]) -> Option<i64> {
    match word.split_first() {
        Some((b'-', rest)) => unsigned(rest).and_then(|v| i64::try_from(v).ok()).map(|v| -v),
        _ => unsigned(word).and_then(|v| i64::try_from(v).ok()),
    }
}

/// Parses one `stat` file. The text must hold one line; a trailing newline is fine.
pub fn parse_stat(text: &[u8]) -> Result<TaskStat<'_>, ParseError> {
    let open = text
        .iter()
        .position(|&b| b == b'(')
        .ok_or_else(|| ParseError::new(1, "no '(' before the command name"))?;
    let close = text
        .iter()
        .rposition(|&b| b == b')')
        .filter(|&c| c > open)
        .ok_or_else(|| ParseError::new(1, "no ')' after the command name"))?;
    let pid_word = text[..open].trim_ascii();
    let pid = unsigned(pid_word)
        .and_then(|p| u32::try_from(p).ok())
        .ok_or_else(|| ParseError::new(1, "the first field is not a process ID"))?;
    let comm = &text[open + 1..close];

    // Up to the last field used, in one pass over the words after the name.
    let mut words: [&[u8]; field::BLKIO + 1] = [&[]; field::BLKIO + 1];
    let mut count = 0;
    for word in text[close + 1..].split(|b| b.is_ascii_whitespace()).filter(|w| !w.is_empty()) {
        if count == words.len() {
            break;
        }
        words[count] = word;
        count += 1;
    }
    if count <= field::STARTTIME {
        return Err(ParseError::new(
            1,
            format!(
                "{} fields after the command name, expected at least {}",
                count,
                field::STARTTIME + 1
            ),
        ));
    }
    let bad = |name: &str, i: usize| {
        ParseError::new(1, format!("{name} is {:?}", String::from_utf8_lossy(words[i])))
    };
    let u = |name: &str, i: usize| unsigned(words[i]).ok_or_else(|| bad(name, i));
    let s = |name: &str, i: usize| signed(words[i]).ok_or_else(|| bad(name, i));
    let u32_of = |name: &str, i: usize| {
        unsigned(words[i]).and_then(|v| u32::try_from(v).ok()).ok_or_else(|| bad(name, i))
    };
    let opt = |i: usize| if i < count { unsigned(words[i]) } else { None };
    let state = match words[field::STATE] {
        [c] => *c,
        _ => return Err(bad("state", field::STATE)),
    };
    // Children's times are `long` in the kernel; never negative in practice.
    let children = |name: &str, i: usize| s(name, i).map(|v| u64::try_from(v).unwrap_or(0));
    Ok(TaskStat {
        pid,
        comm,
        state,
        ppid: u32_of("ppid", field::PPID)?,
        minflt: u("minflt", field::MINFLT)?,
        majflt: u("majflt", field::MAJFLT)?,
        utime_ticks: u("utime", field::UTIME)?,
        stime_ticks: u("stime", field::STIME)?,
        cutime_ticks: children("cutime", field::CUTIME)?,
        cstime_ticks: children("cstime", field::CSTIME)?,
        priority: s("priority", field::PRIORITY)?,
        nice: s("nice", field::NICE)?,
        num_threads: u32_of("num_threads", field::NUM_THREADS)?,
        start_ticks: u("starttime", field::STARTTIME)?,
        processor: opt(field::PROCESSOR).and_then(|v| u32::try_from(v).ok()),
        blkio_ticks: opt(field::BLKIO),
    })
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
        unsigned(word).ok_or_else(|| {
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
#[allow(clippy::unwrap_used)] // tests may unwrap
mod tests {
    use super::*;

    #[test]
    fn a_name_with_parentheses_and_spaces_ends_at_the_last_paren() {
        let line = b"42 (a) b (c)) S 1 42 42 0 -1 4194304 10 0 2 0 7 3 0 0 20 0 1 0 500 0 0\n";
        let s = parse_stat(line).unwrap();
        assert_eq!((s.pid, s.comm, s.state, s.ppid), (42, &b"a) b (c)"[..], b'S', 1));
        assert_eq!((s.utime_ticks, s.stime_ticks, s.start_ticks), (7, 3, 500));
        assert_eq!((s.minflt, s.majflt, s.num_threads), (10, 2, 1));
        assert_eq!((s.processor, s.blkio_ticks), (None, None));
    }

    #[test]
    fn negative_children_times_are_zero() {
        let line = b"7 (x) R 1 7 7 0 -1 0 0 0 0 0 1 1 -5 2 20 -10 3 0 9";
        let s = parse_stat(line).unwrap();
        assert_eq!((s.cutime_ticks, s.cstime_ticks, s.nice, s.num_threads), (0, 2, -10, 3));
    }

    #[test]
    fn short_and_malformed_lines_are_errors() {
        assert!(parse_stat(b"7 (x) R 1 7").unwrap_err().message.contains("fields"));
        assert!(parse_stat(b"7 x R 1").is_err());
        assert!(parse_stat(b"seven (x) R 1 7 7 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 9").is_err());
        let e = parse_stat(b"7 (x) R 1 7 7 0 -1 0 0 0 0 0 one 1 0 0 20 0 1 0 9").unwrap_err();
        assert!(e.message.contains("utime"), "{e}");
    }

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
