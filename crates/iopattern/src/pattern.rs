//! The tally as plain data: counts per filesystem, interval deltas, rates, the table of the DTrace
//! random-vs-sequential I/O script, and JSON. No BPF here: the in-kernel program produces
//! [`Counts`]; everything after is unit-tested with hand-built values.

use serde::Serialize;

use crate::syscalls::meta;

pub const SEQUENTIAL: usize = 0;
pub const RANDOM: usize = 1;
pub const PAGE: usize = 2;
pub const READ: usize = 0;
pub const WRITE: usize = 1;
const ROW_LABELS: [&str; 3] = ["sequential", "random", "page"];

/// Whether a read or write starting at `start` continues the previous one on the same file,
/// which ended at `previous_end` (`None`: the first seen on this file). This is the rule the
/// BPF program applies in the kernel (iopattern.bpf.c, `iop_sys_exit`): sequential when it
/// starts where the last one ended, or up to `tolerance` bytes further on; the first I/O on
/// a file is sequential when it starts at offset 0.
pub fn classify(previous_end: Option<u64>, start: u64, tolerance: u64) -> usize {
    match previous_end {
        Some(end) if start >= end && start - end <= tolerance => SEQUENTIAL,
        Some(_) => RANDOM,
        None if start == 0 => SEQUENTIAL,
        None => RANDOM,
    }
}

/// Operation and byte counts of one filesystem (cumulative, or a difference of two).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// `[sequential, random, page][read, write]` calls (page: faults and writebacks).
    pub ops: [[u64; 2]; 3],
    pub bytes: [[u64; 2]; 3],
    /// acc/look, readdir, geta/seta, cr/rm, other.
    pub meta: [u64; 5],
    /// Read and write (not page) call sizes, log2 slots: `[read, write][s]` counts calls of
    /// 2^s to 2^(s+1)-1 bytes (slot 0 also 0 bytes; the last slot everything larger).
    #[serde(skip)]
    pub size_log2: [[u64; SIZE_SLOTS]; 2],
}

/// Slots of [`Counts::size_log2`].
pub const SIZE_SLOTS: usize = 32;

impl Counts {
    pub fn add(&mut self, other: &Counts) {
        for row in 0..3 {
            for dir in 0..2 {
                self.ops[row][dir] += other.ops[row][dir];
                self.bytes[row][dir] += other.bytes[row][dir];
            }
        }
        for (m, o) in self.meta.iter_mut().zip(other.meta) {
            *m += o;
        }
        for dir in 0..2 {
            for (m, o) in self.size_log2[dir].iter_mut().zip(other.size_log2[dir]) {
                *m += o;
            }
        }
    }

    /// What happened between `earlier` and `self` (counters only grow; a counter that went
    /// back — a filesystem forgotten and seen again — counts from zero).
    pub fn since(&self, earlier: &Counts) -> Counts {
        let d = |now: u64, then: u64| if now >= then { now - then } else { now };
        let mut out = Counts::default();
        for row in 0..3 {
            for dir in 0..2 {
                out.ops[row][dir] = d(self.ops[row][dir], earlier.ops[row][dir]);
                out.bytes[row][dir] = d(self.bytes[row][dir], earlier.bytes[row][dir]);
            }
        }
        for i in 0..5 {
            out.meta[i] = d(self.meta[i], earlier.meta[i]);
        }
        for dir in 0..2 {
            for s in 0..SIZE_SLOTS {
                out.size_log2[dir][s] = d(self.size_log2[dir][s], earlier.size_log2[dir][s]);
            }
        }
        out
    }

    pub fn is_zero(&self) -> bool {
        *self == Counts::default()
    }

    /// Share of read and write bytes that were sequential (0–1), `None` without any.
    pub fn sequential_share(&self) -> Option<f64> {
        let seq: u64 = self.bytes[SEQUENTIAL].iter().sum();
        let all: u64 = seq + self.bytes[RANDOM].iter().sum::<u64>();
        (all > 0).then(|| seq as f64 / all as f64)
    }
}

/// One row of the table, per second (KB = 1024 bytes, as the original DTrace script).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rates {
    pub rd_per_s: f64,
    pub wr_per_s: f64,
    pub rd_kb_per_s: f64,
    pub wr_kb_per_s: f64,
}

