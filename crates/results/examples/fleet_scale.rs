//! How the fleet reader's tables scale: fills a throwaway PostgreSQL 15 (and a SQLite file)
//! with HOSTS × REPORTS synthetic reports of FIGURES headline figures each — facts of a real
//! report's size, a configuration change every 30 reports — then reads them all back in
//! (host, time) order, timing the fill and the read and measuring the bytes per report and
//! the reader's peak memory. Needs root (PostgreSQL runs as `postgres`).
//!
//!     cargo run --release -p results --example fleet_scale -- [HOSTS [REPORTS [FIGURES]]]
//!
//! Defaults: 1000 hosts × 90 reports × 15 figures (the scale `platscope fleet` is built for).

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::time::Instant;

use results::{FleetFilter, FleetStore, HeadlineFigure, PgStore, ReportFigures, SqliteStore};

/// Facts like a real report's machine table: 45 settings, about 1.8 KB of JSON.
fn facts(host: usize, epoch: usize) -> BTreeMap<String, String> {
    let mut facts = BTreeMap::new();
    facts.insert(
        "CPU model".into(),
        format!("Intel(R) Xeon(R) Gold {} CPU @ 2.10GHz", 6100 + host % 2),
    );
    facts.insert("Kernel".into(), format!("6.1.0-{}-amd64", 20 + epoch));
    facts.insert("Microcode".into(), format!("0x2b0005{:02}", epoch));
    facts.insert("THP".into(), "madvise (defrag madvise)".into());
    for i in 0..41 {
        facts.insert(format!("Setting {i:02}"), format!("a value of a typical length, {i}"));
    }
    facts
}

fn report(host: usize, day: usize, figures: usize) -> ReportFigures {
    ReportFigures {
        uuid: format!("{:08x}-0000-4000-8000-{:012x}", host, day),
        host: format!("db-{host:04}.example.net"),
        recorded_at: format!(
            "2026-{:02}-{:02}T03:{:02}:00.000Z",
            1 + day / 28,
            1 + day % 28,
            host % 60
        ),
        version: "0.1.0 (git 93a8f0d94700)".into(),
        facts: facts(host, day / 30),
        facts_digest: String::new(),
        figures: (0..figures)
            .map(|i| HeadlineFigure {
                area: ["Memory", "Contention", "CPU", "Compression", "Database"][i % 5].into(),
                name: format!("headline figure number {i}"),
                metric: format!("mem_latency{{cpu_node=0,mem_node=0,figure={i}}}"),
                unit: "ns".into(),
                median: 100.0 + (host * 7 + day * 3 + i) as f64 % 11.0,
                p25: 99.0,
                p75: 101.0,
                samples: 21,
            })
            .collect(),
    }
}

/// Peak resident memory of this process (VmHWM), in MiB.
fn peak_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN);
    kib / 1024.0
}

fn fill(store: &mut dyn FleetStore, hosts: usize, reports: usize, figures: usize) -> f64 {
    let start = Instant::now();
    for host in 0..hosts {
        let batch: Vec<ReportFigures> = (0..reports).map(|d| report(host, d, figures)).collect();
        if let Err(e) = store.record_many_report_figures(&batch) {
            eprintln!("fleet_scale: {e}");
            std::process::exit(1);
        }
    }
    start.elapsed().as_secs_f64()
}

fn read(store: &dyn FleetStore) -> (usize, usize, f64) {
    let start = Instant::now();
    let mut figures = 0;
    let reports = store
        .report_figures(&FleetFilter::default(), &mut |r| {
            figures += r.figures.len();
            ControlFlow::Continue(())
        })
        .unwrap_or_else(|e| {
            eprintln!("fleet_scale: {e}");
            std::process::exit(1);
        });
    (reports, figures, start.elapsed().as_secs_f64())
}

fn main() {
    let arg = |i: usize, default: usize| {
        std::env::args().nth(i).and_then(|a| a.parse().ok()).unwrap_or(default)
    };
    let (hosts, reports, figures) = (arg(1, 1000), arg(2, 90), arg(3, 15));
    let total = hosts * reports;
    println!("{hosts} hosts × {reports} reports × {figures} figures = {total} reports");

    let pg = testdb::Postgres::start(&testdb::PgOptions::default()).unwrap_or_else(|e| {
        eprintln!("fleet_scale: PostgreSQL: {e}");
        std::process::exit(1);
    });
    let url = format!("postgresql://platscope@127.0.0.1:{}/postgres", pg.port());
    let mut store = PgStore::connect(&url).unwrap_or_else(|e| {
        eprintln!("fleet_scale: {e}");
        std::process::exit(1);
    });
    let seconds = fill(&mut store, hosts, reports, figures);
    println!(
        "PostgreSQL fill: {seconds:.1} s ({:.2} ms per report, one transaction per host)",
        seconds * 1e3 / total as f64
    );
    let _ = pg.sql("VACUUM ANALYZE");
    for table in ["fleet_reports", "fleet_figures", "fleet_facts", "fleet_headlines", "hosts"] {
        let bytes = pg
            .sql(&format!("SELECT pg_total_relation_size('{table}')"))
            .ok()
            .and_then(|b| b.trim().parse::<f64>().ok())
            .unwrap_or(f64::NAN);
        println!(
            "  {table:<16} {:>8.1} MiB  {:>6.0} B per report",
            bytes / 1048576.0,
            bytes / total as f64
        );
    }
    let before = peak_mib();
    let (n, f, seconds) = read(&store);
    println!("PostgreSQL read: {n} reports, {f} figures in {seconds:.2} s; peak RSS {before:.0} → {:.0} MiB", peak_mib());

    let dir = std::env::temp_dir().join(format!("fleet-scale-{}", std::process::id()));
    let path = dir.join("results.db");
    let mut sqlite = SqliteStore::open(&path).unwrap_or_else(|e| {
        eprintln!("fleet_scale: {e}");
        std::process::exit(1);
    });
    let empty = std::fs::metadata(&path).map_or(0, |m| m.len());
    let seconds = fill(&mut sqlite, hosts, reports, figures);
    drop(sqlite);
    let sqlite = SqliteStore::open(&path).unwrap_or_else(|e| {
        eprintln!("fleet_scale: {e}");
        std::process::exit(1);
    });
    let _ = std::process::Command::new("sqlite3")
        .arg(&path)
        .arg("PRAGMA wal_checkpoint(TRUNCATE)")
        .status();
    let bytes = std::fs::metadata(&path).map_or(0, |m| m.len()) - empty;
    println!(
        "SQLite fill: {seconds:.1} s; file grew {:.1} MiB, {:.0} B per report",
        bytes as f64 / 1048576.0,
        bytes as f64 / total as f64
    );
    let before = peak_mib();
    let (n, f, seconds) = read(&sqlite);
    println!(
        "SQLite read: {n} reports, {f} figures in {seconds:.2} s; peak RSS {before:.0} → {:.0} MiB",
        peak_mib()
    );
    let _ = std::fs::remove_dir_all(dir);
}
