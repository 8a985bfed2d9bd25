//! Power-of-two histograms (DTrace's `quantize()`): what querystat's kernel programs keep and
//! what `load` counts its latencies in, with their text in DTrace's layout.
//!
//! ```
//! use measure::hist::Log2Hist;
//!
//! let mut h = Log2Hist::default();
//! h.add(40);
//! h.add(50);
//! assert_eq!(h.total(), 2);
//! assert_eq!(serde_json::to_string(&h).unwrap(), r#"[{"low_us":32,"count":2}]"#);
//! ```

use serde::de::Error as _;
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Number of slots: slot 0 holds the value 0, slot `i > 0` holds `[2^(i-1), 2^i)`.
pub const SLOTS: usize = 64;

/// Bar width of the text layout.
const BAR: u64 = 40;

/// A log2 histogram of microseconds, as the kernel keeps it. Serialized as the non-empty
/// buckets, `[{"low_us": 32, "count": 170}, ...]`, each bucket covering `[low_us, 2 × low_us)`
/// (`low_us` 0 covers exactly 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Log2Hist {
    counts: [u64; SLOTS],
}

impl Default for Log2Hist {
    fn default() -> Self {
        Log2Hist { counts: [0; SLOTS] }
    }
}

/// The slot a value falls in.
pub fn slot_of(value: u64) -> usize {
    (u64::BITS - value.leading_zeros()) as usize
}

/// The lowest value of a slot.
pub fn slot_low(slot: usize) -> u64 {
    if slot == 0 {
        0
    } else {
        1u64 << (slot - 1).min(63)
    }
}

impl Log2Hist {
    /// From per-slot counts (extra slots are ignored, missing ones are zero).
    pub fn from_slots(slots: &[u64]) -> Self {
        let mut h = Log2Hist::default();
        for (dst, src) in h.counts.iter_mut().zip(slots) {
            *dst = *src;
        }
        h
    }

    /// Counts one value.
    pub fn add(&mut self, value: u64) {
        self.counts[slot_of(value).min(SLOTS - 1)] += 1;
    }

    /// Adds another histogram's counts.
    pub fn merge(&mut self, other: &Log2Hist) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    /// The per-slot counts.
    pub fn slots(&self) -> &[u64; SLOTS] {
        &self.counts
    }

