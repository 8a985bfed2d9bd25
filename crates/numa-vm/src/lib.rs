//! Boots a QEMU (TCG) x86-64 guest with several NUMA nodes and runs a host binary inside it.
//!
//! [`run_in_guest`] runs `tests/numa-vm/prepare.sh` once per process (packages, and a Debian
//! kernel cached under `target/numa-vm/`), builds an initramfs with busybox, the binary and its
//! shared libraries, boots the guest described by a [`GuestSpec`], runs each command with
//! `sh` and returns its stdout, stderr and exit status. See `tests/numa-vm/README.md`.
//!
//! The guest is for correctness (node ids, CPU lists, distances, page placement), never for
//! timing: TCG latencies say nothing about NUMA.

mod initramfs;
mod protocol;
mod spec;

use std::fs;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub use spec::{GuestNode, GuestSpec, MAX_CPUS, MAX_NODES, MIN_NODE0_MIB, MIN_NODE_MIB};

use initramfs::{CpioWriter, LddOutput};
use protocol::Markers;

/// Console lines kept for [`GuestRun::console_tail`] and in errors.
pub const CONSOLE_TAIL_LINES: usize = 40;

/// One command's outcome inside the guest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandResult {
    /// The command as given (run by the guest's busybox `sh`).
    pub command: String,
    /// Its standard output (lossily converted to UTF-8).
    pub stdout: String,
    /// Its standard error (lossily converted to UTF-8).
    pub stderr: String,
    /// Its exit status as the shell reports it (128 + signal number when killed by a signal).
    pub exit_code: i32,
}

/// A finished guest run.
#[derive(Debug, Clone)]
pub struct GuestRun {
    /// One result per command, in order.
    pub results: Vec<CommandResult>,
    /// The last [`CONSOLE_TAIL_LINES`] lines of the serial console (kernel log and init).
    pub console_tail: String,
    /// Seconds from QEMU's start until the guest's init was running.
    pub boot_secs: f64,
    /// Seconds from QEMU's start until it exited.
    pub total_secs: f64,
}

/// Where `tests/numa-vm/prepare.sh` put things.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSetup {
    /// The cache directory (`target/numa-vm` by default).
    pub cache_dir: PathBuf,
    /// The uncompressed guest kernel.
    pub kernel: PathBuf,
    /// The Debian package the kernel came from.
    pub kernel_package: String,
    /// `qemu-system-x86_64`.
    pub qemu: PathBuf,
    /// The static busybox copied into the guest.
    pub busybox: PathBuf,
}

/// Why a guest run failed. Every message says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum GuestError {
    /// The spec cannot be booted as asked.
    #[error("invalid guest spec: {0}")]
    InvalidSpec(String),
    /// `prepare.sh` failed or printed something unexpected.
    #[error(
        "{script} failed ({status}); run it by hand (as root, so it can install packages) to see \
         why. Its output:\n{output}"
    )]
    Prepare {
        /// The script.
        script: PathBuf,
        /// Its exit status, or what was wrong with its output.
        status: String,
        /// Its stderr.
        output: String,
    },
    /// QEMU is not installed.
    #[error("qemu-system-x86_64 not found ({0}): run tests/numa-vm/prepare.sh as root, it installs qemu-system-x86")]
    QemuNotFound(String),
    /// The cached kernel is gone.
    #[error(
        "guest kernel {0} not found: run tests/numa-vm/prepare.sh, it downloads and extracts one"
    )]
    KernelNotFound(PathBuf),
    /// The binary to run cannot be put into the guest.
    #[error("cannot put {path} into the guest: {message}")]
    Binary {
        /// The binary.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A file operation on the host failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// QEMU exited with an error before the guest finished.
    #[error(
        "QEMU exited with {status} before the guest finished; its stderr:\n{stderr}\n\
         --- last console lines ---\n{console_tail}"
    )]
    QemuFailed {
        /// QEMU's exit status.
        status: String,
        /// QEMU's stderr.
        stderr: String,
        /// The last console lines.
        console_tail: String,
    },
    /// The guest was still running at the spec's timeout and was killed.
    #[error(
        "guest killed at its {secs:.1} s timeout {stage}; raise GuestSpec::timeout if it is only \
         slow, otherwise look at the console\n--- last console lines ---\n{console_tail}"
    )]
    Timeout {
        /// The timeout in seconds.
        secs: f64,
        /// How far the guest got.
        stage: String,
        /// The last console lines.
        console_tail: String,
    },
    /// The guest stopped (powered off, panicked) before init reported all results.
    #[error(
        "guest stopped {stage} with {completed} of {total} commands reported: look at the console \
         for a kernel panic, an init failure or a command that powered off\n\
         --- last console lines ---\n{console_tail}"
    )]
    Incomplete {
        /// Commands whose results arrived.
        completed: usize,
        /// Commands asked for.
        total: usize,
        /// How far the guest got.
        stage: String,
        /// The last console lines.
        console_tail: String,
    },
    /// The result channel could not be parsed.
    #[error(
        "guest result channel is malformed: {message}\n--- last console lines ---\n{console_tail}"
    )]
    Protocol {
        /// What is wrong.
        message: String,
        /// The last console lines.
        console_tail: String,
    },
}

