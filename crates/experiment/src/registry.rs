//! The registry: one [`Entry`] per command, from which the command line is built, a parsed
//! command line is dispatched, and a stored run is read back as its typed outcome.

use std::any::Any;
use std::marker::PhantomData;

use chart::Part;
use clap::{ArgMatches, Command, FromArgMatches};
use measure::Classified;
use results::StoredRun;
use serde_json::Value;
use topo::Topology;

use crate::{output_failed, present_placed, Context, Experiment, Globals, Outcome, Tool};

/// An outcome with its type erased: what a stored run reads back as.
pub trait Shown: Any {
    fn kind(&self) -> &'static str;
    fn text(&self) -> String;
    fn json(&self) -> Result<Value, serde_json::Error>;
    fn csv(&self) -> Option<String>;
    fn parts(&self, topology: &Topology) -> Vec<Part>;
    fn interrupted(&self) -> bool;
    /// For multi-step experiments that look into their steps' outcomes.
    fn as_any(&self) -> &dyn Any;
}

impl<O: Outcome> Shown for O {
    fn kind(&self) -> &'static str {
        Outcome::kind(self)
    }
    fn text(&self) -> String {
        Outcome::text(self)
    }
    fn json(&self) -> Result<Value, serde_json::Error> {
        Outcome::json(self)
    }
    fn csv(&self) -> Option<String> {
        Outcome::csv(self)
    }
    fn parts(&self, topology: &Topology) -> Vec<Part> {
        Outcome::parts(self, topology)
    }
    fn interrupted(&self) -> bool {
        Outcome::interrupted(self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// One registry line: a command on the command line, and the stored kinds it reads back.
pub trait Entry: Sync {
    /// Where it sits on the command line (`["mem", "latency"]`).
    fn path(&self) -> &'static [&'static str];
    /// Its leaf subcommand with its arguments.
    fn command(&self) -> Command;
    /// Runs it from its parsed arguments.
    fn run(&self, matches: &ArgMatches, globals: &Globals) -> Result<(), Classified>;
    /// The stored kinds its outcomes are recorded under (none for a tool).
    fn kinds(&self) -> &'static [&'static str];
    /// A stored result of one of [`kinds`](Entry::kinds), typed again.
    fn read_back(&self, kind: &str, result: Value) -> Result<Box<dyn Shown>, serde_json::Error>;
    /// Arguments that make it run briefly (experiments only), for the round-trip test.
    fn tiny_args(&self) -> Option<&'static [&'static str]>;
}

struct ExperimentEntry<E>(PhantomData<fn() -> E>);
struct ToolEntry<T>(PhantomData<fn() -> T>);

/// The registry line of an experiment.
pub const fn experiment<E: Experiment>() -> &'static dyn Entry {
    &ExperimentEntry::<E>(PhantomData)
}

/// The registry line of a tool.
pub const fn tool<T: Tool>() -> &'static dyn Entry {
    &ToolEntry::<T>(PhantomData)
}

fn named(path: &'static [&'static str]) -> Command {
    Command::new(path.last().copied().unwrap_or("?"))
}

/// The leaf with its arguments and the entry's own help line, set last: the doc comment of an
/// arguments struct (or of one flattened into it) would otherwise become the command's help. A
/// closing full stop is dropped, as clap drops it from doc comments.
fn leaf(command: Command, about: &'static str) -> Command {
    command.about(about.strip_suffix('.').unwrap_or(about)).long_about(None)
}

fn parse<A: FromArgMatches>(matches: &ArgMatches) -> Result<A, Classified> {
    A::from_arg_matches(matches).map_err(|e| Classified::usage(e.to_string()))
}

