//! A throwaway Prometheus server (Debian's `prometheus` 2.42): a temp dir for its TSDB and
//! configuration, a free port on 127.0.0.1, ready when `/-/ready` answers 200.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use scratchdb::process::{on_free_port, require, spawn_logged, wait_ready, ServerProcess, TempDir};
use scratchdb::{io_err, Result};

/// Where Debian's `prometheus` package puts the server.
pub const DEFAULT_BINARY: &str = "/usr/bin/prometheus";

/// How to start a [`Prometheus`].
#[derive(Debug, Clone)]
pub struct PromOptions {
    /// The `prometheus` binary.
    pub binary: PathBuf,
    /// The configuration file's text (`scrape_configs: …`); files it names can be put beside
    /// it with [`PromOptions::file`].
    pub config: String,
    /// Extra files written into the server's directory before start (name, contents), e.g. a
    /// CA certificate the configuration names.
    pub files: Vec<(String, Vec<u8>)>,
    /// How long the server may take to answer `/-/ready`.
    pub ready_timeout: Duration,
    /// How long a clean shutdown (SIGTERM) may take before SIGKILL.
    pub stop_timeout: Duration,
}

impl Default for PromOptions {
    fn default() -> Self {
        PromOptions {
            binary: PathBuf::from(DEFAULT_BINARY),
            config: "global:\n  scrape_interval: 1s\n".to_string(),
            files: Vec::new(),
            ready_timeout: Duration::from_secs(30),
            stop_timeout: Duration::from_secs(10),
        }
    }
}

impl PromOptions {
    /// Uses this configuration text.
    pub fn config(mut self, text: &str) -> Self {
        self.config = text.to_string();
        self
    }

    /// Writes a file beside the configuration (relative names in it resolve there).
    pub fn file(mut self, name: &str, contents: impl Into<Vec<u8>>) -> Self {
        self.files.push((name.to_string(), contents.into()));
        self
    }
}

/// A running throwaway Prometheus. Dropping it stops the server by PID (SIGTERM, then
/// SIGKILL after [`PromOptions::stop_timeout`]) and removes its directory.
#[derive(Debug)]
pub struct Prometheus {
    // Dropped in declaration order: the server before its directory.
    process: ServerProcess,
    dir: TempDir,
    port: u16,
    options: PromOptions,
}

impl Prometheus {
    /// Writes the configuration and starts the server; returns when `/-/ready` answers 200.
    pub fn start(options: &PromOptions) -> Result<Self> {
        let binary = require(&options.binary, "prometheus")?;
        let dir = TempDir::new("prom")?;
        let config = dir.path().join("prometheus.yml");
        std::fs::write(&config, &options.config)
            .map_err(io_err(format!("writing {}", config.display())))?;
        for (name, contents) in &options.files {
            let path = dir.path().join(name);
            std::fs::write(&path, contents)
                .map_err(io_err(format!("writing {}", path.display())))?;
        }
        let log = dir.path().join("prometheus.log");
        let (process, port) = on_free_port("Prometheus", &log, |port| {
            Ok((launch(&binary, dir.path(), port, options)?, port))
        })?;
        Ok(Prometheus { process, dir, port, options: options.clone() })
    }

    /// Stops the server (SIGTERM, as an operator would) and starts it again on the same
    /// directory, configuration and port: what it had scraped is read back from its TSDB.
    pub fn restart(&mut self) -> Result<()> {
        self.process.stop();
        let binary = require(&self.options.binary, "prometheus")?;
        self.process = launch(&binary, self.dir.path(), self.port, &self.options)?;
        Ok(())
    }

    /// The server's PID.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The HTTP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory holding the configuration, extra files and the TSDB.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The last `lines` lines of the server's log (for failure messages).
    pub fn log_tail(&self, lines: usize) -> String {
        scratchdb::process::tail(&self.dir.path().join("prometheus.log"), lines)
    }

    /// `GET path` (with its query string) on the server: the status and the body.
    pub fn get(&self, path: &str) -> Result<(u16, String)> {
        http_get(self.port, path).map_err(io_err(format!("GET {path} from Prometheus")))
    }

    /// `GET /api/v1/query?query=…` (at `time`, Unix seconds, when given): the JSON body.
    pub fn query(&self, promql: &str, time: Option<f64>) -> Result<String> {
        let mut path = format!("/api/v1/query?query={}", url_encode(promql));
        if let Some(t) = time {
            path.push_str(&format!("&time={t:.3}"));
        }
        let (status, body) = self.get(&path)?;
        if status == 200 {
            Ok(body)
        } else {
            Err(io_err(format!("query {promql:?}: HTTP {status}: {body}"))(std::io::Error::other(
                "Prometheus refused the query",
            )))
        }
    }
}

/// Starts the server in `dir` on `port` (log appended to `prometheus.log`) and waits for
/// `/-/ready`; a server that does not get ready is stopped.
fn launch(binary: &Path, dir: &Path, port: u16, options: &PromOptions) -> Result<ServerProcess> {
    let log = dir.join("prometheus.log");
    let child = spawn_logged(
        Command::new(binary)
            .arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}")),
        dir,
        &log,
        true,
    )?;
    let mut process = ServerProcess::new(child, libc::SIGTERM, options.stop_timeout);
    let ready = || http_get(port, "/-/ready").is_ok_and(|(status, _)| status == 200);
    match wait_ready("Prometheus", &mut process, &log, options.ready_timeout, ready) {
        Ok(()) => Ok(process),
        Err(e) => {
            process.stop();
            Err(e)
        }
    }
}

/// Percent-encodes everything but unreserved characters (RFC 3986).
pub fn url_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A one-shot HTTP/1.0 GET on 127.0.0.1 (the server closes the connection after the answer),
/// with bounded connect, read and write times.
fn http_get(port: u16, path: &str) -> std::io::Result<(u16, String)> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.set_write_timeout(Some(Duration::from_secs(10)))?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n")?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP answer: {head:?}")))?;
    Ok((status, body.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_encoding_keeps_unreserved_only() {
        assert_eq!(url_encode("up{job=\"a b\"}"), "up%7Bjob%3D%22a%20b%22%7D");
        assert_eq!(url_encode("rate(x[1m])"), "rate%28x%5B1m%5D%29");
    }
}
