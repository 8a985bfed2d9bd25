//! The Grafana dashboards in deploy/grafana/, checked without a Grafana server (none is packaged
//! for Debian): every PromQL query of the live dashboard runs against the real Prometheus
//! (Debian's 2.42) scraping a real `platscope serve`, and every SQL query of the history
//! dashboard runs against a real PostgreSQL 15 holding runs pushed with `results push`. Each
//! must answer without error and return data; a dashboard naming a metric `serve` does not
//! expose fails. Template variables are substituted with values from this machine, Grafana's
//! macros with their plain equivalents (`$__rate_interval` a 20 s window over 1 s scrapes,
//! `$__timeFilter(t)` the last day).

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::collections::BTreeSet;
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::{TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use test_tier::live;

use results::FleetStore;
use serde_json::Value;
use test_support::net::Veth;
use test_support::serve::Serve;
use testdb::{PgOptions, Postgres, PromOptions, Prometheus};

fn dashboard(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/grafana").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()))
}

/// Every panel, rows' nested panels included.
fn panels(dash: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for p in dash["panels"].as_array().expect("panels") {
        if p["type"] == "row" {
            out.extend(p["panels"].as_array().into_iter().flatten());
        } else {
            out.push(p);
        }
    }
    out
}

/// (panel title, query) for every target's `field` (`expr` or `rawSql`).
fn queries(dash: &Value, field: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for panel in panels(dash) {
        let title = panel["title"].as_str().unwrap_or("?").to_string();
        let targets = panel["targets"].as_array().unwrap_or_else(|| panic!("{title}: no targets"));
        assert!(!targets.is_empty(), "{title}: no targets");
        for t in targets {
            let q =
                t[field].as_str().unwrap_or_else(|| panic!("{title}: a target without {field}"));
            out.push((title.clone(), q.to_string()));
        }
    }
    out
}

/// The template variables' queries: (name, query).
fn variable_queries(dash: &Value) -> Vec<(String, String)> {
    dash["templating"]["list"]
        .as_array()
        .expect("templating")
        .iter()
        .filter(|v| v["type"] == "query")
        .map(|v| {
            let q = v["query"]["query"].as_str().or(v["query"].as_str()).expect("a query");
            (v["name"].as_str().unwrap().to_string(), q.to_string())
        })
        .collect()
}

/// The annotation queries: (name, SQL).
fn annotation_queries(dash: &Value) -> Vec<(String, String)> {
    dash["annotations"]["list"]
        .as_array()
        .expect("annotations")
        .iter()
        .map(|a| {
            let name = a["name"].as_str().expect("a name").to_string();
            let q = a["target"]["rawSql"].as_str().unwrap_or_else(|| panic!("{name}: no rawSql"));
            (name, q.to_string())
        })
        .collect()
}

/// `platscope_…` names a PromQL text refers to.
fn metric_names(promql: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let bytes = promql.as_bytes();
    let mut i = 0;
    while let Some(at) = promql[i..].find("platscope_") {
        let start = i + at;
        let mut end = start;
        while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
            end += 1;
        }
        let boundary =
            start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        if boundary {
            names.insert(promql[start..end].to_string());
        }
        i = end;
    }
    names
}

#[test]
fn metric_names_are_found_whole() {
    let names =
        metric_names("rate(platscope_io_size_bytes_bucket{a=\"x\"}[1m]) / up + xplatscope_no");
    assert_eq!(names.into_iter().collect::<Vec<_>>(), ["platscope_io_size_bytes_bucket"]);
}

#[test]
fn dashboards_are_grafana_json_with_their_variables() {
    let live = dashboard("platscope-live.json");
    let history = dashboard("platscope-history.json");
    for (dash, vars) in [
        (&live, &["datasource", "instance", "device", "mountpoint"][..]),
        (&history, &["datasource", "host", "host_a", "host_b"]),
    ] {
        let names: Vec<&str> = dash["templating"]["list"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, vars);
        let mut ids = BTreeSet::new();
        for p in panels(dash) {
            assert!(ids.insert(p["id"].as_u64().expect("an id")), "duplicate panel id");
            assert!(p["gridPos"]["w"].as_u64().is_some_and(|w| w > 0 && w <= 24));
        }
    }
    assert!(queries(&live, "expr").len() >= 15);
    assert!(queries(&history, "rawSql").len() >= 6);
    let annotations = annotation_queries(&history);
    assert_eq!(annotations.len(), 1);
    assert!(annotations[0].1.contains("fleet_reports"), "{:?}", annotations[0]);
    // Every platscope metric the live dashboard reads is documented (docs/serve.md and
    // docs/collectors.md list what serve exposes; the live test checks the real thing).
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    let docs = std::fs::read_to_string(root.join("serve.md")).unwrap()
        + &std::fs::read_to_string(root.join("collectors.md")).unwrap();
    for (title, q) in queries(&live, "expr").into_iter().chain(variable_queries(&live)) {
        for name in metric_names(&q) {
            let family = name.trim_end_matches("_bucket");
            assert!(docs.contains(&format!("`{family}")), "{title}: {name} is not documented");
        }
    }
}

