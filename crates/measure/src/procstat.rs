//! `/proc/PID/stat` (and `/proc/PID/task/TID/stat`): the one parser of the workspace, over the
//! bytes the kernel printed, allocating nothing and reading no file — callers read the file
//! (or a captured copy) and pass its bytes.
//!
//! `pid (comm) state ppid …`: `comm` is whatever the task named itself (up to 15 bytes, longer
//! for kernel workers, any byte but NUL: spaces, parentheses and newlines included), so it ends
//! at the *last* `)`. Times are in clock ticks ([`ClockTicks`](crate::time::ClockTicks)). The
//! user/system split is tick-sampled: the kernel charges each scheduler tick to whatever was
//! running in which mode, then scales both so that they add up to the exact runtime.
//!
//! ```
//! let s = measure::procstat::parse_stat(b"42 (my (odd) name) Z 1 42 42 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 500\n")?;
//! assert_eq!((s.pid, s.comm, s.state, s.ppid), (42, &b"my (odd) name"[..], b'Z', 1));
//! assert!(s.is_zombie());
//! # Ok::<(), measure::ParseError>(())
//! ```

use crate::ParseError;

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

impl TaskStat<'_> {
    /// The name as text, invalid UTF-8 replaced.
    pub fn comm_lossy(&self) -> String {
        String::from_utf8_lossy(self.comm).into_owned()
    }

    /// Whether the task has exited and only waits for its parent to collect it (state `Z`).
    pub fn is_zombie(&self) -> bool {
        self.state == b'Z'
    }
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

/// A kernel-printed decimal: ASCII digits only, at most 20 of them, no sign; `None` otherwise
/// or on overflow.
pub fn parse_u64(word: &[u8]) -> Option<u64> {
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
        Some((b'-', rest)) => parse_u64(rest).and_then(|v| i64::try_from(v).ok()).map(|v| -v),
        _ => parse_u64(word).and_then(|v| i64::try_from(v).ok()),
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
    let pid = parse_u64(pid_word)
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
    let u = |name: &str, i: usize| parse_u64(words[i]).ok_or_else(|| bad(name, i));
    let s = |name: &str, i: usize| signed(words[i]).ok_or_else(|| bad(name, i));
    let u32_of = |name: &str, i: usize| {
        parse_u64(words[i]).and_then(|v| u32::try_from(v).ok()).ok_or_else(|| bad(name, i))
    };
    let opt = |i: usize| if i < count { parse_u64(words[i]) } else { None };
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

#[cfg(test)]
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

    /// A stat line for `comm` with the given state and fields after it.
    fn line(comm: &[u8], tail: &str) -> Vec<u8> {
        let mut l = b"4242 (".to_vec();
        l.extend_from_slice(comm);
        l.extend_from_slice(b") ");
        l.extend_from_slice(tail.as_bytes());
        l
    }

    #[test]
    fn any_name_reads_back_and_no_cut_or_mutated_line_panics() {
        const TAIL: &str = "S 1 4242 4242 0 -1 4194304 10 0 2 0 7 3 0 0 20 0 1 0 500 0 0 0 0 0 0 \
                            0 0 0 0 0 0 0 0 0 0 3 0 0 9\n";
        let mut x: u64 = 0x243F_6A88_85A3_08D3;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..3000 {
            // Names of any bytes but NUL, parentheses, spaces and newlines included.
            let len = (next() % 20) as usize;
            let comm: Vec<u8> = (0..len)
                .map(|_| match next() % 6 {
                    0 => b')',
                    1 => b'(',
                    2 => b' ',
                    3 => b'\n',
                    _ => (next() % 255 + 1) as u8,
                })
                .collect();
            let full = line(&comm, TAIL);
            let s = parse_stat(&full).unwrap();
            assert_eq!((s.pid, s.comm, s.state, s.ppid), (4242, &comm[..], b'S', 1));
            assert_eq!((s.processor, s.blkio_ticks), (Some(3), Some(9)));
            // Every prefix and a mutated byte: an answer or an error, never a panic.
            let cut = (next() as usize) % (full.len() + 1);
            let _ = parse_stat(&full[..cut]);
            let mut bent = full.clone();
            let at = (next() as usize) % bent.len();
            bent[at] = (next() % 256) as u8;
            let _ = parse_stat(&bent);
        }
    }

    #[test]
    fn numbers_are_plain_decimals() {
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        for bad in [&b""[..], b"18446744073709551616", b"+5", b"-5", b"5 ", b"0x10"] {
            assert_eq!(parse_u64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
