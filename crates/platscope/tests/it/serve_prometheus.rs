//! `platscope serve` against the real Prometheus 2.42 (Debian's `prometheus`), `promtool` and
//! `curl`: live tier (root for the veth pair and network namespace; real servers started in temp
//! dirs on 127.0.0.1 and stopped by PID). scripts/test.sh runs them with `--ignored`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use test_tier::live;

use serde_json::Value;
use test_support::net::{ip, Veth};
use test_support::serve::Serve;
use testdb::{PromOptions, Prometheus};

const BIN: &str = env!("CARGO_BIN_EXE_platscope");

/// One keep-alive-free HTTP/1.1 GET: status, headers (lower-cased names) and body.
fn get(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, Vec<(String, String)>, String) {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).expect("write");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    let mut lines = head.lines();
    let status =
        lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|s| s.parse().ok());
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status.expect("a status code"), headers, body.to_string())
}

fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
    headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

fn need_root(test: &str) {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert!(
        euid == 0,
        "{test} needs root (ip netns, veth); run the live tier as root (scripts/test.sh)"
    );
}

fn need_tool(tool: &str, package: &str) {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(tool).is_file()));
    assert!(found, "{tool} is not installed (apt-get install {package}, or run scripts/setup.sh)");
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The single value of an instant-vector query, if it has exactly one series.
fn scalar(prom: &Prometheus, promql: &str, time: Option<f64>) -> Option<f64> {
    let answer = json(&prom.query(promql, time).expect("query"));
    let result = answer["data"]["result"].as_array()?;
    if result.len() != 1 {
        return None;
    }
    result[0]["value"][1].as_str()?.parse().ok()
}

