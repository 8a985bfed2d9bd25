//! `platscope compress` (Tamp's design: one reader, N workers, one writer) and `platscope cpu
//! scale` (throughput against threads and units, with the verdicts) as the product runs them:
//! the arguments, the runs, and what each outcome prints, stores and draws. One registry line
//! each in the binary.

use std::path::{Path, PathBuf};

use experiment::{Context, Experiment, Outcome};
use measure::{stop, Classified, Metric, ToMetrics};
use serde::{Deserialize, Serialize};
use topo::units::parse_bytes;

use crate::scale::{ScalePlan, ScaleReport};
use crate::{CompressOptions, DecompressOptions, Format, Operation, Output, RunResult};

/// `compress`'s arguments.
#[derive(Debug, clap::Args)]
pub struct CompressArgs {
    /// Decompress instead (platscope's own files in parallel, others on one thread, said so).
    #[arg(short = 'd', long)]
    pub decompress: bool,
    /// Worker threads (default: every online CPU); one reader and one writer run beside them.
    #[arg(short = 't', long, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub threads: Option<u64>,
    /// lz4 (the LZ4 frame, read by `lz4 -d`; the default) or zstd (a frame per block, read by
    /// `zstd -d`). With -d the format is read from the file; --format insists on one.
    #[arg(long)]
    pub format: Option<Format>,
    /// Compression level (zstd 1–22; lz4 has one level).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub level: i32,
    /// Uncompressed bytes per block (64KiB … 4MiB; default 256KiB for lz4, as the Tamp compressor,
    /// and 2MiB for zstd, as pzstd -1: smaller zstd frames compress a little smaller, slower).
    #[arg(long, value_parser = parse_bytes)]
    pub block: Option<u64>,
    /// Output file (only with one input); default: INPUT.lz4 / INPUT.zst, or INPUT without
    /// its suffix with -d. `-` is standard output (as `lz4 -c`): the run's figures then go to
    /// standard error.
    #[arg(short = 'o', long, value_name = "OUT", conflicts_with = "discard")]
    pub output: Option<PathBuf>,
    /// Compress to nowhere: measure only.
    #[arg(long)]
    pub discard: bool,
    /// Replace an output (or a --make-corpus file) that already exists; without it such a run
    /// is refused before it starts and the file is left as it was (as lz4, zstd and gzip do).
    #[arg(short = 'f', long)]
    pub force: bool,
    /// Write a seeded, database-like corpus of SIZE bytes to OUT instead (`--make-corpus 1GiB
    /// corpus.tsv`), about 50% smaller with lz4 and 65% with zstd -1.
    #[arg(long, num_args = 2, value_names = ["SIZE", "OUT"], conflicts_with_all = ["decompress", "output", "discard"])]
    pub make_corpus: Option<Vec<String>>,
    /// The corpus generator's seed.
    #[arg(long, default_value_t = crate::corpus::DEFAULT_SEED)]
    pub seed: u64,
    /// Run each input N times, each round a fresh pipeline over the whole input, and keep every
    /// round's MB/s and CPU per MB as one sample (the figures printed are the median round's;
    /// one more, uncounted warm-up round comes first): with 5 or more, `results compare` and
    /// `report --baseline` can test them. Needs --discard and files (standard input cannot be
    /// read twice).
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
    /// How the input is named in the printout and the stored run instead of its path (the
    /// report names its generated corpus so, not the temporary file it sits in).
    #[arg(long, hide = true, value_name = "TEXT")]
    pub input_name: Option<String>,
    /// Files to compress or decompress; `-` reads standard input (the only input, with -o or
    /// --discard).
    #[arg(value_name = "IN", required_unless_present = "make_corpus")]
    pub inputs: Vec<PathBuf>,
}