impl Rates {
    /// The four rate columns of the DTrace script's table, each fitted to its width.
    fn columns(&self) -> String {
        format!(
            "{:>7} {:>7} {:>8} {:>8}",
            fit(self.rd_per_s, 7),
            fit(self.wr_per_s, 7),
            fit(self.rd_kb_per_s, 8),
            fit(self.wr_kb_per_s, 8)
        )
    }

    fn of(ops: [u64; 2], bytes: [u64; 2], seconds: f64) -> Self {
        let per_s = |v: u64| if seconds > 0.0 { v as f64 / seconds } else { 0.0 };
        Rates {
            rd_per_s: per_s(ops[READ]),
            wr_per_s: per_s(ops[WRITE]),
            rd_kb_per_s: per_s(bytes[READ]) / 1024.0,
            wr_kb_per_s: per_s(bytes[WRITE]) / 1024.0,
        }
    }
}

/// One filesystem over one interval: what is printed and serialized.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FsInterval {
    pub mount_point: String,
    pub fstype: String,
    /// major:minor.
    pub device: String,
    pub seconds: f64,
    pub sequential: Rates,
    pub random: Rates,
    pub page: Rates,
    pub total: Rates,
    /// Right column, per second, keyed by the DTrace script's labels.
    pub other_ops_per_s: Vec<(String, f64)>,
    /// The interval's raw counts.
    pub counts: Counts,
}

impl FsInterval {
    pub fn new(
        mount_point: &str,
        fstype: &str,
        device: &str,
        counts: Counts,
        seconds: f64,
    ) -> Self {
        let mut total_ops = [0u64; 2];
        let mut total_bytes = [0u64; 2];
        for row in 0..3 {
            for dir in 0..2 {
                total_ops[dir] += counts.ops[row][dir];
                total_bytes[dir] += counts.bytes[row][dir];
            }
        }
        let row = |r: usize| Rates::of(counts.ops[r], counts.bytes[r], seconds);
        let per_s = |v: u64| if seconds > 0.0 { v as f64 / seconds } else { 0.0 };
        FsInterval {
            mount_point: mount_point.to_string(),
            fstype: fstype.to_string(),
            device: device.to_string(),
            seconds,
            sequential: row(SEQUENTIAL),
            random: row(RANDOM),
            page: row(PAGE),
            total: Rates::of(total_ops, total_bytes, seconds),
            other_ops_per_s: meta::LABELS
                .iter()
                .zip(counts.meta)
                .map(|(label, n)| (label.to_string(), per_s(n)))
                .collect(),
            counts,
        }
    }

    /// The DTrace script's five-line table:
    ///
    /// ```text
    /// /u                         rd/s    wr/s   rdKB/s   wrKB/s   acc/look: 2.28871
    ///              sequential 157.036 161.446 1255.552 1118.578    readdir:       0
    /// ```
    pub fn render(&self) -> String {
        let rows = [
            (ROW_LABELS[SEQUENTIAL], &self.sequential),
            (ROW_LABELS[RANDOM], &self.random),
            (ROW_LABELS[PAGE], &self.page),
            ("TOTAL", &self.total),
        ];
        let right = |i: usize| {
            let (label, value) = &self.other_ops_per_s[i];
            format!(" {:>11} {:>7}", format!("{label}:"), fit(*value, 7))
        };
        let mut out = format!(
            "{:<23} {:>7} {:>7} {:>8} {:>8}{}\n",
            self.mount_point,
            "rd/s",
            "wr/s",
            "rdKB/s",
            "wrKB/s",
            right(0)
        );
        for (i, (label, r)) in rows.iter().enumerate() {
            out.push_str(&format!("{:>23} {}{}\n", label, r.columns(), right(i + 1)));
        }
        out
    }
}

/// A number in `width` characters with as many decimals as fit, as the DTrace script prints them
/// ("2616.20", "0.62501", "2676408"); exactly zero prints "0".
pub fn fit(value: f64, width: usize) -> String {
    if !value.is_finite() || value <= 0.0 {
        return "0".to_string();
    }
    let integer = format!("{value:.0}");
    if integer.len() + 2 > width {
        return integer;
    }
    let decimals = width - integer.len() - 1;
    let text = format!("{value:.decimals$}");
    if text.len() > width {
        // Rounding carried into a new integer digit (9.99996 → "10.0000").
        format!("{value:.prec$}", prec = decimals.saturating_sub(1))
    } else {
        text
    }
}