/// Polls `check` every 200 ms until it holds, or fails with `what` and Prometheus's log.
fn wait_for(prom: &Prometheus, what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(
            Instant::now() < deadline,
            "{what}: not within {timeout:?}; Prometheus log:\n{}",
            prom.log_tail(30)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn now_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn sysctl(key: &str, value: &str) {
    let out = Command::new("sysctl").args(["-qw", &format!("{key}={value}")]).output();
    assert!(out.is_ok_and(|o| o.status.success()), "sysctl {key}={value}");
}

/// Payload per UDP datagram, and the datagrams sent.
const PAYLOAD: usize = 1000;
const DATAGRAMS: u64 = 1000;
/// What the veth counts per datagram beyond the payload: UDP (8), IPv4 (20) and Ethernet (14)
/// headers; veth counts frames without preamble or FCS.
const HEADERS: u64 = 8 + 20 + 14;

#[live("root (veth pair in a network namespace) and the real Prometheus 2.42")]
fn prometheus_scrapes_serve_and_rate_matches_the_bytes_sent() {
    need_root("prometheus_scrapes_serve_and_rate_matches_the_bytes_sent");
    need_tool("prometheus", "prometheus");
    let veth = Veth::create("pss", 213);
    let (peer, host_ip, peer_ip) = (&veth.peer, &veth.host_ip, &veth.peer_ip);
    // No IPv6 and permanent neighbour entries: no router solicitations, MLD reports or ARP on
    // the link, so its transmit counter moves only by what the test sends.
    sysctl(&format!("net.ipv6.conf.{}.disable_ipv6", veth.host), "1");
    ip(&["-n", &veth.ns, "link", "set", peer, "address", "02:00:5e:00:53:02"]);
    ip(&["link", "set", &veth.host, "address", "02:00:5e:00:53:01"]);
    veth.up();
    ip(&[
        "neigh",
        "replace",
        peer_ip,
        "lladdr",
        "02:00:5e:00:53:02",
        "dev",
        &veth.host,
        "nud",
        "permanent",
    ]);
    // Both ways: the peer answers with ICMP port unreachable and must not ARP for us either.
    ip(&[
        "-n",
        &veth.ns,
        "neigh",
        "replace",
        host_ip,
        "lladdr",
        "02:00:5e:00:53:01",
        "dev",
        peer,
        "nud",
        "permanent",
    ]);

    let mut serve = Serve::start(&["--collect", "nic"]);
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: platscope\n    \
         static_configs:\n      - targets: ['{}']\n",
        serve.addr
    );
    let prom =
        Prometheus::start(&PromOptions::default().config(&config)).expect("starting Prometheus");
    println!(
        "serve pid {} on {}, Prometheus pid {} on port {}",
        serve.pid(),
        serve.addr,
        prom.pid(),
        prom.port()
    );

    let series =
        format!("platscope_nic_bytes_total{{device=\"{}\",direction=\"transmit\"}}", veth.host);
    wait_for(
        &prom,
        "up == 1 and 5 samples of the veth's transmit bytes",
        Duration::from_secs(30),
        || {
            scalar(&prom, "up{job=\"platscope\"}", None) == Some(1.0)
                && scalar(&prom, &format!("count_over_time({series}[1m])"), None)
                    .is_some_and(|n| n >= 5.0)
        },
    );

    // Targets: healthy, no error.
    let targets = json(&prom.get("/api/v1/targets").expect("targets").1);
    let target = &targets["data"]["activeTargets"][0];
    assert_eq!(target["health"], "up", "{target}");
    assert_eq!(target["lastError"], "", "{target}");
    // Metadata: the OpenMetrics family with its type and unit.
    let meta = json(&prom.get("/api/v1/metadata?metric=platscope_nic_bytes").expect("metadata").1);
    let entry = &meta["data"]["platscope_nic_bytes"][0];
    assert_eq!(entry["type"], "counter", "{meta}");
    assert_eq!(entry["unit"], "bytes", "{meta}");
    let speed = json(
        &prom
            .get("/api/v1/metadata?metric=platscope_nic_speed_bytes_per_second")
            .expect("metadata")
            .1,
    );
    assert_eq!(
        speed["data"]["platscope_nic_speed_bytes_per_second"][0]["type"], "gauge",
        "{speed}"
    );
    // veth reports 10 Gbit/s full duplex: 1.25e9 bytes/s.
    let speed_q = format!("platscope_nic_speed_bytes_per_second{{device=\"{}\"}}", veth.host);
    assert_eq!(scalar(&prom, &speed_q, None), Some(1.25e9));

    // Send: paced in bursts of 50 so the peer's backlog (netdev_max_backlog, 1000) never
    // overflows — veth does not count a frame it could not deliver.
    let tx_file = format!("/sys/class/net/{}/statistics/tx_bytes", veth.host);
    let read_tx = || -> u64 {
        std::fs::read_to_string(&tx_file).expect("tx_bytes").trim().parse().expect("a number")
    };
    let kernel_before = read_tx();
    let socket = UdpSocket::bind(format!("{host_ip}:0")).expect("bind UDP");
    let payload = vec![0x5a_u8; PAYLOAD];
    for n in 0..DATAGRAMS {
        socket.send_to(&payload, format!("{peer_ip}:9")).expect("send");
        if n % 50 == 49 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let sent_at = now_s();
    let expected = DATAGRAMS * (PAYLOAD as u64 + HEADERS);
    let kernel_delta = read_tx() - kernel_before;
    assert_eq!(kernel_delta, expected, "the veth's own counter (was the link quiet?)");

    // Wait for 5 scrapes after the send, then evaluate over a window that holds samples from
    // before and after it.
    wait_for(&prom, "5 samples after the send", Duration::from_secs(30), || {
        scalar(&prom, &format!("count_over_time({series}[1m])"), None)
            .is_some_and(|_| now_s() > sent_at + 5.5)
    });
    let at = now_s();
    let window = 30;
    let samples =
        scalar(&prom, &format!("count_over_time({series}[{window}s])"), Some(at)).expect("count");
    let increase =
        scalar(&prom, &format!("increase({series}[{window}s])"), Some(at)).expect("increase");
    let rate = scalar(&prom, &format!("rate({series}[{window}s])"), Some(at)).expect("rate");
    // Tolerance, derived: increase() takes (last - first) over the samples in the window, which
    // is exactly the bytes sent (the link carries nothing else), and extrapolates it to the
    // window's edges — by at most 1.1 average intervals on each side. With n samples spanning
    // (n - 1) intervals the factor is at most 1 + 2.2 / (n - 1); never below 1 (the counter did
    // not start inside the window, so the zero-point cap does not apply).
    let expected = expected as f64;
    let upper = expected * (1.0 + 2.2 / (samples - 1.0));
    println!("sent {expected} bytes; {samples} samples; increase {increase}, rate {rate}/s; bounds [{expected}, {upper}]");
    assert!(samples >= 6.0, "too few samples in {window} s: {samples}");
    assert!(
        increase >= expected * 0.999_999 && increase <= upper,
        "increase {increase} outside [{expected}, {upper}]"
    );
    let rate_times_window = rate * f64::from(window);
    assert!(
        (rate_times_window - increase).abs() <= increase * 1e-9,
        "rate {rate} × {window} s ≠ increase {increase}"
    );

    drop(prom);
    let status = serve.stop();
    assert!(status.success(), "serve exited {status:?} on SIGTERM");
}

#[live("the real Prometheus 2.42, stopped and started again mid-run")]
fn a_prometheus_restart_keeps_what_it_scraped_and_scraping_resumes() {
    let serve = Serve::start(&["--collect", "nic"]);
    let config = format!(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: platscope\n    \
         static_configs:\n      - targets: ['{}']\n",
        serve.addr
    );
    let mut prom = Prometheus::start(&PromOptions::default().config(&config)).expect("Prometheus");
    let up = "up{job=\"platscope\"}";
    wait_for(&prom, "first scrapes", Duration::from_secs(30), || {
        scalar(&prom, &format!("count_over_time({up}[1h])"), None).is_some_and(|n| n >= 3.0)
    });
    // What it holds before the restart, asked at one fixed time so the answer cannot grow.
    let before_restart = now_s();
    let samples = |prom: &Prometheus| {
        scalar(prom, "count_over_time(platscope_build_info[1h])", Some(before_restart))
    };
    let held = samples(&prom).expect("build_info samples before the restart");
    prom.restart().expect("Prometheus starts again on its own data");
    let restarted = now_s();
    // Scraping resumes: a sample newer than the restart, and up is 1 again.
    wait_for(&prom, "a scrape after the restart", Duration::from_secs(30), || {
        scalar(&prom, &format!("timestamp({up})"), None).is_some_and(|t| t > restarted)
            && scalar(&prom, up, None) == Some(1.0)
    });
    assert_eq!(
        samples(&prom),
        Some(held),
        "every sample scraped before the restart is still there"
    );
    // The counters serve exposes kept counting while Prometheus was down: no reset.
    let resets = scalar(&prom, "max(resets(platscope_nic_bytes_total[1h]))", None);
    assert_eq!(resets, Some(0.0), "counters never went backwards across the restart");
}

#[live("needs promtool (Debian prometheus)")]
fn promtool_accepts_the_text_004_rendering_of_a_real_scrape() {
    need_tool("promtool", "prometheus");
    let mut serve = Serve::start(&[]);
    let (status, headers, body) =
        get(serve.addr, "/metrics", &[("Accept", "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")]);
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "content-type"), Some("text/plain; version=0.0.4; charset=utf-8"));
    assert!(body.contains("# TYPE platscope_nic_bytes_total counter\n"), "{body}");
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    promtool.stdin.take().expect("stdin").write_all(body.as_bytes()).expect("write");
    let out = promtool.wait_with_output().expect("promtool");
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // And the default answer is OpenMetrics, ending in # EOF.
    let (_, headers, body) = get(serve.addr, "/metrics", &[]);
    assert_eq!(
        header(&headers, "content-type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    assert!(body.ends_with("# EOF\n"));
    assert_eq!(get(serve.addr, "/nothing", &[]).0, 404);
    assert!(serve.stop().success());
}

/// A numeric field of /proc/PID/status (the first number after `field`).
fn proc_status_field(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let line = status.lines().find(|l| l.starts_with(field)).expect("the field");
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("a number")
}

/// RSS of a process in KiB.
fn rss_kib(pid: u32) -> u64 {
    proc_status_field(pid, "VmRSS:")
}

#[live("1,000 scrapes from 50 threads load the machine")]
fn a_thousand_concurrent_scrapes_all_answered_in_bounded_memory() {
    let mut serve = Serve::start(&[]);
    let addr = serve.addr;
    let threads: Vec<_> = (0..50)
        .map(|_| {
            std::thread::spawn(move || {
                let mut failures = Vec::new();
                for _ in 0..20 {
                    let (status, _, body) = get(addr, "/metrics", &[]);
                    if status != 200 || !body.ends_with("# EOF\n") {
                        failures.push(format!(
                            "{status}: {} bytes, ends {:?}",
                            body.len(),
                            &body[body.len().saturating_sub(20)..]
                        ));
                    }
                }
                failures
            })
        })
        .collect();
    let failures: Vec<String> =
        threads.into_iter().flat_map(|t| t.join().expect("thread")).collect();
    assert!(
        failures.is_empty(),
        "{} of 1000 scrapes failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    // Threads follow open connections (one each, capped by --max-connections; 4 collect at
    // once), never requests: after 1,000 requests from 50 clients, far fewer than 1,000.
    let threads = proc_status_field(serve.pid(), "Threads:");
    println!("serve threads after 1,000 scrapes: {threads}");
    assert!(threads <= 50 + 4 + 16, "serve has {threads} threads after 50 concurrent clients");
    let rss = rss_kib(serve.pid());
    println!("serve RSS after 1,000 scrapes: {rss} KiB");
    assert!(rss < 64 * 1024, "serve's RSS grew to {rss} KiB (bound 64 MiB)");
    assert!(serve.stop().success());
}

/// Runs `openssl ARGS` in `dir`; fails the test with its output.
fn openssl(dir: &Path, args: &[&str]) {
    let out =
        Command::new("openssl").args(args).current_dir(dir).output().expect("running openssl");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A test CA, a server certificate for 127.0.0.1 and a client certificate, signed by the CA.
fn make_certificates(dir: &Path) {
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    let mut ca = vec!["req", "-x509", "-days", "1", "-subj", "/CN=platscope test CA"];
    ca.extend(ec);
    ca.extend(["-keyout", "ca.key", "-out", "ca.crt"]);
    openssl(dir, &ca);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    )
    .expect("ext");
    std::fs::write(dir.join("client.ext"), "extendedKeyUsage=clientAuth\n").expect("ext");
    for who in ["server", "client"] {
        let mut req = vec!["req", "-subj"];
        let subject = format!("/CN=platscope test {who}");
        req.push(&subject);
        req.extend(ec);
        let (key, csr, crt, ext) = (
            format!("{who}.key"),
            format!("{who}.csr"),
            format!("{who}.crt"),
            format!("{who}.ext"),
        );
        req.extend(["-keyout", &key, "-out", &csr]);
        openssl(dir, &req);
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "1",
                "-extfile",
                &ext,
                "-out",
                &crt,
            ],
        );
    }
}

/// `curl` over TLS to serve: the HTTP status (or curl's exit code as an error).
fn curl(dir: &Path, url: &str, extra: &[&str]) -> Result<u16, i32> {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}", "--cacert"])
        .arg(dir.join("ca.crt"))
        .args(extra)
        .arg(url)
        .current_dir(dir)
        .output()
        .expect("running curl");
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().parse().expect("an HTTP status"))
    } else {
        println!("curl {extra:?}: {}", String::from_utf8_lossy(&out.stderr).trim());
        Err(out.status.code().unwrap_or(-1))
    }
}

