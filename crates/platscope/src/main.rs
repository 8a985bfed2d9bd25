//! platscope: one binary, thin. Parses the command line, calls the domain crates, picks the
//! output, and turns errors into one line and an exit code (2: usage, 1: runtime).

mod cli;
mod commands;

use std::io::Write as _;
use std::process::ExitCode;

use clap::FromArgMatches;
use cli::{Cli, Command};
use measure::Classified;
use platscope::registry::REGISTRY;

fn main() -> ExitCode {
    // Busybox-style: invoked through a link named like an original tool, behave as that tool.
    let mut argv = std::env::args_os();
    let argv0 = argv.next().unwrap_or_default();
    if let Some(name) = commands::compat::invoked_as(&argv0) {
        let args: Vec<std::ffi::OsString> = argv.collect();
        return finish_as(name, commands::compat::run(name, &args));
    }
    let args: Vec<std::ffi::OsString> = argv.collect();
    if let Some(format) = commands::version::asks_verbose_version(&args) {
        return finish(commands::version::run(true, format));
    }
    let matches = match cli::command().try_get_matches_from(std::iter::once(argv0).chain(args)) {
        Ok(matches) => matches,
        Err(err) => return usage_error(&err),
    };
    // A settings journal an A/B left behind (a crash, `kill -9`): said by every command but
    // `ab`, which restores it.
    if matches.subcommand_name() != Some("ab") {
        if let Some(line) = ab::journal::pending_notice() {
            measure::say!("platscope: {line}");
        }
    }
    if let Some((entry, leaf)) = REGISTRY.find(&matches) {
        return finish(entry.run(leaf, &cli::globals(&matches)));
    }
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(err) => return usage_error(&err),
    };
    let Some(command) = &cli.command else {
        return usage_error(&cli::command().error(
            clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand,
            "a command is required",
        ));
    };
    let result = match command {
        Command::Compat { name, args } => {
            // clap takes `--json` anywhere as the global flag; hand it back to the tool.
            let mut args = args.clone();
            if cli.json {
                args.insert(0, "--json".into());
            }
            commands::compat::run(name, &args)
        }
        Command::Completions { shell } => commands::shell::completions(*shell),
        Command::Man { out } => commands::shell::man(out),
        Command::Version { verbose } => {
            commands::version::run(*verbose, cli::globals(&matches).format)
        }
    };
    finish(result)
}

/// Exit status and the one-line error for a command's outcome.
fn finish(result: Result<(), Classified>) -> ExitCode {
    finish_as("platscope", result)
}

/// As [`finish`], the error line prefixed with `program` (a compat tool's own name): 2 when
/// the user can fix the command line, 1 when the system failed (`measure::Usage` decides).
fn finish_as(program: &str, result: Result<(), Classified>) -> ExitCode {
    let Err(err) = result else { return ExitCode::SUCCESS };
    // A wrapped command's own status, passed on quietly (it spoke for itself).
    if let Some(status) = err.passed_on_status() {
        return ExitCode::from(status);
    }
    // The error and its causes on one line; a closed stderr (`2>&1 | head`) must not turn
    // the exit code into a panic's.
    let line = measure::usage::one_line(&err);
    // A connection error may quote the URL it was given: its password never reaches the
    // terminal or a log.
    let line = results::redact(&line);
    measure::say!("{program}: {line}");
    ExitCode::from(if err.is_usage() { 2 } else { 1 })
}

/// Help and version go to stdout as clap writes them; a usage error becomes one line on stderr
/// and exit code 2.
fn usage_error(err: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(err.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = err.print();
        return ExitCode::SUCCESS;
    }
    // `platscope` or `platscope mem` alone: the list of subcommands is the clear answer.
    if err.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let _ = write!(std::io::stderr(), "{}", err.render());
        return ExitCode::from(2);
    }
    let rendered = err.render().to_string();
    let message: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .take_while(|line| !line.starts_with("Usage:") && !line.starts_with("For more information"))
        .filter(|line| !line.is_empty())
        .collect();
    let message = message.join(" ");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    measure::say!("platscope: {message} (see --help)");
    ExitCode::from(2)
}
