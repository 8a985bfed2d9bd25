//! `platscope pagecache FILE...`: where each file's page cache is (pages per node), and
//! moving it: evict, load under a policy, read it from each node's CPUs.
//!
//! Each file is handled on its own: a file that fails gets one error line and the others are
//! still processed; what was measured is stored and printed, then the command exits 1 if any
//! file failed ([`Outcome::failure`]). Options that are wrong for every file (an unknown node)
//! stop it before any file is touched (exit 2).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use chart::svg::{esc, fmt3};
use chart::{Area, Figure, Headline, Part, Section};
use experiment::{Context, Experiment, Outcome};
use measure::{Classified, Metric, ToMetrics, WorkerPlacement};
use serde::{Deserialize, Serialize};
use topo::Topology;

use crate::pagecache::{compare_reads, home_node, CacheFile, FileReport, NodeRead, PageCacheError};
use crate::render_pagecache::file_text;
use crate::{lists, pin, MemPolicy};

/// Where a file's page cache is, per NUMA node; load it under a policy, evict it, and read
/// it from each node's CPUs.
#[derive(Debug, clap::Args)]
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

/// `platscope pagecache`.
#[derive(Debug)]
pub struct Pagecache;

/// One file's outcome: its report, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileEntry {
    pub file: String,
    pub ok: bool,
    pub result: Option<FileReport>,
    pub error: Option<String>,
}

/// Every file of one run, in the order given (stored, and printed by `--json`, as the list).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PagecacheRun {
    pub files: Vec<FileEntry>,
    /// Ctrl-C or SIGTERM stopped it before every file was done.
    #[serde(skip)]
    pub interrupted: bool,
    /// The line the command ends with when files failed (not stored: each failed entry keeps
    /// its own error).
    #[serde(skip)]
    pub failed: Option<String>,
}

impl PagecacheRun {
    /// The files that were measured.
    pub fn reports(&self) -> impl Iterator<Item = &FileReport> {
        self.files.iter().filter_map(|e| e.result.as_ref())
    }
}

impl Experiment for Pagecache {
    const PATH: &'static [&'static str] = &["pagecache"];
    const ABOUT: &'static str = "Where a file's page cache is, per NUMA node; load it under a \
                                 policy, evict it, and read it from each node's CPUs";
    const TINY: &'static [&'static str] = &["{file}"];
    type Args = PagecacheArgs;
    type Outcome = PagecacheRun;

    fn run(args: &PagecacheArgs, ctx: &mut Context<'_>) -> Result<PagecacheRun, Classified> {
        let topology = ctx.topology;
        let policy = match (&args.interleave, &args.membind) {
            (Some(list), _) => MemPolicy::Interleave(lists::parse_memory_nodes(list, topology)?),
            (_, Some(list)) => MemPolicy::Bind(lists::parse_memory_nodes(list, topology)?),
            _ => MemPolicy::Inherit,
        };
        let readers = match &args.read_from {
            Some(list) => reader_cpus(&lists::parse_cpu_nodes(list, topology)?, topology)?,
            None => Vec::new(),
        };
        let total = args.files.len();
        let mut run = PagecacheRun { files: Vec::new(), interrupted: false, failed: None };
        let mut failed = 0usize;
        // Every failure but the last is said when it happens; the last becomes the command's
        // error, so each failed file gives exactly one line.
        let mut pending: Option<String> = None;
        for path in &args.files {
            if ctx.stopped() {
                run.interrupted = true;
                ctx.live(INTERRUPTED)?;
                break;
            }
            let file = path.display().to_string();
            match process(path, args, &policy, &readers, ctx) {
                Ok(report) => {
                    let sep = if run.reports().next().is_some() { "\n" } else { "" };
                    ctx.live(&format!("{sep}{}", file_text(&report)))?;
                    run.files.push(FileEntry { file, ok: true, result: Some(report), error: None });
                }
                Err(err) => {
                    failed += 1;
                    let message = err.to_string();
                    if let Some(previous) = pending.replace(message.clone()) {
                        measure::say!("platscope: {previous}");
                    }
                    run.files.push(FileEntry {
                        file,
                        ok: false,
                        result: None,
                        error: Some(message),
                    });
                }
            }
        }
        run.failed = pending.map(|message| match (failed, total) {
            (1, 1) => message,
            _ => format!("{message} ({failed} of {total} files failed)"),
        });
        Ok(run)
    }
}

/// What the text says when a stop ended the run before every file was done.
const INTERRUPTED: &str = "interrupted: the files above were done\n";