#[live("the real Prometheus 2.42 over TLS with basic auth, openssl and curl")]
fn prometheus_scrapes_over_tls_with_basic_auth_and_strangers_get_nothing() {
    need_tool("prometheus", "prometheus");
    need_tool("openssl", "openssl");
    need_tool("curl", "curl");
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    make_certificates(d);
    let hash = bcrypt::hash("scrape-secret", 4).expect("bcrypt");
    std::fs::write(
        d.join("web.yml"),
        format!(
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  \
             client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n\
             basic_auth_users:\n  prometheus: '{hash}'\n"
        ),
    )
    .expect("web.yml");
    let web = d.join("web.yml");
    let mut serve = Serve::start(&["--web-config", web.to_str().expect("utf-8 path")]);
    let url = format!("https://{}/metrics", serve.addr);
    let cert = ["--cert", "client.crt", "--key", "client.key"];

    // No client certificate: the handshake fails (curl 35/56), no HTTP at all.
    let no_cert = curl(d, &url, &[]);
    assert!(no_cert.is_err(), "without a client certificate: {no_cert:?}");
    // Certificate but no credentials, or a wrong password: 401, never data.
    assert_eq!(curl(d, &url, &cert), Ok(401));
    let mut wrong = cert.to_vec();
    wrong.extend(["-u", "prometheus:wrong"]);
    assert_eq!(curl(d, &url, &wrong), Ok(401));
    let mut stranger = cert.to_vec();
    stranger.extend(["-u", "mallory:scrape-secret"]);
    assert_eq!(curl(d, &url, &stranger), Ok(401));
    let mut right = cert.to_vec();
    right.extend(["-u", "prometheus:scrape-secret"]);
    assert_eq!(curl(d, &url, &right), Ok(200));

    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: platscope-tls\n    \
         scheme: https\n    basic_auth:\n      username: prometheus\n      password: scrape-secret\n    \
         tls_config:\n      ca_file: ca.crt\n      cert_file: client.crt\n      key_file: client.key\n    \
         static_configs:\n      - targets: ['{}']\n  - job_name: platscope-no-password\n    scheme: https\n    \
         tls_config:\n      ca_file: ca.crt\n      cert_file: client.crt\n      key_file: client.key\n    \
         static_configs:\n      - targets: ['{}']\n",
        serve.addr, serve.addr
    );
    let read = |name: &str| std::fs::read(d.join(name)).expect("certificate file");
    let options = PromOptions::default()
        .config(&config)
        .file("ca.crt", read("ca.crt"))
        .file("client.crt", read("client.crt"))
        .file("client.key", read("client.key"));
    let prom = Prometheus::start(&options).expect("starting Prometheus");
    wait_for(&prom, "up == 1 over TLS with basic auth", Duration::from_secs(30), || {
        scalar(&prom, "up{job=\"platscope-tls\"}", None) == Some(1.0)
            && scalar(&prom, "up{job=\"platscope-no-password\"}", None) == Some(0.0)
    });
    let targets = json(&prom.get("/api/v1/targets").expect("targets").1);
    for target in targets["data"]["activeTargets"].as_array().expect("targets") {
        match target["labels"]["job"].as_str() {
            Some("platscope-tls") => assert_eq!(target["lastError"], "", "{target}"),
            Some("platscope-no-password") => {
                let error = target["lastError"].as_str().unwrap_or("");
                assert!(error.contains("401"), "{target}");
            }
            other => panic!("unexpected job {other:?}"),
        }
    }
    assert_eq!(
        scalar(
            &prom,
            "platscope_scrape_collector_success{job=\"platscope-tls\",collector=\"nic\"}",
            None
        ),
        Some(1.0)
    );
    drop(prom);
    assert!(serve.stop().success());
}