/// `cpu scale`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ScaleArgs {
    /// Pipelines run at once (default: 1, then 2 and 4 where the CPUs allow).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub units: Option<Vec<u64>>,
    /// Worker threads per pipeline (default: 1, 2, 4 … up to twice the CPUs).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub threads: Option<Vec<u64>>,
    /// The work: compress (Tamp's pipeline on an in-memory corpus, to nowhere).
    #[arg(long, default_value = "compress", value_parser = ["compress"])]
    pub workload: String,
    /// lz4 or zstd.
    #[arg(long, default_value = "lz4")]
    pub format: Format,
    /// Compression level.
    #[arg(long, default_value_t = 1)]
    pub level: i32,
    /// Corpus bytes each unit compresses per step (per round).
    #[arg(long, default_value = "256MiB", value_parser = parse_bytes)]
    pub size: u64,
    /// Run every step N times, all steps in each round, and keep each round's MB/s as one
    /// sample (the figures printed are the median round's): with 5 or more, `results compare`
    /// and `report --baseline` can test them.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
}

fn suffix(format: Format) -> &'static str {
    match format {
        Format::Lz4 => "lz4",
        Format::Zstd => "zst",
    }
}

/// `-`: standard input, as lz4, zstd and gzip read it.
fn is_stdin(input: &Path) -> bool {
    input.as_os_str() == "-"
}

/// Where one input's result goes.
fn output_for(args: &CompressArgs, input: &Path) -> Result<Output, Classified> {
    if args.discard {
        return Ok(Output::Discard);
    }
    let file = |path: PathBuf| if args.force { Output::File(path) } else { Output::NewFile(path) };
    if let Some(o) = &args.output {
        if is_stdin(o) {
            return Ok(Output::Stdout);
        }
        return Ok(file(o.clone()));
    }
    if is_stdin(input) {
        return Err(Classified::usage(
            "standard input (-) has no name to derive the output's from: name it with -o, or \
             give --discard",
        ));
    }
    let name = input
        .file_name()
        .ok_or_else(|| {
            Classified::usage(format!("{}: an input without a file name", input.display()))
        })?
        .to_owned();
    let mut out = input.to_path_buf();
    if args.decompress {
        let stripped = input.extension().is_some_and(|e| e == "lz4" || e == "zst" || e == "zstd");
        if !stripped {
            return Err(Classified::usage(format!(
                "{}: no .lz4 or .zst suffix to remove; name the output with -o",
                input.display()
            )));
        }
        out.set_extension("");
    } else {
        let mut with = name;
        with.push(".");
        with.push(suffix(args.format.unwrap_or(Format::Lz4)));
        out.set_file_name(with);
    }
    Ok(file(out))
}

/// What `compress` did: a compress or decompress run (stored as `compress` / `compress -d`),
/// or a corpus written (`--make-corpus`, nothing to store).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Compressed {
    Run(Box<RunResult>),
    Corpus { corpus: PathBuf, bytes: u64, seed: u64 },
}

impl ToMetrics for Compressed {
    fn to_metrics(&self) -> Vec<Metric> {
        match self {
            Compressed::Run(r) => r.to_metrics(),
            Compressed::Corpus { .. } => Vec::new(),
        }
    }
}

impl Outcome for Compressed {
    const KINDS: &'static [&'static str] = &["compress", "compress -d"];

    fn kind(&self) -> &'static str {
        match self {
            Compressed::Run(r) if r.operation == Operation::Decompress => "compress -d",
            _ => "compress",
        }
    }

    fn interrupted(&self) -> bool {
        matches!(self, Compressed::Run(r) if r.interrupted)
    }

    fn worth_storing(&self) -> bool {
        matches!(self, Compressed::Run(_))
    }

    fn text(&self) -> String {
        match self {
            Compressed::Run(r) => crate::render::run(r),
            Compressed::Corpus { corpus, bytes, seed } => {
                format!("wrote {bytes} bytes of corpus (seed {seed}) to {}\n", corpus.display())
            }
        }
    }

    fn parts(&self, _topology: &topo::Topology) -> Vec<chart::Part> {
        match self {
            Compressed::Run(r) => vec![crate::chart::run_part(r)],
            Compressed::Corpus { .. } => Vec::new(),
        }
    }

    fn from_stored(_kind: &str, result: serde_json::Value) -> Result<Self, serde_json::Error> {
        Ok(Compressed::Run(serde_json::from_value(result)?))
    }
}

