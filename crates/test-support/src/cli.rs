//! The `platscope` binary as users run it.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The `platscope` binary of this build: `CARGO_BIN_EXE_platscope` when the runner sets it at
/// run time, else the one beside the test binary's `deps/` directory (where Cargo builds a
/// package's binaries before its integration tests).
pub fn bin() -> PathBuf {
    if let Some(path) = std::env::var_os("CARGO_BIN_EXE_platscope") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let dir = exe.parent().and_then(|deps| deps.parent());
    let path = dir.map(|d| d.join("platscope")).unwrap_or_default();
    assert!(
        path.is_file(),
        "no platscope binary at {} (run the tests of the platscope package with cargo test)",
        path.display()
    );
    path
}

/// A command for the binary, to add arguments, environment or pipes to. A run without `--db`
/// is stored under [`data_home`], never in the results database of whoever runs the tests.
pub fn command() -> Command {
    let mut command = Command::new(bin());
    command.env("XDG_DATA_HOME", data_home());
    command
}

/// The tests' `XDG_DATA_HOME`: `test-data-home` beside the binary in the target directory,
/// shared by the tests of a build (a test that reads the default store back reads the run it
/// made by its id, or gives a directory of its own).
pub fn data_home() -> PathBuf {
    let dir = bin().parent().map(|d| d.join("test-data-home")).unwrap_or_default();
    if let Err(e) = std::fs::create_dir_all(&dir) {
        panic!("creating {}: {e}", dir.display());
    }
    dir
}

/// Runs `platscope ARGS` to its end.
pub fn platscope(args: &[&str]) -> Output {
    match command().args(args).output() {
        Ok(out) => out,
        Err(e) => panic!("running platscope {args:?}: {e}"),
    }
}

/// Runs `platscope ARGS` to its end with `input` on its standard input, written from a thread
/// of its own so a long answer cannot stall it. A run that ends without reading all of it
/// (a refused one) is not a fault here.
pub fn platscope_with_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = match command()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => panic!("running platscope {args:?}: {e}"),
    };
    let feeder = child.stdin.take().map(|mut stdin| {
        let input = input.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        })
    });
    let out = match child.wait_with_output() {
        Ok(out) => out,
        Err(e) => panic!("waiting for platscope {args:?}: {e}"),
    };
    if let Some(feeder) = feeder {
        let _ = feeder.join();
    }
    out
}

/// The id of the newest run in the results database `db` (`results list --json`).
pub fn newest_run(db: &str) -> String {
    let out = platscope(&["results", "list", "--db", db, "--json"]);
    assert!(out.status.success(), "results list: {}", text(&out.stderr));
    let runs: serde_json::Value = match serde_json::from_slice(&out.stdout) {
        Ok(v) => v,
        Err(e) => panic!("results list --json: {e}"),
    };
    let newest = runs.as_array().and_then(|r| r.iter().filter_map(|r| r["id"].as_i64()).max());
    match newest {
        Some(id) => id.to_string(),
        None => panic!("no run stored in {db}"),
    }
}

/// Output bytes as text, invalid UTF-8 replaced.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A finished command's stdout as text.
pub fn stdout(out: &Output) -> String {
    text(&out.stdout)
}

/// A finished command's stderr as text.
pub fn stderr(out: &Output) -> String {
    text(&out.stderr)
}

/// `platscope ARGS` as host `host` (`PLATSCOPE_HOST`) with its own results store under
/// `data_home` (`XDG_DATA_HOME`): one machine of a fleet, in a test.
pub fn as_host(host: &str, data_home: &std::path::Path, args: &[&str]) -> std::process::Output {
    command()
        .args(args)
        .env("PLATSCOPE_HOST", host)
        .env("XDG_DATA_HOME", data_home)
        .output()
        .expect("platscope runs")
}

/// Sends `sig` to `child`, which has not been waited for.
pub fn signal(child: &std::process::Child, sig: libc::c_int) {
    let pid = libc::pid_t::try_from(child.id()).unwrap_or(libc::pid_t::MAX);
    // SAFETY: kill has no memory effects; the pid is our unreaped child.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill({pid}, {sig})");
}

/// Waits for `child` up to `limit`; kills it and fails the test past that. Its piped stdout and
/// stderr are read while it runs: a child whose output outgrows the pipe (a pretty JSON run of
/// 128 KiB) would otherwise block in `write` and never exit.
pub fn wait_within(
    mut child: std::process::Child,
    limit: std::time::Duration,
) -> (Output, std::time::Duration) {
    fn drain(
        pipe: Option<impl std::io::Read + Send + 'static>,
    ) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    }
    let joined = |h: std::thread::JoinHandle<Vec<u8>>| h.join().unwrap_or_default();
    let (out, err) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let started = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let output = Output { status, stdout: joined(out), stderr: joined(err) };
                return (output, started.elapsed());
            }
            Ok(None) => {}
            Err(e) => panic!("waiting for the child: {e}"),
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after {limit:?}; stderr: {}", text(&joined(err)));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Runs `platscope report --quick --sections SECTIONS --out OUT --db DB` (which must succeed)
/// and returns the id of the newest `report` run in `db`: the one it stored.
pub fn quick_report(sections: &str, out: &str, db: &str) -> String {
    let run = platscope(&["report", "--quick", "--sections", sections, "--out", out, "--db", db]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let list = platscope(&["results", "list", "--db", db, "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&list.stdout).expect("json");
    runs.as_array()
        .expect("runs")
        .iter()
        .filter(|r| r["command"] == "report")
        .filter_map(|r| r["id"].as_i64())
        .max()
        .expect("a report run")
        .to_string()
}

/// Every `<section …>…</section>` of a report page, by section id, in page order: what tests
/// compare byte for byte between a page drawn at run time and one drawn from the store.
pub fn page_sections(page: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = page;
    while let Some(start) = rest.find("<section id=\"") {
        let after = &rest[start..];
        let Some(end) = after.find("</section>") else { break };
        let html = &after[..end + "</section>".len()];
        let id = html["<section id=\"".len()..].split('"').next().unwrap_or("").to_string();
        out.push((id, html.to_string()));
        rest = &after[end..];
    }
    out
}