impl<E: Experiment> Entry for ExperimentEntry<E> {
    fn path(&self) -> &'static [&'static str] {
        E::PATH
    }
    fn command(&self) -> Command {
        leaf(<E::Args as clap::Args>::augment_args(named(E::PATH)), E::ABOUT)
    }
    fn run(&self, matches: &ArgMatches, globals: &Globals) -> Result<(), Classified> {
        let args: E::Args = parse(matches)?;
        // The page is written after the run: one that cannot be is said before it.
        if let Some(page) = &globals.html_out {
            crate::output::check_writable(page)
                .map_err(|e| Classified::runtime(format!("--html-out: {e}")))?;
        }
        let topology = Topology::detect()
            .map_err(|e| Classified::runtime(format!("reading the topology: {e}")))?;
        measure::stop::install();
        let mut recorder = globals.recorder(&topology)?;
        let mut ctx = Context::new(&topology, globals, &mut recorder);
        let (outcome, placement) = ctx.run_probed::<E>(&args)?;
        let streamed = ctx.streamed;
        let print_error = ctx.take_print_error();
        // Store before printing: a print that fails (stdout on a full disk) must not lose the
        // measurement.
        let stored = if outcome.worth_storing() {
            ctx.record_placed(&outcome, placement.as_ref())
        } else {
            Ok(None)
        };
        let id = stored.as_ref().ok().copied().flatten();
        let printed = match print_error {
            Some(e) => Err(output_failed(&e, id)),
            None => present_placed(&outcome, &topology, globals, streamed, id, placement.as_ref()),
        };
        stored?;
        printed?;
        outcome.failure().map_or(Ok(()), Err)
    }
    fn kinds(&self) -> &'static [&'static str] {
        <E::Outcome as Outcome>::KINDS
    }
    fn read_back(&self, kind: &str, result: Value) -> Result<Box<dyn Shown>, serde_json::Error> {
        Ok(Box::new(<E::Outcome as Outcome>::from_stored(kind, result)?))
    }
    fn tiny_args(&self) -> Option<&'static [&'static str]> {
        Some(E::TINY)
    }
}

impl<T: Tool> Entry for ToolEntry<T> {
    fn path(&self) -> &'static [&'static str] {
        T::PATH
    }
    fn command(&self) -> Command {
        leaf(<T::Args as clap::Args>::augment_args(named(T::PATH)), T::ABOUT).hide(T::HIDDEN)
    }
    fn run(&self, matches: &ArgMatches, globals: &Globals) -> Result<(), Classified> {
        T::run(&parse(matches)?, globals)
    }
    fn kinds(&self) -> &'static [&'static str] {
        &[]
    }
    fn read_back(&self, kind: &str, _: Value) -> Result<Box<dyn Shown>, serde_json::Error> {
        Err(serde::de::Error::custom(format!("{kind}: a tool stores nothing")))
    }
    fn tiny_args(&self) -> Option<&'static [&'static str]> {
        None
    }
}

/// Every command of the binary, one line each, and the help text of the groups they sit in.
#[derive(Clone, Copy)]
pub struct Registry {
    pub entries: &'static [&'static dyn Entry],
    /// (group name, one line for `--help`), for groups such as `mem`.
    pub groups: &'static [(&'static str, &'static str)],
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let paths: Vec<String> = self.entries.iter().map(|e| e.path().join(" ")).collect();
        f.debug_struct("Registry").field("entries", &paths).finish()
    }
}

/// Why a stored run cannot be shown again.
#[derive(Debug, thiserror::Error)]
pub enum ReadBackError {
    #[error("run {id}: no command of this platscope stores '{kind}' runs")]
    UnknownKind { id: i64, kind: String },
    #[error("run {id} ({kind}): its stored result does not read as that kind of run ({source})")]
    Unreadable { id: i64, kind: String, source: serde_json::Error },
    #[error("run {id}: its stored topology does not read ({source})")]
    Topology { id: i64, source: serde_json::Error },
}

impl measure::Usage for ReadBackError {
    /// The user named a run that cannot be shown: fixable by naming another.
    fn is_usage(&self) -> bool {
        true
    }
}

impl Registry {
    /// `root` with every entry's subcommand added, groups made (or extended) as needed.
    pub fn augment(&self, mut root: Command) -> Command {
        for entry in self.entries {
            root = add_path(root, entry.path(), entry.command(), self.groups);
        }
        root
    }

    /// The entry a parsed command line selected, with the leaf's matches: the deepest one
    /// when a command has subcommands of its own (`load` and `load prepare`).
    pub fn find<'m>(
        &self,
        matches: &'m ArgMatches,
    ) -> Option<(&'static dyn Entry, &'m ArgMatches)> {
        self.entries
            .iter()
            .filter_map(|entry| {
                let mut m = matches;
                for name in entry.path() {
                    m = m.subcommand_matches(name)?;
                }
                Some((*entry, m))
            })
            .max_by_key(|(entry, _)| entry.path().len())
    }

    /// The entry whose outcomes are stored as `kind`.
    pub fn entry_for_kind(&self, kind: &str) -> Option<&'static dyn Entry> {
        self.entries.iter().copied().find(|e| e.kinds().contains(&kind))
    }

    /// A stored run as its typed outcome, with the topology it was measured on.
    pub fn read_back(&self, run: &StoredRun) -> Result<(Box<dyn Shown>, Topology), ReadBackError> {
        let entry = self
            .entry_for_kind(&run.command)
            .ok_or_else(|| ReadBackError::UnknownKind { id: run.id, kind: run.command.clone() })?;
        let shown = entry.read_back(&run.command, run.result.clone()).map_err(|source| {
            ReadBackError::Unreadable { id: run.id, kind: run.command.clone(), source }
        })?;
        let topology = serde_json::from_value(run.topology.clone())
            .map_err(|source| ReadBackError::Topology { id: run.id, source })?;
        Ok((shown, topology))
    }
}

