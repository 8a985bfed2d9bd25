//! Operands the monitors share: intervals, counts and process IDs, checked the same way
//! everywhere so that every command rejects a bad one with the same words.

use std::time::Duration;

use crate::UsageError;

/// Parses an interval in seconds: a positive decimal (`5`, `0.1`); at least 1 ms.
pub fn parse_interval(text: &str) -> Result<Duration, UsageError> {
    let bad = |reason: &str| UsageError::BadInterval { text: text.into(), reason: reason.into() };
    let seconds: f64 = text.trim().parse().map_err(|_| bad("not a number of seconds"))?;
    if !seconds.is_finite() {
        return Err(bad("not a number of seconds"));
    }
    if seconds <= 0.0 {
        return Err(bad("must be greater than 0 seconds"));
    }
    if seconds < 0.001 {
        return Err(bad("must be at least 0.001 seconds"));
    }
    Duration::try_from_secs_f64(seconds).map_err(|_| bad("too long"))
}

/// Parses a count (samples, pages, loops, workers): a whole number from 1. The message says
/// what was wrong with the text (negative, zero, too large, not a number).
pub fn parse_count(text: &str) -> Result<u64, UsageError> {
    let t = text.trim();
    let bad = |reason: String| UsageError::BadCount { text: text.into(), reason };
    if t.starts_with('-') {
        return Err(bad(format!("{t:?} is negative; give a whole number of at least 1")));
    }
    match t.parse::<u64>() {
        Ok(0) => Err(bad("0 is not allowed; give a whole number of at least 1".into())),
        Ok(n) => Ok(n),
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => {
            Err(bad(format!("{t:?} is too large (at most {})", u64::MAX)))
        }
        Err(_) => Err(bad(format!("{t:?} is not a whole number"))),
    }
}

/// [`parse_count`] for a count held in 32 bits (objects per thread, a rate in whole units).
pub fn parse_count_u32(text: &str) -> Result<u32, UsageError> {
    let n = parse_count(text)?;
    u32::try_from(n).map_err(|_| UsageError::BadCount {
        text: text.into(),
        reason: format!("{:?} is too large (at most {})", text.trim(), u32::MAX),
    })
}

/// Parses a process ID: a whole number from 1 (0 is the idle task, not a process).
pub fn parse_pid(text: &str) -> Result<u32, UsageError> {
    let bad = |reason: &str| UsageError::BadPid { text: text.into(), reason: reason.into() };
    let t = text.trim();
    if t.starts_with('-') {
        return Err(bad("process IDs are positive"));
    }
    let pid: u32 = t.parse().map_err(|_| bad("not a process ID"))?;
    // The kernel's PID_MAX_LIMIT is 2^22; i32 is what clock IDs and kill(2) can carry.
    if pid == 0 || pid > i32::MAX as u32 {
        return Err(bad("not a process ID"));
    }
    Ok(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("0.1").unwrap(), Duration::from_millis(100));
        for bad in ["0", "-1", "soon", "inf", "NaN", "0.0001", ""] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn counts_say_what_is_wrong() {
        assert_eq!(parse_count(" 42 ").unwrap(), 42);
        for (bad, why) in [
            ("0", "0 is not allowed"),
            ("-5", "\"-5\" is negative"),
            ("ten", "\"ten\" is not a whole number"),
            ("1.5", "is not a whole number"),
            ("", "is not a whole number"),
            ("99999999999999999999", "is too large"),
        ] {
            let err = parse_count(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn a_32_bit_count_names_its_own_limit() {
        assert_eq!(parse_count_u32("4294967295").unwrap(), u32::MAX);
        let err = parse_count_u32("4294967296").unwrap_err().to_string();
        assert!(err.contains("\"4294967296\" is too large (at most 4294967295)"), "{err}");
        assert!(parse_count_u32("0").unwrap_err().to_string().contains("0 is not allowed"));
    }

    #[test]
    fn pids() {
        assert_eq!(parse_pid("42").unwrap(), 42);
        for bad in ["0", "-5", "x", "1.5", "99999999999", ""] {
            assert!(parse_pid(bad).is_err(), "{bad}");
        }
    }
}
