//! The one exit-code rule: every error type of the workspace says whether the user can fix it
//! ([`Usage`]); at a command's boundary its error becomes a [`Classified`], and the binary maps
//! that to exit status 2 (usage) or 1 (runtime) without knowing any crate's error type.

use std::error::Error as StdError;
use std::fmt;

use crate::UsageError;

/// Whether an error is the command line's fault (exit status 2) or the system's (1).
pub trait Usage: StdError + Send + Sync + 'static {
    fn is_usage(&self) -> bool;
}

/// An error whose class is decided: what a command returns and `main` maps to an exit code.
/// It displays as the error it carries.
#[derive(Debug)]
pub struct Classified {
    usage: bool,
    error: Box<dyn StdError + Send + Sync + 'static>,
}

impl Classified {
    /// A usage error from a message that names the fix.
    pub fn usage(message: impl Into<String>) -> Self {
        Self { usage: true, error: Box::new(UsageError::Message(message.into())) }
    }

    /// A runtime failure (the system refused, a server went away).
    pub fn runtime(error: impl Into<Box<dyn StdError + Send + Sync + 'static>>) -> Self {
        Self { usage: false, error: error.into() }
    }

    pub fn is_usage(&self) -> bool {
        self.usage
    }

    /// Ends the command quietly with another program's exit status ([`ExitWith`]).
    pub fn exit_with(status: u8) -> Self {
        Self { usage: false, error: Box::new(ExitWith(status)) }
    }

    /// The exit status to pass on, when this is [`ExitWith`]: `main` exits with it and prints
    /// nothing (the program spoke for itself).
    pub fn passed_on_status(&self) -> Option<u8> {
        self.error.downcast_ref::<ExitWith>().map(|e| e.0)
    }

    /// The same error with context in front of its message ("reading X: …"); the error's
    /// causes follow it as anyhow's `{:#}` prints them ("reading X: cause: its cause").
    pub fn context(self, what: impl fmt::Display) -> Self {
        let message = format!("{what}: {}", one_line(self.error.as_ref()));
        Self { usage: self.usage, error: message.into() }
    }
}

/// An error and its causes on one line, "error: cause: its cause". A cause the text already
/// says is not said again: many errors put their source in their own message as well as
/// returning it from `source()` ("cannot read X: No such file or directory" twice otherwise).
pub fn one_line(error: &(dyn StdError + 'static)) -> String {
    let mut line = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        let said = c.to_string();
        if !line.contains(&said) {
            line.push_str(&format!(": {said}"));
        }
        cause = c.source();
    }
    line
}

/// A command that ran another program and passes its exit status on (`cpu util -- CMD` exits
/// as CMD did, like time(1)): not a failure to describe, a status to exit with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the command exited with status {0}")]
pub struct ExitWith(pub u8);

impl Usage for ExitWith {
    fn is_usage(&self) -> bool {
        false
    }
}

impl fmt::Display for Classified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl StdError for Classified {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.error.source()
    }
}

impl<E: Usage> From<E> for Classified {
    fn from(error: E) -> Self {
        Self { usage: error.is_usage(), error: Box::new(error) }
    }
}

impl Usage for UsageError {
    fn is_usage(&self) -> bool {
        true
    }
}

impl Usage for crate::Error {
    fn is_usage(&self) -> bool {
        crate::Error::is_usage(self)
    }
}

impl Usage for crate::ParseError {
    fn is_usage(&self) -> bool {
        false
    }
}

impl Usage for std::io::Error {
    fn is_usage(&self) -> bool {
        false
    }
}

impl Usage for serde_json::Error {
    fn is_usage(&self) -> bool {
        false
    }
}

impl Usage for std::fmt::Error {
    fn is_usage(&self) -> bool {
        false
    }
}

/// Exit status for any error chain: 2 when a cause is a usage error, else 1.
pub fn exit_code<'a>(mut chain: impl Iterator<Item = &'a (dyn StdError + 'static)>) -> u8 {
    let usage = chain.any(|cause| {
        cause.downcast_ref::<Classified>().is_some_and(Classified::is_usage)
            || cause.is::<UsageError>()
    });
    if usage {
        2
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("bad {0}")]
    struct Demo(bool);

    impl Usage for Demo {
        fn is_usage(&self) -> bool {
            self.0
        }
    }

    fn code(e: &Classified) -> u8 {
        exit_code(std::iter::successors(Some(e as &(dyn StdError + 'static)), |c| (*c).source()))
    }

    #[test]
    fn classes_follow_the_error_and_survive_context() {
        let usage: Classified = Demo(true).into();
        let runtime: Classified = Demo(false).into();
        assert_eq!(code(&usage), 2);
        assert_eq!(code(&runtime), 1);
        assert_eq!(code(&usage.context("reading X")), 2);
        let with_context = runtime.context("reading X");
        assert_eq!(with_context.to_string(), "reading X: bad false");
        assert_eq!(code(&with_context), 1);
        assert_eq!(code(&Classified::usage("give a size")), 2);
        assert_eq!(Classified::exit_with(7).passed_on_status(), Some(7));
        assert_eq!(Classified::usage("x").passed_on_status(), None);
    }

    /// Says its source in its message and returns it too, as thiserror does for a `source`
    /// field written into the format string.
    #[derive(Debug, thiserror::Error)]
    #[error("cannot read {path}: {source}")]
    struct Read {
        path: &'static str,
        source: std::io::Error,
    }

    /// Returns its source without saying it.
    #[derive(Debug, thiserror::Error)]
    #[error("opening the store")]
    struct Open(#[source] std::io::Error);

    #[test]
    fn one_line_says_each_cause_once() {
        let gone = || std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let read = Read { path: "x.lz4", source: gone() };
        assert_eq!(one_line(&read), "cannot read x.lz4: no such file");
        assert_eq!(one_line(&Open(gone())), "opening the store: no such file");
        let runtime = Classified::runtime(Read { path: "x.lz4", source: gone() });
        assert_eq!(one_line(&runtime), "cannot read x.lz4: no such file");
        assert_eq!(
            runtime.context("compress").to_string(),
            "compress: cannot read x.lz4: no such file"
        );
        assert_eq!(
            Classified::runtime(Open(gone())).context("results").to_string(),
            "results: opening the store: no such file"
        );
    }
}
