//! A tiny driver for bench/compress_tools.sh until `platscope compress` is wired:
//!   tamp compress|decompress [-t N] [--format lz4|zstd] [--level L] [--block BYTES] [--json]
//!        IN (-o OUT | --discard)
//!   tamp corpus SEED SIZE OUT
//!   tamp scale [--format F] [--level L] [--size BYTES] [--units 1,2] [--threads 1,2,4] [--json]
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use tamp::{CompressOptions, DecompressOptions, Output};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tamp: {e}");
            ExitCode::from(1)
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().ok_or("usage: tamp compress|decompress|corpus ...")?.clone();
    if mode == "corpus" {
        let [seed, size, out] = &args[1..] else {
            return Err("usage: tamp corpus SEED SIZE OUT".into());
        };
        let mut f = std::io::BufWriter::new(std::fs::File::create(out)?);
        tamp::corpus::write(seed.parse()?, size.parse()?, &mut f)?;
        return Ok(());
    }
    if mode == "scale" {
        return scale(&args[1..]);
    }
    let (mut copts, mut dopts) = (CompressOptions::default(), DecompressOptions::default());
    let (mut input, mut output, mut json) = (None, None, false);
    let mut it = args[1..].iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "-t" => {
                copts.threads = val()?.parse()?;
                dopts.threads = copts.threads;
            }
            "--format" => {
                copts.format = val()?.parse()?;
                dopts.format = Some(copts.format);
            }
            "--level" => copts.level = val()?.parse()?,
            "--block" => copts.block_size = val()?.parse()?,
            "-o" => output = Some(Output::File(PathBuf::from(val()?))),
            "--discard" => output = Some(Output::Discard),
            "--json" => json = true,
            _ => input = Some(PathBuf::from(a)),
        }
    }
    let input = input.ok_or("give an input file")?;
    let output = output.ok_or("give -o OUT or --discard")?;
    let stop = AtomicBool::new(false);
    let r = match mode.as_str() {
        "compress" => tamp::compress(&input, &output, &copts, &stop)?,
        "decompress" => tamp::decompress(&input, &output, &dopts, &stop)?,
        _ => return Err(format!("unknown mode {mode}").into()),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", tamp::render::run(&r));
    }
    Ok(())
}

fn list(s: &str) -> Result<Vec<usize>, std::num::ParseIntError> {
    s.split(',').map(str::parse).collect()
}

fn scale(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let mut plan = tamp::scale::ScalePlan::for_machine(tamp::online_cpus());
    let (mut format, mut level, mut size, mut json) = (tamp::Format::Lz4, 1, 256usize << 20, false);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--format" => format = val()?.parse()?,
            "--level" => level = val()?.parse()?,
            "--size" => size = val()?.parse()?,
            "--units" => plan.units = list(val()?)?,
            "--threads" => plan.threads = list(val()?)?,
            "--json" => json = true,
            _ => return Err(format!("unknown argument {a}").into()),
        }
    }
    let input = tamp::corpus::generate(tamp::corpus::DEFAULT_SEED, size);
    let codec = tamp::codec::codec_for(format, level)?;
    let r = tamp::scale::run(&input, codec.as_ref(), &plan, &AtomicBool::new(false))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", tamp::render::scale(&r));
    }
    Ok(())
}