/// `platscope compress`.
#[derive(Debug)]
pub struct Compress;

impl Experiment for Compress {
    const PATH: &'static [&'static str] = &["compress"];
    const ABOUT: &'static str = "Compress or decompress files with a reader, N workers and a \
                                 writer (as the Tamp parallel compressor did): standard LZ4 and \
                                 zstd output, MB/s, CPU time, each thread's busy share, and why \
                                 it did not go faster";
    const TINY: &'static [&'static str] = &["--discard", "-t", "2", "{file}"];
    type Args = CompressArgs;
    type Outcome = Compressed;

    /// Several workers hand blocks between their CPUs and share the caches.
    fn placement_cpus(args: &CompressArgs, topology: &topo::Topology) -> Option<Vec<u32>> {
        let threads = args.threads.map_or_else(crate::online_cpus, |t| t as usize);
        several_online(topology, threads)
    }

    /// One run per input: each but the last is stored and printed as it ends
    /// ([`Context::finished`]); the last (or the one a stop cut short) is the outcome.
    fn run(args: &CompressArgs, ctx: &mut Context<'_>) -> Result<Compressed, Classified> {
        if let Some(corpus) = &args.make_corpus {
            let [size, out] = corpus.as_slice() else {
                return Err(Classified::usage("--make-corpus takes SIZE OUT"));
            };
            let bytes = parse_bytes(size)?;
            return make_corpus(args.seed, bytes, Path::new(out), args.force);
        }
        if args.output.is_some() && args.inputs.len() > 1 {
            return Err(Classified::usage(
                "-o names one output: give one input, or leave -o out to write INPUT.lz4 beside \
                 each",
            ));
        }
        let from_stdin = args.inputs.iter().any(|i| is_stdin(i));
        if from_stdin && args.inputs.len() > 1 {
            return Err(Classified::usage(
                "standard input (-) can only be the one input: give it alone",
            ));
        }
        if from_stdin && std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            // As lz4 and zstd refuse: typed input would wait for an end of file.
            return Err(Classified::usage(
                "standard input (-) is a terminal: pipe or redirect the data into it",
            ));
        }
        if args.output.as_deref().is_some_and(is_stdin) {
            if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                // As lz4 and zstd refuse: compressed bytes on a terminal help nobody.
                return Err(Classified::usage(
                    "-o - writes to standard output, which is a terminal: pipe or redirect it",
                ));
            }
            // The data owns standard output; the run's figures go to standard error.
            experiment::output::results_to_stderr();
        }
        let format = args.format.unwrap_or(Format::Lz4);
        let block = args
            .block
            .map_or(crate::default_block(format), |b| usize::try_from(b).unwrap_or(usize::MAX));
        if !(64 << 10..=4 << 20).contains(&block) {
            return Err(Classified::usage(format!("--block {block} is outside 64KiB … 4MiB")));
        }
        let threads = args.threads.map_or_else(crate::online_cpus, |t| t as usize);
        if args.rounds > 1 && !args.discard {
            return Err(Classified::usage(format!(
                "--rounds {} runs each input {} times: give --discard (nothing is written)",
                args.rounds, args.rounds
            )));
        }
        if args.rounds > 1 && from_stdin {
            return Err(Classified::usage(
                "--rounds reads the input again each round: give a file, not standard input (-)",
            ));
        }
        // Every output is named and checked before the first run: a taken name among several
        // inputs refuses the whole command, not the runs after the others.
        let outputs =
            args.inputs.iter().map(|i| output_for(args, i)).collect::<Result<Vec<_>, _>>()?;
        for output in &outputs {
            if let Output::NewFile(path) = output {
                if path.symlink_metadata().is_ok() {
                    return Err(crate::TampError::Exists { path: path.clone() }.into());
                }
            }
        }
        let mut inputs = args.inputs.iter().zip(outputs).peekable();
        while let Some((given, output)) = inputs.next() {
            // Standard input through its /dev/stdin name: a pipe goes to the reader thread, a
            // redirected file to the workers, as the same input named by its path would.
            let input = if is_stdin(given) { Path::new("/dev/stdin") } else { given.as_path() };
            let once = || {
                if args.decompress {
                    let opts = DecompressOptions { threads, format: args.format };
                    crate::decompress(input, &output, &opts, stop::flag())
                } else {
                    let opts =
                        CompressOptions { format, level: args.level, threads, block_size: block };
                    crate::compress(input, &output, &opts, stop::flag())
                }
            };
            let mut result = in_rounds(args.rounds, once)?;
            if let Some(name) = &args.input_name {
                result.input = name.clone();
            } else if is_stdin(given) {
                result.input = "standard input".into();
            }
            let outcome = Compressed::Run(Box::new(result));
            if outcome.interrupted() || inputs.peek().is_none() {
                return Ok(outcome);
            }
            ctx.finished(&outcome)?;
        }
        Err(Classified::usage("no input to compress"))
    }
}