/// `deploy/` at the workspace root.
fn deploy_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

fn run_ok(program: &str, args: &[&str]) -> String {
    let out =
        Command::new(program).args(args).output().unwrap_or_else(|e| panic!("{program}: {e}"));
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{program} {args:?}:\n{text}");
    text
}

#[live("needs promtool and systemd-analyze")]
fn deploy_files_pass_promtool_and_systemd_analyze() {
    need_tool("promtool", "prometheus");
    need_tool("systemd-analyze", "systemd");
    let deploy = deploy_dir();
    let rules = deploy.join("prometheus/rules.yml");
    let text = run_ok("promtool", &["check", "rules", rules.to_str().expect("utf-8")]);
    assert!(text.contains("SUCCESS"), "{text}");
    let scrape = deploy.join("prometheus/scrape.yml");
    run_ok("promtool", &["check", "config", "--syntax-only", scrape.to_str().expect("utf-8")]);
    // The unit names /usr/local/bin/platscope; verify a copy naming the binary just built
    // (systemd-analyze checks that ExecStart= is executable).
    let unit =
        std::fs::read_to_string(deploy.join("systemd/platscope-serve.service")).expect("unit");
    assert!(unit.contains("ExecStart=/usr/local/bin/platscope serve"), "{unit}");
    let dir = tempfile::tempdir().expect("temp dir");
    let copy = dir.path().join("platscope-serve.service");
    std::fs::write(&copy, unit.replace("/usr/local/bin/platscope", BIN)).expect("write unit");
    let text = run_ok("systemd-analyze", &["verify", copy.to_str().expect("utf-8")]);
    assert!(!text.contains("Unknown key") && !text.contains("Failed"), "{text}");
}

