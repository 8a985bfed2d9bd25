//! `io`: VFS reads and writes per filesystem, split into sequential, random and page (mmap
//! faults and writeback) I/O, and metadata calls by kind — from iopattern's BPF program (the
//! one `platscope io pattern` uses), loaded once when the collector is built and read at each
//! scrape. Counts are cumulative since the exporter started.
//!
//! Read and write sizes are a log2 histogram per filesystem and op
//! (`platscope_io_size_bytes`, buckets `le` = 2^(s+1) − 1, from the program's per-slot counts).
//! The sum is the bytes read or written (sequential plus random; page I/O has no call size).
//!
//! Without root or BPF the collector reports nothing, with a one-line note on stderr when it is
//! built.

use std::collections::HashMap;
use std::sync::mpsc;
use std::time::Duration;

use iopattern::mounts::KernelDev;
use iopattern::pattern::{Counts, SIZE_SLOTS};
use iopattern::syscalls::meta;
use iopattern::tracer::{trace, Options};
use measure::UsageError;

use super::{CollectError, Collector, Config};
use crate::{Family, Kind, Unit};

/// One filesystem's cumulative counts with its mount point and type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsCounts {
    pub mount_point: String,
    pub fstype: String,
    pub counts: Counts,
}

type Reply = mpsc::SyncSender<Result<Vec<FsCounts>, String>>;

/// The `io` collector.
#[derive(Debug)]
pub struct Io {
    reader: Option<mpsc::Sender<Reply>>,
}

/// Registry entry.
pub(super) fn factory(config: &Config) -> Result<Box<dyn Collector>, UsageError> {
    Ok(Box::new(Io::new(config.root.is_live())))
}

impl Io {
    /// With `bpf`, loads iopattern's program now (a note on stderr if it cannot be).
    pub fn new(bpf: bool) -> Self {
        let reader = if bpf {
            match start_reader() {
                Ok(tx) => Some(tx),
                Err(why) => {
                    measure::say!("io collector: left out ({why})");
                    None
                }
            }
        } else {
            None
        };
        Io { reader }
    }

    /// Whether the BPF program is loaded.
    pub fn is_tracing(&self) -> bool {
        self.reader.is_some()
    }
}

/// A thread holds the attached programs (they are detached when `trace` returns, and libbpf's
/// handles cannot move between threads) and answers readings until the collector is dropped.
fn start_reader() -> Result<mpsc::Sender<Reply>, String> {
    let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<(), String>>(1);
    let (tx, rx) = mpsc::channel::<Reply>();
    std::thread::Builder::new()
        .name("io-pattern-bpf".into())
        .spawn(move || {
            let ready = ready_tx.clone();
            let traced = trace(&Options::default(), move |tracer| {
                let _ = ready.send(Ok(()));
                for reply in rx {
                    let answer = tracer.snapshot(false).map_err(|e| e.to_string()).map(|snap| {
                        snap.per_fs
                            .into_iter()
                            .map(|(dev, counts)| describe(tracer.mounts(), dev, counts))
                            .collect()
                    });
                    let _ = reply.send(answer);
                }
            });
            if let Err(e) = traced {
                let _ = ready_tx.send(Err(e.to_string()));
            }
        })
        .map_err(|e| format!("starting its thread: {e}"))?;
    match ready_rx.recv_timeout(Duration::from_secs(30)) {
        Ok(Ok(())) => Ok(tx),
        Ok(Err(why)) => Err(why),
        Err(_) => Err("the BPF program did not load within 30 s".into()),
    }
}

fn describe(mounts: &iopattern::mounts::MountTable, dev: KernelDev, counts: Counts) -> FsCounts {
    match mounts.mount_of(dev) {
        Some(m) => {
            FsCounts { mount_point: m.mount_point.clone(), fstype: m.fstype.clone(), counts }
        }
        None => FsCounts {
            mount_point: format!("dev {}:{}", dev >> 20, dev & 0xf_ffff),
            fstype: String::new(),
            counts,
        },
    }
}

