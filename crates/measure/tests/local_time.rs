//! Local time through jiff is byte-identical to what the C library's `localtime_r` gives, in a
//! zone with summer time (Europe/Berlin, across both changes) : the `HH:MM:SS` of monitor lines
//! and the DTrace date of `io pattern`'s and `db querystat`'s headers. Its own test binary,
//! because it sets `TZ`.

use measure::time::{dtrace_date, Stamp};

const MONTHS: [&str; 12] =
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

fn libc_tm(epoch: i64) -> libc::tm {
    let t = libc::time_t::try_from(epoch).unwrap();
    // SAFETY: tm is plain data; all zeroes is valid and localtime_r overwrites it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are to live locals for the duration of the call.
    assert!(!unsafe { libc::localtime_r(&t, &mut tm) }.is_null());
    tm
}

#[test]
fn local_time_matches_the_c_library_across_summer_time() {
    let zone = "Europe/Berlin";
    assert!(
        std::path::Path::new("/usr/share/zoneinfo").join(zone).exists(),
        "this test needs the tzdata package (/usr/share/zoneinfo/{zone})"
    );
    // Before anything reads the zone (this is the only test of this binary).
    // (glibc's localtime_r reads TZ at its first call.)
    std::env::set_var("TZ", zone);
    // 2026-03-29 01:00 UTC and 2026-10-25 01:00 UTC: the clocks change in Berlin.
    let mut epochs: Vec<i64> = Vec::new();
    for change in [1_774_746_000_i64, 1_792_890_000] {
        epochs.extend((-3..=3).map(|d| change + d));
        epochs.extend((-2..=2).map(|h| change + h * 3600));
    }
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for _ in 0..5_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        epochs.push((x % 4_102_444_800) as i64); // 1970 to 2100
    }
    for epoch in epochs {
        let tm = libc_tm(epoch);
        let clock = format!("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec);
        assert_eq!(Stamp::local(epoch as f64, false).clock, clock, "{epoch}");
        assert_eq!(Stamp::local(epoch as f64 + 0.25, true).clock, format!("{clock}.250"));
        let date = format!(
            "{} {} {:02} {clock}",
            tm.tm_year + 1900,
            MONTHS[tm.tm_mon as usize],
            tm.tm_mday
        );
        assert_eq!(dtrace_date(epoch).unwrap(), date, "{epoch}");
    }
}
