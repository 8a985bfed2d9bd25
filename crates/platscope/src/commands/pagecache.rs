//! `platscope pagecache FILE...`: where each file's page cache is (pages per node), and
//! moving it: evict, load under a policy, read it from each node's CPUs.
//!
//! Each file is handled on its own: a file that fails gets one error line and the others are
//! still processed; the command exits 1 at the end if any failed. Options that are wrong for
//! every file (an unknown node) stop it before any file is touched (exit 2).

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use measure::stop;
use place::pagecache::{compare_reads, home_node, CacheFile, FileReport, NodeRead, PageCacheError};
use place::{lists, pin, MemPolicy};
use serde::Serialize;
use topo::Topology;

use crate::output::{emit, emit_json};
use results::StoreOptions;

#[derive(Debug, Args)]
pub struct PagecacheArgs {
    /// Regular files to inspect; directories, devices, FIFOs and sockets are refused without
    /// being opened.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Read each file (1 MiB reads) from a CPU of each of these nodes and report GB/s and the
    /// local/remote ratio (numactl list syntax: 0-1, all).
    #[arg(long, value_name = "NODES")]
    pub read_from: Option<String>,
    /// Timed passes per --read-from node; the median is reported.
    #[arg(long, default_value_t = 3, requires = "read_from",
          value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub passes: u64,
    /// Read each file through so that it is cached, on a thread with the memory policy of
    /// --interleave or --membind (default: this process's). Already-cached pages stay put:
    /// add --evict to place them all.
    #[arg(long)]
    pub load: bool,
    /// With --load: spread the file's cached pages round-robin over these nodes.
    #[arg(long, value_name = "NODES", requires = "load", conflicts_with = "membind")]
    pub interleave: Option<String>,
    /// With --load: cache the file's pages only on these nodes.
    #[arg(long, value_name = "NODES", requires = "load")]
    pub membind: Option<String>,
    /// Drop each file from the page cache first: fdatasync (so dirty pages can go), then
    /// posix_fadvise(DONTNEED). Reports the pages cached before and after.
    #[arg(long)]
    pub evict: bool,
}

/// One file's outcome in `--json` output.
#[derive(Debug, Serialize)]
struct Entry {
    file: String,
    ok: bool,
    result: Option<FileReport>,
    error: Option<String>,
}

/// A file failed: a runtime failure (exit 1), whatever the underlying error.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
struct FilesFailed {
    message: String,
}

pub fn run(args: &PagecacheArgs, json: bool, store: &StoreOptions) -> anyhow::Result<()> {
    let topology = Topology::detect().context("reading the topology")?;
    let mut rec = super::record::recorder(store, &topology)?;
    let policy = match (&args.interleave, &args.membind) {
        (Some(list), _) => MemPolicy::Interleave(lists::parse_memory_nodes(list, &topology)?),
        (_, Some(list)) => MemPolicy::Bind(lists::parse_memory_nodes(list, &topology)?),
        _ => MemPolicy::Inherit,
    };
    let readers = match &args.read_from {
        Some(list) => reader_cpus(&lists::parse_cpu_nodes(list, &topology)?, &topology)?,
        None => Vec::new(),
    };
    stop::install();

    let total = args.files.len();
    let mut entries = Vec::new();
    let mut failed = 0usize;
    // Every failure but the last is printed when it happens; the last becomes the command's
    // error, so each failed file gives exactly one line.
    let mut pending: Option<String> = None;
    let mut first = true;
    for path in &args.files {
        if stop::requested() {
            let _ = emit("interrupted: the files above were done\n");
            break;
        }
        match process(path, args, &policy, &readers) {
            Ok(report) => {
                if !json {
                    let sep = if first { "" } else { "\n" };
                    emit(&format!("{sep}{}", place::render_pagecache::file_text(&report)))?;
                    first = false;
                }
                entries.push(Entry {
                    file: path.display().to_string(),
                    ok: true,
                    result: Some(report),
                    error: None,
                });
            }
            Err(err) => {
                failed += 1;
                let message = err.to_string();
                if let Some(previous) = pending.replace(message.clone()) {
                    measure::say!("platscope: {previous}");
                }
                entries.push(Entry {
                    file: path.display().to_string(),
                    ok: false,
                    result: None,
                    error: Some(message),
                });
            }
        }
    }
    if json {
        emit_json(&entries)?;
    }
    let measured: Vec<&place::pagecache::FileReport> =
        entries.iter().filter_map(|e| e.result.as_ref()).collect();
    if !measured.is_empty() {
        rec.record("pagecache", &entries, &measured, stop::requested())?;
    }
    match pending {
        None => Ok(()),
        Some(message) if failed == 1 && total == 1 => Err(FilesFailed { message }.into()),
        Some(message) => {
            Err(FilesFailed { message: format!("{message} ({failed} of {total} files failed)") }
                .into())
        }
    }
}

/// One CPU per node to read from: the first of the node's CPUs this process may run on.
fn reader_cpus(nodes: &[u32], topology: &Topology) -> anyhow::Result<Vec<(u32, u32)>> {
    let allowed = pin::affinity(0)?;
    nodes
        .iter()
        .map(|&node| {
            let cpus = lists::cpus_of_nodes(&[node], topology);
            cpus.iter().copied().find(|c| allowed.contains(c)).map(|cpu| (node, cpu)).ok_or_else(
                || {
                    anyhow::anyhow!(
                        "--read-from {node}: none of node {node}'s CPUs ({}) is in this process's CPU affinity ({})",
                        topo::idlist::format(&cpus),
                        topo::idlist::format(&allowed)
                    )
                },
            )
        })
        .collect()
}

/// Evict, load, look, read: in that order, so the residency shown is the one the reads saw.
fn process(
    path: &Path,
    args: &PagecacheArgs,
    policy: &MemPolicy,
    readers: &[(u32, u32)],
) -> Result<FileReport, PageCacheError> {
    let file = CacheFile::open(path)?;
    let evict = if args.evict { Some(file.evict()?) } else { None };
    let load = match args.load {
        true => {
            let bar = measure::progress::counter(0, "bytes loaded");
            let load = file.load(policy, &bar);
            bar.finish_and_clear();
            Some(load?)
        }
        false => None,
    };
    let residency = file.residency()?;
    let home = home_node(&residency);
    let mut reads = Vec::with_capacity(readers.len());
    for &(node, cpu) in readers {
        let read = file.read_from(cpu, args.passes as usize)?;
        reads.push(NodeRead {
            node,
            local_percent: residency.percent_on(node),
            vs_home: None,
            read,
        });
    }
    compare_reads(&mut reads, home);
    Ok(FileReport { path: residency.path.clone(), evict, load, residency, home_node: home, reads })
}
