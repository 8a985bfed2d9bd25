//! A throwaway Prometheus node_exporter (Debian's `prometheus-node-exporter`) on a free port on
//! 127.0.0.1, with only the collectors a test asks for (default: the textfile collector reading
//! one directory), stopped by PID on drop.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use scratchdb::process::{on_free_port, require, spawn_logged, wait_ready, ServerProcess, TempDir};
use scratchdb::{io_err, Result};

/// Where Debian's `prometheus-node-exporter` puts its binary.
pub const DEFAULT_BINARY: &str = "/usr/bin/prometheus-node-exporter";

/// How to start node_exporter.
#[derive(Debug, Clone)]
pub struct NodeExporterOptions {
    /// The binary.
    pub binary: PathBuf,
    /// The textfile collector's directory (`--collector.textfile.directory`); `None` leaves
    /// the textfile collector off.
    pub textfile_dir: Option<PathBuf>,
    /// Collectors to enable besides textfile (all others are off: `--collector.disable-defaults`).
    pub collectors: Vec<String>,
    /// How long to wait for it to answer.
    pub ready_timeout: Duration,
    /// How long SIGTERM gets before SIGKILL.
    pub stop_timeout: Duration,
}

impl Default for NodeExporterOptions {
    fn default() -> Self {
        NodeExporterOptions {
            binary: PathBuf::from(DEFAULT_BINARY),
            textfile_dir: None,
            collectors: Vec::new(),
            ready_timeout: Duration::from_secs(15),
            stop_timeout: Duration::from_secs(5),
        }
    }
}

impl NodeExporterOptions {
    /// Reads `*.prom` files in `dir`.
    pub fn textfile_dir(mut self, dir: &Path) -> Self {
        self.textfile_dir = Some(dir.to_path_buf());
        self
    }

    /// Also enables collector `name` (`cpu`, `netdev`, …).
    pub fn collector(mut self, name: &str) -> Self {
        self.collectors.push(name.to_string());
        self
    }
}

/// A running node_exporter; dropping it stops it by PID (SIGTERM, then SIGKILL) and removes
/// its temp dir (which holds its log).
#[derive(Debug)]
pub struct NodeExporter {
    // Dropped in declaration order: the server before its directory.
    process: ServerProcess,
    dir: TempDir,
    port: u16,
}

impl NodeExporter {
    /// Starts node_exporter; returns when `/metrics` answers.
    pub fn start(options: &NodeExporterOptions) -> Result<Self> {
        let binary = require(&options.binary, "prometheus-node-exporter")?;
        let dir = TempDir::new("node-exporter")?;
        let log = dir.path().join("node_exporter.log");
        let (process, port) = on_free_port("node_exporter", &log, |port| {
            let mut cmd = Command::new(&binary);
            cmd.arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .arg("--collector.disable-defaults");
            if let Some(textfile) = &options.textfile_dir {
                cmd.arg("--collector.textfile")
                    .arg(format!("--collector.textfile.directory={}", textfile.display()));
            }
            for name in &options.collectors {
                cmd.arg(format!("--collector.{name}"));
            }
            let child = spawn_logged(&mut cmd, dir.path(), &log, false)?;
            let mut process = ServerProcess::new(child, libc::SIGTERM, options.stop_timeout);
            let ready = || get(port, "/metrics").is_ok();
            match wait_ready("node_exporter", &mut process, &log, options.ready_timeout, ready) {
                Ok(()) => Ok((process, port)),
                Err(e) => {
                    process.stop();
                    Err(e)
                }
            }
        })?;
        Ok(NodeExporter { process, dir, port })
    }

    /// Its PID.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its log file (stdout and stderr).
    pub fn log_file(&self) -> PathBuf {
        self.dir.path().join("node_exporter.log")
    }

    /// The body of `GET /metrics` (text format 0.0.4).
    pub fn metrics(&self) -> Result<String> {
        get(self.port, "/metrics")
    }

    /// Stops it now (SIGTERM, bounded wait, SIGKILL); true if it stopped cleanly in time.
    pub fn stop(mut self) -> bool {
        self.process.stop()
    }
}

/// A plain HTTP/1.0 GET on 127.0.0.1 (so the server closes the connection after the body),
/// with bounded timeouts; the body of a 200 answer.
fn get(port: u16, path: &str) -> Result<String> {
    let what = || format!("GET http://127.0.0.1:{port}{path}");
    let timeout = Duration::from_secs(10);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, timeout).map_err(io_err(what()))?;
    stream.set_read_timeout(Some(timeout)).map_err(io_err(what()))?;
    stream.set_write_timeout(Some(timeout)).map_err(io_err(what()))?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: text/plain\r\n\r\n")
        .map_err(io_err(what()))?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).map_err(io_err(what()))?;
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        let status = head.lines().next().unwrap_or("no status line").to_string();
        return Err(io_err(what())(std::io::Error::other(status)));
    }
    Ok(body.to_string())
}
