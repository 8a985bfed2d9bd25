//! What a shell and `man` need, generated from the one command line (`cli::command()`): a
//! completion script per shell, and a man page for platscope and every subcommand. The .deb
//! is packaged from these (scripts/deb.sh).

use std::path::Path;

use measure::Classified;

/// Prints the completion script for `shell` on stdout.
pub fn completions(shell: clap_complete::Shell) -> Result<(), Classified> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut crate::cli::command(), "platscope", &mut script);
    let script = String::from_utf8(script).map_err(Classified::runtime)?;
    experiment::output::emit(&script).map_err(Classified::runtime)
}

/// Writes `platscope.1` and one page per visible subcommand (`platscope-mem-latency.1`, …)
/// into `out`, and says how many on stderr.
pub fn man(out: &Path) -> Result<(), Classified> {
    let failed = |e: std::io::Error| {
        Classified::runtime(e).context(format!("writing man pages to {}", out.display()))
    };
    std::fs::create_dir_all(out).map_err(failed)?;
    let mut written = 0;
    write_pages(crate::cli::command().disable_help_subcommand(true), out, &mut written)
        .map_err(failed)?;
    measure::say!("platscope: wrote {written} man pages to {}", out.display());
    Ok(())
}

/// The page of `cmd`, then those of its visible subcommands (their names are built from the
/// parents': `platscope-mem-latency`); clap's `help` subcommands get none.
fn write_pages(mut cmd: clap::Command, out: &Path, written: &mut usize) -> std::io::Result<()> {
    cmd.build();
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        write_pages(sub.clone(), out, written)?;
    }
    let page = clap_mangen::Man::new(cmd)
        .date(super::version::build_date())
        .source(format!("platscope {}", env!("CARGO_PKG_VERSION")))
        .manual("platscope manual");
    let mut text = Vec::new();
    page.render(&mut text)?;
    experiment::output::write_atomically(&out.join(page.get_filename()), &text)?;
    *written += 1;
    Ok(())
}