impl GuestError {
    /// The console's last lines, for errors raised after QEMU started.
    pub fn console_tail(&self) -> Option<&str> {
        match self {
            GuestError::QemuFailed { console_tail, .. }
            | GuestError::Timeout { console_tail, .. }
            | GuestError::Incomplete { console_tail, .. }
            | GuestError::Protocol { console_tail, .. } => Some(console_tail),
            _ => None,
        }
    }
}

fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> GuestError {
    let context = context.into();
    move |source| GuestError::Io { context, source }
}

/// `tests/numa-vm/prepare.sh` in this repository.
pub fn prepare_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/numa-vm/prepare.sh")
}

#[derive(Debug, Clone)]
struct Prepared {
    setup: HostSetup,
    applets: Vec<String>,
}

static PREPARED: Mutex<Option<Prepared>> = Mutex::new(None);
/// Guests of one process run one at a time: on a 2-core machine, parallel TCG guests only slow
/// each other into their timeouts.
static GUEST_LOCK: Mutex<()> = Mutex::new(());

/// Runs `tests/numa-vm/prepare.sh` (once per process; it is idempotent and cheap once cached)
/// and returns where it put things.
pub fn prepare() -> Result<HostSetup, GuestError> {
    prepared().map(|p| p.setup)
}

fn prepared() -> Result<Prepared, GuestError> {
    let mut cached = PREPARED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(p) = cached.as_ref() {
        return Ok(p.clone());
    }
    let script = prepare_script();
    let fail = |status: String, output: String| GuestError::Prepare {
        script: script.clone(),
        status,
        output,
    };
    let out = Command::new("bash")
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| fail(format!("could not run bash: {e}"), String::new()))?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(fail(out.status.to_string(), stderr));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let value = |key: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .map(str::to_string)
            .ok_or_else(|| fail(format!("printed no {key}= line"), stderr.clone()))
    };
    let setup = HostSetup {
        cache_dir: value("NUMA_VM_CACHE_DIR")?.into(),
        kernel: value("NUMA_VM_KERNEL")?.into(),
        kernel_package: value("NUMA_VM_KERNEL_PACKAGE")?,
        qemu: value("NUMA_VM_QEMU")?.into(),
        busybox: value("NUMA_VM_BUSYBOX")?.into(),
    };
    if !setup.qemu.is_file() {
        return Err(GuestError::QemuNotFound(setup.qemu.display().to_string()));
    }
    if !setup.kernel.is_file() {
        return Err(GuestError::KernelNotFound(setup.kernel.clone()));
    }
    let applets = match Command::new(&setup.busybox).arg("--list-full").output() {
        Ok(o) if o.status.success() => {
            initramfs::parse_applets(&String::from_utf8_lossy(&o.stdout))
        }
        _ => initramfs::FALLBACK_APPLETS.iter().map(|a| format!("bin/{a}")).collect(),
    };
    let p = Prepared { setup, applets };
    *cached = Some(p.clone());
    Ok(p)
}

/// The CPU models the installed `qemu-system-x86_64` offers (`-cpu help`), for
/// [`GuestSpec::with_cpu`]; runs `prepare.sh` first if this process has not.
pub fn cpu_models() -> Result<Vec<String>, GuestError> {
    let qemu = prepared()?.setup.qemu;
    let out = Command::new(&qemu)
        .args(["-cpu", "help"])
        .stdin(Stdio::null())
        .output()
        .map_err(io_err(format!("running {} -cpu help", qemu.display())))?;
    Ok(spec::parse_cpu_models(&String::from_utf8_lossy(&out.stdout)))
}

