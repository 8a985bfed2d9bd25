//! The built-in workload's worker as a program of its own, for allocbench's tests (platscope
//! runs the same code as its hidden `alloc-worker` subcommand).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = allocbench::workload::BuiltinParams::from_args(&args).and_then(|p| {
        allocbench::workload::serve(&p, &mut std::io::stdin().lock(), &mut std::io::stdout().lock())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("allocbench-worker: {e}");
            ExitCode::from(if e.is_usage() { 2 } else { 1 })
        }
    }
}
