//! A throwaway MariaDB server.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::process::{
    free_port, require, run_client, run_setup, tail, wait_ready, ServerProcess, TempDir,
};
use crate::{io_err, is_root, Error, Result};

/// Where Debian's `mariadb-server` puts the server.
pub const DEFAULT_SERVER: &str = "/usr/sbin/mariadbd";

/// How to start a [`MariaDb`].
#[derive(Debug, Clone)]
pub struct MariaDbOptions {
    /// The server binary.
    pub server: PathBuf,
    /// The query cache size in bytes; `Some` also sets `query_cache_type=1`.
    pub query_cache_bytes: Option<u64>,
    /// Also listen on a free TCP port on 127.0.0.1 (by default only the socket).
    pub tcp: bool,
    /// Extra `--name=value` server options.
    pub options: Vec<String>,
    /// How long the server may take to accept connections.
    pub ready_timeout: Duration,
    /// How long a clean shutdown (SIGTERM) may take before SIGKILL.
    pub stop_timeout: Duration,
    /// Environment variables set for `mariadbd` (e.g. `LD_PRELOAD` of an allocator), not for
    /// `mariadb-install-db`.
    pub env: Vec<(String, String)>,
}

impl Default for MariaDbOptions {
    fn default() -> Self {
        MariaDbOptions {
            server: PathBuf::from(DEFAULT_SERVER),
            query_cache_bytes: None,
            tcp: false,
            options: Vec::new(),
            ready_timeout: Duration::from_secs(30),
            stop_timeout: Duration::from_secs(15),
            env: Vec::new(),
        }
    }
}

impl MariaDbOptions {
    /// Turns the query cache on (`--query-cache-type=1 --query-cache-size=BYTES`).
    pub fn query_cache(mut self, bytes: u64) -> Self {
        self.query_cache_bytes = Some(bytes);
        self
    }

    /// Adds a server option, written as on the command line (`--name=value`).
    pub fn option(mut self, option: &str) -> Self {
        self.options.push(option.to_string());
        self
    }

    /// Sets an environment variable for the server process.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_string(), value.to_string()));
        self
    }
}

/// A running throwaway MariaDB server: `mariadb-install-db` in a temp dir, `mariadbd` on a
/// socket in that dir (and optionally a TCP port), root without a password. Dropping it stops
/// the server by PID (SIGTERM, then SIGKILL after [`MariaDbOptions::stop_timeout`]) and
/// removes the dir.
#[derive(Debug)]
pub struct MariaDb {
    // Dropped in declaration order: the server before its directory.
    process: ServerProcess,
    launch: Launch,
}

/// What starting `mariadbd` takes, kept for a restart; owns the server's directory.
#[derive(Debug)]
struct Launch {
    server: PathBuf,
    data_dir: PathBuf,
    dir: TempDir,
    port: Option<u16>,
    options: MariaDbOptions,
}

impl Launch {
    /// Starts the server and waits until it accepts connections on its socket.
    fn launch(&self) -> Result<ServerProcess> {
        let (dir, options) = (&self.dir, &self.options);
        let log = dir.path().join("server.log");
        let socket = dir.path().join("s");
        let mut cmd = Command::new(&self.server);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", self.data_dir.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}", dir.path().join("mariadbd.pid").display()))
            .arg(format!("--log-error={}", log.display()))
            .args(["--user=root", "--innodb-buffer-pool-size=128M", "--skip-log-bin"]);
        match self.port {
            Some(port) => {
                cmd.arg("--bind-address=127.0.0.1").arg(format!("--port={port}"));
            }
            None => {
                cmd.arg("--skip-networking");
            }
        }
        if let Some(bytes) = options.query_cache_bytes {
            cmd.arg("--query-cache-type=1").arg(format!("--query-cache-size={bytes}"));
        }
        cmd.args(&options.options).envs(options.env.iter().map(|(k, v)| (k, v)));
        let child = cmd
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(io_err(format!("starting {}", self.server.display())))?;
        let mut process = ServerProcess::new(child, libc::SIGTERM, options.stop_timeout);
        // The log is appended to across restarts: readiness is a new line after the start.
        let seen =
            std::fs::read_to_string(&log).map_or(0, |l| l.matches("ready for connections").count());
        let ready = wait_ready("MariaDB", &mut process, &log, options.ready_timeout, || {
            std::fs::read_to_string(&log)
                .is_ok_and(|l| l.matches("ready for connections").count() > seen)
                && crate::process::socket_accepts(&socket)
        });
        match ready {
            Ok(()) => Ok(process),
            Err(e) => {
                process.stop();
                Err(e)
            }
        }
    }
}