impl Collector for Io {
    fn name(&self) -> &'static str {
        "io"
    }

    fn collect(&self, out: &mut Vec<Family>) -> Result<(), CollectError> {
        let Some(reader) = &self.reader else { return Ok(()) };
        let fail = |message: String| CollectError { collector: "io", message };
        let (reply, answer) = mpsc::sync_channel(1);
        reader.send(reply).map_err(|_| fail("the BPF reader thread has stopped".into()))?;
        let per_fs = answer
            .recv_timeout(Duration::from_secs(5))
            .map_err(|_| fail("the BPF reader did not answer within 5 s".into()))?
            .map_err(fail)?;
        out.extend(families(&per_fs));
        Ok(())
    }
}

/// The families for per-filesystem counts (a filesystem seen twice under one mount point —
/// bind mounts — is summed).
pub fn families(per_fs: &[FsCounts]) -> Vec<Family> {
    let mut merged: HashMap<(&str, &str), Counts> = HashMap::new();
    for fs in per_fs {
        merged.entry((&fs.mount_point, &fs.fstype)).or_default().add(&fs.counts);
    }
    let mut keys: Vec<_> = merged.keys().copied().collect();
    keys.sort();
    let mut ops = Family::new(
        "platscope_io_operations",
        Kind::Counter,
        None,
        "VFS reads and writes (page: mmap page-ins and writebacks) by access pattern.",
    );
    let mut bytes = Family::new(
        "platscope_io_bytes",
        Kind::Counter,
        Some(Unit::Bytes),
        "Bytes read and written through the VFS by access pattern.",
    );
    let mut metadata = Family::new(
        "platscope_io_metadata_operations",
        Kind::Counter,
        None,
        "Metadata calls: lookup/access, readdir, getattr/setattr, create/remove, other.",
    );
    const PATTERNS: [&str; 3] = ["sequential", "random", "page"];
    const OPS: [&str; 2] = ["read", "write"];
    const META: [&str; 5] = ["lookup", "readdir", "attr", "create_remove", "other"];
    debug_assert_eq!(META.len(), meta::LABELS.len());
    for &key in &keys {
        let (mount_point, fstype) = key;
        let c = &merged[&key];
        for (p, pattern) in PATTERNS.iter().enumerate() {
            for (o, op) in OPS.iter().enumerate() {
                let labels = [
                    ("mountpoint", mount_point),
                    ("fstype", fstype),
                    ("pattern", *pattern),
                    ("op", *op),
                ];
                ops.push(&labels, c.ops[p][o] as f64);
                bytes.push(&labels, c.bytes[p][o] as f64);
            }
        }
        for (i, kind) in META.iter().enumerate() {
            metadata.push(
                &[("mountpoint", mount_point), ("fstype", fstype), ("kind", *kind)],
                c.meta[i] as f64,
            );
        }
    }
    let mut sizes = Family::new(
        "platscope_io_size_bytes",
        Kind::Histogram,
        Some(Unit::Bytes),
        "Sizes of VFS read and write calls (log2 buckets).",
    );
    for &(mount_point, fstype) in &keys {
        let c = &merged[&(mount_point, fstype)];
        for (o, op) in OPS.iter().enumerate() {
            sizes.push_histogram(
                &[("mountpoint", mount_point), ("fstype", fstype), ("op", *op)],
                size_buckets(&c.size_log2[o]),
                (c.bytes[0][o] + c.bytes[1][o]) as f64,
            );
        }
    }
    vec![ops, bytes, metadata, sizes]
}

