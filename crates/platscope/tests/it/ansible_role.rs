//! deploy/ansible's role, run twice by the real `ansible-playbook` (ansible-core from PyPI, in
//! the venv scripts/setup.sh makes) with `-c local` against this machine and a real
//! PostgreSQL 15: the package is installed (for real, with apt-get, and purged at the end),
//! each host's runs land once in the shared store, the second run changes nothing but the
//! benchmark task, and a host whose command fails is reported failed while the others go on.
//! Two inventory names for this machine stand for two hosts: `alpha` runs a cheap command list
//! (one small latency run and `topo`, not a whole report, to keep CI short) and `broken` a
//! command line platscope refuses.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use test_tier::live;

use serde_json::{json, Value};
use testdb::{PgOptions, Postgres};

use crate::deb;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// ansible-playbook from the venv scripts/setup.sh makes (or PLATSCOPE_ANSIBLE_VENV).
fn ansible_playbook() -> PathBuf {
    let venv = std::env::var_os("PLATSCOPE_ANSIBLE_VENV").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").expect("HOME"))
            .join(".local/share/platscope/ansible")
    });
    let bin = venv.join("bin/ansible-playbook");
    assert!(
        bin.is_file(),
        "{} missing: scripts/setup.sh --deps installs ansible-core",
        bin.display()
    );
    bin
}

