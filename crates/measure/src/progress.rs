//! The one place progress bars come from. They draw on stderr only when it is a terminal, so
//! pipes, files and CI logs stay clean; results never depend on them.
//!
//! - [`Steps`]: a multi-step run (`report`), each step weighted by how long it is expected to
//!   take, with the step's name, elapsed time and an estimate of what is left.
//! - [`counter`]: a loop over a known number of items (sweep sizes, thread counts, loops).
//! - [`hidden`]: for a library call inside a run that already shows a bar.
//!
//! Library loops take a `&ProgressBar`, set its length and advance it; the command that calls
//! them decides whether it draws.

use std::io::IsTerminal;
use std::time::Duration;

pub use indicatif::ProgressBar;
use indicatif::{ProgressDrawTarget, ProgressStyle};

/// Weight units per step weight: the bar counts in thousandths so fractional weights move it.
const SCALE: f64 = 1000.0;

fn visible() -> bool {
    std::io::stderr().is_terminal()
}

fn new_bar(len: u64, template: &str) -> ProgressBar {
    if !visible() {
        // Hidden, but still counting: callers and tests can read where it is.
        return ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden());
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.enable_steady_tick(Duration::from_millis(250));
    bar
}

/// Progress through named, weighted steps.
#[derive(Debug)]
pub struct Steps {
    bar: ProgressBar,
    names: Vec<String>,
    weights: Vec<f64>,
}

impl Steps {
    /// `steps`: (name, expected relative duration).
    pub fn new(steps: &[(&str, f64)]) -> Self {
        let total: f64 = steps.iter().map(|s| s.1).sum();
        let bar = new_bar(
            (total * SCALE) as u64,
            "[{prefix}] {msg} {wide_bar} {elapsed} elapsed, about {eta} left",
        );
        Self {
            bar,
            names: steps.iter().map(|s| s.0.to_string()).collect(),
            weights: steps.iter().map(|s| s.1).collect(),
        }
    }

    /// Step `index` (0-based) begins: the steps before it are done.
    pub fn begin(&self, index: usize) {
        let done: f64 = self.weights[..index.min(self.weights.len())].iter().sum();
        self.bar.set_position((done * SCALE) as u64);
        self.bar.set_prefix(format!("{}/{}", index + 1, self.names.len()));
        if let Some(name) = self.names.get(index) {
            self.bar.set_message(name.clone());
        }
    }

    /// The step called `name` begins (no-op for a name not in the list).
    pub fn begin_named(&self, name: &str) {
        if let Some(index) = self.names.iter().position(|n| n == name) {
            self.begin(index);
        }
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for Steps {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// A bar over `len` items of `what` (`sizes`, `loops`), hidden when stderr is not a terminal;
/// call `inc` per item and `finish_and_clear` at the end.
pub fn counter(len: u64, what: &str) -> ProgressBar {
    let bar = new_bar(len, "{msg} {wide_bar} {pos}/{len} {elapsed} elapsed, about {eta} left");
    bar.set_message(what.to_string());
    bar
}

/// A bar that never draws, for library calls made inside a larger run that has its own bar
/// (a `report` step): it still counts, so code that advances it needs no special case.
pub fn hidden() -> ProgressBar {
    ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
}

/// A bar over a fixed duration (a measurement that runs for a set time), advanced by the caller
/// in milliseconds.
pub fn timed(total: Duration, what: &str) -> ProgressBar {
    let bar =
        new_bar(total.as_millis() as u64, "{msg} {wide_bar} {elapsed} elapsed, about {eta} left");
    bar.set_message(what.to_string());
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_without_a_terminal_and_steps_advance() {
        // Test runs capture stderr: no terminal, nothing drawn, but positions still move.
        let steps = Steps::new(&[("a", 1.0), ("b", 3.0)]);
        steps.begin(1);
        assert_eq!(steps.bar.position(), 1000);
        assert_eq!(steps.bar.length(), Some(4000));
        steps.finish();
        let c = counter(5, "sizes");
        c.inc(2);
        assert_eq!(c.position(), 2);
    }
}
