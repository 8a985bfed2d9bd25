//! Fuzz-style property tests of the parsers of bytes from outside the process: one runner and
//! the generators every target shares (arbitrary bytes, arbitrary text, and *mutated valid
//! inputs* — a real frame, file or config with bytes flipped, set, inserted, deleted, a
//! 32-bit field overwritten with an edge value, or a cut — since random bytes rarely get past a
//! magic number or a first line).
//!
//! Each target runs the same generator twice: a pure-tier test with [`PURE`] cases (a few
//! seconds in a debug build) and a live-tier test (`#[test_tier::live(…)]`, run with
//! `cargo test -- --ignored`) with [`LIVE`] cases. A failure is shrunk by proptest to a small
//! input and printed; a crash found is fixed in the parser and kept as a plain regression test.
//!
//! ```
//! use test_support::fuzz::{self, mutated};
//! fuzz::check(200, mutated(vec![b"0-3,8".to_vec()]), |bytes| {
//!     let _ = std::str::from_utf8(&bytes); // the parser under test; it must not panic
//!     Ok(())
//! });
//! ```

pub use proptest;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// Cases per target in the pure tier (plain `cargo test`).
pub const PURE: u32 = 2_000;
/// Cases per target in the live tier: the same generators, 25 times longer.
pub const LIVE: u32 = 50_000;

/// Runs `test` on `cases` inputs from `strategy`; on a failure (an `Err` or a panic) shrinks the
/// input and panics with it. Up to [`PURE`] cases the inputs are the same on every run; more
/// are drawn anew each time.
pub fn check<S: Strategy>(
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    let config = Config {
        cases,
        failure_persistence: None,
        // Shrinking a slow target must not take longer than the run.
        max_shrink_iters: 2_000,
        ..Config::default()
    };
    // The pure tier replays the same inputs on every run (a plain `cargo test` that passed
    // passes again); the live tier draws new ones each time, to find what the pure tier has not.
    let mut runner = if cases > PURE {
        TestRunner::new(config)
    } else {
        let rng = proptest::test_runner::TestRng::deterministic_rng(config.rng_algorithm);
        TestRunner::new_with_rng(config, rng)
    };
    if let Err(e) = runner.run(&strategy, test) {
        panic!("{e}");
    }
}

/// A scratch directory for targets that write a file per case, on tmpfs when there is one:
/// on ext4, truncating and rewriting a file forces its blocks out at close (`auto_da_alloc`),
/// and 50 000 such writes spent a third of a live-tier run waiting on the disk.
pub fn scratch_dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::tempdir_in(shm) {
            return dir;
        }
    }
    tempfile::tempdir()
        .unwrap_or_else(|e| panic!("a scratch directory (not in /dev/shm, nor in $TMPDIR): {e}"))
}

/// One edit of a valid input.
#[derive(Debug, Clone)]
pub enum Edit {
    /// Flips one bit of the byte at the index.
    Flip(Index, u8),
    /// Sets the byte at the index.
    Set(Index, u8),
    /// Inserts a byte before the index.
    Insert(Index, u8),
    /// Deletes the byte at the index.
    Delete(Index),
    /// Overwrites 4 bytes (little-endian) at the index with an edge value: sizes and counts.
    Word(Index, u32),
    /// Repeats a short run of bytes at the index (a line, a header, a block size field).
    Repeat(Index, u8),
    /// Cuts the input at the index.
    Truncate(Index),
}

fn edge_word() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0u32),
        Just(1),
        Just(0x7FFF_FFFF),
        Just(0x8000_0000),
        Just(0xFFFF_FFFF),
        Just(0x0040_0000),
        Just(0x0040_0001),
        any::<u32>(),
    ]
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<Index>(), 0u8..8).prop_map(|(i, b)| Edit::Flip(i, b)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        (any::<Index>(), interesting_byte()).prop_map(|(i, b)| Edit::Insert(i, b)),
        any::<Index>().prop_map(Edit::Delete),
        (any::<Index>(), edge_word()).prop_map(|(i, w)| Edit::Word(i, w)),
        (any::<Index>(), 1u8..64).prop_map(|(i, n)| Edit::Repeat(i, n)),
        any::<Index>().prop_map(Edit::Truncate),
    ]
}

