//! The kernel's list format for CPU and node ids (`0-3,8,10-11`), as found in sysfs `cpulist`
//! files and accepted by numactl.

use std::fmt::Write as _;

/// Why a list could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListError {
    #[error("empty list")]
    Empty,
    #[error("empty element in list {0:?} (stray comma?)")]
    EmptyElement(String),
    #[error("{0:?} is not a number")]
    NotANumber(String),
    #[error("range {0:?} runs backwards (write low-high)")]
    Backwards(String),
    #[error("id {0} is too large")]
    TooLarge(String),
}

/// Largest id a list may name; far above any real CPU count, low enough that a typo such as
/// `0-4000000000` is an error rather than a multi-gigabyte allocation.
pub const MAX_ID: u32 = 1 << 20;

/// Parses `0-3,8` into sorted, de-duplicated ids. Whitespace around elements is ignored; an
/// empty string (after trimming) is [`ListError::Empty`].
pub fn parse(text: &str) -> Result<Vec<u32>, ListError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(ListError::Empty);
    }
    let mut ids = Vec::new();
    for element in text.split(',') {
        let element = element.trim();
        if element.is_empty() {
            return Err(ListError::EmptyElement(text.to_string()));
        }
        match element.split_once('-') {
            Some((low, high)) => {
                let (low, high) = (parse_id(low)?, parse_id(high)?);
                if low > high {
                    return Err(ListError::Backwards(element.to_string()));
                }
                ids.extend(low..=high);
            }
            None => ids.push(parse_id(element)?),
        }
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

fn parse_id(text: &str) -> Result<u32, ListError> {
    let text = text.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ListError::NotANumber(text.to_string()));
    }
    match text.parse::<u32>() {
        Ok(id) if id <= MAX_ID => Ok(id),
        _ => Err(ListError::TooLarge(text.to_string())),
    }
}

/// Formats ids as the kernel does: consecutive runs collapse into ranges (`0-3,8`).
/// The input need not be sorted.
pub fn format(ids: &[u32]) -> String {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            let _ = write!(out, "{start}");
        } else {
            let _ = write!(out, "{start}-{end}");
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_and_singles() {
        assert_eq!(parse("0-3,8"), Ok(vec![0, 1, 2, 3, 8]));
        assert_eq!(parse(" 5 , 1-2 ,2\n"), Ok(vec![1, 2, 5]));
        assert_eq!(parse("7"), Ok(vec![7]));
        assert_eq!(parse("4-4"), Ok(vec![4]));
    }

    #[test]
    fn rejects_malformed_lists() {
        assert_eq!(parse(""), Err(ListError::Empty));
        assert_eq!(parse("  "), Err(ListError::Empty));
        assert!(matches!(parse("3-1"), Err(ListError::Backwards(_))));
        assert!(matches!(parse("a"), Err(ListError::NotANumber(_))));
        assert!(matches!(parse("1,,2"), Err(ListError::EmptyElement(_))));
        assert!(matches!(parse("1,"), Err(ListError::EmptyElement(_))));
        assert!(matches!(parse("-1"), Err(ListError::NotANumber(_))));
        assert!(matches!(parse("1-"), Err(ListError::NotANumber(_))));
        assert!(matches!(parse("+3"), Err(ListError::NotANumber(_))));
        assert!(matches!(parse("0-4000000000"), Err(ListError::TooLarge(_))));
        assert!(matches!(parse("99999999999999999999"), Err(ListError::TooLarge(_))));
    }

    #[test]
    fn formats_runs_as_ranges() {
        assert_eq!(format(&[0, 1, 2, 3, 8]), "0-3,8");
        assert_eq!(format(&[8, 3, 2, 1, 0, 10, 11]), "0-3,8,10-11");
        assert_eq!(format(&[5]), "5");
        assert_eq!(format(&[]), "");
    }

    #[test]
    fn format_then_parse_round_trips() {
        for ids in [vec![0, 2, 4, 5, 6, 9], vec![1], (0..64).collect::<Vec<_>>()] {
            assert_eq!(parse(&format(&ids)), Ok(ids));
        }
    }
}
