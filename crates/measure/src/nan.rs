//! Reading back figures that were not a number: JSON has no NaN, so `serde_json` writes a
//! NaN `f64` as `null`; a field that can hold one reads `null` back as NaN with
//! `#[serde(deserialize_with = "measure::nan::f64_or_null")]`.
//!
//! ```
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct Cost {
//!     #[serde(deserialize_with = "measure::nan::f64_or_null")]
//!     per_tx: f64,
//! }
//! let text = serde_json::to_string(&Cost { per_tx: f64::NAN }).unwrap();
//! assert_eq!(text, r#"{"per_tx":null}"#);
//! assert!(serde_json::from_str::<Cost>(&text).unwrap().per_tx.is_nan());
//! ```

use serde::{Deserialize, Deserializer};

/// An `f64`, or NaN for `null`.
pub fn f64_or_null<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

#[cfg(test)]
mod tests {
    #[derive(Debug, serde::Serialize, serde::Deserialize)]
    struct Figure {
        #[serde(deserialize_with = "super::f64_or_null")]
        v: f64,
    }

    #[test]
    fn numbers_stay_and_null_is_nan() {
        for v in [0.0, -1.5, 1e300, f64::MIN_POSITIVE] {
            let text = serde_json::to_string(&Figure { v }).unwrap();
            assert_eq!(serde_json::from_str::<Figure>(&text).unwrap().v, v);
        }
        assert!(serde_json::from_str::<Figure>(r#"{"v":null}"#).unwrap().v.is_nan());
        assert!(serde_json::from_str::<Figure>(r#"{"v":"x"}"#).is_err());
        assert!(serde_json::from_str::<Figure>(r#"{}"#).is_err());
    }
}