/// Boots the guest described by `spec` with `binary` at `/bin/<its file name>` (its shared
/// libraries copied in at the paths `ldd` names), runs each command with the guest's `sh`
/// (stdin `/dev/null`, cwd `/`, `PATH=/bin:/sbin:/usr/bin:/usr/sbin`; `/tmp` is a tmpfs) and
/// returns every command's output and exit status.
///
/// Runs `prepare.sh` first if this process has not. Guests of one process run one at a time.
pub fn run_in_guest(
    spec: &GuestSpec,
    binary: &Path,
    commands: &[&str],
) -> Result<GuestRun, GuestError> {
    run_in_guest_with(spec, &[binary], commands)
}

/// As [`run_in_guest`], with several host binaries in the guest, each at `/bin/<its file
/// name>` with its shared libraries: the binary under test and tools the commands need, e.g.
/// `&[platscope, Path::new("/usr/bin/numactl")]`. A binary replaces the busybox applet of the
/// same name; two binaries may not share a file name.
pub fn run_in_guest_with(
    spec: &GuestSpec,
    binaries: &[&Path],
    commands: &[&str],
) -> Result<GuestRun, GuestError> {
    spec.validate().map_err(GuestError::InvalidSpec)?;
    let prepared = prepared()?;
    let _guard = GUEST_LOCK.lock().unwrap_or_else(PoisonError::into_inner);

    let nonce = nonce();
    let markers = Markers::new(&nonce);
    let tmp = TempDir::create(&nonce)?;
    let initrd = tmp.path.join("initrd.cpio");
    build_initramfs(&initrd, &prepared, binaries, commands, &markers)?;

    let console = tmp.path.join("console.log");
    let results = tmp.path.join("results.log");
    let qemu_stderr = tmp.path.join("qemu.stderr");
    let files = spec::QemuFiles {
        kernel: &prepared.setup.kernel,
        initrd: &initrd,
        console: &console,
        results: &results,
    };
    let args = spec::qemu_args(spec, &files);
    let stderr_file =
        fs::File::create(&qemu_stderr).map_err(io_err("creating QEMU's stderr file"))?;
    let started = Instant::now();
    let mut child = Command::new(&prepared.setup.qemu)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr_file)
        .spawn()
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => GuestError::QemuNotFound(e.to_string()),
            _ => GuestError::Io { context: "starting qemu-system-x86_64".into(), source: e },
        })?;

    let booted_marker = markers.booted();
    let mut boot_secs = None;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(io_err("waiting for QEMU"))? {
            break status;
        }
        if boot_secs.is_none() && read_lossy(&results).contains(&booted_marker) {
            boot_secs = Some(started.elapsed().as_secs_f64());
        }
        if started.elapsed() >= spec.timeout {
            // Kill and reap; errors here only mean it exited by itself meanwhile.
            let _ = child.kill();
            let _ = child.wait();
            let console_text = read_lossy(&console);
            let parsed = protocol::parse(&read_lossy(&results), &markers).unwrap_or_default();
            return Err(GuestError::Timeout {
                secs: spec.timeout.as_secs_f64(),
                stage: stage(&parsed, &console_text, commands),
                console_tail: tail(&console_text, CONSOLE_TAIL_LINES),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let total_secs = started.elapsed().as_secs_f64();

    let console_text = read_lossy(&console);
    let console_tail = tail(&console_text, CONSOLE_TAIL_LINES);
    let parsed = match protocol::parse(&read_lossy(&results), &markers) {
        Ok(p) => p,
        Err(message) => return Err(GuestError::Protocol { message, console_tail }),
    };
    // Every command's block ends with its exit marker, so all of them arrived means all results
    // are whole; the end marker after them only confirms it. It can be lost: a serial interrupt
    // the guest misses while powering off leaves it in the tty until the 30 s closing wait runs
    // out (seen under host load: "No irq handler for vector", power-down 30 s after "done").
    if parsed.results.len() != commands.len() {
        if !status.success() {
            return Err(GuestError::QemuFailed {
                status: status.to_string(),
                stderr: read_lossy(&qemu_stderr).trim().to_string(),
                console_tail,
            });
        }
        return Err(GuestError::Incomplete {
            completed: parsed.results.len(),
            total: commands.len(),
            stage: stage(&parsed, &console_text, commands),
            console_tail,
        });
    }
    let results = commands
        .iter()
        .zip(parsed.results)
        .map(|(command, r)| CommandResult {
            command: (*command).to_string(),
            stdout: String::from_utf8_lossy(&r.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&r.stderr).into_owned(),
            exit_code: r.exit_code,
        })
        .collect();
    Ok(GuestRun { results, console_tail, boot_secs: boot_secs.unwrap_or(total_secs), total_secs })
}

/// How far a guest got, for error messages.
fn stage(parsed: &protocol::Parsed, console: &str, commands: &[&str]) -> String {
    if !parsed.booted {
        return "before its init started (still booting the kernel)".into();
    }
    let i = parsed.results.len();
    match commands.get(i) {
        Some(c) if console.contains(&format!("numa-vm: running command {} of", i + 1)) => {
            format!("while running command {} of {} (`{c}`)", i + 1, commands.len())
        }
        Some(_) => format!("after init started, before command {}", i + 1),
        None => "after its last command".into(),
    }
}

/// A host binary on its way into the guest.
struct GuestBinary {
    /// `bin/<file name>` inside the archive.
    archive_path: String,
    data: Vec<u8>,
    /// It is the busybox the guest already gets.
    is_busybox: bool,
    libs: Vec<String>,
}

fn load_binary(binary: &Path, busybox: &Path) -> Result<GuestBinary, GuestError> {
    let bin_err = |message: String| GuestError::Binary { path: binary.to_path_buf(), message };
    let name = binary
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty())
        .ok_or_else(|| bin_err("it has no usable file name".into()))?;
    let is_busybox = fs::canonicalize(binary).ok() == fs::canonicalize(busybox).ok();
    let data = match is_busybox {
        true => None,
        false => without_debug_info(binary, name),
    };
    let data = match data {
        Some(data) => data,
        None => fs::read(binary).map_err(|e| bin_err(e.to_string()))?,
    };
    if name == "busybox" && !is_busybox {
        return Err(bin_err(
            "it is named busybox, which the guest needs for itself; rename it".into(),
        ));
    }
    let libs = shared_libraries(binary).map_err(bin_err)?;
    Ok(GuestBinary { archive_path: format!("bin/{name}"), data, is_busybox, libs })
}

/// The binary without its debug sections, or `None` when objcopy is missing or fails (then it
/// goes in whole). A debug build's debug info is most of its size, and the guest unpacks the
/// initramfs into RAM: a 200 MiB binary fills a small guest node and leaves a bound node nothing.
fn without_debug_info(binary: &Path, name: &str) -> Option<Vec<u8>> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let stripped = std::env::temp_dir().join(format!(".numa-vm-{}-{n}-{name}", std::process::id()));
    let ok = Command::new("objcopy")
        .arg("--strip-debug")
        .arg(binary)
        .arg(&stripped)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let data = if ok { fs::read(&stripped).ok() } else { None };
    let _ = fs::remove_file(&stripped);
    data
}