// Plain tier: loopback only, no root, no outside tools.

fn run_serve(args: &[&str]) -> (i32, String) {
    let out = test_support::command()
        .arg("serve")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("running platscope serve");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn serve_usage_and_runtime_errors_are_one_line_with_the_right_exit_code() {
    let (code, err) = run_serve(&["--collect", "nic,warp"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown collector \"warp\"") && err.lines().count() == 1, "{err}");
    let (code, err) = run_serve(&["--listen", "localhost"]);
    assert_eq!(code, 2, "{err}");
    let dir = tempfile::tempdir().expect("temp dir");
    let web = dir.path().join("web.yml");
    std::fs::write(&web, "basic_auth_users:\n  alice: not-a-hash\n").expect("write");
    let (code, err) = run_serve(&["--web-config", web.to_str().expect("utf-8")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("basic_auth_users.alice") && err.lines().count() == 1, "{err}");
    let (code, err) = run_serve(&["--web-config", "/nonexistent/web.yml"]);
    assert_eq!(code, 2, "{err}");
    // A port in use: runtime error, exit 1.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let (code, err) = run_serve(&["--listen", &addr]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("Address already in use") && err.lines().count() == 1, "{err}");
    // An address no interface has (TEST-NET-1): the bind's error alone, not the warning that
    // precedes a real non-loopback listen.
    let (code, err) = run_serve(&["--listen", "192.0.2.1:9100"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no interface of this host") && err.lines().count() == 1, "{err}");
}

#[test]
fn basic_auth_without_tls_answers_401_and_sigterm_ends_serve_cleanly() {
    let dir = tempfile::tempdir().expect("temp dir");
    let web = dir.path().join("web.yml");
    let hash = bcrypt::hash("pw", 4).expect("bcrypt");
    std::fs::write(&web, format!("basic_auth_users:\n  alice: '{hash}'\n")).expect("write");
    let mut serve = Serve::start(&["--web-config", web.to_str().expect("utf-8")]);
    let (status, headers, body) = get(serve.addr, "/metrics", &[]);
    assert_eq!(status, 401);
    assert_eq!(header(&headers, "www-authenticate"), Some("Basic realm=\"platscope\""));
    assert!(!body.contains("platscope_"), "{body}");
    use base64::Engine as _;
    let wrong = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("alice:nope"));
    assert_eq!(get(serve.addr, "/metrics", &[("Authorization", &wrong)]).0, 401);
    let right = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("alice:pw"));
    let (status, _, body) = get(serve.addr, "/metrics", &[("Authorization", &right)]);
    assert_eq!(status, 200);
    assert!(body.contains("platscope_build_info{") && body.ends_with("# EOF\n"), "{body}");
    let status = serve.stop();
    assert!(status.success(), "{status:?}");
}

// Hostile clients: loopback only, no root.

/// Starts a scrape in a thread; its status if answered within `limit`.
fn scrape_within(addr: SocketAddr, limit: Duration) -> Option<u16> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(get(addr, "/metrics", &[]).0);
    });
    rx.recv_timeout(limit).ok()
}

