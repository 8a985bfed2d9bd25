//! The clocks CPU accounting is read with: the kernel's clock tick (`USER_HZ`, the unit of
//! `/proc/stat` and `/proc/PID/stat` times), `CLOCK_BOOTTIME` (the clock of process start times
//! and of BPF's `bpf_ktime_get_boot_ns`), and a process's CPU-time clock.

use std::io;

/// The unit of `/proc/stat` and `/proc/PID/stat` CPU times: `USER_HZ` ticks per second
/// (`sysconf(_SC_CLK_TCK)`, 100 on every Linux architecture in use). It is a reporting unit,
/// not the scheduler's tick (`CONFIG_HZ`, often 250 or 1000), which is what does the sampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockTicks {
    per_second: u64,
}

impl ClockTicks {
    /// A given rate (captured files are re-parsed with the rate of the machine they came from).
    pub fn new(per_second: u64) -> Self {
        Self { per_second: per_second.max(1) }
    }

    /// This system's rate; 100 if `sysconf` does not say.
    pub fn system() -> Self {
        // SAFETY: sysconf has no preconditions and only reads a configuration value.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        Self::new(u64::try_from(hz).ok().filter(|&h| h > 0).unwrap_or(100))
    }

    pub fn per_second(self) -> u64 {
        self.per_second
    }

    /// Nanoseconds in `ticks` (saturating).
    pub fn to_ns(self, ticks: u64) -> u64 {
        let ns_per_tick = 1_000_000_000 / self.per_second;
        ticks.saturating_mul(ns_per_tick)
    }

    /// Ticks in `ns`, rounded down as the kernel's `nsec_to_clock_t` does.
    pub fn from_ns(self, ns: u64) -> u64 {
        ns / (1_000_000_000 / self.per_second)
    }

    /// Seconds in `ticks`.
    pub fn to_secs(self, ticks: u64) -> f64 {
        ticks as f64 / self.per_second as f64
    }
}

fn clock_ns(clock: libc::clockid_t) -> io::Result<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a live local the kernel (or vDSO) writes one timespec into.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    Ok(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
}

/// `CLOCK_BOOTTIME` in ns: the clock of `/proc/PID/stat` start times and BPF's
/// `bpf_ktime_get_boot_ns()`. 0 if unreadable (never on Linux ≥ 2.6.39).
pub fn boottime_ns() -> u64 {
    clock_ns(libc::CLOCK_BOOTTIME).unwrap_or(0)
}

/// `CLOCK_MONOTONIC` in ns: the clock of BPF's `bpf_ktime_get_ns()`. 0 if unreadable.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC).unwrap_or(0)
}

/// `epoch` in the system's time zone (`TZ`, else `/etc/localtime`, else UTC); `None` outside
/// the years -9999 to 9999.
fn local(epoch: i64) -> Option<jiff::Zoned> {
    let at = jiff::Timestamp::from_second(epoch).ok()?;
    Some(at.to_zoned(jiff::tz::TimeZone::system()))
}

/// `CPUCLOCK_SCHED`, the scheduler's exact runtime, in the kernel's CPU-clock ID encoding.
const CPUCLOCK_SCHED: libc::clockid_t = 2;

/// The exact on-CPU time of process `pid`'s whole thread group, in ns: what
/// `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)` tells a process about itself, asked from outside
/// (the ID `clock_getcpuclockid(3)` makes). It counts threads that have exited and brings running
/// threads up to date, which `/proc/PID/task/*/schedstat` does not; the kernel allows it for any
/// process in the caller's PID namespace.
///
/// Errors: `EINVAL` when there is no such process (in this PID namespace).
pub fn process_cpu_ns(pid: u32) -> io::Result<u64> {
    let pid =
        libc::clockid_t::try_from(pid).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED) from the kernel's posix-timers.h.
    clock_ns(((!pid) << 3) | CPUCLOCK_SCHED)
}

/// The time printed on a line: `HH:MM:SS` (with milliseconds for sub-second intervals) for text,
/// seconds since the epoch for `-p`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    pub clock: String,
    pub epoch: String,
}

