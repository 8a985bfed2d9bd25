//! `platscope compress` (seed 004's Tamp: one reader, N workers, one writer) and
//! `platscope cpu scale` (throughput against threads and units, with the verdicts). The
//! pipeline, formats, corpus and experiment are `tamp`'s.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use measure::stop;
use results::StoreOptions;
use tamp::{CompressOptions, DecompressOptions, Format, Output};
use topo::units::parse_bytes;
use topo::Topology;

use crate::output::{emit, emit_json};

#[derive(Debug, Args)]
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
    /// Uncompressed bytes per block (64KiB … 4MiB).
    #[arg(long, default_value = "256KiB", value_parser = parse_bytes)]
    pub block: u64,
    /// Output file (only with one input); default: INPUT.lz4 / INPUT.zst, or INPUT without
    /// its suffix with -d.
    #[arg(short = 'o', long, value_name = "OUT", conflicts_with = "discard")]
    pub output: Option<PathBuf>,
    /// Compress to nowhere: measure only.
    #[arg(long)]
    pub discard: bool,
    /// Write a seeded, database-like corpus of SIZE bytes to OUT instead (`--make-corpus 1GiB
    /// corpus.tsv`), about 50% smaller with lz4 and 65% with zstd -1.
    #[arg(long, num_args = 2, value_names = ["SIZE", "OUT"], conflicts_with_all = ["decompress", "output", "discard"])]
    pub make_corpus: Option<Vec<String>>,
    /// The corpus generator's seed.
    #[arg(long, default_value_t = tamp::corpus::DEFAULT_SEED)]
    pub seed: u64,
    /// Files to compress or decompress.
    #[arg(value_name = "IN", required_unless_present = "make_corpus")]
    pub inputs: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ScaleArgs {
    /// Pipelines run at once (default: 1, then 2 and 4 where the CPUs allow).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub units: Option<Vec<u64>>,
    /// Worker threads per pipeline (default: 1, 2, 4 … up to twice the CPUs).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub threads: Option<Vec<u64>>,
    /// The work: compress (the seed's Tamp on an in-memory corpus, to nowhere).
    #[arg(long, default_value = "compress", value_parser = ["compress"])]
    pub workload: String,
    /// lz4 or zstd.
    #[arg(long, default_value = "lz4")]
    pub format: Format,
    /// Compression level.
    #[arg(long, default_value_t = 1)]
    pub level: i32,
    /// Corpus bytes each unit compresses per step.
    #[arg(long, default_value = "256MiB", value_parser = parse_bytes)]
    pub size: u64,
}

fn suffix(format: Format) -> &'static str {
    match format {
        Format::Lz4 => "lz4",
        Format::Zstd => "zst",
    }
}

/// Where one input's result goes.
fn output_for(args: &CompressArgs, input: &Path) -> anyhow::Result<Output> {
    if args.discard {
        return Ok(Output::Discard);
    }
    if let Some(o) = &args.output {
        return Ok(Output::File(o.clone()));
    }
    let name = input.file_name().context("an input without a file name")?.to_owned();
    let mut out = input.to_path_buf();
    if args.decompress {
        let stripped = input.extension().is_some_and(|e| e == "lz4" || e == "zst" || e == "zstd");
        if !stripped {
            return Err(measure::UsageError::Message(format!(
                "{}: no .lz4 or .zst suffix to remove; name the output with -o",
                input.display()
            ))
            .into());
        }
        out.set_extension("");
    } else {
        let mut with = name;
        with.push(".");
        with.push(suffix(args.format.unwrap_or(Format::Lz4)));
        out.set_file_name(with);
    }
    Ok(Output::File(out))
}

pub fn run(args: &CompressArgs, json: bool, store: &StoreOptions) -> anyhow::Result<()> {
    if let Some(corpus) = &args.make_corpus {
        let [size, out] = corpus.as_slice() else {
            return Err(measure::UsageError::Message("--make-corpus takes SIZE OUT".into()).into());
        };
        let size = parse_bytes(size)?;
        return make_corpus(args.seed, size, Path::new(out));
    }
    if args.output.is_some() && args.inputs.len() > 1 {
        return Err(measure::UsageError::Message(
            "-o names one output: give one input, or leave -o out to write INPUT.lz4 beside each"
                .into(),
        )
        .into());
    }
    let block = usize::try_from(args.block).unwrap_or(usize::MAX);
    if !(64 << 10..=4 << 20).contains(&block) {
        return Err(measure::UsageError::Message(format!(
            "--block {} is outside 64KiB … 4MiB",
            args.block
        ))
        .into());
    }
    let threads = args.threads.map_or_else(tamp::online_cpus, |t| t as usize);
    let topology = Topology::detect().context("reading the topology")?;
    stop::install();
    let mut rec = super::record::recorder(store, &topology)?;
    for input in &args.inputs {
        let output = output_for(args, input)?;
        let result = if args.decompress {
            let opts = DecompressOptions { threads, format: args.format };
            tamp::decompress(input, &output, &opts, stop::flag())?
        } else {
            let format = args.format.unwrap_or(Format::Lz4);
            let opts = CompressOptions { format, level: args.level, threads, block_size: block };
            tamp::compress(input, &output, &opts, stop::flag())?
        };
        if json {
            emit_json(&result)?;
        } else {
            emit(&tamp::render::run(&result))?;
        }
        let command = if args.decompress { "compress -d" } else { "compress" };
        rec.record(command, &result, &result, result.interrupted)?;
        if result.interrupted {
            break;
        }
    }
    Ok(())
}

fn make_corpus(seed: u64, size: u64, out: &Path) -> anyhow::Result<()> {
    let dir = out.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    {
        let mut w = std::io::BufWriter::new(tmp.as_file_mut());
        tamp::corpus::write(seed, size, &mut w)
            .and_then(|()| std::io::Write::flush(&mut w))
            .with_context(|| format!("writing {}", out.display()))?;
    }
    tmp.persist(out).with_context(|| format!("writing {}", out.display()))?;
    emit(&format!("wrote {} bytes of corpus (seed {seed}) to {}\n", size, out.display()))?;
    Ok(())
}

pub fn run_scale(args: &ScaleArgs, json: bool, store: &StoreOptions) -> anyhow::Result<()> {
    let cpus = tamp::online_cpus();
    let mut plan = tamp::scale::ScalePlan::for_machine(cpus);
    if let Some(units) = &args.units {
        plan.units = units.iter().map(|&u| u as usize).collect();
    }
    if let Some(threads) = &args.threads {
        plan.threads = threads.iter().map(|&t| t as usize).collect();
    }
    let size = usize::try_from(args.size).context("--size is too large")?;
    let topology = Topology::detect().context("reading the topology")?;
    stop::install();
    let mut rec = super::record::recorder(store, &topology)?;
    let input = tamp::corpus::generate(tamp::corpus::DEFAULT_SEED, size);
    let codec = tamp::codec::codec_for(args.format, args.level)?;
    let report = tamp::scale::run(&input, codec.as_ref(), &plan, stop::flag())?;
    if json {
        emit_json(&report)?;
    } else {
        emit(&tamp::render::scale(&report))?;
    }
    rec.record("cpu scale", &report, &report, report.interrupted)?;
    Ok(())
}
