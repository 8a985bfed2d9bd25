//! Debian's headless Chromium opening a page from a file, as a person would: a screenshot, the
//! DOM it built, and what the page logged.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one Chromium run may take.
pub const TIME_LIMIT: Duration = Duration::from_secs(60);

/// The browser: `/usr/bin/chromium`, or `PLATSCOPE_CHROMIUM`. A missing one fails the test,
/// naming the package.
pub fn chromium() -> PathBuf {
    let path = std::env::var_os("PLATSCOPE_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(
        path.is_file(),
        "headless Chromium not found at {}: install Debian's `chromium` package \
         (apt-get install chromium, or run scripts/setup.sh --deps)",
        path.display()
    );
    path
}

/// What one Chromium run left: its stdout and its log (stderr).
#[derive(Debug)]
pub struct Run {
    pub stdout: String,
    pub log: String,
}

/// Runs headless Chromium on `page` with `args`, a fresh profile in `dir`, logging to stderr.
/// Output goes to files, not pipes: helper processes that outlive the browser cannot block us.
pub fn run_chromium(dir: &Path, label: &str, page: &Path, args: &[String]) -> Run {
    let profile = dir.join(format!("profile-{label}"));
    let (out_path, err_path) = (dir.join(format!("{label}.out")), dir.join(format!("{label}.log")));
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(file_url(page))
        .stdin(Stdio::null())
        .stdout(File::create(&out_path).expect("stdout file"))
        .stderr(File::create(&err_path).expect("stderr file"))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromium().display()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for chromium") {
            break status;
        }
        if started.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium {label} ran past {TIME_LIMIT:?}; log in {}", err_path.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let run = Run {
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        log: std::fs::read_to_string(&err_path).unwrap_or_default(),
    };
    assert!(status.success(), "chromium {label} failed ({status}):\n{}", run.log);
    run
}

/// A screenshot of `page` in a `width`×`height` window, written to `png`.
pub fn screenshot(dir: &Path, page: &Path, png: &Path, width: u32, height: u32) -> Run {
    run_chromium(
        dir,
        "screenshot",
        page,
        &[format!("--screenshot={}", png.display()), format!("--window-size={width},{height}")],
    )
}

/// The DOM Chromium built from `page`.
pub fn dump_dom(dir: &Path, page: &Path) -> Run {
    run_chromium(dir, "dom", page, &["--dump-dom".to_string()])
}

pub fn file_url(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// Lines of Chromium's log about the page: console messages (script errors, SVG attribute
/// errors, Content-Security-Policy violations all arrive as `CONSOLE`) and anything naming the
/// page's file. Chromium's own start-up noise in a container (D-Bus, VA-API, sandbox, the
/// Debian launcher's shell warning) names neither and is left out.
pub fn page_messages(log: &str, page: &Path) -> Vec<String> {
    let url = file_url(page);
    let name = page.file_name().and_then(|n| n.to_str()).unwrap_or("report.html");
    log.lines()
        .filter(|l| {
            l.contains(":CONSOLE")
                || l.contains("Content Security Policy")
                || l.contains(&url)
                || (l.contains(name) && !l.contains("bytes written to file"))
        })
        .map(str::to_string)
        .collect()
}

/// Width and height of a PNG file, read from its IHDR chunk (None when it is not a PNG).
pub fn png_size(file: &[u8]) -> Option<(u32, u32)> {
    const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
    if file.len() < 24 || !file.starts_with(SIGNATURE) || &file[12..16] != b"IHDR" {
        return None;
    }
    let word = |at: usize| u32::from_be_bytes([file[at], file[at + 1], file[at + 2], file[at + 3]]);
    Some((word(16), word(20)))
}

/// Where a passing run leaves pages and screenshots for people to look at:
/// `<target tmp>/report-browser/`.
pub fn keep(target_tmp: &Path, files: &[&Path]) -> PathBuf {
    let dir = target_tmp.join("report-browser");
    std::fs::create_dir_all(&dir).expect("create the kept directory");
    for f in files {
        if let Some(name) = f.file_name() {
            std::fs::copy(f, dir.join(name)).expect("keep a copy");
        }
    }
    dir
}

/// A real page as a person opens it: a screenshot (kept as `<name>.png` beside a copy of the
/// page as `<name>.html`), and the DOM Chromium built, which must hold every section of the
/// page's source with nothing logged about the page. Returns the DOM.
pub fn open_page(target_tmp: &Path, page: &Path, name: &str) -> String {
    let dir = target_tmp.join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the browser directory");
    let html = dir.join(format!("{name}.html"));
    std::fs::copy(page, &html).expect("copy the page");
    let png = dir.join(format!("{name}.png"));
    let shot = screenshot(&dir, &html, &png, 1280, 6000);
    let image = std::fs::read(&png).expect("the screenshot was written");
    assert_eq!(png_size(&image), Some((1280, 6000)), "{} is not the screenshot", png.display());
    let dom = dump_dom(&dir, &html);
    let source = std::fs::read_to_string(&html).expect("the page");
    let sections = |text: &str| -> Vec<String> {
        text.split("<section id=\"")
            .skip(1)
            .filter_map(|s| s.split('"').next())
            .map(String::from)
            .collect()
    };
    assert_eq!(sections(&dom.stdout), sections(&source), "Chromium built every section");
    for (label, run) in [("screenshot", &shot), ("dump-dom", &dom)] {
        let messages = page_messages(&run.log, &html);
        assert!(
            messages.is_empty(),
            "the page logged in the {label} run:\n{}",
            messages.join("\n")
        );
    }
    keep(target_tmp, &[&html, &png]);
    let _ = std::fs::remove_dir_all(&dir);
    dom.stdout
}
