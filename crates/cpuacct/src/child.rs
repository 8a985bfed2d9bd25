//! Running one command to its end and measuring it (`cpu util -- COMMAND`): its wall time, the
//! CPU time of it and the descendants it waited for (`getrusage(RUSAGE_CHILDREN)`), and its exit
//! status to pass on, as time(1) does. Ctrl-C reaches the command from the terminal (same
//! process group) and platscope keeps waiting; a SIGTERM to platscope (`timeout`, systemd) is
//! passed on to the command once, so both end.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use measure::{stop, Classified};

use crate::cpuutil::render::CommandRun;

/// Runs `argv` to its end with stdin, stdout and stderr inherited: its record, and the status
/// to exit with ([`passed_on_status`]). A program that is not there or not executable is a
/// usage error.
pub fn run_command(argv: &[OsString]) -> Result<(CommandRun, u8), Classified> {
    let (program, rest) =
        argv.split_first().ok_or_else(|| Classified::usage("no command given"))?;
    let children_before = children_cpu();
    stop::install();
    let started = Instant::now();
    let mut child = match Command::new(program).args(rest).spawn() {
        Ok(child) => child,
        Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied) => {
            let why = if e.kind() == io::ErrorKind::NotFound {
                "not found"
            } else {
                "not executable (permission denied)"
            };
            return Err(Classified::usage(format!(
                "cannot run {:?}: {why}",
                program.to_string_lossy()
            )));
        }
        Err(e) => {
            let what = format!("starting {:?}", program.to_string_lossy());
            return Err(Classified::runtime(e).context(what));
        }
    };
    let status = wait_passing_sigterm(&mut child)
        .map_err(|e| Classified::runtime(e).context("waiting for the command"))?;
    let wall_s = started.elapsed().as_secs_f64();
    let children_after = children_cpu();
    let run = CommandRun {
        argv: argv.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
        status: status_text(status),
        exit_code: status.code(),
        wall_s,
        user_s: (children_after.0 - children_before.0).max(0.0),
        system_s: (children_after.1 - children_before.1).max(0.0),
    };
    Ok((run, passed_on_status(status)))
}

/// How a command ended, in words: `exited 0`, `killed by signal 9`.
pub fn status_text(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "ended".into(),
    }
}

/// The status a wrapper passes on for a child's end: its exit code, or 128 + the signal that
/// killed it (as shells report it).
pub fn passed_on_status(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => (code & 0xff) as u8,
        (None, Some(sig)) => (128 + sig).clamp(0, 255) as u8,
        _ => 1,
    }
}

/// Waits for the command; a SIGTERM to platscope is passed on to it once. Ctrl-C is not passed
/// on: the terminal already sent it to the command as well.
fn wait_passing_sigterm(child: &mut Child) -> io::Result<ExitStatus> {
    let mut passed_on = false;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if !passed_on && stop::signal() == Some(libc::SIGTERM) {
            if let Ok(pid) = libc::pid_t::try_from(child.id()) {
                // SAFETY: kill has no memory effects; the pid is our unreaped child.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
            passed_on = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// User and system CPU seconds of waited-for children (`getrusage(RUSAGE_CHILDREN)`).
fn children_cpu() -> (f64, f64) {
    // SAFETY: rusage is plain data; all zeroes is valid and getrusage overwrites it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: usage is a live local the kernel writes one rusage into.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(usage.ru_utime), secs(usage.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Result<(CommandRun, u8), Classified> {
        run_command(&["sh".into(), "-c".into(), script.into()])
    }

    #[test]
    fn the_status_is_passed_on_and_said() {
        let (run, status) = sh("exit 3").unwrap();
        assert_eq!((run.status.as_str(), run.exit_code, status), ("exited 3", Some(3), 3));
        assert_eq!(run.argv, ["sh", "-c", "exit 3"]);
        let (run, status) = sh("kill -KILL $$").unwrap();
        assert_eq!((run.status.as_str(), run.exit_code), ("killed by signal 9", None));
        assert_eq!(status, 128 + 9);
    }

    #[test]
    fn the_childs_cpu_time_is_counted() {
        // A busy loop of some tens of ms of CPU: its time shows as the child's, not ours.
        let (run, _) = sh("i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done").unwrap();
        assert!(run.user_s + run.system_s > 0.0, "{run:?}");
        assert!(run.wall_s > 0.0, "{run:?}");
    }

    #[test]
    fn a_missing_program_is_a_usage_error() {
        let err = run_command(&["/nonexistent/prog".into()]).unwrap_err();
        assert!(err.is_usage());
        assert!(err.to_string().contains("not found"), "{err}");
        assert!(run_command(&[]).unwrap_err().is_usage());
    }
}
