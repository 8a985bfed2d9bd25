//! The .deb (scripts/deb.sh, cargo-deb) installed with the real dpkg into a scratch root
//! (`--instdir`, `--admindir`): its metadata, the installed binary, a man page read by `man`, a
//! completion script loaded by bash, the kit links and the unit. Live tier (dpkg -i needs
//! root). The package holds the binary this test suite was built with (no release build here;
//! `scripts/deb.sh` alone builds and packages the release binary).

use std::process::{Command, Output};
use test_tier::live;

use test_support::{stderr, stdout};

use crate::deb;

const BIN: &str = env!("CARGO_BIN_EXE_platscope");

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: exit {:?}\n{}{}",
        out.status,
        stdout(&out),
        stderr(&out)
    );
    out
}

#[live("cargo-deb (scripts/setup.sh --deps) and dpkg -i into a scratch root (root)")]
fn the_deb_installs_and_its_binary_man_pages_completions_and_links_work() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "dpkg -i needs root; run the live tier as root");
    let dir = tempfile::tempdir().unwrap();
    let deb = deb::build(dir.path());

    // Control metadata.
    let field = |name: &str| {
        let out = run(Command::new("dpkg-deb").arg("--field").arg(&deb).arg(name));
        stdout(&out).trim().to_string()
    };
    assert_eq!(field("Package"), "platscope");
    assert!(field("Version").starts_with(env!("CARGO_PKG_VERSION")), "{}", field("Version"));
    let depends = field("Depends");
    assert!(depends.contains("libc6") && depends.contains("libhwloc"), "Depends: {depends}");

    // Installed into a scratch root with a scratch database: the machine's dpkg state is not
    // touched. Dependencies are not in the scratch database (they are on this machine).
    let inst = dir.path().join("root");
    let admin = dir.path().join("admin");
    for sub in ["info", "updates", "triggers"] {
        std::fs::create_dir_all(admin.join(sub)).unwrap();
    }
    std::fs::write(admin.join("status"), "").unwrap();
    std::fs::create_dir_all(&inst).unwrap();
    let path =
        format!("/usr/sbin:/usr/bin:/sbin:/bin:{}", std::env::var("PATH").unwrap_or_default());
    run(Command::new("dpkg")
        .env("PATH", &path)
        .arg(format!("--instdir={}", inst.display()))
        .arg(format!("--admindir={}", admin.display()))
        .args(["--force-depends", "--force-script-chrootless", "-i"])
        .arg(&deb));
    let status = run(Command::new("dpkg-query")
        .arg(format!("--admindir={}", admin.display()))
        .args(["--showformat=${db:Status-Status}", "--show", "platscope"]));
    assert_eq!(stdout(&status), "installed");

    // The installed binary answers, and names this build's commit.
    let installed = inst.join("usr/bin/platscope");
    let version = stdout(&run(Command::new(&installed).arg("--version")));
    let ours = stdout(&run(Command::new(BIN).arg("--version")));
    assert_eq!(version, ours);
    let verbose = stdout(&run(Command::new(&installed).args(["version", "--verbose"])));
    assert!(verbose.contains("bpf programs"), "{verbose}");

    // A man page per command, read by man.
    let man1 = inst.join("usr/share/man/man1");
    let pages: Vec<String> = std::fs::read_dir(&man1)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(pages.iter().all(|p| p.ends_with(".1.gz")), "{pages:?}");
    for page in ["platscope.1.gz", "platscope-mem-latency.1.gz", "platscope-serve.1.gz"] {
        assert!(pages.iter().any(|p| p == page), "{page} not in {pages:?}");
    }
    let man = run(Command::new("man")
        .env("MANWIDTH", "100")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .arg("-l")
        .arg(man1.join("platscope-mem-latency.1.gz")));
    let text = stdout(&man);
    assert!(text.contains("platscope-mem-latency") && text.contains("--size"), "{text}");

    // Completions: bash loads its script; zsh's and fish's are where those shells look.
    let bash = inst.join("usr/share/bash-completion/completions/platscope");
    let loaded = run(Command::new("bash")
        .arg("-c")
        .arg(r#"source "$1" && complete -p platscope"#)
        .arg("bash")
        .arg(&bash));
    assert!(stdout(&loaded).trim_end().ends_with(" platscope"), "{}", stdout(&loaded));
    assert!(inst.join("usr/share/zsh/vendor-completions/_platscope").is_file());
    assert!(inst.join("usr/share/fish/vendor_completions.d/platscope.fish").is_file());

    // The original tools' names: links to the installed binary, answering as those tools.
    for name in
        ["memhammer", "create_sem", "trigger", "cpu_bind", "nicstat", "thread_read", "pstime"]
    {
        let link = inst.join("usr/lib/platscope/kit").join(name);
        let meta = std::fs::symlink_metadata(&link).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(meta.file_type().is_symlink(), "{name} is not a link");
        assert_eq!(
            std::fs::canonicalize(&link).unwrap(),
            std::fs::canonicalize(&installed).unwrap()
        );
    }
    let usage = Command::new(inst.join("usr/lib/platscope/kit/thread_read")).output().unwrap();
    assert_eq!(usage.status.code(), Some(2), "thread_read without arguments: a usage error");
    assert!(stderr(&usage).starts_with("thread_read"), "{}", stderr(&usage));

    // The unit starts the installed binary; the docs and examples it and the README name.
    let unit =
        std::fs::read_to_string(inst.join("lib/systemd/system/platscope-serve.service")).unwrap();
    let exec = unit.lines().find_map(|l| l.strip_prefix("ExecStart=")).expect("ExecStart");
    let program = exec.split_whitespace().next().unwrap();
    assert_eq!(program, "/usr/bin/platscope");
    assert!(!unit.contains("/usr/local"), "{unit}");
    let doc = inst.join("usr/share/doc/platscope");
    for file in [
        "serve.md",
        "README.md",
        "examples/prometheus/rules.yml",
        "examples/grafana/platscope-live.json",
        "examples/ansible/roles/platscope/tasks/main.yml",
    ] {
        assert!(doc.join(file).is_file(), "{file} not installed");
    }

    // Removed again by the scratch dpkg: nothing left behind.
    run(Command::new("dpkg")
        .env("PATH", &path)
        .arg(format!("--instdir={}", inst.display()))
        .arg(format!("--admindir={}", admin.display()))
        .args(["--force-script-chrootless", "--purge", "platscope"]));
    assert!(!installed.exists());
}