/// `run` `rounds` times (each a fresh pipeline over the whole input) and one result of them
/// ([`RunResult::of_rounds`]); more than one round comes after one more, a warm-up that is not
/// counted (the input's pages, the allocator's arenas and the CPUs' clocks settle in it, as
/// the memory steps' warm-up round). A round a stop cut short ends them: with rounds finished
/// before it, those are the result, marked interrupted; without, the cut round is.
fn in_rounds(
    rounds: u32,
    mut run: impl FnMut() -> Result<RunResult, crate::TampError>,
) -> Result<RunResult, crate::TampError> {
    if rounds > 1 {
        let warm_up = run()?;
        if warm_up.interrupted {
            return Ok(warm_up);
        }
    }
    let mut finished = Vec::new();
    for _ in 0..rounds {
        let round = run()?;
        if round.interrupted {
            return Ok(match RunResult::of_rounds(finished) {
                Some(done) => RunResult { interrupted: true, ..done },
                None => round,
            });
        }
        finished.push(round);
    }
    RunResult::of_rounds(finished).ok_or(crate::TampError::Usage("no round to run".into()))
}

fn make_corpus(seed: u64, bytes: u64, out: &Path, force: bool) -> Result<Compressed, Classified> {
    let exists = || crate::TampError::Exists { path: out.to_path_buf() }.into();
    if !force && out.symlink_metadata().is_ok() {
        return Err(exists());
    }
    let dir = out.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let writing =
        |e: std::io::Error| Classified::runtime(format!("writing {}: {e}", out.display()));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| Classified::runtime(format!("cannot write in {}: {e}", dir.display())))?;
    {
        let mut w = std::io::BufWriter::new(tmp.as_file_mut());
        crate::corpus::write(seed, bytes, &mut w)
            .and_then(|()| std::io::Write::flush(&mut w))
            .map_err(writing)?;
    }
    let persisted = if force { tmp.persist(out) } else { tmp.persist_noclobber(out) };
    persisted.map_err(|e| match e.error.kind() {
        std::io::ErrorKind::AlreadyExists if !force => exists(),
        _ => writing(e.error),
    })?;
    Ok(Compressed::Corpus { corpus: out.to_path_buf(), bytes, seed })
}

/// The first `count` online CPUs, when that is at least two: the CPUs a run's unpinned workers
/// spread over, whose placement its figures depend on.
fn several_online(topology: &topo::Topology, count: usize) -> Option<Vec<u32>> {
    let cpus: Vec<u32> = topology.online_cpu_ids().into_iter().take(count).collect();
    (cpus.len() >= 2).then_some(cpus)
}

/// `platscope cpu scale`.
#[derive(Debug)]
pub struct CpuScale;