fn dpkg_status() -> String {
    let out = Command::new("dpkg-query")
        .args(["--showformat=${db:Status-Status}", "--show", "platscope"])
        .output()
        .expect("dpkg-query runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Purges the platscope package this test installed, whatever happens.
struct Purge;

impl Drop for Purge {
    fn drop(&mut self) {
        let _ = Command::new("dpkg").args(["--purge", "platscope"]).output();
    }
}

/// A stdout callback for the test: every task result per host (name, changed, status) and the
/// recap, as one JSON document (ansible-core ships no JSON callback; ansible.posix's is a
/// collection).
const CALLBACK: &str = r#"
import json
from ansible.plugins.callback import CallbackBase

class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "platscope_test"

    def __init__(self):
        super().__init__()
        self.results = []

    def _add(self, result, status):
        self.results.append({
            "task": result._task.get_name().split(" : ")[-1],
            "host": result._host.get_name(),
            "status": status,
            "changed": bool(result._result.get("changed", False)),
        })

    def v2_runner_on_ok(self, result):
        self._add(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._add(result, "failed")

    def v2_runner_on_skipped(self, result):
        self._add(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._add(result, "unreachable")

    def v2_playbook_on_stats(self, stats):
        recap = {h: stats.summarize(h) for h in sorted(stats.processed)}
        self._display.display(json.dumps({"results": self.results, "stats": recap}))
"#;

/// One run of the playbook: (exit code, what the test callback recorded).
fn play(inventory: &Path, extra: &Path, home: &Path) -> (i32, Value) {
    let plugins = home.join("callback_plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::write(plugins.join("platscope_test.py"), CALLBACK).unwrap();
    let out: Output = Command::new(ansible_playbook())
        .arg("-i")
        .arg(inventory)
        .args(["-c", "local", "-e"])
        .arg(format!("@{}", extra.display()))
        .arg(root().join("deploy/ansible/playbook.yml"))
        .env("ANSIBLE_CALLBACK_PLUGINS", &plugins)
        .env("ANSIBLE_STDOUT_CALLBACK", "platscope_test")
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_RETRY_FILES_ENABLED", "0")
        .env("ANSIBLE_LOCAL_TEMP", home.join("tmp"))
        .env("ANSIBLE_HOME", home)
        .output()
        .expect("ansible-playbook runs");
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("the test callback's JSON ({e}):\n{text}"));
    (out.status.code().unwrap_or(-1), doc)
}

/// The names of the tasks that ended `status` (or changed something, for "changed") on
/// `host`, in order.
fn tasks(doc: &Value, host: &str, status: &str) -> Vec<String> {
    doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["host"] == host)
        .filter(|r| if status == "changed" { r["changed"] == true } else { r["status"] == status })
        .map(|r| r["task"].as_str().unwrap().to_string())
        .collect()
}

fn changed_tasks(doc: &Value, host: &str) -> Vec<String> {
    tasks(doc, host, "changed")
}

fn failed_tasks(doc: &Value, host: &str) -> Vec<String> {
    tasks(doc, host, "failed")
}

fn count(pg: &Postgres, sql: &str) -> u64 {
    pg.sql(sql).expect("psql").trim().parse().expect("a count")
}

/// Runs in a host's local results file.
fn local_runs(db: &Path) -> u64 {
    let out = test_support::platscope(&["--json", "results", "list", "--db", db.to_str().unwrap()]);
    assert!(out.status.success(), "{}", test_support::stderr(&out));
    let list: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    list.as_array().expect("a list").len() as u64
}

#[live("installs the .deb on this machine (root, purged after), PostgreSQL 15, ansible-core from scripts/setup.sh")]
fn the_role_runs_twice_idempotently_and_a_failing_host_does_not_stop_the_others() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "installs a package: run the live tier as root");
    assert_ne!(
        dpkg_status(),
        "installed",
        "a platscope package is installed on this machine; this test installs and purges its own \
         (dpkg --purge platscope first)"
    );
    let playbook = ansible_playbook();
    let dir = tempfile::tempdir().unwrap();
    let deb = deb::build(dir.path());
    let _purge = Purge;
    let pg = Postgres::start(&PgOptions::default()).expect("PostgreSQL starts");
    let url = format!("postgresql://platscope@127.0.0.1:{}/postgres", pg.port());
    println!("{} with {}, PostgreSQL pid {}", playbook.display(), deb.display(), pg.pid());

    let d = |rel: &str| dir.path().join(rel);
    std::fs::create_dir_all(d("inventory/host_vars")).unwrap();
    std::fs::create_dir_all(d("ansible/tmp")).unwrap();
    std::fs::write(d("inventory/hosts.ini"), "[platscope]\nalpha\nbroken\n").unwrap();
    let host_vars = |host: &str, vars: Value| {
        let path = d(&format!("inventory/host_vars/{host}.json"));
        std::fs::write(path, serde_json::to_string_pretty(&vars).unwrap()).unwrap();
    };
    host_vars(
        "alpha",
        json!({
            "platscope_commands": [
                ["mem", "latency", "--size", "1MiB", "--duration-ms", "30"],
                ["topo"]
            ],
            "platscope_data_home": d("alpha"),
            "platscope_workdir": d("alpha/work"),
            "platscope_serve": true,
            "platscope_serve_start": false,
            "platscope_serve_web_config": {"basic_auth_users": {"prometheus": "$2y$10$abcdefghijklmnopqrstuu5Ud1ZbbtQmLFr1J1XYJ9PEoIvKM8hBe"}},
            "platscope_config_dir": d("alpha/etc"),
            "platscope_systemd_dir": d("alpha/systemd"),
        }),
    );
    host_vars(
        "broken",
        json!({
            "platscope_install": false,
            "platscope_commands": [["mem", "latency", "--size", "nonsense"]],
            "platscope_data_home": d("broken"),
            "platscope_workdir": d("broken/work"),
        }),
    );
    let extra = d("extra.json");
    std::fs::write(
        &extra,
        json!({
            "platscope_deb": deb,
            "platscope_results_url": url,
            "ansible_python_interpreter": "/usr/bin/python3",
            "ansible_become": false,
        })
        .to_string(),
    )
    .unwrap();
    let inventory = d("inventory/hosts.ini");
    let alpha_db = d("alpha/platscope/results.db");

    // First run: installed, measured, pushed; broken fails at its command, alpha goes on.
    let (code, first) = play(&inventory, &extra, &d("ansible"));
    assert_eq!(code, 2, "a failed host makes ansible-playbook exit 2: {first}");
    assert_eq!(first["stats"]["alpha"]["failures"], 0, "{}", first["stats"]);
    assert_eq!(first["stats"]["broken"]["failures"], 1, "{}", first["stats"]);
    assert_eq!(failed_tasks(&first, "broken"), ["Run the benchmarks"]);
    let changed = changed_tasks(&first, "alpha");
    for task in
        ["Install the package", "Run the benchmarks", "Write the web-config (TLS, basic auth)"]
    {
        assert!(changed.iter().any(|t| t == task), "{task} not changed in {changed:?}");
    }
    assert_eq!(dpkg_status(), "installed");
    let after_first = count(&pg, "SELECT count(*) FROM runs WHERE host = 'alpha'");
    assert!(after_first >= 1, "alpha's runs arrived");
    assert_eq!(after_first, local_runs(&alpha_db), "every local run is in the store");
    assert_eq!(count(&pg, "SELECT count(*) FROM runs WHERE host = 'broken'"), 0);
    let dropin =
        std::fs::read_to_string(d("alpha/systemd/platscope-serve.service.d/ansible.conf")).unwrap();
    assert!(
        dropin.contains(&format!("--web-config {}", d("alpha/etc/web.yml").display())),
        "{dropin}"
    );
    assert!(std::fs::read_to_string(d("alpha/etc/web.yml")).unwrap().contains("prometheus:"));

    // Second run: only the benchmark task changes anything; its new runs land once.
    let (code, second) = play(&inventory, &extra, &d("ansible"));
    assert_eq!(code, 2, "{second}");
    assert_eq!(changed_tasks(&second, "alpha"), ["Run the benchmarks"], "{}", second["stats"]);
    assert_eq!(second["stats"]["alpha"]["failures"], 0);
    assert_eq!(second["stats"]["broken"]["failures"], 1);
    let after_second = count(&pg, "SELECT count(*) FROM runs WHERE host = 'alpha'");
    assert_eq!(after_second, local_runs(&alpha_db));
    assert_eq!(after_second, 2 * after_first, "the second run's runs, once each");
    assert_eq!(
        count(&pg, "SELECT count(DISTINCT uuid) FROM runs"),
        count(&pg, "SELECT count(*) FROM runs")
    );
}