/// Bytes that mean something to text parsers (separators, signs, digits) plus any byte.
fn interesting_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        proptest::sample::select(b"\n\r\t :,-+.0129#\"'{}[]=\x00\xff".to_vec()),
        any::<u8>(),
    ]
}

/// Applies the edits, in order, to `bytes`.
pub fn apply(mut bytes: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let n = bytes.len();
        match *e {
            Edit::Insert(i, b) => bytes.insert(i.index(n + 1), b),
            _ if n == 0 => {}
            Edit::Flip(i, bit) => bytes[i.index(n)] ^= 1 << (bit % 8),
            Edit::Set(i, b) => bytes[i.index(n)] = b,
            Edit::Delete(i) => {
                bytes.remove(i.index(n));
            }
            Edit::Word(i, w) => {
                let at = i.index(n);
                for (k, b) in w.to_le_bytes().into_iter().enumerate() {
                    if let Some(x) = bytes.get_mut(at + k) {
                        *x = b;
                    }
                }
            }
            Edit::Repeat(i, len) => {
                let at = i.index(n);
                let end = (at + usize::from(len)).min(n);
                let run = bytes[at..end].to_vec();
                bytes.splice(at..at, run);
            }
            Edit::Truncate(i) => bytes.truncate(i.index(n)),
        }
    }
    bytes
}

/// One of `seeds` with 1 to 8 edits.
pub fn mutated(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    assert!(!seeds.is_empty(), "mutated() needs at least one valid input");
    (proptest::sample::select(seeds), proptest::collection::vec(edit(), 1..=8))
        .prop_map(|(seed, edits)| apply(seed, &edits))
}

/// Arbitrary bytes, up to `max` long.
pub fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..=max)
}

/// Arbitrary text made mostly of what text parsers split on (digits, separators, newlines,
/// letters, signs), up to `max` characters, plus any character now and then.
pub fn text(max: usize) -> impl Strategy<Value = String> {
    let ch = prop_oneof![
        8 => proptest::sample::select(
            "0123456789 \n\t:,-+.#abcxyzABZ_/\"'{}[]=\u{0}\u{ff}é".chars().collect::<Vec<_>>()
        ),
        1 => any::<char>(),
    ];
    proptest::collection::vec(ch, 0..=max).prop_map(|v| v.into_iter().collect())
}

/// Either arbitrary bytes or a mutated seed (most cases mutated: they get further in).
pub fn bytes_or_mutated(seeds: Vec<Vec<u8>>, max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![1 => bytes(max), 3 => mutated(seeds)]
}

/// A mutated seed as text (lossily: invalid UTF-8 becomes U+FFFD), or arbitrary text: for
/// parsers that take `&str`.
pub fn text_or_mutated(seeds: Vec<String>, max: usize) -> impl Strategy<Value = String> {
    let seeds = seeds.into_iter().map(String::into_bytes).collect();
    prop_oneof![
        1 => text(max),
        3 => mutated(seeds).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_stay_in_bounds_and_change_the_seed() {
        let seed = b"GET / HTTP/1.1\r\n\r\n".to_vec();
        let changed = std::cell::Cell::new(0u32);
        check(500, proptest::collection::vec(edit(), 1..=8), |edits| {
            let out = apply(seed.clone(), &edits);
            prop_assert!(out.len() <= seed.len() + 8 * 64);
            changed.set(changed.get() + u32::from(out != seed));
            Ok(())
        });
        assert!(changed.get() > 400, "most edits change the input: {}", changed.get());
        check(200, proptest::collection::vec(edit(), 1..=8), |edits| {
            let out = apply(Vec::new(), &edits);
            prop_assert!(out.len() <= 8 * 64);
            Ok(())
        });
    }
}
