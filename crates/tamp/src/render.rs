//! Text renderers: plain `String`s (write them wherever you like; JSON comes from `serde`).

use std::fmt::Write as _;

use crate::scale::ScaleReport;
use crate::{Operation, RunResult};

fn mib(b: u64) -> String {
    let b = b as f64;
    if b >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} GiB", b / (1024.0 * 1024.0 * 1024.0))
    } else if b >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    } else if b >= 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{b} B")
    }
}

/// One compress or decompress run: sizes, speed, CPU, each thread's busy share, the verdict.
pub fn run(r: &RunResult) -> String {
    let mut s = String::new();
    let op = match r.operation {
        Operation::Compress => "compress",
        Operation::Decompress => "decompress",
    };
    let level = r.level.map_or(String::new(), |l| format!(" -{l}"));
    let _ = writeln!(
        s,
        "{op} {}{level}: {} → {} ({}){}",
        r.format,
        r.input,
        r.output.as_deref().unwrap_or("(discarded)"),
        if r.parallel { format!("{} worker(s)", r.threads) } else { "one thread".into() },
        if r.interrupted { " — INTERRUPTED, no output kept" } else { "" },
    );
    if let Some(why) = &r.serial_reason {
        let _ = writeln!(s, "  decoded on one thread: {why}");
    }
    let _ = writeln!(
        s,
        "  in {}  out {}  ratio {:.3} ({:.1}% smaller)  {} blocks",
        mib(r.bytes_in),
        mib(r.bytes_out),
        r.ratio,
        (1.0 - r.ratio) * 100.0,
        r.blocks
    );
    let _ = writeln!(
        s,
        "  wall {:.3} s  {:.0} MB/s (uncompressed, 10^6 B)  CPU user {:.3} s sys {:.3} s = {:.0}% of {} CPUs{}",
        r.wall_s,
        r.mb_per_s,
        r.cpu_user_s,
        r.cpu_sys_s,
        r.cpu_share * 100.0,
        r.online_cpus,
        r.machine_cpu_share.map_or(String::new(), |m| format!(
            "; machine {:.0}% busy, {} CPU(s) ≥ 90%",
            m * 100.0,
            r.cpus_busy.unwrap_or(0)
        )),
    );
    if r.rounds.len() > 1 {
        let speeds: Vec<String> = r.rounds.iter().map(|x| format!("{:.0}", x.mb_per_s)).collect();
        let _ = writeln!(
            s,
            "  {} rounds, MB/s each: {}; the figures here are the median round's",
            r.rounds.len(),
            speeds.join(" ")
        );
    }
    let _ = writeln!(s, "  {:<10} {:>8} {:>8} {:>8}", "thread", "wall s", "busy", "cpu");
    for t in &r.thread_busy {
        let _ = writeln!(
            s,
            "  {:<10} {:>8.3} {:>7.0}% {:>7.0}%",
            t.role,
            t.wall_s,
            t.busy_share * 100.0,
            t.cpu_share * 100.0
        );
    }
    let _ = writeln!(s, "  verdict: {} — {}", r.verdict.name(), r.verdict_reason);
    s
}

/// The scale experiment: one row per step, then the summary.
pub fn scale(r: &ScaleReport) -> String {
    let mut s = String::new();
    let level = r.level.map_or(String::new(), |l| format!(" -{l}"));
    let rounds = r.steps.iter().map(|x| x.rounds_mb_per_s.len()).max().unwrap_or(0);
    let _ = writeln!(
        s,
        "cpu scale: {}{level}, {} per unit from memory to nowhere, {} blocks{}{}",
        r.codec,
        mib(r.input_bytes),
        mib(r.block_size as u64),
        if rounds > 1 { format!(", median of {rounds} rounds") } else { String::new() },
        if r.interrupted { " — INTERRUPTED" } else { "" }
    );
    let _ = writeln!(
        s,
        "{:>5} {:>7} {:>9} {:>7} {:>6} {:>7} {:>6} {:>9} {:>8}  verdict",
        "units", "threads", "MB/s", "speedup", "reader", "workers", "writer", "CPUs≥90%", "machine"
    );
    let base = r.steps.iter().find(|x| x.units == 1 && x.threads == 1).map(|x| x.mb_per_s);
    for x in &r.steps {
        let (busy, machine) = x.machine.as_ref().map_or(("-".to_string(), "-".to_string()), |m| {
            (
                format!("{}/{}", m.cpus_busy, x.online_cpus),
                format!("{:.1}%", m.machine_share * 100.0),
            )
        });
        let speedup = base
            .filter(|b| *b > 0.0)
            .map_or("-".to_string(), |b| format!("{:.2}×", x.mb_per_s / b));
        let _ = writeln!(
            s,
            "{:>5} {:>7} {:>9.0} {:>7} {:>5.0}% {:>6.0}% {:>5.0}% {:>9} {:>8}  {}",
            x.units,
            x.threads,
            x.mb_per_s,
            speedup,
            x.reader_busy * 100.0,
            x.workers_busy * 100.0,
            x.writer_busy * 100.0,
            busy,
            machine,
            x.verdict.name()
        );
    }
    if !r.summary.text.is_empty() {
        let _ = writeln!(s, "{}", r.summary.text);
    }
    s
}
