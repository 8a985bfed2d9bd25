//! The registry round trip: every experiment, run with its tiny arguments into a fresh store,
//! draws the same report sections at run time (`--html-out`) as `report --from-db ID` draws
//! from the stored run — byte for byte. Then all of those runs, of every kind, on one page.
//!
//! Tiny arguments may name things the test provides: `{file}` (a 4 MiB file of mixed data),
//! `{pg}` (the libpq conninfo of a throwaway PostgreSQL 15 the test starts and stops, with
//! `load prepare`'s tables in it), `{pgpid}` (that server's postmaster PID).

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::path::{Path, PathBuf};
use std::process::Command;

use platscope::registry::REGISTRY;

const BIN: &str = env!("CARGO_BIN_EXE_platscope");

/// Every `<section …>…</section>` of a page, by section id.
fn sections(page: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = page;
    while let Some(start) = rest.find("<section id=\"") {
        let after = &rest[start..];
        let Some(end) = after.find("</section>") else { break };
        let html = &after[..end + "</section>".len()];
        let id = html["<section id=\"".len()..].split('"').next().unwrap_or("").to_string();
        out.push((id, html.to_string()));
        rest = &after[end..];
    }
    out
}

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

#[test]
#[ignore = "live: runs every experiment of the registry (root for the BPF ones)"]
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
        let live_sections = sections(&live);
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
        let rebuilt = sections(&std::fs::read_to_string(out_dir.join("report.html")).unwrap());
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
    let page = sections(&std::fs::read_to_string(out_dir.join("report.html")).unwrap());
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

/// The page `report --from-db IDS…` draws, as (section id, HTML).
fn from_db(db: &Path, ids: &[i64], out: &Path) -> Vec<(String, String)> {
    let out_dir = out.join(ids.iter().map(i64::to_string).collect::<Vec<_>>().join("-"));
    let mut cmd = Command::new(BIN);
    cmd.args(["report", "--from-db"]).args(ids.iter().map(i64::to_string)).arg("--db").arg(db);
    let run = cmd.arg("--out").arg(&out_dir).output().unwrap();
    assert!(run.status.success(), "{ids:?}: {}", String::from_utf8_lossy(&run.stderr));
    sections(&std::fs::read_to_string(out_dir.join("report.html")).unwrap())
}

/// The report's steps are registered experiments, covered as the commands are: a quick
/// report's memory and contention steps are each stored under their command's kind, and
/// `report --from-db` draws every stored run — the report's own, each step alone, and every
/// step on one page — with the sections byte for byte as the report drew them.
#[test]
#[ignore = "live: a quick report's memory and contention steps on this machine"]
fn every_report_step_draws_the_same_sections_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let out = dir.path().join("report");
    let run = Command::new(BIN)
        .args(["report", "--quick", "--sections", "memory,contention", "--db"])
        .arg(&db)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    let drawn = sections(&page);

    let list =
        Command::new(BIN).args(["results", "list", "--json", "--db"]).arg(&db).output().unwrap();
    let runs: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let runs: Vec<(i64, String)> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_i64().unwrap(), r["command"].as_str().unwrap().to_string()))
        .collect();
    let (steps, reports): (Vec<_>, Vec<_>) = runs.iter().partition(|(_, kind)| kind != "report");
    assert_eq!(reports.len(), 1, "{runs:?}");
    assert!(steps.len() >= 10, "memory and contention store a run per step: {runs:?}");
    for (id, kind) in &steps {
        let entry = REGISTRY.entry_for_kind(kind);
        assert!(
            entry.is_some_and(|e| e.tiny_args().is_some()),
            "run {id}: {kind} is no experiment"
        );
        // Each step alone: every section it draws is the report's, byte for byte.
        let alone = from_db(&db, &[*id], dir.path());
        let own: Vec<&(String, String)> =
            alone.iter().filter(|(s, _)| s != "sec-machine").collect();
        assert!(!own.is_empty(), "run {id} ({kind}) drew nothing");
        for (section, html) in own {
            let in_report = drawn.iter().find(|(s, _)| s == section).map(|(_, h)| h);
            assert_eq!(in_report, Some(html), "run {id} ({kind}): section {section}");
        }
    }
    // The report's own run: the same page again.
    let again = from_db(&db, &[reports[0].0], dir.path());
    assert_eq!(again, drawn, "the report's run draws its page again");
    // Every step on one page: each of the report's sections is there.
    let ids: Vec<i64> = steps.iter().map(|(id, _)| *id).collect();
    let all = from_db(&db, &ids, dir.path());
    for (section, html) in &drawn {
        assert!(all.iter().any(|(s, h)| s == section && h == html), "{section} missing");
    }
    // A store written by earlier versions: the same runs under the kinds reports stored their
    // steps as. Each still draws the report's section, byte for byte.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let legacy = [
        ("mem latency --sweep", "report: latency by size"),
        ("mem latency --matrix", "report: latency matrix"),
        ("mem bandwidth --matrix", "report: bandwidth matrix"),
        ("mem bandwidth --scale", "report: bandwidth scaling"),
        ("mem bandwidth --kernels", "report: copy bandwidth"),
        ("mem loaded-latency", "report: loaded latency"),
        ("mem scale", "report: SLB scaling"),
        ("mem c2c", "report: core to core"),
    ];
    for (now, before) in legacy {
        let changed =
            conn.execute("UPDATE runs SET command = ?1 WHERE command = ?2", [before, now]).unwrap();
        assert_eq!(changed, 1, "{now}");
    }
    // The lock runs were two steps, each a list: the contention runs alone read back too.
    conn.execute(
        "UPDATE runs SET command = 'report: lock contention', result = json_extract(result, '$.runs') \
         WHERE command = 'mem locks'",
        [],
    )
    .unwrap();
    for (id, kind) in &steps {
        let alone = from_db(&db, &[*id], dir.path());
        let own: Vec<&(String, String)> =
            alone.iter().filter(|(s, _)| s != "sec-machine").collect();
        assert!(!own.is_empty(), "run {id} (was {kind}) drew nothing under its old kind");
        for (section, html) in own {
            let in_report = drawn.iter().find(|(s, _)| s == section).map(|(_, h)| h);
            if kind == "mem locks" {
                // Without its placement half: the same chart of the lock runs.
                assert!(in_report.is_some() && html.contains("<svg"), "{section}");
            } else {
                assert_eq!(in_report, Some(html), "run {id} (was {kind}) under its old kind");
            }
        }
    }
}