impl Experiment for CpuScale {
    const PATH: &'static [&'static str] = &["cpu", "scale"];
    const ABOUT: &'static str = "Throughput against threads for one instance of a parallel job \
                                 (compression, as Tamp was run to compare single-thread and \
                                 throughput machines), then against units × threads: single-thread \
                                 speed, where one instance stops scaling and why, and what the \
                                 filled machine does — with how many CPUs were busy at each step";
    const TINY: &'static [&'static str] = &["--units", "1,2", "--threads", "1,2", "--size", "2MiB"];
    type Args = ScaleArgs;
    type Outcome = ScaleReport;

    /// Its steps beyond one thread and one unit share the caches and hand blocks between CPUs.
    fn placement_cpus(_args: &ScaleArgs, topology: &topo::Topology) -> Option<Vec<u32>> {
        several_online(topology, usize::MAX)
    }

    fn run(args: &ScaleArgs, _ctx: &mut Context<'_>) -> Result<ScaleReport, Classified> {
        let mut plan = ScalePlan::for_machine(crate::online_cpus());
        if let Some(units) = &args.units {
            plan.units = units.iter().map(|&u| u as usize).collect();
        }
        if let Some(threads) = &args.threads {
            plan.threads = threads.iter().map(|&t| t as usize).collect();
        }
        plan.rounds = args.rounds as usize;
        let size = usize::try_from(args.size)
            .map_err(|_| Classified::usage(format!("--size {} is too large", args.size)))?;
        let input = crate::corpus::generate(crate::corpus::DEFAULT_SEED, size);
        let codec = crate::codec::codec_for(args.format, args.level)?;
        Ok(crate::scale::run(&input, codec.as_ref(), &plan, stop::flag())?)
    }
}

