//! The command line: clap definitions only; each command's work lives in `commands/`.

use clap::{Parser, Subcommand};

pub const VERSION: &str =
    concat!(env!("CARGO_PKG_VERSION"), " (git ", env!("PLATSCOPE_GIT_HASH"), ")");

/// The truth about a Linux server: memory latency and bandwidth per NUMA node, placement,
/// page cache, I/O patterns, NICs and CPU time.
#[derive(Debug, Parser)]
#[command(name = "platscope", version = VERSION, propagate_version = true, arg_required_else_help = true, subcommand_required = true)]
pub struct Cli {
    /// Print machine-readable JSON instead of text (schemas in docs/).
    #[arg(long, global = true, conflicts_with = "csv")]
    pub json: bool,

    /// Print CSV instead of text, for commands whose results are a table.
    #[arg(long, global = true)]
    pub csv: bool,

    /// Also write the run's report sections as a self-contained HTML page.
    #[arg(long, global = true, value_name = "FILE")]
    pub html_out: Option<std::path::PathBuf>,

    /// Results database (default: $XDG_DATA_HOME/platscope/results.db).
    #[arg(long, global = true, value_name = "PATH", conflicts_with = "no_store")]
    pub db: Option<std::path::PathBuf>,

    /// Do not record this run in the results database.
    #[arg(long, global = true)]
    pub no_store: bool,

    /// A command not (yet) in the registry; registry commands are dispatched before this is
    /// read (see `registry.rs`).
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a compatibility tool by name (as if invoked through a link of that name):
    /// memhammer, create_sem, trigger, cpu_bind, thread_read, nicstat, pstime.
    Compat {
        /// The tool's name.
        name: String,
        /// Its arguments, exactly as the original tool takes them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// Print a shell completion script for every command and option (bash, zsh, fish, …).
    ///
    /// bash: `platscope completions bash > ~/.local/share/bash-completion/completions/platscope`;
    /// zsh: into a directory on `$fpath` as `_platscope`; fish: into
    /// `~/.config/fish/completions/platscope.fish`. The .deb installs all three.
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Write a man page for platscope and for every subcommand (platscope-mem-latency.1, …)
    /// into a directory.
    Man {
        /// The directory to write the pages into (created if missing).
        #[arg(long, value_name = "DIR")]
        out: std::path::PathBuf,
    },
    /// Print the version; with --verbose also the git commit, the build date, the BPF
    /// programs built in and the vendored BTF's architecture (also `platscope --version
    /// --verbose`).
    Version {
        /// Name the build's commit, date and capabilities.
        #[arg(long)]
        verbose: bool,
    },
}

/// The whole command line: the fixed commands above and every registry command.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    platscope::registry::REGISTRY.augment(Cli::command())
}

/// What every registry command gets from the global flags (read from the parsed command line,
/// where clap propagates global flags to the top).
pub fn globals(matches: &clap::ArgMatches) -> experiment::Globals {
    let format = if matches.get_flag("json") {
        experiment::Format::Json
    } else if matches.get_flag("csv") {
        experiment::Format::Csv
    } else {
        experiment::Format::Text
    };
    experiment::Globals {
        format,
        store: results::StoreOptions {
            db: matches.get_one::<std::path::PathBuf>("db").cloned(),
            no_store: matches.get_flag("no_store"),
        },
        html_out: matches.get_one::<std::path::PathBuf>("html_out").cloned(),
        version: VERSION,
        revision: env!("PLATSCOPE_GIT_HASH"),
        // The clock every batch in this run was timed with, and why it was trusted.
        late_parameters: Some(|| serde_json::json!({ "clock": membench::timers::clock_in_use() })),
        registry: platscope::registry::REGISTRY,
        // A short cache-line hand-off between a run's CPUs, before and after each run whose
        // figures depend on where they sit.
        placement_probe: Some(membench::c2c::probe::probe),
        backfill: Some(suite::figures::backfill),
    }
}