    /// The number of values counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The histogram in DTrace's layout: a header, then one row per slot from one below the
    /// lowest non-empty slot to one above the highest, each with a 40-character bar of `@`
    /// (its share of the total, rounded) and its count. Empty histogram: no lines.
    pub fn render(&self) -> String {
        let total = self.total();
        let (Some(first), Some(last)) =
            (self.counts.iter().position(|&c| c > 0), self.counts.iter().rposition(|&c| c > 0))
        else {
            return String::new();
        };
        let from = first.saturating_sub(1);
        let to = (last + 1).min(SLOTS - 1);
        let mut out = format!("{:>16}  ------------- Distribution ------------- count\n", "value");
        for slot in from..=to {
            let count = self.counts[slot];
            let width = ((u128::from(count) * u128::from(BAR) + u128::from(total) / 2)
                / u128::from(total)) as usize;
            let line = format!("{:>16} |{:<40} {}", slot_low(slot), "@".repeat(width), count);
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

impl Serialize for Log2Hist {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Bucket {
            low_us: u64,
            count: u64,
        }
        let buckets = self.counts.iter().enumerate().filter(|(_, &c)| c > 0);
        let mut seq = serializer.serialize_seq(Some(buckets.clone().count()))?;
        for (slot, &count) in buckets {
            seq.serialize_element(&Bucket { low_us: slot_low(slot), count })?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for Log2Hist {
    /// The buckets as [`Serialize`] writes them; a bucket whose `low_us` is not a slot's
    /// lower bound (0 or a power of two) is refused rather than moved.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Bucket {
            low_us: u64,
            count: u64,
        }
        let mut h = Log2Hist::default();
        for b in Vec::<Bucket>::deserialize(deserializer)? {
            let slot = slot_of(b.low_us);
            if slot >= SLOTS || slot_low(slot) != b.low_us {
                return Err(D::Error::custom(format!(
                    "{} is not the lower bound of a log2 bucket (0 or a power of two)",
                    b.low_us
                )));
            }
            h.counts[slot] = h.counts[slot].saturating_add(b.count);
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_powers_of_two() {
        assert_eq!(slot_of(0), 0);
        assert_eq!(slot_of(1), 1);
        assert_eq!(slot_of(2), 2);
        assert_eq!(slot_of(3), 2);
        assert_eq!(slot_of(4), 3);
        assert_eq!(slot_of(107), 7);
        assert_eq!(slot_low(7), 64);
        assert_eq!(slot_of(u64::MAX), 64);
        let mut h = Log2Hist::default();
        h.add(u64::MAX);
        assert_eq!(h.slots()[63], 1);
    }

    /// The DTrace querystat script's "all queries" histogram from its published example,
    /// rebuilt from its counts: the same text, byte for byte (less DTrace's trailing blanks).
    #[test]
    fn querystat_all_queries_golden() {
        let mut slots = [0u64; SLOTS];
        for (low, count) in [(32u64, 170u64), (64, 3728), (128, 533), (256, 26), (512, 18)]
            .into_iter()
            .chain([(1024, 2), (2048, 1), (8192, 1), (16384, 1)])
        {
            slots[slot_of(low)] = count;
        }
        let expected = "           value  ------------- Distribution ------------- count
              16 |                                         0
              32 |@@                                       170
              64 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@        3728
             128 |@@@@@                                    533
             256 |                                         26
             512 |                                         18
            1024 |                                         2
            2048 |                                         1
            4096 |                                         0
            8192 |                                         1
           16384 |                                         1
           32768 |                                         0
";
        assert_eq!(Log2Hist::from_slots(&slots).render(), expected);
    }

    /// The querystat example's query-cache-hit histogram: rounding of small shares (2, 1, 3 of
    /// 6).
    #[test]
    fn querystat_cache_hit_golden() {
        let mut h = Log2Hist::default();
        for v in [130, 200, 300, 600, 700, 1000] {
            h.add(v);
        }
        let expected = "           value  ------------- Distribution ------------- count
              64 |                                         0
             128 |@@@@@@@@@@@@@                            2
             256 |@@@@@@@                                  1
             512 |@@@@@@@@@@@@@@@@@@@@                     3
            1024 |                                         0
";
        assert_eq!(h.render(), expected);
    }

    #[test]
    fn zero_values_start_at_slot_zero_and_empty_renders_nothing() {
        assert_eq!(Log2Hist::default().render(), "");
        let mut h = Log2Hist::default();
        h.add(0);
        let text = h.render();
        let rows: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            rows,
            [
                "               0 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@ 1",
                "               1 |                                         0"
            ]
        );
    }

    #[test]
    fn serializes_non_empty_buckets() {
        let mut h = Log2Hist::default();
        h.add(40);
        h.add(50);
        h.add(3);
        assert_eq!(
            serde_json::to_string(&h).unwrap(),
            r#"[{"low_us":2,"count":1},{"low_us":32,"count":2}]"#
        );
    }

    #[test]
    fn reads_back_what_it_writes_and_refuses_odd_bounds() {
        let mut h = Log2Hist::default();
        for v in [0, 1, 3, 40, 50, 1 << 40, u64::MAX] {
            h.add(v);
        }
        let text = serde_json::to_string(&h).unwrap();
        assert_eq!(serde_json::from_str::<Log2Hist>(&text).unwrap(), h);
        assert_eq!(serde_json::from_str::<Log2Hist>("[]").unwrap(), Log2Hist::default());
        assert!(serde_json::from_str::<Log2Hist>(r#"[{"low_us":3,"count":1}]"#).is_err());
        assert!(serde_json::from_str::<Log2Hist>(r#"[{"low_us":2}]"#).is_err());
    }

    /// Any bytes: an error or a histogram that writes back to what it read, never a panic.
    #[test]
    fn arbitrary_json_never_panics() {
        let mut rng = crate::rng::SplitMix64::new(26);
        let pieces = [
            "[",
            "]",
            "{",
            "}",
            ",",
            ":",
            "\"low_us\"",
            "\"count\"",
            "0",
            "1",
            "2",
            "4",
            "18446744073709551615",
            "-1",
            "1e3",
            "null",
            "\"x\"",
        ];
        for _ in 0..5000 {
            let n = rng.below(12) as usize;
            let text: String =
                (0..n).map(|_| pieces[rng.below(pieces.len() as u64) as usize]).collect();
            if let Ok(h) = serde_json::from_str::<Log2Hist>(&text) {
                let again = serde_json::to_string(&h).unwrap();
                assert_eq!(serde_json::from_str::<Log2Hist>(&again).unwrap(), h, "{text}");
            }
        }
    }
}