impl Stamp {
    /// Local time of `epoch_s`; `subsecond` adds milliseconds to both forms.
    pub fn local(epoch_s: f64, subsecond: bool) -> Self {
        let whole = epoch_s.floor();
        let millis = ((epoch_s - whole) * 1000.0).floor().clamp(0.0, 999.0) as u32;
        let (h, m, s) = local_hms(whole as i64).unwrap_or((0, 0, 0));
        if subsecond {
            Self {
                clock: format!("{h:02}:{m:02}:{s:02}.{millis:03}"),
                epoch: format!("{}.{millis:03}", whole as i64),
            }
        } else {
            Self { clock: format!("{h:02}:{m:02}:{s:02}"), epoch: format!("{}", whole as i64) }
        }
    }

    /// A fixed stamp (tests, replays).
    pub fn fixed(clock: &str, epoch: &str) -> Self {
        Self { clock: clock.into(), epoch: epoch.into() }
    }

    /// The width of the time column: the clock, at least 8 characters.
    pub fn width(&self) -> usize {
        self.clock.len().max(8)
    }
}

fn local_hms(epoch: i64) -> Option<(i8, i8, i8)> {
    local(epoch).map(|t| (t.hour(), t.minute(), t.second()))
}

/// `epoch` as local time in DTrace's `%Y` layout, "YYYY Mon DD HH:MM:SS" (as the headers of the
/// DTrace scripts `io pattern` and `db querystat` follow); `None` when it cannot be represented.
pub fn dtrace_date(epoch: i64) -> Option<String> {
    Some(local(epoch)?.strftime("%Y %b %d %H:%M:%S").to_string())
}

/// The current time as RFC 3339 UTC from the system clock (no time-zone database needed).
pub fn utc_now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc_rfc3339(secs)
}

/// `secs` since the epoch as RFC 3339 UTC, whole seconds (`2026-11-23T01:01:01Z`); times after
/// `9999-12-30T22:00:00Z` (jiff's latest instant) are given as that.
pub fn utc_rfc3339(secs: u64) -> String {
    let at = i64::try_from(secs)
        .ok()
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .unwrap_or(jiff::Timestamp::MAX);
    at.to_zoned(jiff::tz::TimeZone::UTC).strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_convert_both_ways() {
        let t = ClockTicks::new(100);
        assert_eq!(t.to_ns(3), 30_000_000);
        assert_eq!(t.from_ns(29_999_999), 2);
        assert_eq!(t.to_secs(250), 2.5);
    }

    #[test]
    fn own_process_clock_matches_the_self_clock() {
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        let outside = process_cpu_ns(std::process::id()).unwrap();
        let inside = clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID).unwrap();
        assert!(outside > 0 && outside <= inside, "{outside} {inside}");
    }

    /// The civil-date arithmetic `utc_rfc3339` used before jiff (days since 1970-01-01 in
    /// 400-year eras of the proleptic Gregorian calendar), kept as the oracle.
    fn rfc3339_by_hand(secs: u64) -> String {
        let (days, rem) = (secs / 86_400, secs % 86_400);
        let z = days as i64 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        format!(
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60
        )
    }

    #[test]
    fn rfc3339_is_byte_identical_to_the_hand_written_form() {
        // Day and year edges, then a pseudo-random walk over the years 1970 to 9999.
        let mut cases: Vec<u64> = vec![0, 59, 86_399, 86_400, 951_782_399, 4_107_542_400];
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            cases.push(x % 253_402_207_200);
        }
        for secs in cases {
            assert_eq!(utc_rfc3339(secs), rfc3339_by_hand(secs), "{secs}");
        }
        assert_eq!(utc_rfc3339(u64::MAX), "9999-12-30T22:00:00Z");
    }

    #[test]
    fn rfc3339_dates() {
        assert_eq!(utc_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_rfc3339(1_795_392_000 + 3661), "2026-11-23T01:01:01Z");
    }
}
