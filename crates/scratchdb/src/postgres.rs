//! A throwaway PostgreSQL 15 cluster.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::process::{
    on_free_port, require, run_client, run_setup, spawn_logged, user_ids, wait_ready,
    ServerProcess, TempDir,
};
use crate::{io_err, is_root, Error, Result};

/// Where Debian's `postgresql-15` puts its binaries.
pub const DEFAULT_BIN_DIR: &str = "/usr/lib/postgresql/15/bin";
/// The superuser `initdb` creates (trust authentication, no password).
pub const USER: &str = "platscope";

/// How to start a [`Postgres`].
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// Directory holding `postgres`, `initdb`, `pgbench`, `psql`.
    pub bin_dir: PathBuf,
    /// Extra `-c name=value` settings (`fsync=off` and the listen address are always set).
    pub settings: Vec<(String, String)>,
    /// How long the server may take to accept connections.
    pub ready_timeout: Duration,
    /// How long a fast shutdown (SIGINT) may take before SIGKILL.
    pub stop_timeout: Duration,
    /// Environment variables set for the server (e.g. `LD_PRELOAD` of an allocator); inherited
    /// by every backend it forks.
    pub env: Vec<(String, String)>,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            bin_dir: PathBuf::from(DEFAULT_BIN_DIR),
            settings: Vec::new(),
            ready_timeout: Duration::from_secs(30),
            stop_timeout: Duration::from_secs(10),
            env: Vec::new(),
        }
    }
}

impl PgOptions {
    /// Adds a `-c name=value` server setting.
    pub fn setting(mut self, name: &str, value: &str) -> Self {
        self.settings.push((name.to_string(), value.to_string()));
        self
    }

    /// Sets an environment variable for the server process (not for `initdb`).
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_string(), value.to_string()));
        self
    }
}

/// A running throwaway PostgreSQL cluster: `initdb` in a temp dir, the postmaster listening on
/// a free port on 127.0.0.1 and on a socket in that dir. Dropping it stops the postmaster by
/// PID (SIGINT, then SIGKILL after [`PgOptions::stop_timeout`]) and removes the dir.
#[derive(Debug)]
pub struct Postgres {
    // Dropped in declaration order: the server before its directory.
    process: ServerProcess,
    server: Launch,
    bin_dir: PathBuf,
    port: u16,
}

/// What starting the postmaster takes, kept for a restart; owns the cluster's directory.
#[derive(Debug)]
struct Launch {
    postgres: PathBuf,
    data_dir: PathBuf,
    dir: TempDir,
    uid: u32,
    gid: u32,
    options: PgOptions,
}

impl Launch {
    /// Starts the postmaster on `port` and waits until it accepts connections (the log is
    /// appended to on a restart).
    fn launch(&self, port: u16, append: bool) -> Result<ServerProcess> {
        let log = self.dir.path().join("server.log");
        let mut cmd = Command::new(&self.postgres);
        cmd.arg("-D")
            .arg(&self.data_dir)
            .arg("-p")
            .arg(port.to_string())
            .arg("-k")
            .arg(self.dir.path())
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"]);
        for (name, value) in &self.options.settings {
            cmd.arg("-c").arg(format!("{name}={value}"));
        }
        cmd.envs(self.options.env.iter().map(|(k, v)| (k, v))).uid(self.uid).gid(self.gid);
        let child = spawn_logged(&mut cmd, self.dir.path(), &log, append)?;
        // The server writes through the descriptor it was given; the file is the postgres
        // user's too, like the rest of the cluster.
        std::os::unix::fs::chown(&log, Some(self.uid), Some(self.gid))
            .map_err(io_err(format!("chown {}", log.display())))?;
        let mut process = ServerProcess::new(child, libc::SIGINT, self.options.stop_timeout);
        let pid_file = self.data_dir.join("postmaster.pid");
        match wait_ready("PostgreSQL", &mut process, &log, self.options.ready_timeout, || {
            postmaster_ready(&pid_file)
        }) {
            Ok(()) => Ok(process),
            Err(e) => {
                process.stop();
                Err(e)
            }
        }
    }
}