fn build_initramfs(
    path: &Path,
    prepared: &Prepared,
    binaries: &[&Path],
    commands: &[&str],
    markers: &Markers,
) -> Result<(), GuestError> {
    let busybox = &prepared.setup.busybox;
    let mut loaded: Vec<GuestBinary> = Vec::with_capacity(binaries.len());
    for binary in binaries {
        let b = load_binary(binary, busybox)?;
        if loaded.iter().any(|l| l.archive_path == b.archive_path) {
            return Err(GuestError::Binary {
                path: binary.to_path_buf(),
                message: format!("another binary already goes to /{}", b.archive_path),
            });
        }
        loaded.push(b);
    }
    let busybox_data =
        fs::read(busybox).map_err(io_err(format!("reading {}", busybox.display())))?;

    let file = fs::File::create(path).map_err(io_err(format!("creating {}", path.display())))?;
    let context = format!("writing {}", path.display());
    let write = || -> io::Result<()> {
        let mut w = CpioWriter::new(BufWriter::new(file));
        for dir in
            ["dev", "proc", "sys", "tmp", "root", "etc", "bin", "sbin", "usr/bin", "usr/sbin"]
        {
            w.dir(dir)?;
        }
        w.char_dev("dev/console", 0o600, 5, 1)?;
        w.char_dev("dev/null", 0o666, 1, 3)?;
        for b in loaded.iter().filter(|b| !b.is_busybox) {
            w.file(&b.archive_path, 0o755, &b.data)?;
        }
        w.file("bin/busybox", 0o755, &busybox_data)?;
        for applet in &prepared.applets {
            if !w.contains(applet) {
                w.symlink(applet, "/bin/busybox")?;
            }
        }
        for lib in loaded.iter().flat_map(|b| &b.libs) {
            if !w.contains(lib) {
                w.file(lib, 0o755, &fs::read(lib)?)?;
            }
        }
        for (i, command) in commands.iter().enumerate() {
            w.file(&initramfs::command_path(i), 0o644, format!("{command}\n").as_bytes())?;
        }
        w.file("init", 0o755, initramfs::init_script(markers, commands.len()).as_bytes())?;
        w.finish()?;
        Ok(())
    };
    write().map_err(io_err(context))
}