fn add_path(
    root: Command,
    path: &'static [&'static str],
    leaf: Command,
    groups: &'static [(&'static str, &'static str)],
) -> Command {
    match path {
        [] | [_] => root.subcommand(leaf),
        [group, rest @ ..] => {
            let rest: &'static [&'static str] = rest;
            if root.find_subcommand(group).is_some() {
                root.mut_subcommand(group, |g| add_path(g, rest, leaf, groups))
            } else {
                let about = groups.iter().find(|(name, _)| name == group).map_or("", |g| g.1);
                let made = Command::new(*group)
                    .about(about)
                    .arg_required_else_help(true)
                    .subcommand_required(true);
                root.subcommand(add_path(made, rest, leaf, groups))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use measure::{Metric, ToMetrics};
    use serde::{Deserialize, Serialize};

    /// Not the help line: the entry's ABOUT is.
    #[derive(Debug, clap::Args)]
    struct RunArgs {
        #[arg(long)]
        rate: Option<u32>,
    }

    #[derive(Debug, clap::Args)]
    struct NoArgs {}

    #[derive(Debug, Serialize, Deserialize)]
    struct Done;

    impl ToMetrics for Done {
        fn to_metrics(&self) -> Vec<Metric> {
            Vec::new()
        }
    }

    impl Outcome for Done {
        const KINDS: &'static [&'static str] = &["demo"];
        fn text(&self) -> String {
            String::new()
        }
        fn parts(&self, _: &Topology) -> Vec<Part> {
            Vec::new()
        }
    }

    struct Demo;
    impl Experiment for Demo {
        const PATH: &'static [&'static str] = &["demo"];
        const ABOUT: &'static str = "A demo";
        const TINY: &'static [&'static str] = &[];
        type Args = RunArgs;
        type Outcome = Done;
        fn run(_: &RunArgs, _: &mut crate::Context<'_>) -> Result<Done, Classified> {
            Ok(Done)
        }
    }

    struct Prepare;
    impl Tool for Prepare {
        const PATH: &'static [&'static str] = &["demo", "prepare"];
        const ABOUT: &'static str = "Prepares the demo";
        type Args = NoArgs;
        fn run(_: &NoArgs, _: &Globals) -> Result<(), Classified> {
            Ok(())
        }
    }

    struct Worker;
    impl Tool for Worker {
        const PATH: &'static [&'static str] = &["demo-worker"];
        const ABOUT: &'static str = "Internal";
        const HIDDEN: bool = true;
        type Args = NoArgs;
        fn run(_: &NoArgs, _: &Globals) -> Result<(), Classified> {
            Ok(())
        }
    }

    static REGISTRY: Registry = Registry {
        entries: &[experiment::<Demo>(), tool::<Prepare>(), tool::<Worker>()],
        groups: &[],
    };

    #[test]
    fn a_command_with_a_subcommand_dispatches_to_the_deeper_one() {
        let root = || REGISTRY.augment(Command::new("p"));
        let m = root().try_get_matches_from(["p", "demo", "prepare"]).unwrap();
        assert_eq!(REGISTRY.find(&m).map(|(e, _)| e.path()), Some(&["demo", "prepare"][..]));
        let m = root().try_get_matches_from(["p", "demo", "--rate", "3"]).unwrap();
        let (entry, leaf) = REGISTRY.find(&m).unwrap();
        assert_eq!(entry.path(), &["demo"]);
        assert_eq!(leaf.get_one::<u32>("rate"), Some(&3));
        let m = root().try_get_matches_from(["p", "demo-worker"]).unwrap();
        assert_eq!(REGISTRY.find(&m).map(|(e, _)| e.path()), Some(&["demo-worker"][..]));
    }

    #[test]
    fn hidden_tools_run_but_are_not_listed() {
        let mut root = REGISTRY.augment(Command::new("p"));
        let help = root.render_help().to_string();
        assert!(help.contains("demo") && help.contains("A demo"), "{help}");
        assert!(!help.contains("Not the help line"), "{help}");
        assert!(!help.contains("demo-worker"), "{help}");
        assert_eq!(REGISTRY.entry_for_kind("demo").map(|e| e.path()), Some(&["demo"][..]));
    }
}
