//! What a shell, `man` and a terminal get from the binary: completion scripts, man pages for
//! every command, `version --verbose`, and output free of ANSI escapes on pipes and under
//! `NO_COLOR` (checked on a real pseudo-terminal, against a control run that does colour).

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::fs::File;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use platscope::registry::REGISTRY;
use test_support::{platscope, stderr, stdout};

fn ok(args: &[&str]) -> String {
    let out = platscope(args);
    assert!(out.status.success(), "platscope {args:?}: exit {:?}: {}", out.status, stderr(&out));
    stdout(&out)
}

#[test]
fn completion_scripts_cover_registry_commands_and_bash_loads_one() {
    for shell in ["bash", "zsh", "fish"] {
        let script = ok(&["completions", shell]);
        assert!(script.contains("platscope"), "{shell}: {script}");
        // Registry commands (not only the fixed ones in cli.rs) are in the script.
        for word in ["loaded-latency", "querystat", "textfile"] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("platscope.bash");
    std::fs::write(&file, ok(&["completions", "bash"])).unwrap();
    let out = Command::new("bash")
        .arg("-c")
        .arg(r#"source "$1" && complete -p platscope"#)
        .arg("bash")
        .arg(&file)
        .output()
        .expect("bash runs");
    assert!(out.status.success(), "sourcing the script: {}", stderr(&out));
    let registered = stdout(&out);
    assert!(registered.starts_with("complete ") && registered.trim_end().ends_with(" platscope"));

    let out = platscope(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "an unknown shell is a usage error");
}

#[test]
fn man_pages_for_every_visible_command() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("man1");
    let out = platscope(&["man", "--out", out_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = |name: String| {
        let path = out_dir.join(format!("{name}.1"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(text.starts_with(".ie \\n(.g .ds Aq") || text.contains("\n.TH "), "{name}");
        text
    };
    assert!(page("platscope".into()).contains("completions"));
    let mut expected = 1;
    for (group, _) in REGISTRY.groups {
        page(format!("platscope-{group}"));
        expected += 1;
    }
    for entry in REGISTRY.entries {
        if entry.command().is_hide_set() {
            continue;
        }
        let text = page(format!("platscope-{}", entry.path().join("-")));
        // The page documents the command's own options.
        let command = entry.command();
        let first_long = command.get_arguments().find_map(|a| a.get_long());
        if let Some(long) = first_long {
            assert!(text.contains(&format!("\\-\\-{}", long.replace('-', "\\-"))), "{long}");
        }
        expected += 1;
    }
    let written = std::fs::read_dir(&out_dir).unwrap().count();
    // The fixed commands (compat, completions, man, version) have pages too.
    assert!(written >= expected + 4, "{written} pages, expected at least {}", expected + 4);
    assert!(stderr(&out).contains(&format!("wrote {written} man pages")), "{}", stderr(&out));
}

/// Every `src/bpf/*.bpf.c` in the workspace.
fn bpf_sources() -> Vec<String> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut names = Vec::new();
    for krate in std::fs::read_dir(crates).unwrap() {
        let bpf = krate.unwrap().path().join("src/bpf");
        let Ok(files) = std::fs::read_dir(bpf) else { continue };
        for file in files {
            let name = file.unwrap().file_name().to_string_lossy().into_owned();
            if let Some(program) = name.strip_suffix(".bpf.c") {
                names.push(program.to_string());
            }
        }
    }
    assert!(!names.is_empty(), "no BPF sources found");
    names
}

#[test]
fn verbose_version_names_commit_date_bpf_programs_and_btf() {
    let text = ok(&["version", "--verbose"]);
    assert_eq!(ok(&["--version", "--verbose"]), text);
    assert_eq!(ok(&["--verbose", "-V"]), text);
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
            .unwrap_or_else(|| panic!("no {name} line in {text}"))
    };
    let commit = field("commit");
    let hex = commit.trim_end_matches("-dirty");
    assert!(
        hex == "unknown" || (hex.len() == 12 && hex.bytes().all(|b| b.is_ascii_hexdigit())),
        "{commit}"
    );
    let built = field("built");
    let date = built.split_whitespace().next().unwrap();
    let parts: Vec<&str> = date.split('-').collect();
    assert!(parts.len() == 3 && parts[0].len() == 4 && parts[1].len() == 2, "{built}");
    let programs = field("bpf programs");
    for program in bpf_sources() {
        assert!(programs.contains(&format!("{program} (")), "{program} missing: {programs}");
    }
    assert!(field("vendored btf").starts_with(std::env::consts::ARCH), "{text}");

    let json: serde_json::Value =
        serde_json::from_str(&ok(&["--json", "version", "--verbose"])).unwrap();
    assert_eq!(json["commit"], commit);
    assert_eq!(json["vendored_btf"]["arch"], std::env::consts::ARCH);
    assert_eq!(json["bpf_programs"].as_array().unwrap().len(), bpf_sources().len());

    // The short forms: one line naming the version and the commit.
    let short = ok(&["--version"]);
    assert_eq!(short.lines().count(), 1, "{short}");
    assert!(short.contains(env!("CARGO_PKG_VERSION")) && short.contains(commit), "{short}");
    assert_eq!(ok(&["version"]), short);
    // --verbose with anything else is clap's business: an unknown flag at the top.
    assert_eq!(platscope(&["--verbose"]).status.code(), Some(2));
}

/// Commands whose output a pipe or `NO_COLOR` must keep free of escapes: help, an error, a
/// listing, a measurement with a progress factory behind it, version, a completion script.
const SAMPLES: &[&[&str]] = &[
    &["--help"],
    &["mem", "--help"],
    &["mem", "latency", "--help"],
    &["no-such-command"],
    &["mem", "latency", "--size", "nonsense"],
    &["topo"],
    &["--no-store", "mem", "latency", "--size", "1MiB", "--duration-ms", "30"],
    &["version", "--verbose"],
    &["completions", "bash"],
];

#[test]
fn piped_output_has_no_escapes_with_or_without_no_color() {
    for no_color in [false, true] {
        for args in SAMPLES {
            let mut cmd = test_support::command();
            cmd.args(*args).env_remove("CLICOLOR_FORCE").env("TERM", "xterm-256color");
            if no_color {
                cmd.env("NO_COLOR", "1");
            } else {
                cmd.env_remove("NO_COLOR");
            }
            let out = cmd.output().expect("platscope runs");
            assert!(!out.stdout.is_empty() || !out.stderr.is_empty(), "{args:?}: no output");
            for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
                assert!(
                    !bytes.contains(&0x1b),
                    "{args:?} (NO_COLOR {no_color}): escape on {stream}: {:?}",
                    String::from_utf8_lossy(bytes)
                );
            }
        }
    }
}

/// Runs platscope with stdout and stderr on a fresh pseudo-terminal (TERM=xterm-256color, no
/// colour variables but `env`) and returns everything it wrote there.
fn on_pty(args: &[&str], env: &[(&str, &str)]) -> Vec<u8> {
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two new descriptors into the two ints; null name, termios and
    // window size are allowed (defaults).
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just opened by openpty and are owned by nothing else.
    let (master, slave) = unsafe { (File::from_raw_fd(master), File::from_raw_fd(slave)) };
    let mut cmd = test_support::command();
    cmd.args(args)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR")
        .env_remove("CLICOLOR_FORCE")
        .env("TERM", "xterm-256color")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave);
    let mut child = cmd.spawn().expect("platscope runs");
    // The parent's copies of the terminal's slave side go with the Command, so reading the
    // master ends (EIO) when the child's copies close.
    drop(cmd);
    let reader = std::thread::spawn(move || {
        let mut master = master;
        let mut bytes = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match master.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => bytes.extend_from_slice(&buf[..n]),
            }
        }
        bytes
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "platscope {args:?} did not end within 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    reader.join().unwrap()
}

#[test]
fn no_color_on_a_terminal_has_no_escapes_where_the_terminal_otherwise_gets_colour() {
    for args in [&["--help"][..], &["mem", "--help"], &["no-such-command"]] {
        // Help is styled on a terminal (clap's defaults); errors are one plain line always.
        if args[args.len() - 1] == "--help" {
            let coloured = on_pty(args, &[]);
            assert!(
                coloured.contains(&0x1b),
                "control: {args:?} on a terminal is styled: {:?}",
                String::from_utf8_lossy(&coloured)
            );
        }
        // NO_COLOR wins over CLICOLOR_FORCE (https://no-color.org).
        for env in [&[("NO_COLOR", "1")][..], &[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")]] {
            let plain = on_pty(args, env);
            assert!(!plain.is_empty(), "{args:?}: nothing written");
            assert!(
                !plain.contains(&0x1b),
                "{args:?} {env:?}: escape: {:?}",
                String::from_utf8_lossy(&plain)
            );
        }
    }
}
