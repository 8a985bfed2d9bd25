//! Byte sizes in IEC units, for input (`64MiB`, `1G`) and output (`64.0 MiB`).

/// Why a size could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("empty size; write e.g. 64MiB, 1GiB or 4096")]
    Empty,
    #[error("size {0:?} is negative; sizes are counts of bytes")]
    Negative(String),
    #[error("size {0:?} is not a number followed by B, KiB, MiB, GiB or TiB")]
    Malformed(String),
    #[error("unknown unit {unit:?} in {input:?}; use B, KiB, MiB, GiB or TiB (K, M, G, T also mean KiB…TiB)")]
    UnknownUnit { input: String, unit: String },
    #[error(
        "size {0:?} uses a decimal unit; platscope sizes are binary: write KiB, MiB, GiB or TiB"
    )]
    DecimalUnit(String),
    #[error("size {0:?} must be greater than zero")]
    Zero(String),
    #[error("size {0:?} is too large to represent")]
    TooLarge(String),
}

/// Parses a byte size: a number (decimals allowed) and an optional binary unit.
/// `4096`, `4k`, `64MiB`, `1.5G`, `2 GiB`. Zero is rejected: no command wants an empty buffer.
impl measure::Usage for SizeError {
    /// A size is always the user's input.
    fn is_usage(&self) -> bool {
        true
    }
}

pub fn parse_bytes(text: &str) -> Result<u64, SizeError> {
    let input = text.trim();
    if input.is_empty() {
        return Err(SizeError::Empty);
    }
    if input.starts_with('-') {
        return Err(SizeError::Negative(input.to_string()));
    }
    let split = input.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(input.len());
    let (number, unit) = (&input[..split], input[split..].trim());
    if number.is_empty() || number.matches('.').count() > 1 || number.ends_with('.') {
        return Err(SizeError::Malformed(input.to_string()));
    }
    let shift = match unit {
        "" | "B" | "b" => 0,
        "K" | "k" | "KiB" | "kiB" | "Ki" => 10,
        "M" | "m" | "MiB" | "Mi" => 20,
        "G" | "g" | "GiB" | "Gi" => 30,
        "T" | "t" | "TiB" | "Ti" => 40,
        "KB" | "kB" | "kb" | "MB" | "mb" | "GB" | "gb" | "TB" | "tb" => {
            return Err(SizeError::DecimalUnit(input.to_string()))
        }
        _ => {
            return Err(SizeError::UnknownUnit { input: input.to_string(), unit: unit.to_string() })
        }
    };
    let bytes = match number.split_once('.') {
        None => {
            let whole: u64 = number.parse().map_err(|_| SizeError::TooLarge(input.to_string()))?;
            whole.checked_shl(shift).filter(|b| b >> shift == whole)
        }
        Some(_) => {
            let value: f64 = number.parse().map_err(|_| SizeError::Malformed(input.to_string()))?;
            let bytes = (value * (1u64 << shift) as f64).round();
            (bytes < u64::MAX as f64).then_some(bytes as u64)
        }
    }
    .ok_or_else(|| SizeError::TooLarge(input.to_string()))?;
    if bytes == 0 {
        return Err(SizeError::Zero(input.to_string()));
    }
    Ok(bytes)
}

/// Formats bytes with the largest binary unit that keeps the number ≥ 1: `512 B`, `64.0 MiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_binary_units() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("4k"), Ok(4096));
        assert_eq!(parse_bytes("64MiB"), Ok(64 << 20));
        assert_eq!(parse_bytes("2 GiB"), Ok(2 << 30));
        assert_eq!(parse_bytes("1.5G"), Ok(3 << 29));
        assert_eq!(parse_bytes("1T"), Ok(1 << 40));
        assert_eq!(parse_bytes("99999TiB"), Ok(99999 << 40));
    }

    #[test]
    fn rejects_bad_sizes() {
        assert_eq!(parse_bytes(""), Err(SizeError::Empty));
        assert!(matches!(parse_bytes("-1"), Err(SizeError::Negative(_))));
        assert!(matches!(parse_bytes("10QB"), Err(SizeError::UnknownUnit { .. })));
        assert!(matches!(parse_bytes("10MB"), Err(SizeError::DecimalUnit(_))));
        assert!(matches!(parse_bytes("0"), Err(SizeError::Zero(_))));
        assert!(matches!(parse_bytes("0.0001"), Err(SizeError::Zero(_))));
        assert!(matches!(parse_bytes("abc"), Err(SizeError::Malformed(_))));
        assert!(matches!(parse_bytes("1.2.3M"), Err(SizeError::Malformed(_))));
        assert!(matches!(parse_bytes("99999999TiB"), Err(SizeError::TooLarge(_))));
        assert!(matches!(parse_bytes("99999999999999999999999"), Err(SizeError::TooLarge(_))));
    }

    #[test]
    fn formats_with_binary_units() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(64 << 20), "64.0 MiB");
        assert_eq!(format_bytes(3 << 29), "1.5 GiB");
    }
}