impl Postgres {
    /// Creates the cluster and starts it; returns when it accepts connections.
    pub fn start(options: &PgOptions) -> Result<Self> {
        if !is_root() {
            return Err(Error::NotRoot("PostgreSQL"));
        }
        let bin_dir = options.bin_dir.clone();
        let postgres = require(&bin_dir.join("postgres"), "postgresql-15")?;
        let initdb = require(&bin_dir.join("initdb"), "postgresql-15")?;
        let (uid, gid) = user_ids("postgres")?;
        let dir = TempDir::new("pg")?;
        dir.chown(uid, gid)?;
        let data_dir = dir.path().join("data");

        let mut init = Command::new(&initdb);
        init.arg("-D")
            .arg(&data_dir)
            .args(["-A", "trust", "-U", USER, "--no-sync", "-E", "UTF8", "--locale=C"])
            .current_dir(dir.path())
            .uid(uid)
            .gid(gid);
        run_setup(init, &dir.path().join("initdb.log"))?;

        let log = dir.path().join("server.log");
        let server = Launch { postgres, data_dir, dir, uid, gid, options: options.clone() };
        let (process, port) = on_free_port("PostgreSQL", &log, |port| {
            server.launch(port, false).map(|process| (process, port))
        })?;
        Ok(Postgres { process, server, bin_dir, port })
    }

    /// The postmaster's PID.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory holding the Unix socket (`.s.PGSQL.<port>`); pass it as the host.
    pub fn socket_dir(&self) -> &Path {
        self.server.dir.path()
    }

    /// The cluster's data directory.
    pub fn data_dir(&self) -> &Path {
        &self.server.data_dir
    }

    /// The server binary (`postgres`) the postmaster runs.
    pub fn binary(&self) -> PathBuf {
        self.bin_dir.join("postgres")
    }

    /// The directory with `psql`, `pgbench`, ...
    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    /// The server's log file.
    pub fn log_file(&self) -> PathBuf {
        self.server.dir.path().join("server.log")
    }

    /// A libpq connection string for this server (database `postgres`, over the socket).
    pub fn conninfo(&self) -> String {
        format!(
            "host={} port={} user={USER} dbname=postgres",
            self.socket_dir().display(),
            self.port
        )
    }

    /// A command for one of the cluster's client programs (`psql`, `pgbench`, ...) with
    /// `PGHOST`, `PGPORT`, `PGUSER` and `PGDATABASE` set to this server.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(self.bin_dir.join(program));
        cmd.env("PGHOST", self.socket_dir())
            .env("PGPORT", self.port.to_string())
            .env("PGUSER", USER)
            .env("PGDATABASE", "postgres")
            .env_remove("PGPASSWORD")
            .env_remove("PGSERVICE");
        cmd
    }

    /// Runs SQL with `psql` (unaligned, tuples only, stops at the first error) and returns
    /// what it printed, without the final newline: one row per line, columns split by `|`.
    pub fn sql(&self, sql: &str) -> Result<String> {
        let mut cmd = self.command("psql");
        cmd.args(["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql]);
        run_client(cmd, sql)
    }

    /// True while the postmaster runs.
    pub fn is_running(&mut self) -> bool {
        self.process.exited().is_none()
    }

    /// Stops the postmaster with `signal` (`SIGQUIT` immediate, `SIGINT` fast, `SIGTERM` smart
    /// shutdown; SIGKILL after the stop timeout), leaves it down for `down`, and starts it again
    /// on the same port and data directory (crash recovery after an immediate shutdown). Returns
    /// when it accepts connections again.
    pub fn restart(&mut self, signal: libc::c_int, down: Duration) -> Result<()> {
        self.process.stop_with(signal);
        std::thread::sleep(down);
        self.process = self.server.launch(self.port, true)?;
        Ok(())
    }

    /// Stops the server now (fast shutdown, then SIGKILL) and removes its files. Returns
    /// whether the clean shutdown finished in time; dropping does the same silently.
    pub fn stop(mut self) -> bool {
        self.process.stop()
    }
}

/// The postmaster writes "ready" on the 8th line of postmaster.pid once it accepts
/// connections (PostgreSQL 10 and later).
fn postmaster_ready(pid_file: &Path) -> bool {
    std::fs::read_to_string(pid_file)
        .map(|s| s.lines().nth(7).is_some_and(|l| l.trim() == "ready"))
        .unwrap_or(false)
}