impl MariaDb {
    /// Creates the data dir and starts the server; returns when it accepts connections.
    pub fn start(options: &MariaDbOptions) -> Result<Self> {
        if !is_root() {
            return Err(Error::NotRoot("MariaDB"));
        }
        let server = require(&options.server, "mariadb-server")?;
        let install = require(Path::new("/usr/bin/mariadb-install-db"), "mariadb-server")?;
        require(Path::new("/usr/bin/mariadb"), "mariadb-client")?;
        let dir = TempDir::new("mariadb")?;
        let data_dir = dir.path().join("data");

        let mut init = Command::new(install);
        init.arg("--no-defaults")
            .arg(format!("--datadir={}", data_dir.display()))
            .args([
                "--user=root",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                "--skip-name-resolve",
            ])
            .current_dir(dir.path());
        run_setup(init, &dir.path().join("install.log"))?;

        let port = if options.tcp { Some(free_port()?) } else { None };
        let launch = Launch { server, data_dir, dir, port, options: options.clone() };
        let process = launch.launch()?;
        Ok(MariaDb { process, launch })
    }

    /// The server's PID.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The Unix socket.
    pub fn socket(&self) -> PathBuf {
        self.launch.dir.path().join("s")
    }

    /// The TCP port on 127.0.0.1, if [`MariaDbOptions::tcp`] was set.
    pub fn port(&self) -> Option<u16> {
        self.launch.port
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.launch.data_dir
    }

    /// The server binary.
    pub fn binary(&self) -> &Path {
        &self.launch.server
    }

    /// The server's error log.
    pub fn log_file(&self) -> PathBuf {
        self.launch.dir.path().join("server.log")
    }

    /// A `mariadb` client command connected to this server as root, batch mode, no headers.
    pub fn client(&self) -> Command {
        let mut cmd = Command::new("/usr/bin/mariadb");
        cmd.arg("--no-defaults")
            .arg(format!("--socket={}", self.socket().display()))
            .args(["-u", "root", "-N", "-B"]);
        cmd
    }

    /// Runs SQL with the `mariadb` client and returns what it printed, without the final
    /// newline: one row per line, columns split by tabs.
    pub fn sql(&self, sql: &str) -> Result<String> {
        let mut cmd = self.client();
        cmd.arg("-e").arg(sql);
        run_client(cmd, sql)
    }

    /// A global status counter (`SHOW GLOBAL STATUS LIKE 'name'`).
    pub fn status(&self, name: &str) -> Result<u64> {
        let sql = format!("SHOW GLOBAL STATUS LIKE '{name}'");
        let out = self.sql(&sql)?;
        out.split('\t').nth(1).and_then(|v| v.trim().parse().ok()).ok_or_else(|| Error::Sql {
            sql,
            status: std::process::ExitStatus::default(),
            stderr: format!("unexpected output {out:?}\n{}", tail(&self.log_file(), 5)),
        })
    }

    /// True while the server runs.
    pub fn is_running(&mut self) -> bool {
        self.process.exited().is_none()
    }

    /// Stops the server with `signal` (`SIGTERM` a clean shutdown, `SIGKILL` a crash), leaves it
    /// down for `down`, and starts it again on the same socket, port and data directory.
    /// Returns when it accepts connections again.
    pub fn restart(&mut self, signal: libc::c_int, down: Duration) -> Result<()> {
        self.process.stop_with(signal);
        std::thread::sleep(down);
        self.process = self.launch.launch()?;
        Ok(())
    }

    /// Stops the server now (SIGTERM, then SIGKILL) and removes its files. Returns whether
    /// the clean shutdown finished in time; dropping does the same silently.
    pub fn stop(mut self) -> bool {
        self.process.stop()
    }
}