/// Per-slot counts as histogram buckets: slot s has upper bound 2^(s+1) − 1. The last slot
/// (2^31 bytes and more) cannot fill: Linux moves at most 2^31 − 4096 bytes per call.
fn size_buckets(slots: &[u64; SIZE_SLOTS]) -> Vec<(f64, u64)> {
    slots.iter().enumerate().map(|(s, &n)| (((1u64 << (s + 1)) - 1) as f64, n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Value;
    use test_tier::live;

    #[test]
    fn per_pattern_and_op_and_bind_mounts_summed() {
        let mut counts = Counts::default();
        counts.ops[1][0] = 3; // random reads
        counts.bytes[1][0] = 12288;
        counts.meta[1] = 2;
        let fs = |c| FsCounts { mount_point: "/data".into(), fstype: "ext4".into(), counts: c };
        let fams = families(&[fs(counts), fs(counts)]);
        let find = |name: &str, labels: &[(&str, &str)]| {
            let want = crate::Labels::new(labels);
            let f = fams.iter().find(|f| f.name == name).unwrap();
            match f.samples.iter().find(|s| s.labels == want).map(|s| &s.value) {
                Some(Value::Number(v)) => *v,
                other => panic!("{name} {labels:?}: {other:?}"),
            }
        };
        let random_read =
            [("mountpoint", "/data"), ("fstype", "ext4"), ("pattern", "random"), ("op", "read")];
        assert_eq!(find("platscope_io_operations", &random_read), 6.0);
        assert_eq!(find("platscope_io_bytes", &random_read), 24576.0);
        let readdir = [("mountpoint", "/data"), ("fstype", "ext4"), ("kind", "readdir")];
        assert_eq!(find("platscope_io_metadata_operations", &readdir), 4.0);
        assert_eq!(fams[0].samples.len(), 6);
    }

    #[test]
    fn sizes_are_log2_buckets() {
        let mut counts = Counts::default();
        counts.size_log2[0][12] = 3; // three 4 KiB reads
        counts.size_log2[1][0] = 1; // one 1-byte write
        counts.bytes[1][0] = 12288;
        let fs = FsCounts { mount_point: "/".into(), fstype: "ext4".into(), counts };
        let fams = families(&[fs]);
        let sizes = fams.iter().find(|f| f.name == "platscope_io_size_bytes").unwrap();
        assert_eq!(sizes.kind, Kind::Histogram);
        let Value::Histogram { buckets, sum } = &sizes.samples[0].value else { panic!() };
        assert_eq!(buckets.len(), 32);
        assert_eq!(buckets[12], (8191.0, 3));
        assert_eq!(*sum, 12288.0);
        let text = crate::render(&fams, crate::Format::Text004);
        assert!(
            text.contains(
                "platscope_io_size_bytes_bucket{mountpoint=\"/\",fstype=\"ext4\",op=\"read\",le=\"8191.0\"} 3"
            ),
            "{text}"
        );
    }

    #[live("loads iopattern's BPF program (root)")]
    fn counts_a_file_written_and_read() {
        let io = Io::new(true);
        assert!(io.is_tracing(), "BPF did not load (see the note above; run as root)");
        let dir = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
        let path = dir.path().join("f");
        // Another process: the program leaves the exporter's own I/O out.
        let status = std::process::Command::new("dd")
            .arg("if=/dev/zero")
            .arg(format!("of={}", path.display()))
            .args(["bs=64k", "count=16", "status=none"])
            .status()
            .unwrap();
        assert!(status.success());
        let mut out = Vec::new();
        io.collect(&mut out).unwrap();
        let bytes = out.iter().find(|f| f.name == "platscope_io_bytes").unwrap();
        let written: f64 = bytes
            .samples
            .iter()
            .filter(|s| s.labels.get("op").as_deref() == Some("write"))
            .map(|s| match s.value {
                Value::Number(v) => v,
                Value::Histogram { .. } => 0.0,
            })
            .sum();
        assert!(written >= f64::from(1u32 << 20), "{written} bytes written counted");
        // dd wrote 16 calls of 64 KiB: the 64 KiB – 128 KiB slot of some filesystem has them.
        let sizes = out.iter().find(|f| f.name == "platscope_io_size_bytes").unwrap();
        let in_slot: u64 = sizes
            .samples
            .iter()
            .filter(|s| s.labels.get("op").as_deref() == Some("write"))
            .filter_map(|s| match &s.value {
                Value::Histogram { buckets, .. } => {
                    buckets.iter().find(|(upper, _)| *upper == 131_071.0).map(|(_, n)| *n)
                }
                Value::Number(_) => None,
            })
            .sum();
        assert!(in_slot >= 16, "{in_slot} writes of 64 KiB to 128 KiB counted");
    }
}
