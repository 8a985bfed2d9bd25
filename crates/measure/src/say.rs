//! The one stderr writer: notes, warnings and errors for the user.
//!
//! Every line platscope writes to stderr goes through here, so a closed or broken stderr
//! (`platscope … 2>&1 | head -c1`, `2>&-`, a full log disk) never panics and never turns a clean
//! exit code into 101, as `eprintln!` would.
//!
//! ```
//! measure::say!("io pattern: {} file systems", 2);
//! measure::say::line(format_args!("a note"));
//! ```

use std::fmt;
use std::io::Write;

/// Writes one line to stderr; a write that fails is dropped (stderr is for people, and nothing
/// better can be done with an error about writing an error).
pub fn line(text: fmt::Arguments<'_>) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_fmt(text).and_then(|()| err.write_all(b"\n"));
}

/// `eprintln!` that never panics: formats like `format!` and writes one line with
/// [`say::line`](crate::say::line()).
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::say::line(::std::format_args!($($arg)*))
    };
}