#[live("real TCP clients against a real serve on loopback")]
fn a_two_megabyte_header_gets_431_and_no_memory() {
    let mut serve = Serve::start(&[]);
    assert_eq!(scrape_within(serve.addr, Duration::from_secs(30)), Some(200));
    let before = rss_kib(serve.pid());
    for _ in 0..3 {
        let mut stream = TcpStream::connect(serve.addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
        let mut writer = stream.try_clone().expect("clone");
        let sender = std::thread::spawn(move || {
            let mut request = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
            request.extend(vec![b'a'; 2 * 1024 * 1024]);
            request.extend_from_slice(b"\r\n\r\n");
            // The server stops reading at its bound: a write error here is expected.
            let _ = writer.write_all(&request);
        });
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 431 "), "{:?}", &answer[..answer.len().min(200)]);
        assert!(answer.contains("Connection: close"), "{answer}");
        sender.join().expect("sender");
    }
    let after = rss_kib(serve.pid());
    println!("serve RSS before {before} KiB, after three 2 MiB heads {after} KiB");
    assert!(after < before + 4 * 1024, "RSS grew from {before} to {after} KiB");
    assert_eq!(scrape_within(serve.addr, Duration::from_secs(30)), Some(200));
    assert!(serve.stop().success());
}

#[live("real TCP clients against a real serve on loopback")]
fn idle_connections_over_the_cap_do_not_lock_scrapes_out() {
    let mut serve = Serve::start(&["--max-connections", "8"]);
    let started = Instant::now();
    // Twice the cap of clients that connect and say nothing, all held open.
    let idle: Vec<TcpStream> =
        (0..16).map(|_| TcpStream::connect(serve.addr).expect("connect")).collect();
    for round in 0..3 {
        let status = scrape_within(serve.addr, Duration::from_secs(10));
        assert_eq!(status, Some(200), "scrape {round} with 16 idle connections held open");
    }
    // A client that sent half a request is among those closed to make room, or times out.
    let mut closed = 0;
    for mut stream in idle {
        stream.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
        let mut byte = [0u8; 1];
        if matches!(stream.read(&mut byte), Ok(0) | Err(_)) {
            closed += 1;
        }
    }
    assert_eq!(closed, 16, "every idle connection is closed in the end");
    let elapsed = started.elapsed();
    assert!(serve.stop().success());
    let said: Vec<String> =
        serve.lines.try_iter().filter(|l| l.contains("--max-connections")).collect();
    assert!(!said.is_empty(), "the cap is reported");
    let most = 1 + elapsed.as_secs() as usize / 10;
    assert!(said.len() <= most, "reported at most every 10 s: {said:?}");
    assert!(said.iter().all(|l| !l.contains('\n')), "{said:?}");
}

#[live("real TCP clients against a real serve on loopback")]
fn silent_and_trickling_clients_are_dropped_after_the_head_deadline() {
    // serve gives a client 5 s for its whole request; 3× that is the bound here.
    let bound = Duration::from_secs(15);
    let mut serve = Serve::start(&[]);
    let silent = TcpStream::connect(serve.addr).expect("connect");
    let mut trickle = TcpStream::connect(serve.addr).expect("connect");
    let started = Instant::now();
    let mut writer = trickle.try_clone().expect("clone");
    let trickler = std::thread::spawn(move || {
        let _ = writer.write_all(b"GET /metrics HTTP/1.1\r\n");
        // One byte of a header every 200 ms, for far longer than the deadline.
        for _ in 0..200 {
            if writer.write_all(b"X").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    trickle.set_read_timeout(Some(bound * 2)).expect("timeout");
    let mut answer = Vec::new();
    let _ = trickle.read_to_end(&mut answer);
    let trickle_closed = started.elapsed();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 408 "), "{answer}");
    assert!(trickle_closed < bound, "a trickling client was held for {trickle_closed:?}");
    let mut silent = silent;
    silent.set_read_timeout(Some(bound * 2)).expect("timeout");
    let mut rest = Vec::new();
    let _ = silent.read_to_end(&mut rest);
    let silent_closed = started.elapsed();
    assert!(
        rest.is_empty(),
        "a silent client gets no answer: {:?}",
        String::from_utf8_lossy(&rest)
    );
    assert!(silent_closed < bound, "a silent client was held for {silent_closed:?}");
    drop(trickle);
    let _ = trickler.join();
    assert_eq!(scrape_within(serve.addr, Duration::from_secs(30)), Some(200));
    assert!(serve.stop().success());
}

/// Sends `request` raw and returns the status of the answer.
fn raw_status(addr: SocketAddr, request: &[u8]) -> u16 {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let mut writer = stream.try_clone().expect("clone");
    let request = request.to_vec();
    // The server may stop reading early (a refused body): a write error is expected then.
    let sender = std::thread::spawn(move || {
        let _ = writer.write_all(&request);
    });
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    sender.join().expect("sender");
    let answer = String::from_utf8_lossy(&answer);
    answer.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[live("real TCP clients against a real serve on loopback")]
fn request_bodies_are_bounded() {
    let mut serve = Serve::start(&[]);
    let small = b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789";
    assert_eq!(raw_status(serve.addr, small), 200, "a small body is read and ignored");
    let mut big = b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n".to_vec();
    big.extend(vec![b'b'; 1_000_000]);
    assert_eq!(raw_status(serve.addr, &big), 413);
    let chunked =
        b"GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
    assert_eq!(raw_status(serve.addr, chunked), 411);
    assert_eq!(raw_status(serve.addr, b"GET /metrics HTTP/1.1\r\nBad header\r\n\r\n"), 400);
    assert_eq!(raw_status(serve.addr, b"HEAD /metrics HTTP/1.0\r\n\r\n"), 200);
    assert!(serve.stop().success());
}