/// The shared libraries and loader of a binary, per `ldd`.
fn shared_libraries(binary: &Path) -> Result<Vec<String>, String> {
    let out = Command::new("ldd")
        .arg(binary)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ldd (package libc-bin): {e}"))?;
    let parsed = initramfs::parse_ldd(
        &String::from_utf8_lossy(&out.stdout),
        &String::from_utf8_lossy(&out.stderr),
        out.status.success(),
    )?;
    Ok(match parsed {
        LddOutput::Dynamic(libs) => libs,
        LddOutput::Static => Vec::new(),
    })
}

fn read_lossy(path: &Path) -> String {
    fs::read(path).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
}

/// The last `n` lines of `text`, without carriage returns.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn nonce() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    format!("{:x}{nanos:08x}{:x}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// A per-run directory under the system temp dir, removed on drop unless `NUMA_VM_KEEP_TEMP`
/// is set (then its path is printed for debugging).
#[derive(Debug)]
struct TempDir {
    path: PathBuf,
}

impl TempDir {
    fn create(nonce: &str) -> Result<Self, GuestError> {
        let path = std::env::temp_dir().join(format!("numa-vm-{nonce}"));
        fs::create_dir_all(&path).map_err(io_err(format!("creating {}", path.display())))?;
        Ok(TempDir { path })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("NUMA_VM_KEEP_TEMP").is_some() {
            eprintln!("numa-vm: kept {}", self.path.display());
        } else {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_last_lines() {
        assert_eq!(tail("a\r\nb\r\nc\r\n", 2), "b\nc");
        assert_eq!(tail("a\nb", 5), "a\nb");
        assert_eq!(tail("", 5), "");
    }

    #[test]
    fn stage_names_the_running_command() {
        let mut parsed = protocol::Parsed::default();
        assert!(stage(&parsed, "", &["a"]).contains("before its init started"));
        parsed.booted = true;
        let console = "numa-vm: running command 1 of 2\n";
        assert_eq!(
            stage(&parsed, console, &["sleep 99", "b"]),
            "while running command 1 of 2 (`sleep 99`)"
        );
        assert!(stage(&parsed, "", &["x"]).contains("before command 1"));
    }

    #[test]
    fn nonces_differ() {
        assert_ne!(nonce(), nonce());
    }

    #[test]
    fn invalid_spec_fails_before_prepare() {
        let spec = GuestSpec::new(&[(0, 256)], vec![]);
        let err = run_in_guest(&spec, Path::new("/bin/sh"), &[]).unwrap_err();
        assert!(matches!(err, GuestError::InvalidSpec(_)), "{err}");
        assert!(err.console_tail().is_none());
    }

    #[test]
    fn two_binaries_with_one_name_are_refused() {
        let sh = Path::new("/bin/sh");
        let err = run_in_guest_with(&GuestSpec::two_nodes(), &[sh, sh], &["true"]).unwrap_err();
        assert!(matches!(err, GuestError::Binary { .. }), "{err}");
        assert!(err.to_string().contains("another binary already goes to /bin/sh"), "{err}");
        let missing = Path::new("/nonexistent/numactl");
        let err = run_in_guest_with(&GuestSpec::two_nodes(), &[missing], &["true"]).unwrap_err();
        assert!(err.to_string().starts_with("cannot put /nonexistent/numactl into the guest"));
    }

    #[test]
    fn prepare_script_exists() {
        assert!(prepare_script().is_file(), "{}", prepare_script().display());
    }
}
