//! The original tools' command lines (`nicstat`, `pstime`, …), parsed as the originals did:
//! `-h` prints help, and a bad argument is one line naming how to get help.

use std::ffi::OsString;

use measure::Classified;

/// Parses `args` (after `argv[0]`) as tool `name`'s command line. `Ok(None)`: help or a
/// version was asked for and has been printed.
pub fn parse<P: clap::Parser>(name: &str, args: &[OsString]) -> Result<Option<P>, Classified> {
    let argv = std::iter::once(OsString::from(name)).chain(args.iter().cloned());
    match P::try_parse_from(argv) {
        Ok(parsed) => Ok(Some(parsed)),
        Err(err) => {
            use clap::error::ErrorKind;
            if matches!(err.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                err.print()?;
                return Ok(None);
            }
            Err(Classified::usage(clap_one_line(&err, &format!("{name} -h"))))
        }
    }
}

/// A compat tool's clap error as one line, without the usage block; `help` is how to get help
/// (`pstime -h`).
pub fn clap_one_line(err: &clap::Error, help: &str) -> String {
    let rendered = err.render().to_string();
    let lines: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect();
    let text = lines.join(" ");
    format!("{} (see {help})", text.strip_prefix("error: ").unwrap_or(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, clap::Parser)]
    struct Demo {
        #[arg(value_parser = clap::value_parser!(u64).range(1..))]
        count: u64,
    }

    #[test]
    fn a_bad_argument_is_one_line_naming_help() {
        let err = parse::<Demo>("demo", &["0".into()]).err().map(|e| e.to_string());
        let line = err.unwrap_or_default();
        assert!(!line.contains('\n'), "{line}");
        assert!(line.contains("0") && line.ends_with("(see demo -h)"), "{line}");
        assert!(parse::<Demo>("demo", &["3".into()]).is_ok_and(|d| d.is_some_and(|d| d.count == 3)));
    }
}
