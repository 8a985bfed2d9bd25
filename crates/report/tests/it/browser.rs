//! The HTML report as a person sees it: Debian's headless Chromium opens the page from a file,
//! takes a screenshot, dumps the DOM it built and logs what the page said.
//!
//! Needs `/usr/bin/chromium` (Debian package `chromium`; `scripts/setup.sh` installs it). Set
//! `PLATSCOPE_CHROMIUM` to use another binary. Without one the test fails, naming the package.
//! A passing run leaves the page and its screenshot in `target/tmp/report-browser/` to be
//! looked at (`cargo test -p report --test it browser:: -- --include-ignored --nocapture`
//! prints the path).

use crate::common;

use std::collections::HashMap;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::time::Instant;
use test_tier::browser;

use common::*;
use report::html::render_html;
use test_support::browser::{self, page_messages, run_chromium, Run};

const WIDTH: u32 = 1280;
/// Down to the SLB by placement, the sample's last chart (its own section since the SLB steps
/// were split; the contents bar and the area headings moved it down).
const HEIGHT: u32 = 5200;

/// A fresh directory of this process under the test target dir (other test runs may share
/// the target dir), emptied first. It is removed when the test passes and kept when it fails.
fn workdir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the test directory");
    dir
}

/// Where the last passing run leaves the page and its screenshot for people to look at.
fn keep(files: &[&Path]) -> PathBuf {
    browser::keep(Path::new(env!("CARGO_TARGET_TMPDIR")), files)
}

/// A screenshot of `page` at the test's window size into `png`, decoded.
fn screenshot(dir: &Path, page: &Path, png: &Path) -> (Run, Image) {
    let run = browser::screenshot(dir, page, png, WIDTH, HEIGHT);
    let image = decode_png(&std::fs::read(png).expect("the screenshot was written"))
        .unwrap_or_else(|e| panic!("{}: {e}", png.display()));
    (run, image)
}

