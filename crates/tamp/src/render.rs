//! Text renderers.
use crate::RunResult;
/// One run as text.
pub fn run(r: &RunResult) -> String {
    format!("{r:?}\n")
}