impl Outcome for ScaleReport {
    /// The last is read only: the step of reports stored by earlier versions.
    const KINDS: &'static [&'static str] = &["cpu scale", "report: cpu scale"];

    fn interrupted(&self) -> bool {
        self.interrupted
    }

    fn text(&self) -> String {
        crate::render::scale(self)
    }

    fn parts(&self, _topology: &topo::Topology) -> Vec<chart::Part> {
        vec![crate::chart::scale_part(self)]
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;

    fn topology() -> topo::Topology {
        topo::Topology::from_synthetic("pack:1 [numa(memory=1GiB)] core:2 pu:1").unwrap()
    }

    #[test]
    fn a_stored_compress_run_draws_the_same_section() {
        let input = crate::corpus::generate(1, 256 << 10);
        let codec = crate::codec::codec_for(Format::Lz4, 1).unwrap();
        let stop = AtomicBool::new(false);
        let r = crate::compress_reader(
            &input[..],
            Path::new("<in>.tsv"),
            &Output::Discard,
            codec.as_ref(),
            2,
            64 << 10,
            &stop,
        )
        .unwrap();
        let outcome = Compressed::Run(Box::new(r));
        assert_eq!(outcome.kind(), "compress");
        let parts = outcome.parts(&topology());
        let f = parts[0].figure.as_ref().unwrap();
        // Reader, two workers and the writer: a busy and an on-CPU bar each.
        assert_eq!(f.svg.matches("<rect class=\"bar data\"").count(), 8, "{}", f.svg);
        assert!(f.caption.contains("&lt;in&gt;.tsv"), "{}", f.caption);
        assert!(parts[0].headlines.iter().all(|h| h.metric.is_some()));
        let stored = serde_json::to_value(&outcome).unwrap();
        assert!(stored["bytes_in"].is_u64(), "stored as the run itself: {stored}");
        let back = Compressed::from_stored("compress", stored).unwrap();
        assert_eq!(back.parts(&topology()), parts);
        assert_eq!(back.text(), outcome.text());
    }

    /// A real (small) compress run of `bytes` with its speed set to `mb_per_s`.
    fn run_at(mb_per_s: f64, interrupted: bool) -> RunResult {
        let input = crate::corpus::generate(1, 64 << 10);
        let codec = crate::codec::codec_for(Format::Lz4, 1).unwrap();
        let stop = AtomicBool::new(false);
        let r = crate::compress_reader(
            &input[..],
            Path::new("c.tsv"),
            &Output::Discard,
            codec.as_ref(),
            1,
            64 << 10,
            &stop,
        )
        .unwrap();
        RunResult { mb_per_s, interrupted, ..r }
    }

    #[test]
    fn rounds_are_one_sample_each_and_the_figures_are_the_median_round_s() {
        let speeds = [500.0, 300.0, 700.0, 400.0, 600.0];
        // The first is the warm-up, not counted.
        let mut given = [9.0].iter().chain(&speeds).map(|&v| run_at(v, false));
        let r = in_rounds(5, || Ok(given.next().unwrap())).unwrap();
        assert_eq!(r.mb_per_s, 500.0, "the median round's");
        assert!(!r.interrupted);
        let rounds: Vec<f64> = r.rounds.iter().map(|x| x.mb_per_s).collect();
        assert_eq!(rounds, speeds, "every round, in the order run");
        // Stored: the throughput and CPU-per-MB metrics carry one sample a round.
        let metrics = r.to_metrics();
        let samples =
            |name: &str| metrics.iter().find(|m| m.name == name).map(|m| m.samples.len()).unwrap();
        assert_eq!(samples(crate::metrics::THROUGHPUT), 5);
        assert_eq!(samples(crate::metrics::CPU_PER_MB), 5);
        assert_eq!(samples(crate::metrics::RATIO), 1);
        // The page's headline is the median of those samples, backed by their metric.
        let part = crate::chart::run_part(&r);
        let lz4 = crate::chart::COMPRESS_LZ4;
        assert_eq!(
            (part.area, part.id.as_str(), part.title.as_str()),
            (lz4.area, lz4.id, lz4.title)
        );
        let head = &part.headlines[0];
        assert_eq!(head.value, "500 MB/s");
        assert!(head.detail.ends_with("median of 5 rounds"), "{}", head.detail);
        let key = head.metric.as_deref().unwrap();
        let backing = metrics.iter().find(|m| m.key() == key).unwrap();
        assert_eq!(backing.samples, speeds);
        assert!(part.figure.unwrap().caption.starts_with("5 rounds"));
        let text = crate::render::run(&r);
        assert!(text.contains("5 rounds, MB/s each: 500 300 700 400 600"), "{text}");
        // Read back from the store as it was written.
        let stored = serde_json::to_value(Compressed::Run(Box::new(r.clone()))).unwrap();
        let Compressed::Run(back) = Compressed::from_stored("compress", stored).unwrap() else {
            panic!("a run")
        };
        assert_eq!(*back, r);
    }

    #[test]
    fn a_stop_keeps_the_finished_rounds() {
        // Stopped in the third round: the two before it are the result, marked interrupted.
        let mut given = [(9.0, false), (400.0, false), (600.0, false), (10.0, true)].into_iter();
        let r = in_rounds(5, || Ok(given.next().map(|(v, i)| run_at(v, i)).unwrap())).unwrap();
        assert!(r.interrupted);
        assert_eq!(r.rounds.len(), 2);
        assert_eq!(r.mb_per_s, 400.0, "the lower middle of an even count");
        // Stopped in the warm-up or the first: that round, as it was.
        let r = in_rounds(5, || Ok(run_at(10.0, true))).unwrap();
        assert!(r.interrupted && r.rounds.is_empty());
        let mut given = [(9.0, false), (10.0, true)].into_iter();
        let r = in_rounds(5, || Ok(given.next().map(|(v, i)| run_at(v, i)).unwrap())).unwrap();
        assert!(r.interrupted && r.rounds.is_empty() && r.mb_per_s == 10.0);
        // One round: the run as it always was, nothing more stored.
        let one = in_rounds(1, || Ok(run_at(450.0, false))).unwrap();
        assert!(one.rounds.is_empty());
        let stored = serde_json::to_value(&one).unwrap();
        assert!(stored.get("rounds").is_none(), "a single run stores as before: {stored}");
    }

    #[test]
    fn a_run_stored_before_rounds_reads_with_one_sample() {
        let mut stored = serde_json::to_value(run_at(450.0, false)).unwrap();
        stored.as_object_mut().unwrap().remove("rounds");
        let Compressed::Run(old) = Compressed::from_stored("compress", stored).unwrap() else {
            panic!("a run")
        };
        assert!(old.rounds.is_empty());
        let throughput = old.to_metrics().into_iter().find(|m| m.name == "compress_throughput");
        assert_eq!(throughput.unwrap().samples, vec![450.0]);
        assert_eq!(crate::chart::run_part(&old).headlines[0].detail, "1 worker(s)");
    }

    #[test]
    fn a_corpus_is_not_stored_and_draws_nothing() {
        let c = Compressed::Corpus { corpus: "c.tsv".into(), bytes: 3, seed: 4 };
        assert!(!c.worth_storing());
        assert!(c.parts(&topology()).is_empty());
        assert_eq!(c.text(), "wrote 3 bytes of corpus (seed 4) to c.tsv\n");
    }

    #[test]
    fn a_stored_scale_run_draws_the_report_s_section() {
        let input = crate::corpus::generate(1, 256 << 10);
        let codec = crate::codec::codec_for(Format::Lz4, 1).unwrap();
        let plan =
            ScalePlan { units: vec![1], threads: vec![1, 2], block_size: 64 << 10, rounds: 1 };
        let stop = AtomicBool::new(false);
        let r = crate::scale::run(&input, codec.as_ref(), &plan, &stop).unwrap();
        let parts = r.parts(&topology());
        assert_eq!(parts[0].id, crate::chart::CPU_SCALE.id);
        assert_eq!(parts[0].figure, crate::chart::cpu_scale(&r), "the report's own chart");
        assert!(parts[0].headlines.iter().any(|h| h.name == "single-thread compression"));
        let back =
            ScaleReport::from_stored("cpu scale", serde_json::to_value(&r).unwrap()).unwrap();
        assert_eq!(back.parts(&topology()), parts);
    }

    #[test]
    fn a_scale_run_in_rounds_compares_every_step_on_its_rounds() {
        let input = crate::corpus::generate(1, 128 << 10);
        let codec = crate::codec::codec_for(Format::Lz4, 1).unwrap();
        let plan =
            ScalePlan { units: vec![1, 2], threads: vec![1, 2], block_size: 32 << 10, rounds: 3 };
        let r = crate::scale::run(&input, codec.as_ref(), &plan, &AtomicBool::new(false)).unwrap();
        let part = &r.parts(&topology())[0];
        let metrics = r.to_metrics();
        let backing = |h: &chart::Headline| {
            let key = h.metric.as_deref().unwrap();
            metrics.iter().find(|m| m.key() == key).unwrap().clone()
        };
        // The headlines: each the median of its metric's samples, one a round.
        for h in &part.headlines {
            let m = backing(h);
            assert_eq!(m.samples.len(), 3, "{h:?}");
            let median = measure::summarize(&m.samples).unwrap().median;
            assert_eq!(h.value, format!("{} MB/s", chart::svg::fmt3(median)), "{h:?}");
            assert!(h.detail.ends_with("median of 3 rounds"), "{h:?}");
        }
        // Every step compared under its own name, whichever is the best.
        let names: Vec<&str> = part.compared.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "compression, 1 unit(s) × 1 thread(s)",
                "compression, 1 unit(s) × 2 thread(s)",
                "compression, 2 unit(s) × 1 thread(s)",
                "compression, 2 unit(s) × 2 thread(s)",
            ]
        );
        assert!(part.compared.iter().all(|h| backing(h).samples.len() == 3));
        let caption = &part.figure.as_ref().unwrap().caption;
        assert!(caption.contains("Every step ran 3 times"), "{caption}");
    }
}
