//! The registry round trip: every experiment, run with its tiny arguments into a fresh store,
//! draws the same report sections at run time (`--html-out`) as `report --from-db ID` draws
//! from the stored run — byte for byte. Then all of those runs, of every kind, on one page.
//!
//! Tiny arguments may name things the test provides: `{file}` (a 4 MiB file of mixed data),
//! `{pg}` (the libpq conninfo of a throwaway PostgreSQL 15 the test starts and stops, with
//! `load prepare`'s tables in it), `{pgpid}` (that server's postmaster PID).

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::path::{Path, PathBuf};
use std::process::Command;
use test_tier::live;

use platscope::registry::REGISTRY;
use test_support::page_sections;

const BIN: &str = env!("CARGO_BIN_EXE_platscope");

struct Provided {
    dir: tempfile::TempDir,
    pg: Option<testdb::Postgres>,
}

impl Provided {
    fn file(&self) -> PathBuf {
        let path = self.dir.path().join("input.tsv");
        if !path.exists() {
            let mut text = String::new();
            let mut i: u64 = 0;
            while text.len() < 4 << 20 {
                i = i.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                text.push_str(&format!("{}\tname{}\t{}\n", i % 100_000, i % 977, i >> 40));
            }
            std::fs::write(&path, text).unwrap();
        }
        path
    }

    fn pg(&mut self) -> &testdb::Postgres {
        if self.pg.is_none() {
            let pg = testdb::Postgres::start(&testdb::PgOptions::default()).unwrap();
            let prepare = ["load", "prepare", "--server", "postgres", "--url", &pg.conninfo()];
            let out = Command::new(BIN).arg("--no-store").args(prepare).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            self.pg = Some(pg);
        }
        self.pg.as_ref().unwrap()
    }

    fn args(&mut self, tiny: &[&str]) -> Vec<String> {
        tiny.iter()
            .map(|a| {
                let mut a = a.to_string();
                if a.contains("{file}") {
                    a = a.replace("{file}", &self.file().display().to_string());
                }
                if a.contains("{pg}") {
                    a = a.replace("{pg}", &self.pg().conninfo());
                }
                if a.contains("{pgpid}") {
                    a = a.replace("{pgpid}", &self.pg().pid().to_string());
                }
                a
            })
            .collect()
    }
}

fn run(args: &[String], db: &Path) -> std::process::Output {
    Command::new(BIN).arg("--db").arg(db).args(args).output().unwrap()
}

fn newest_run_id(db: &Path) -> i64 {
    let out =
        Command::new(BIN).args(["results", "list", "--json", "--db"]).arg(db).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let runs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    runs[0]["id"].as_i64().unwrap()
}

#[live("runs every experiment of the registry (root for the BPF ones)")]
fn every_experiment_draws_the_same_sections_from_the_store() {
    let mut provided = Provided { dir: tempfile::tempdir().unwrap(), pg: None };
    let db = provided.dir.path().join("results.db");
    let mut ids = Vec::new();
    let mut all_sections = Vec::new();
    for entry in REGISTRY.entries {
        let Some(tiny) = entry.tiny_args() else { continue };
        let name = entry.path().join(" ");
        let html = provided.dir.path().join(format!("{}.html", entry.path().join("-")));
        let mut args: Vec<String> = vec!["--html-out".into(), html.display().to_string()];
        args.extend(entry.path().iter().map(|s| s.to_string()));
        args.extend(provided.args(tiny));
        let out = run(&args, &db);
        assert!(
            out.status.success(),
            "{name} {tiny:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let id = newest_run_id(&db);
        let live = std::fs::read_to_string(&html).unwrap();
        let live_sections = page_sections(&live);
        assert!(!live_sections.is_empty(), "{name}: the run drew no report section");

        let out_dir = provided.dir.path().join(format!("from-db-{id}"));
        let out = Command::new(BIN)
            .args(["report", "--from-db", &id.to_string(), "--db"])
            .arg(&db)
            .arg("--out")
            .arg(&out_dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let rebuilt = page_sections(&std::fs::read_to_string(out_dir.join("report.html")).unwrap());
        for (id, html) in &live_sections {
            let again = rebuilt.iter().find(|(i, _)| i == id);
            assert_eq!(
                again.map(|s| &s.1),
                Some(html),
                "{name}: section {id} differs from the store"
            );
        }
        println!("{name}: run {id}, {} section(s) identical", live_sections.len());
        ids.push(id);
        all_sections.extend(live_sections);
    }
    // Runs of every kind on one page: every section of every run is there.
    let out_dir = provided.dir.path().join("all");
    let mut cmd = Command::new(BIN);
    cmd.args(["report", "--from-db"]).args(ids.iter().map(i64::to_string)).arg("--db").arg(&db);
    let out = cmd.arg("--out").arg(&out_dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = page_sections(&std::fs::read_to_string(out_dir.join("report.html")).unwrap());
    for (id, html) in &all_sections {
        assert!(
            page.iter().any(|(i, h)| i == id && h == html),
            "section {id} missing from the page"
        );
    }
    if let Some(pg) = provided.pg.take() {
        assert!(pg.stop(), "the throwaway PostgreSQL did not stop");
    }
}