// --- the live checks ---

fn need_root(test: &str) {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(euid, 0, "{test} needs root (BPF collectors, veth); run the live tier as root");
}

/// The sample names of one scrape (`/metrics`).
fn exposed(serve: &Serve) -> BTreeSet<String> {
    let mut stream = TcpStream::connect_timeout(&serve.addr, Duration::from_secs(5)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(stream, "GET /metrics HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", serve.addr)
        .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let body = raw.split_once("\r\n\r\n").expect("an HTTP answer").1;
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(['{', ' ']).next().unwrap().to_string())
        .collect()
}

/// Load for the panels to show until dropped: UDP over the veth, sequential writes and random
/// reads of a file in `dir`, and a busy thread.
struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start(host_ip: &str, peer_ip: &str, dir: &Path) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        let (s, from, to) = (stop.clone(), host_ip.to_string(), format!("{peer_ip}:9"));
        threads.push(std::thread::spawn(move || {
            let socket = UdpSocket::bind(format!("{from}:0")).expect("bind UDP");
            let payload = [0x5a_u8; 1000];
            while !s.load(Ordering::Relaxed) {
                for _ in 0..50 {
                    let _ = socket.send_to(&payload, &to);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }));
        let (s, file) = (stop.clone(), dir.join("load.bin"));
        threads.push(std::thread::spawn(move || {
            let block = vec![0xa5_u8; 64 * 1024];
            let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
            while !s.load(Ordering::Relaxed) {
                let mut f = std::fs::File::create(&file).expect("create");
                for _ in 0..64 {
                    f.write_all(&block).expect("write");
                }
                let mut buf = [0_u8; 4096];
                for _ in 0..256 {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let at = (rng % 1024) * 4096;
                    f.seek(SeekFrom::Start(at)).expect("seek");
                    let _ = std::fs::File::open(&file).and_then(|mut r| {
                        r.seek(SeekFrom::Start(at))?;
                        r.read(&mut buf)
                    });
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }));
        let s = stop.clone();
        threads.push(std::thread::spawn(move || {
            let mut x = 0_u64;
            while !s.load(Ordering::Relaxed) {
                for i in 0..1_000_000 {
                    x = x.wrapping_mul(31).wrapping_add(i);
                }
                std::hint::black_box(x);
                std::thread::sleep(Duration::from_millis(1));
            }
        }));
        Load { stop, threads }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The mount point holding `path` (findmnt, util-linux).
fn mountpoint_of(path: &Path) -> String {
    let out = Command::new("findmnt").args(["-n", "-o", "TARGET", "-T"]).arg(path).output();
    let out = out.expect("findmnt runs");
    assert!(out.status.success(), "findmnt: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// What a query answered: an error, or how many series it returned.
fn run_promql(prom: &Prometheus, promql: &str) -> Result<usize, String> {
    let body = prom.query(promql, None).map_err(|e| e.to_string())?;
    let v: Value = serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
    if v["status"] != "success" {
        return Err(body);
    }
    Ok(v["data"]["result"].as_array().map_or(0, Vec::len))
}

/// `label_values(SELECTOR, LABEL)` as Grafana runs it: the selector's series carrying LABEL.
fn label_values(prom: &Prometheus, query: &str) -> Result<usize, String> {
    let inner = query
        .strip_prefix("label_values(")
        .and_then(|q| q.strip_suffix(')'))
        .ok_or_else(|| format!("not label_values(…): {query}"))?;
    let (selector, label) = inner.rsplit_once(',').ok_or("no label")?;
    let body = prom.query(selector.trim(), None).map_err(|e| e.to_string())?;
    let v: Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
    let series = v["data"]["result"].as_array().cloned().unwrap_or_default();
    Ok(series.iter().filter(|s| s["metric"][label.trim()].is_string()).count())
}

#[live("root (BPF collectors, veth), the real Prometheus 2.42 scraping platscope serve")]
fn every_live_panel_query_returns_data_from_prometheus_scraping_serve() {
    need_root("every_live_panel_query_returns_data_from_prometheus_scraping_serve");
    let live = dashboard("platscope-live.json");
    // A 10 Gbit/s full-duplex link, so its utilization has a speed to divide by.
    let veth = Veth::create("psg", 214);
    veth.up();
    let (host_ip, peer_ip) = (&veth.host_ip, &veth.peer_ip);
    let io_dir = tempfile::tempdir_in("/var/tmp").expect("tmp");
    let serve = Serve::start(&[]);
    let instance = serve.addr.to_string();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: platscope\n    \
         static_configs:\n      - targets: ['{instance}']\n"
    );
    let prom = Prometheus::start(&PromOptions::default().config(&config)).expect("Prometheus");
    println!("serve pid {} on {instance}, Prometheus pid {}", serve.child.id(), prom.pid());
    let _load = Load::start(host_ip, peer_ip, io_dir.path());

    // Every metric the dashboard names must be in serve's exposition.
    let mut all: Vec<(String, String)> = queries(&live, "expr");
    all.extend(variable_queries(&live));
    let exposed = exposed(&serve);
    for (title, q) in &all {
        for name in metric_names(q) {
            assert!(
                exposed.contains(&name),
                "panel {title:?} reads {name}, which platscope serve does not expose"
            );
        }
    }

    let mountpoint = mountpoint_of(io_dir.path());
    let substitute = |q: &str| {
        q.replace("$__rate_interval", "20s")
            .replace("$instance", &instance)
            .replace("$device", &veth.host)
            .replace("$mountpoint", &mountpoint)
    };
    assert!(
        substitute(&all.iter().map(|(_, q)| q.as_str()).collect::<String>()).find('$').is_none(),
        "a variable the test does not substitute"
    );

    // Bounded wait: every query answers with data (a 20 s window needs a few scrapes).
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let mut missing = Vec::new();
        for (title, q) in &all {
            let q = substitute(q);
            let answer = if q.starts_with("label_values(") {
                label_values(&prom, &q)
            } else {
                run_promql(&prom, &q)
            };
            match answer {
                Ok(0) => missing.push(format!("{title}: no data from {q}")),
                Ok(_) => {}
                Err(e) => panic!("{title}: Prometheus refused {q}: {e}"),
            }
        }
        if missing.is_empty() {
            println!("{} queries, each with data", all.len());
            break;
        }
        assert!(
            Instant::now() < deadline,
            "within 90 s, queries without data:\n{}\nPrometheus log:\n{}",
            missing.join("\n"),
            prom.log_tail(20)
        );
        std::thread::sleep(Duration::from_secs(2));
    }
}

fn platscope(host: &str, data_home: &Path, args: &[&str]) -> Output {
    test_support::cli::as_host(host, data_home, args)
}

fn ok(what: &str, out: Output) {
    assert!(
        out.status.success(),
        "{what}: exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[live("PostgreSQL 15 (root) holding runs pushed with results push")]
fn every_history_panel_query_returns_rows_from_pushed_runs() {
    let history = dashboard("platscope-history.json");
    let pg = Postgres::start(&PgOptions::default()).expect("PostgreSQL starts");
    let url = format!("postgresql://platscope@127.0.0.1:{}/postgres", pg.port());
    let dir = tempfile::tempdir().expect("tmp");
    for host in ["alpha", "beta"] {
        let db: PathBuf = dir.path().join(format!("{host}.db"));
        let db = db.to_str().unwrap();
        let runs: [&[&str]; 4] = [
            &["mem", "latency", "--size", "1MiB", "--duration-ms", "30"],
            &["mem", "bandwidth", "--size", "4MiB", "--threads", "1", "--duration-ms", "50"],
            &["mem", "c2c", "--cpus", "0-1", "--duration-ms", "50"],
            &[
                "report",
                "--quick",
                "--sections",
                "contention",
                "--out",
                dir.path().to_str().unwrap(),
            ],
        ];
        for args in runs {
            let mut full = args.to_vec();
            full.extend(["--db", db]);
            ok(&format!("{host}: {args:?}"), platscope(host, dir.path(), &full));
        }
        ok("push", platscope(host, dir.path(), &["results", "push", "--to", &url, "--db", db]));
    }
    // The fleet panels read what `platscope fleet --publish` found: a fleet of 40 hosts × 30
    // days made from real reports (with one host steadily slow and shifts injected), read and
    // published from the same store.
    let real = fleet::synthetic::fixture_reports().expect("the fixture");
    let (fleet_reports, _) =
        fleet::synthetic::generate(&real, &fleet::synthetic::Plan::new(40, 30, 2, 1)).unwrap();
    results::PgStore::connect(&url)
        .and_then(|mut store| store.record_many_report_figures(&fleet_reports))
        .expect("the fleet's reports");
    ok(
        "fleet --publish",
        platscope("alpha", dir.path(), &["fleet", "--from", &url, "--hosts", "db-*", "--publish"]),
    );

    let time_filter = |q: &str| {
        // $__timeFilter(EXPR) → EXPR BETWEEN (last day), as Grafana expands it with its range.
        let mut out = String::new();
        let mut rest = q;
        while let Some(at) = rest.find("$__timeFilter(") {
            out.push_str(&rest[..at]);
            let after = &rest[at + "$__timeFilter(".len()..];
            let mut depth = 1;
            let end = after
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '(' => 1,
                        ')' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map(|(i, _)| i)
                .expect("a closing parenthesis");
            out.push_str(&format!(
                "{} BETWEEN now() - interval '1 day' AND now() + interval '1 hour'",
                &after[..end]
            ));
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        out
    };
    let substitute = |q: &str| {
        time_filter(q)
            .replace("$host_a", "alpha")
            .replace("$host_b", "beta")
            .replace("$host", "'alpha', 'beta'")
    };
    let mut all = queries(&history, "rawSql");
    all.extend(variable_queries(&history));
    for (title, q) in &all {
        let sql = substitute(q);
        assert!(!sql.contains('$'), "{title}: a variable the test does not substitute: {sql}");
        let count = pg
            .sql(&format!("SELECT count(*) FROM ({sql}) AS panel"))
            .unwrap_or_else(|e| panic!("{title}: PostgreSQL refused the query: {e}\n{sql}"));
        let rows: u64 = count.trim().parse().expect("a count");
        assert!(rows > 0, "{title}: no rows\n{sql}");
        println!("{title}: {rows} rows");
    }

    // Configuration changes: none while each host's reports ran under one configuration…
    let (name, q) = &annotation_queries(&history)[0];
    let sql = substitute(q);
    assert!(!sql.contains('$'), "{name}: a variable the test does not substitute: {sql}");
    let marks = |sql: &str| {
        pg.sql(&format!("SELECT host_tag || '|' || text FROM ({sql}) AS a(at, text, host_tag)"))
            .unwrap_or_else(|e| panic!("{name}: PostgreSQL refused the query: {e}\n{sql}"))
    };
    assert_eq!(marks(&sql).trim(), "", "{name}: a mark without a change");
    // …and one when alpha's next report ran on another kernel: its reports' facts as pushed,
    // with the kernel changed, as a later report.
    pg.sql(
        "INSERT INTO fleet_facts SELECT 'a later kernel', \
             jsonb_set(f.facts::jsonb, '{Kernel}', '\"6.99.0-test\"')::text \
         FROM fleet_facts f JOIN fleet_reports r ON r.facts_digest = f.digest \
         WHERE r.host = 'alpha' LIMIT 1; \
         INSERT INTO fleet_reports (uuid, host, recorded_at, version, facts_digest) \
         SELECT 'a later report', 'alpha', \
             to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), \
             r.version, 'a later kernel' FROM fleet_reports r WHERE r.host = 'alpha' LIMIT 1;",
    )
    .expect("a later report of alpha");
    let marked = marks(&sql);
    let lines: Vec<&str> = marked.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{name}: {marked}");
    assert!(lines[0].trim().starts_with("alpha|alpha: Kernel "), "{name}: {marked}");
    assert!(lines[0].trim().ends_with(" → 6.99.0-test"), "{name}: {marked}");
    println!("{name}: {}", lines[0].trim());
}