/// One CPU per node to read from: the first of the node's CPUs this process may run on.
fn reader_cpus(nodes: &[u32], topology: &Topology) -> Result<Vec<(u32, u32)>, Classified> {
    let allowed = pin::affinity(0)?;
    nodes
        .iter()
        .map(|&node| {
            let cpus = lists::cpus_of_nodes(&[node], topology);
            let cpu = cpus.iter().copied().find(|c| allowed.contains(c));
            cpu.map(|cpu| (node, cpu)).ok_or_else(|| {
                Classified::runtime(format!(
                    "--read-from {node}: none of node {node}'s CPUs ({}) is in this process's CPU \
                     affinity ({})",
                    topo::idlist::format(&cpus),
                    topo::idlist::format(&allowed)
                ))
            })
        })
        .collect()
}

/// Evict, load, look, read: in that order, so the residency shown is the one the reads saw.
fn process(
    path: &Path,
    args: &PagecacheArgs,
    policy: &MemPolicy,
    readers: &[(u32, u32)],
    ctx: &Context<'_>,
) -> Result<FileReport, PageCacheError> {
    let file = CacheFile::open(path)?;
    let evict = if args.evict { Some(file.evict()?) } else { None };
    let load = match args.load {
        true => {
            let bar = ctx.progress(0, "bytes loaded");
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
        let read = file.read_from(cpu, usize::try_from(args.passes).unwrap_or(usize::MAX))?;
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

impl ToMetrics for PagecacheRun {
    fn to_metrics(&self) -> Vec<Metric> {
        self.reports().flat_map(ToMetrics::to_metrics).collect()
    }

    fn placements(&self) -> Vec<WorkerPlacement> {
        self.reports().flat_map(ToMetrics::placements).collect()
    }
}

impl Outcome for PagecacheRun {
    const KINDS: &'static [&'static str] = &["pagecache"];

    fn interrupted(&self) -> bool {
        self.interrupted
    }

    fn worth_storing(&self) -> bool {
        self.reports().next().is_some()
    }

    /// Each measured file's report, a blank line between them (as they were printed when
    /// each was done).
    fn text(&self) -> String {
        let mut text = self.reports().map(file_text).collect::<Vec<_>>().join("\n");
        if self.interrupted {
            text.push_str(INTERRUPTED);
        }
        text
    }

    fn failure(&self) -> Option<Classified> {
        self.failed.as_ref().map(|message| Classified::runtime(message.clone()))
    }

    fn parts(&self, topology: &Topology) -> Vec<Part> {
        vec![pages_per_node(self, topology)]
    }
}

/// The report part: a table of each file's cached pages per NUMA node.
/// `pagecache`'s section: the file's cached pages on each node.
pub const PAGECACHE: Section =
    Section { area: Area::Memory, id: "chart-pagecache", title: "Page cache per node", wide: true };

fn pages_per_node(run: &PagecacheRun, topology: &Topology) -> Part {
    let mut part = PAGECACHE.part(None);
    for entry in run.files.iter().filter(|e| !e.ok) {
        let why = entry.error.as_deref().unwrap_or("failed");
        part.notes.push(format!("{}: not measured ({why})", entry.file));
    }
    let reports: Vec<&FileReport> = run.reports().collect();
    if reports.is_empty() {
        return part;
    }
    // Every node with memory, and any other a page was found on.
    let mut nodes: Vec<u32> =
        topology.nodes.iter().filter(|n| n.total_bytes > 0).map(|n| n.id).collect();
    nodes.extend(reports.iter().flat_map(|r| r.residency.nodes.iter().map(|n| n.node)));
    nodes.sort_unstable();
    nodes.dedup();

    let mut table = String::from(
        "<table class=\"facts-table\"><thead><tr><th>file</th><th>pages</th><th>cached</th>",
    );
    for node in &nodes {
        let _ = write!(table, "<th>node {node}</th>");
    }
    table.push_str("<th>home</th></tr></thead><tbody>");
    for r in &reports {
        let res = &r.residency;
        let _ = write!(
            table,
            "<tr><td>{}</td><td class=\"data\" data-value=\"{}\">{}</td>\
             <td class=\"data\" data-value=\"{}\">{}%</td>",
            esc(&r.path),
            res.pages,
            res.pages,
            res.percent_cached,
            fmt3(res.percent_cached)
        );
        for &node in &nodes {
            let pages = res.pages_on(node);
            let _ = write!(table, "<td class=\"data\" data-value=\"{pages}\">{pages}</td>");
        }
        let home = r.home_node.map_or("–".to_string(), |n| format!("node {n}"));
        let _ = write!(table, "<td>{home}</td></tr>");
    }
    table.push_str("</tbody></table>");
    let page_bytes = reports.first().map_or(0, |r| r.residency.page_bytes);
    let caption = format!(
        "Cached pages of each file by the NUMA node holding them ({} pages, from mincore and \
         move_pages)",
        esc(&topo::units::format_bytes(page_bytes))
    );
    part.figure = Some(Figure { svg: table, caption, after: String::new() });

    let (pages, resident): (u64, u64) =
        reports.iter().fold((0, 0), |(p, c), r| (p + r.residency.pages, c + r.residency.resident));
    part.headlines.push(Headline {
        name: "page cache".into(),
        value: format!("{}% cached", fmt3(crate::pagecache::percent(resident, pages))),
        detail: format!("{resident} of {pages} pages in {} file(s)", reports.len()),
        metric: None,
    });
    for r in &reports {
        for read in &r.reads {
            part.headlines.push(Headline {
                name: format!("read from node {}", read.node),
                value: format!("{} GB/s", fmt3(read.read.gbps)),
                detail: esc(&r.path),
                metric: Some(format!(
                    "{}{{file={},node={}}}",
                    crate::pagecache::PAGECACHE_READ,
                    r.path,
                    read.node
                )),
            });
        }
    }
    part
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pagecache::{Backing, NodeShare, Residency};

    fn report(path: &str, nodes: &[(u32, u64)]) -> FileReport {
        let resident: u64 = nodes.iter().map(|n| n.1).sum();
        FileReport {
            path: path.into(),
            evict: None,
            load: None,
            residency: Residency {
                path: path.into(),
                filesystem: "ext4".into(),
                backing: Backing::PageCache,
                bytes: 4096 * 100,
                page_bytes: 4096,
                pages: 100,
                resident,
                percent_cached: resident as f64,
                nodes: nodes
                    .iter()
                    .map(|&(node, pages)| NodeShare {
                        node,
                        pages,
                        percent_of_cached: 100.0 * pages as f64 / resident as f64,
                        percent_of_file: pages as f64,
                    })
                    .collect(),
                unlocated: 0,
            },
            home_node: nodes.first().map(|n| n.0),
            reads: Vec::new(),
        }
    }

    fn run() -> PagecacheRun {
        PagecacheRun {
            files: vec![
                FileEntry {
                    file: "/a".into(),
                    ok: true,
                    result: Some(report("/a", &[(0, 60), (1, 20)])),
                    error: None,
                },
                FileEntry {
                    file: "/b".into(),
                    ok: false,
                    result: None,
                    error: Some("/b: no such file".into()),
                },
            ],
            interrupted: false,
            failed: Some("/b: no such file".into()),
        }
    }

    #[test]
    fn stored_as_the_list_of_files_and_read_back_the_same() {
        let r = run();
        let json = serde_json::to_value(&r).unwrap();
        assert!(json.is_array(), "{json}");
        assert_eq!(json[1]["error"], "/b: no such file");
        let back = PagecacheRun::from_stored("pagecache", json).unwrap();
        assert_eq!(back.files, r.files);
        assert!(back.failure().is_none(), "the failure line is the live run's, not stored");
        let topology = Topology::from_synthetic("pack:2 [numa(memory=1GiB)] core:1 pu:1").unwrap();
        assert_eq!(back.parts(&topology), r.parts(&topology));
    }

    #[test]
    fn the_part_has_pages_per_node_per_file_and_says_what_failed() {
        let topology = Topology::from_synthetic("pack:2 [numa(memory=1GiB)] core:1 pu:1").unwrap();
        let part = &run().parts(&topology)[0];
        assert_eq!((part.area, part.id.as_str()), (Area::Memory, PAGECACHE.id));
        let table = &part.figure.as_ref().unwrap().svg;
        assert!(table.contains("<th>node 0</th><th>node 1</th>"), "{table}");
        assert!(
            table.contains("data-value=\"60\">60</td><td class=\"data\" data-value=\"20\">20</td>"),
            "{table}"
        );
        assert_eq!(part.notes, ["/b: not measured (/b: no such file)"]);
        assert_eq!(part.headlines[0].value, "80.0% cached");
    }

    #[test]
    fn a_run_with_nothing_measured_is_not_stored_and_fails() {
        let r = PagecacheRun {
            files: vec![FileEntry {
                file: "/b".into(),
                ok: false,
                result: None,
                error: Some("x".into()),
            }],
            interrupted: false,
            failed: Some("x".into()),
        };
        assert!(!r.worth_storing());
        assert_eq!(r.text(), "");
        let e = r.failure().unwrap();
        assert!(!e.is_usage());
        assert_eq!(e.to_string(), "x");
        assert!(r.to_metrics().is_empty());
    }
}