/// The DTrace script's two header lines ("Sample interval: 120 seconds", "End time: 2011 Mar
/// 23 10:42:20"), in local time.
pub fn render_header(seconds: f64, end_epoch_s: i64) -> String {
    let interval = if (seconds - seconds.round()).abs() < 0.0005 {
        format!("{}", seconds.round() as u64)
    } else {
        format!("{seconds:.3}")
    };
    let end = measure::time::dtrace_date(end_epoch_s).unwrap_or_else(|| format!("@{end_epoch_s}"));
    format!("Sample interval: {interval} seconds\nEnd time: {end}\n")
}

/// Counts of one file over an interval, for `--per-file`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileInterval {
    pub name: String,
    pub mount_point: String,
    pub inode: u64,
    /// `[sequential, random][read, write]`.
    pub ops: [[u64; 2]; 2],
    pub bytes: [[u64; 2]; 2],
}

impl FileInterval {
    pub fn total_bytes(&self) -> u64 {
        self.bytes.iter().flatten().sum()
    }

    pub fn sequential_share(&self) -> Option<f64> {
        let total = self.total_bytes();
        (total > 0).then(|| self.bytes[0].iter().sum::<u64>() as f64 / total as f64)
    }
}

/// The busiest files first (by bytes, then calls), at most `top`.
pub fn top_files(mut files: Vec<FileInterval>, top: usize) -> Vec<FileInterval> {
    let calls = |f: &FileInterval| f.ops.iter().flatten().sum::<u64>();
    files.retain(|f| calls(f) > 0);
    files.sort_by(|a, b| {
        b.total_bytes()
            .cmp(&a.total_bytes())
            .then(calls(b).cmp(&calls(a)))
            .then(a.name.cmp(&b.name))
    });
    files.truncate(top);
    files
}

