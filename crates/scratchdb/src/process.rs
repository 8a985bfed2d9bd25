//! What every throwaway server shares (the databases here, and `testdb`'s Prometheus and
//! node_exporter): the temp dir, the child process stopped by PID, bounded waits, log tails and
//! running a client.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::{io_err, Error, Result};

/// A directory under the system temp dir, removed (with everything in it) on drop.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates `/tmp/platscope-scratchdb-<kind>-<pid>-<n>` with mode 0700.
    pub fn new(kind: &str) -> Result<Self> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let base = std::env::temp_dir();
        for _ in 0..100 {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!("platscope-scratchdb-{kind}-{}-{n}", std::process::id()));
            match std::fs::create_dir(&path) {
                Ok(()) => {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))
                        .map_err(io_err(format!("chmod {}", path.display())))?;
                    return Ok(TempDir { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io_err(format!("creating {}", path.display()))(e)),
            }
        }
        Err(io_err(format!("creating a temp dir in {}", base.display()))(std::io::Error::from(
            std::io::ErrorKind::AlreadyExists,
        )))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Gives the directory to `uid:gid`.
    pub fn chown(&self, uid: u32, gid: u32) -> Result<()> {
        std::os::unix::fs::chown(&self.path, Some(uid), Some(gid))
            .map_err(io_err(format!("chown {}", self.path.display())))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A server process this process started; stopped by its PID on drop.
#[derive(Debug)]
pub struct ServerProcess {
    child: Option<Child>,
    /// The signal that asks for a clean, fast shutdown.
    stop_signal: libc::c_int,
    stop_timeout: Duration,
}

impl ServerProcess {
    pub fn new(child: Child, stop_signal: libc::c_int, stop_timeout: Duration) -> Self {
        ServerProcess { child: Some(child), stop_signal, stop_timeout }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// `Some(status)` if the process has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }

    /// Sends the stop signal, waits up to the stop timeout, then SIGKILLs and reaps. Returns
    /// true if the clean shutdown finished in time.
    pub fn stop(&mut self) -> bool {
        self.stop_with(self.stop_signal)
    }

    /// [`ServerProcess::stop`] with another signal (a server's immediate or smart shutdown).
    pub fn stop_with(&mut self, signal: libc::c_int) -> bool {
        let Some(mut child) = self.child.take() else { return true };
        if matches!(child.try_wait(), Ok(Some(_))) {
            return true;
        }
        let Ok(pid) = libc::pid_t::try_from(child.id()) else { return false };
        // SAFETY: kill has no memory preconditions; `pid` is our own unreaped child, so the
        // PID cannot have been reused by another process.
        unsafe { libc::kill(pid, signal) };
        let deadline = Instant::now() + self.stop_timeout;
        while Instant::now() < deadline {
            if matches!(child.try_wait(), Ok(Some(_)) | Err(_)) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        false
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The last `lines` lines of a file (or a note that it could not be read).
pub fn tail(path: &Path, lines: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(could not read {}: {e})", path.display()),
    }
}

/// Polls `ready` every 50 ms until it says yes, the server exits, or `timeout` passes.
pub fn wait_ready(
    server: &'static str,
    process: &mut ServerProcess,
    log: &Path,
    timeout: Duration,
    mut ready: impl FnMut() -> bool,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = process.exited() {
            return Err(Error::NotReady {
                server,
                what: format!("exited during start-up ({status})"),
                log: log.to_path_buf(),
                tail: tail(log, 20),
            });
        }
        if ready() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Error::NotReady {
                server,
                what: format!("was not ready within {} s", timeout.as_secs_f64()),
                log: log.to_path_buf(),
                tail: tail(log, 20),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs a setup command to completion; its output goes to `log`.
pub fn run_setup(mut command: Command, log: &Path) -> Result<()> {
    let name = format!("{:?}", command.get_program());
    let file = std::fs::File::create(log).map_err(io_err(format!("creating {}", log.display())))?;
    let err = file.try_clone().map_err(io_err("duplicating a log file handle"))?;
    let status = command
        .stdout(file)
        .stderr(err)
        .stdin(std::process::Stdio::null())
        .status()
        .map_err(io_err(format!("running {name}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::Setup { command: name, status, output: tail(log, 20) })
    }
}

/// Runs a client command, returning its stdout without the trailing newline.
pub fn run_client(mut command: Command, sql: &str) -> Result<String> {
    let Output { status, stdout, stderr } = command
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(io_err(format!("running {:?}", command.get_program())))?;
    if !status.success() {
        return Err(Error::Sql {
            sql: sql.to_string(),
            status,
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        });
    }
    let mut out = String::from_utf8_lossy(&stdout).into_owned();
    while out.ends_with('\n') {
        out.pop();
    }
    Ok(out)
}

/// `(uid, gid)` of a system user.
pub fn user_ids(name: &'static str) -> Result<(u32, u32)> {
    let c_name = CString::new(name).map_err(|_| Error::NoUser(name))?;
    // SAFETY: getpwnam reads a NUL-terminated string; the returned record (static storage)
    // is read at once, before any other call could overwrite it. Tests may call this from
    // several threads; the fields copied are plain integers.
    let entry = unsafe { libc::getpwnam(c_name.as_ptr()) };
    if entry.is_null() {
        return Err(Error::NoUser(name));
    }
    // SAFETY: non-null, so it points to a valid passwd record.
    let (uid, gid) = unsafe { ((*entry).pw_uid, (*entry).pw_gid) };
    Ok((uid, gid))
}

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel picked it).
pub fn free_port() -> Result<u16> {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").map_err(io_err("finding a free TCP port"))?;
    let port = listener.local_addr().map_err(io_err("finding a free TCP port"))?.port();
    Ok(port)
}

/// Checks a binary is there, naming the package that provides it.
pub fn require(path: &Path, package: &'static str) -> Result<PathBuf> {
    if path.is_file() {
        Ok(path.to_path_buf())
    } else {
        Err(Error::NotInstalled(path.to_path_buf(), package))
    }
}

/// True if a Unix socket at `path` accepts a connection.
pub fn socket_accepts(path: &Path) -> bool {
    std::os::unix::net::UnixStream::connect(path).is_ok()
}

/// Runs `start` on a free port of 127.0.0.1, and on another when the server reports the port
/// taken (one the kernel picked a moment ago can be bound by someone else meanwhile): three
/// tries in all. `start` stops its own server when it does not get ready.
pub fn on_free_port<T>(
    server: &'static str,
    log: &Path,
    mut start: impl FnMut(u16) -> Result<T>,
) -> Result<T> {
    let mut last_error = None;
    for _ in 0..3 {
        match start(free_port()?) {
            Ok(started) => return Ok(started),
            Err(e) => {
                let port_taken = matches!(&e, Error::NotReady { tail, .. }
                    if tail.to_ascii_lowercase().contains("address already in use"));
                last_error = Some(e);
                if !port_taken {
                    break;
                }
            }
        }
    }
    Err(last_error.unwrap_or_else(|| Error::NotReady {
        server,
        what: "could not be started".to_string(),
        log: log.to_path_buf(),
        tail: tail(log, 20),
    }))
}

/// Spawns `command` in `dir` with no stdin and its stdout and stderr going to `log` (appended
/// to when `append`, else made anew).
pub fn spawn_logged(command: &mut Command, dir: &Path, log: &Path, append: bool) -> Result<Child> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(log)
        .map_err(io_err(format!("opening {}", log.display())))?;
    let err = file.try_clone().map_err(io_err("duplicating a log file handle"))?;
    let program = command.get_program().to_string_lossy().into_owned();
    command
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .spawn()
        .map_err(io_err(format!("starting {program}")))
}