#[browser]
fn report_in_headless_chromium_has_every_chart_and_no_errors() {
    let started = Instant::now();
    let sample = sample();
    let html = render_html(&sample.page());
    let dir = workdir("report-browser");
    let page = dir.join("report.html");
    std::fs::write(&page, &html).expect("write the page");
    let png = dir.join("report.png");

    // (i) The screenshot shows something: decoded, it is the window's size and holds many
    // colours, among them the fills of the heatmap extremes and the bars.
    let (shot, image) = screenshot(&dir, &page, &png);

    assert_eq!((image.width, image.height), (WIDTH, HEIGHT), "screenshot size");
    let colours = image.colour_counts();
    let (background, background_pixels) =
        colours.iter().max_by_key(|(_, n)| **n).map(|(c, n)| (*c, *n)).expect("pixels");
    let total = image.width as usize * image.height as usize;
    assert!(colours.len() > 200, "only {} colours: a blank or unstyled page", colours.len());
    assert!(
        background_pixels < total * 9 / 10,
        "{:.0}% of the screenshot is {background:?}: nearly blank",
        100.0 * background_pixels as f64 / total as f64
    );
    for (what, hex) in [
        ("latency heatmap, fastest cell", "#fff5d6"),
        ("latency heatmap, slowest cell", "#9e1f2a"),
        ("bandwidth heatmap, slowest cell", "#eef5fb"),
        ("bandwidth heatmap, fastest cell", "#0c3c78"),
        ("bandwidth-by-threads bars", "#5b8fc7"),
        ("SLB bars of worker 3 (by workers, by placement)", "#c0392b"),
    ] {
        let count = colours.get(&rgb(hex)).copied().unwrap_or(0);
        assert!(count > 400, "{what} ({hex}) covers {count} pixels of the screenshot");
    }

    // (ii) The DOM Chromium built has every chart and every data mark with its value.
    let dom = run_chromium(&dir, "dom", &page, &["--dump-dom".to_string()]);
    assert!(dom.stdout.contains("</html>"), "no DOM dumped:\n{}", dom.log);
    let built = tags(&dom.stdout);
    let ours = tags(&html);
    for id in CHARTS {
        let chart = chart_tags(&built, id).unwrap_or_else(|| panic!("{id} missing in the DOM"));
        let marks = data_marks(&chart);
        assert_eq!(mark_values(&marks), expected(&sample, id), "{id}: data marks in the DOM");
        // Elements, not tags: Chromium writes `<line></line>` where the page has `<line/>`.
        let elements = |tags: &[Tag]| -> Vec<String> {
            tags.iter().filter(|t| !t.closing).map(|t| t.name.clone()).collect()
        };
        assert_eq!(
            elements(&chart),
            chart_tags(&ours, id).map_or_else(Vec::new, |c| elements(&c)),
            "{id}: Chromium's DOM has the page's elements (nothing dropped or moved)"
        );
    }
    // The copy kernels' table, its cells' values intact.
    let kernels = section(&dom.stdout, "sec-bandwidth-kernels").expect("kernels in the DOM");
    assert_eq!(
        mark_values(&data_marks(&tags(kernels))),
        expected(&sample, "chart-bandwidth-kernels"),
        "copy kernels in the DOM"
    );
    // The area headings and the contents bar's links survive, each link landing on an element.
    let ids: Vec<&str> = built.iter().filter_map(|t| t.attr("id")).collect();
    for id in ["area-machine", "area-memory"] {
        assert_eq!(ids.iter().filter(|i| **i == id).count(), 1, "{id} once in the DOM");
    }
    let links: Vec<&str> = built.iter().filter_map(|t| t.attr("href")).collect();
    assert_eq!(links, ["#headlines", "#area-machine", "#area-memory", "#notes"], "contents bar");
    for link in links {
        assert!(ids.contains(&&link[1..]), "{link} lands in the DOM");
    }
    assert!(dom.stdout.contains("Xeon &lt;Test&gt; &amp;"), "the CPU model is text in the DOM");
    assert!(!built.iter().any(|t| t.name == "script"), "no script element in the DOM");

    // (iii) The page said nothing: no console message, no blocked load, in either run.
    for (label, run) in [("screenshot", &shot), ("dump-dom", &dom)] {
        let messages = page_messages(&run.log, &page);
        assert!(
            messages.is_empty(),
            "the page logged in the {label} run:\n{}",
            messages.join("\n")
        );
    }
    let kept = keep(&[&page, &png]);
    println!(
        "page and screenshot ({}×{}) in {}; chromium checks took {:.1} s",
        image.width,
        image.height,
        kept.display(),
        started.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The log filter is not vacuous: a page with a bad SVG path and an external image (which
/// the report's Content-Security-Policy blocks) is caught.
#[browser]
fn page_errors_would_be_caught() {
    let dir = workdir("report-browser-canary");
    let page = dir.join("broken.html");
    let head = render_html(&sample().page());
    let csp = head
        .split("<meta http-equiv=\"Content-Security-Policy\"")
        .nth(1)
        .and_then(|rest| rest.split('>').next())
        .expect("the report sets a Content-Security-Policy");
    std::fs::write(
        &page,
        format!(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\">\
             <meta http-equiv=\"Content-Security-Policy\"{csp}><title>broken</title></head>\
             <body><img src=\"https://example.invalid/x.png\" alt=\"\">\
             <svg viewBox=\"0 0 10 10\"><path class=\"data\" d=\"M 0 0 L x\"/></svg></body></html>"
        ),
    )
    .expect("write the broken page");
    let run = run_chromium(&dir, "canary", &page, &["--dump-dom".to_string()]);
    let messages = page_messages(&run.log, &page);
    assert!(
        messages.iter().any(|m| m.contains("attribute d")),
        "a bad SVG path went unnoticed:\n{}",
        run.log
    );
    assert!(
        messages.iter().any(|m| m.contains("example.invalid")),
        "an external load went unnoticed:\n{}",
        run.log
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn rgb(hex: &str) -> [u8; 3] {
    let v = u32::from_str_radix(hex.trim_start_matches('#'), 16).expect("hex colour");
    [(v >> 16) as u8, (v >> 8) as u8, v as u8]
}

/// A decoded screenshot: 8-bit RGB or RGBA pixels, row by row.
struct Image {
    width: u32,
    height: u32,
    channels: usize,
    pixels: Vec<u8>,
}

impl Image {
    fn colour_counts(&self) -> HashMap<[u8; 3], usize> {
        let mut counts = HashMap::new();
        for p in self.pixels.chunks_exact(self.channels) {
            *counts.entry([p[0], p[1], p[2]]).or_insert(0) += 1;
        }
        counts
    }
}

/// Decodes Chromium's screenshot with the `png` crate, expanded to 8 bits per channel.
fn decode_png(file: &[u8]) -> Result<Image, String> {
    let mut decoder = png::Decoder::new(Cursor::new(file));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().map_err(|e| e.to_string())?;
    let size = reader.output_buffer_size().ok_or("the image is too large to decode")?;
    let mut pixels = vec![0u8; size];
    let frame = reader.next_frame(&mut pixels).map_err(|e| e.to_string())?;
    let channels = match frame.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => return Err(format!("unsupported PNG colour type {other:?}")),
    };
    pixels.truncate(frame.buffer_size());
    Ok(Image { width: frame.width, height: frame.height, channels, pixels })
}

/// A page compared with a baseline, as a person reads it: the verdicts are words and symbols
/// (`▲ faster`, `▼ slower`, `= same`, `? untested (1 vs 1 samples)`), the differing machine
/// settings are marked `≠` beside both values, so both machines read apart without colour.
#[browser]
fn compared_page_reads_both_machines_without_colour() {
    use measure::verdict::Verdict;
    use report::compare::{FigureComparison, ReportComparison, SettingDiff};

    let mut data = sample().page();
    let mut baseline_machine = topo::machine_facts(&data.topology);
    let changed = baseline_machine.iter_mut().find(|f| f.setting == "Sockets").expect("sockets");
    changed.value = "8".into();
    let figure = |name: &str, this: f64, baseline: f64, verdict| FigureComparison {
        p_value: 0.001,
        this_replicates: 3,
        baseline_replicates: 3,
        ratio_low: this / baseline * 0.95,
        ratio_high: this / baseline * 1.05,
        rests_on: "3 rounds each; run-to-run noise 10% assumed".into(),
        ..FigureComparison::new(name, "ns", this, baseline, verdict)
    };
    data.comparison = Some(ReportComparison {
        baseline: "other-host, run 7".into(),
        comparison: vec![
            figure("Idle DRAM latency", 130.0, 100.0, Verdict::Slower),
            figure("L1 latency", 1.2, 1.2, Verdict::Same),
            FigureComparison {
                this_replicates: 1,
                baseline_replicates: 1,
                p_value: 1.0,
                ..figure("Compression, 1 thread(s)", 410.0, 300.0, Verdict::Untested)
            },
        ],
        config_diff: vec![SettingDiff {
            setting: "Sockets".into(),
            this: "2".into(),
            baseline: "8".into(),
        }],
        baseline_machine,
        // The baseline's own page: the same kind of run, drawn beside this one.
        baseline_sections: report::html::baseline_sections(&sample().page()),
        calibrated_from: 0,
        this_clock_ghz: vec![Some(3.05), Some(3.01), Some(3.06)],
        baseline_clock_ghz: vec![Some(2.69)],
        same_host: false,
    });
    let html = render_html(&data);
    let dir = workdir("report-browser-compared");
    let page = dir.join("compared.html");
    std::fs::write(&page, &html).expect("write the page");
    let png = dir.join("compared.png");
    let (shot, image) = screenshot(&dir, &page, &png);
    assert!(image.colour_counts().len() > 200, "a blank or unstyled page");

    let dom = run_chromium(&dir, "dom", &page, &["--dump-dom".to_string()]);
    let text = &dom.stdout;
    assert!(text.contains("Compared with other-host, run 7"), "the baseline is named");
    assert!(text.contains("▼ slower") && text.contains("= same"), "verdicts in words and symbols");
    assert!(text.contains("? untested (1 vs 1 samples)"), "an untested figure says why");
    let machine = text
        .split("<section id=\"sec-machine\"")
        .nth(1)
        .and_then(|rest| rest.split("</section>").next())
        .expect("the machine section in the DOM");
    let differs: Vec<&str> =
        machine.split("<tr").filter(|row| row.contains("class=\"differs\"")).collect();
    assert_eq!(differs.len(), 1, "one differing setting: {machine}");
    assert!(
        differs[0].contains("≠") && differs[0].contains("Sockets") && differs[0].contains(">8<"),
        "marked with ≠ beside both values: {}",
        differs[0]
    );
    // Every chart of this machine has the baseline's right after it, each tagged in words.
    let own: Vec<&str> = text
        .split("<section id=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .filter(|id| *id != "sec-machine" && *id != "sec-comparison" && !id.ends_with("-baseline"))
        .collect();
    assert_eq!(
        own,
        [
            "sec-latency-size",
            "sec-latency-matrix",
            "sec-bandwidth-matrix",
            "sec-bandwidth-threads",
            "sec-bandwidth-kernels",
            "sec-loaded-latency",
            "sec-slb",
            "sec-slb-policies",
        ],
        "the sample's sections"
    );
    for id in &own {
        let at = |needle: &str| text.find(needle).unwrap_or_else(|| panic!("{needle} missing"));
        let mine = at(&format!("<section id=\"{id}\""));
        let twin = at(&format!("<section id=\"{id}-baseline\""));
        assert!(twin > mine, "{id}: the baseline's section follows this machine's");
        let between = &text[mine..twin];
        assert!(between.contains("■ this machine"), "{id}: tagged as this machine in words");
        assert!(
            text[twin..].split("</section>").next().is_some_and(|s| s.contains("□ baseline")),
            "{id}: the twin is tagged as the baseline"
        );
    }
    let mut ids: Vec<&str> =
        text.split(" id=\"").skip(1).filter_map(|s| s.split('"').next()).collect();
    let total = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), total, "element ids stay unique with two machines on the page");
    for (label, run) in [("screenshot", &shot), ("dump-dom", &dom)] {
        let messages = page_messages(&run.log, &page);
        assert!(
            messages.is_empty(),
            "the page logged in the {label} run:\n{}",
            messages.join("\n")
        );
    }
    keep(&[&page, &png]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A compression scaling report whose points crowd: four unit counts meeting at a throughput
/// ceiling on 64 CPUs, two points almost on top of each other, the last thread count at the
/// right edge, and 2-CPU steps beside them (short labels at the edge).
fn crowded_scale() -> tamp::scale::ScaleReport {
    use tamp::procstat::MachineBusy;
    use tamp::scale::{ScaleReport, ScaleStep, ScaleSummary};
    use tamp::Verdict;
    let step = |units: usize, threads: usize, mb_per_s: f64| {
        let busy = (units * (threads + 2)).min(64);
        ScaleStep {
            units,
            threads,
            bytes: 1 << 24,
            wall_s: 0.5,
            mb_per_s,
            ratio: 0.5,
            reader_busy: 0.5,
            workers_busy: 0.9,
            writer_busy: 0.1,
            machine: Some(MachineBusy {
                per_cpu: vec![(0, 0.95)],
                machine_share: busy as f64 / 64.0,
                cpus_busy: busy,
            }),
            online_cpus: 64,
            verdict: Verdict::Scales,
            verdict_reason: "scales".into(),
            rounds_mb_per_s: Vec::new(),
        }
    };
    let mut steps = Vec::new();
    for units in [1, 2, 4, 8] {
        for threads in [1, 2, 4, 8, 16, 32, 64] {
            if units * threads <= 64 {
                // Linear up to a ceiling every unit count reaches: the right end crowds.
                let mb = (310.0 * (units * threads) as f64).min(9_000.0) + units as f64;
                steps.push(step(units, threads, mb));
            }
        }
    }
    ScaleReport {
        codec: "lz4".into(),
        level: Some(1),
        input_bytes: 1 << 24,
        block_size: 256 << 10,
        steps,
        summary: ScaleSummary {
            single_thread_mb_s: Some(311.0),
            one_unit_best: Some((32, 9_001.0)),
            one_unit_stops_at: None,
            one_unit_limit: None,
            filled_best: Some((8, 8, 9_008.0)),
            machine_limit: None,
            text: "one thread 311 MB/s".into(),
        },
        interrupted: false,
    }
}

/// One box the page's script measured in the scaling chart.
#[derive(Debug)]
struct Measured {
    kind: String,
    x: f64,
    y: f64,
    width: f64,
    height: f64,
    /// Labels: the text's own `x`, `y`, `text-anchor` and text.
    at: Option<(f64, f64, String, String)>,
}

impl Measured {
    fn rect(&self) -> chart::labels::Rect {
        chart::labels::Rect {
            left: self.x,
            top: self.y,
            right: self.x + self.width,
            bottom: self.y + self.height,
        }
    }
}

/// The compression scaling chart's point labels as Chromium lays them out (`getBBox`, in the
/// chart's own units): none covers another label or a point, none leaves the drawing, each lies
/// inside the box `chart::labels` estimated for it, every point is labelled, and every point
/// keeps its `data-value`. With the labels as they were drawn before (each right and above its
/// point) it fails: `3/64` and `6/64` at one thread overlap (and `64/64` at the last thread
/// count would run past the right edge).
#[browser]
fn scaling_chart_labels_neither_overlap_nor_leave_the_chart() {
    let scale = crowded_scale();
    let mut data = sample();
    data.cpu_scale = Some(scale.clone());
    let html = render_html(&data.page());
    let dir = workdir("report-browser-scale");
    let page = dir.join("scale.html");
    std::fs::write(&page, &html).expect("write the page");
    let png = dir.join("scale.png");
    screenshot(&dir, &page, &png);

    // A copy that measures itself: the policy lets one inline script run, which writes every
    // label's and point's box into the page for the DOM dump.
    let probe = dir.join("scale-probe.html");
    let script = "<script>(() => {\
        const svg = document.getElementById('chart-cpu-scale'); const out = [];\
        const vb = svg.viewBox.baseVal; out.push(['view', 0, 0, vb.width, vb.height].join('\\t'));\
        for (const c of svg.querySelectorAll('circle.data')) { const b = c.getBBox();\
          out.push(['point', b.x, b.y, b.width, b.height, c.getAttribute('data-value')].join('\\t')); }\
        for (const t of svg.querySelectorAll('text.point-label')) { const b = t.getBBox();\
          out.push(['label', b.x, b.y, b.width, b.height, t.getAttribute('x'), t.getAttribute('y'),\
            t.getAttribute('text-anchor') || 'start', t.textContent].join('\\t')); }\
        const pre = document.createElement('pre'); pre.id = 'measured';\
        pre.textContent = out.join('\\n'); document.body.appendChild(pre); })();</script>";
    let measuring = html
        .replace("default-src 'none';", "default-src 'none'; script-src 'unsafe-inline';")
        .replace("</body>", &format!("{script}</body>"));
    assert_ne!(measuring, html, "the probe script went in");
    std::fs::write(&probe, &measuring).expect("write the probe page");
    let dom = run_chromium(&dir, "scale-dom", &probe, &["--dump-dom".to_string()]);
    let messages = page_messages(&dom.log, &probe);
    assert!(messages.is_empty(), "the page logged:\n{}", messages.join("\n"));
    let measured: Vec<Measured> = dom
        .stdout
        .split("<pre id=\"measured\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or_else(|| panic!("no measurements in the DOM:\n{}", dom.log))
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            let num = |i: usize| -> f64 {
                f.get(i).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{line}"))
            };
            let at =
                (f[0] == "label").then(|| (num(5), num(6), f[7].to_string(), f[8].to_string()));
            Measured { kind: f[0].into(), x: num(1), y: num(2), width: num(3), height: num(4), at }
        })
        .collect();
    let of = |kind: &str| measured.iter().filter(|m| m.kind == kind).collect::<Vec<_>>();
    let (view, points, labels) = (of("view"), of("point"), of("label"));
    assert_eq!(view.len(), 1, "one scaling chart");
    let view = view[0].rect();
    assert_eq!(points.len(), scale.steps.len(), "a data point per step");
    // Every point labelled (none left out), plus one legend entry per unit count.
    assert_eq!(labels.len(), scale.steps.len() + 4, "{labels:?}");
    for (i, l) in labels.iter().enumerate() {
        let b = l.rect();
        assert!(b.inside(&view), "{l:?} leaves the chart {view:?}");
        for other in &labels[i + 1..] {
            assert!(!b.overlaps(&other.rect()), "{l:?} overlaps {other:?}");
        }
        for p in &points {
            assert!(!b.overlaps(&p.rect()), "{l:?} covers the point {p:?}");
        }
        // The estimate the placement went by holds the laid-out text.
        let (x, y, anchor, text) = l.at.clone().expect("a label's position");
        let estimate = chart::labels::text_box(&text, 12.0, x, y, &anchor);
        let slack = chart::labels::Rect {
            left: estimate.left - 0.5,
            top: estimate.top - 0.5,
            right: estimate.right + 0.5,
            bottom: estimate.bottom + 0.5,
        };
        assert!(b.inside(&slack), "{text:?}: laid out {b:?}, estimated {estimate:?}");
    }
    // The data marks are intact: every point's value, as the steps measured it.
    let all = tags(&html);
    let marks = data_marks(&chart_tags(&all, "chart-cpu-scale").expect("drawn"));
    let mut steps: Vec<f64> = scale.steps.iter().map(|s| s.mb_per_s).collect();
    steps.sort_by(f64::total_cmp);
    assert_eq!(mark_values(&marks), steps);
    assert!(!html.contains("found no free place"), "no label left out");
    // Too crowded for `busy/online` everywhere: the busy counts alone, the caption says of what.
    assert!(html.contains("each label is the busy CPUs alone, of the 64 online CPUs"), "caption");
    keep(&[&page, &png]);
    let _ = std::fs::remove_dir_all(&dir);
}