/// The `--per-file` table.
pub fn render_files(files: &[FileInterval], seconds: f64) -> String {
    let mut out = format!(
        "{:<23} {:>7} {:>7} {:>8} {:>8} {:>5}  {}\n",
        "top files", "rd/s", "wr/s", "rdKB/s", "wrKB/s", "seq%", "mount (inode)"
    );
    for f in files {
        let sum = |dir: usize, v: &[[u64; 2]; 2]| v[0][dir] + v[1][dir];
        let r = Rates::of(
            [sum(READ, &f.ops), sum(WRITE, &f.ops)],
            [sum(READ, &f.bytes), sum(WRITE, &f.bytes)],
            seconds,
        );
        let share = f.sequential_share().map_or("-".to_string(), |s| format!("{:.1}", s * 100.0));
        let name: String = f.name.chars().take(23).collect();
        out.push_str(&format!(
            "{:<23} {} {:>5}  {} ({})\n",
            name,
            r.columns(),
            share,
            f.mount_point,
            f.inode
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_follows_the_previous_end() {
        assert_eq!(classify(None, 0, 0), SEQUENTIAL);
        assert_eq!(classify(None, 4096, 0), RANDOM);
        assert_eq!(classify(Some(8192), 8192, 0), SEQUENTIAL);
        assert_eq!(classify(Some(8192), 8193, 0), RANDOM);
        assert_eq!(classify(Some(8192), 4096, 0), RANDOM, "backwards is random");
        assert_eq!(classify(Some(8192), 8192 + 512, 512), SEQUENTIAL, "a gap within tolerance");
        assert_eq!(classify(Some(8192), 8192 + 513, 512), RANDOM);
        assert_eq!(classify(Some(8192), 8000, 512), RANDOM, "tolerance is forward only");
    }

    /// A hand-built stream of I/Os on one file, classified call by call as the kernel does.
    #[test]
    fn a_stream_of_events_tallies_like_the_kernel() {
        let events =
            [(0u64, 4096u64), (4096, 4096), (8192, 4096), (65536, 4096), (69632, 100), (0, 10)];
        let mut end = None;
        let mut counts = Counts::default();
        for (start, bytes) in events {
            let class = classify(end, start, 0);
            counts.ops[class][READ] += 1;
            counts.bytes[class][READ] += bytes;
            end = Some(start + bytes);
        }
        assert_eq!(counts.ops[SEQUENTIAL][READ], 4);
        assert_eq!(counts.ops[RANDOM][READ], 2);
        assert_eq!(counts.bytes[SEQUENTIAL][READ], 3 * 4096 + 100);
        assert_eq!(counts.bytes[RANDOM][READ], 4096 + 10);
    }

    fn counts(seq_rd: u64, rnd_wr: u64) -> Counts {
        let mut c = Counts::default();
        c.ops[SEQUENTIAL][READ] = seq_rd;
        c.bytes[SEQUENTIAL][READ] = seq_rd * 8192;
        c.ops[RANDOM][WRITE] = rnd_wr;
        c.bytes[RANDOM][WRITE] = rnd_wr * 4096;
        c.meta = [3, 0, 1, 2, 5];
        c
    }

    #[test]
    fn interval_deltas_and_rates() {
        let before = counts(100, 10);
        let after = counts(300, 50);
        let d = after.since(&before);
        assert_eq!(d.ops[SEQUENTIAL][READ], 200);
        assert_eq!(d.ops[RANDOM][WRITE], 40);
        assert_eq!(d.meta, [0; 5]);
        let fs = FsInterval::new("/u", "ext4", "7:0", d, 2.0);
        assert_eq!(fs.sequential.rd_per_s, 100.0);
        assert_eq!(fs.sequential.rd_kb_per_s, 800.0);
        assert_eq!(fs.random.wr_per_s, 20.0);
        assert_eq!(fs.random.wr_kb_per_s, 80.0);
        assert_eq!(fs.total.rd_per_s, 100.0);
        assert_eq!(fs.total.wr_per_s, 20.0);
        // A counter that went backwards (map entry recreated) counts from zero.
        assert_eq!(before.since(&after).ops[SEQUENTIAL][READ], 100);
    }

    #[test]
    fn numbers_fill_their_columns_like_the_dtrace_script() {
        assert_eq!(fit(2616.2, 7), "2616.20");
        assert_eq!(fit(0.62501, 7), "0.62501");
        assert_eq!(fit(2676408.0, 8), "2676408");
        assert_eq!(fit(160860.2, 8), "160860.2");
        assert_eq!(fit(20113.5, 7), "20113.5");
        assert_eq!(fit(0.0, 7), "0");
        assert_eq!(fit(12345678.0, 7), "12345678", "too wide: the integer, never truncated");
        assert_eq!(fit(9.999996, 7), "10.0000");
    }

    #[test]
    fn the_table_has_the_dtrace_scripts_layout() {
        let mut c = Counts::default();
        c.ops[SEQUENTIAL] = [157, 161];
        c.bytes[SEQUENTIAL] = [1_285_685, 1_145_424];
        c.meta = [2, 0, 0, 0, 5];
        let text = FsInterval::new("/u", "ext4", "7:0", c, 1.0).render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5);
        assert_eq!(
            lines[0],
            "/u                         rd/s    wr/s   rdKB/s   wrKB/s   acc/look: 2.00000"
        );
        assert_eq!(
            lines[1],
            "             sequential 157.000 161.000 1255.552 1118.578    readdir:       0"
        );
        assert!(lines[4].starts_with("                  TOTAL 157.000 161.000"), "{}", lines[4]);
        assert!(lines[4].ends_with("      other: 5.00000"), "{}", lines[4]);
        assert!(lines.iter().all(|l| l.len() == lines[0].len()));
    }

    #[test]
    fn header_names_interval_and_end() {
        let text = render_header(120.0, 1_300_000_000);
        assert!(text.starts_with("Sample interval: 120 seconds\nEnd time: 20"), "{text}");
        assert!(render_header(0.25, 0).starts_with("Sample interval: 0.250 seconds"));
    }

    #[test]
    fn top_files_are_ordered_by_bytes() {
        let file = |name: &str, bytes: u64| FileInterval {
            name: name.into(),
            mount_point: "/".into(),
            inode: 1,
            ops: [[1, 0], [0, 0]],
            bytes: [[bytes, 0], [0, 0]],
        };
        let top = top_files(vec![file("a", 10), file("b", 30), file("c", 20)], 2);
        let names: Vec<&str> = top.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["b", "c"]);
        assert_eq!(top[0].sequential_share(), Some(1.0));
    }
}
