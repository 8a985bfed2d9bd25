//! The repository as a newcomer reads it: the README's layout table lists every crate,
//! docs/architecture.md names only files that exist, and no help, doc or comment points at
//! documents a reader does not have (the team's numbered source documents, its tracker's
//! numbers).

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap()
}

#[test]
fn the_readme_layout_table_lists_every_crate_once() {
    let readme = read("README.md");
    let layout = &readme[readme.find("## Layout").expect("a Layout section")..];
    let listed: Vec<String> = layout
        .lines()
        .take_while(|l| !l.starts_with("## ") || l.starts_with("## Layout"))
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next().map(String::from))
        .collect();
    let mut crates: Vec<String> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            e.path().join("Cargo.toml").exists().then(|| e.file_name().to_string_lossy().into())
        })
        .collect();
    crates.sort();
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(sorted, crates, "README's layout table against crates/");
}

#[test]
fn the_architecture_page_names_files_that_exist() {
    let page = read("docs/architecture.md");
    let mut named = 0;
    for quoted in page.split('`').skip(1).step_by(2) {
        let path = quoted.trim_end_matches(',');
        let looks_like_a_file = path.starts_with("crates/")
            && (path.ends_with(".rs") || path.ends_with(".toml") || path.ends_with('/'));
        if looks_like_a_file {
            assert!(root().join(path).exists(), "docs/architecture.md names {path}");
            named += 1;
        }
    }
    assert!(named >= 5, "only {named} paths found: the scan is broken");
    // The functions it walks the reader through are where it says.
    let plan = read("crates/suite/src/plan.rs");
    for name in ["pub fn plan(", "pub fn section_steps(", "fn every_step_parses_as_its_command"] {
        assert!(plan.contains(name), "suite::plan lost {name}");
    }
    for name in ["suite::plan::plan", "suite::plan::section_steps", "suite::runner"] {
        assert!(page.contains(name), "docs/architecture.md no longer names {name}");
    }
    let compare_test = read("crates/platscope/tests/it/report_compare.rs");
    assert!(compare_test.contains("fn report_steps_draw_their_sections_again("));
    assert!(page.contains("report_steps_draw_their_sections_again"));
}

/// A numbered source document or a tracker number: names of documents only the team has. The
/// words are assembled here so that this file reads as clean as the ones it checks.
fn internal_reference(line: &str) -> Option<&'static str> {
    let (source, tracker) = (["se", "ed"].concat(), ["iss", "ue"].concat());
    let lower = line.to_lowercase();
    let numbered = |word: &str| {
        lower.match_indices(word).any(|(at, _)| {
            let rest = lower[at + word.len()..].trim_start_matches('#');
            rest.starts_with(|c: char| c.is_ascii_digit())
        })
    };
    let plural = format!("the {source}s");
    let document = format!("{source} document");
    if numbered(&format!("{source} 0")) || lower.contains(&plural) || lower.contains(&document) {
        return Some("a numbered source document");
    }
    if numbered(&format!("{tracker} ")) {
        return Some("a tracker number");
    }
    None
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !["target", "fixtures", ".git"].contains(&name.as_str()) {
                files(&path, out);
            }
        } else if [".rs", ".md", ".sh", ".toml", ".yml", ".yaml", ".json"]
            .iter()
            .any(|ext| name.ends_with(ext))
        {
            out.push(path);
        }
    }
}

#[test]
fn no_help_doc_or_comment_names_a_seed_or_an_issue_number() {
    let mut all = Vec::new();
    for dir in ["crates", "docs", "deploy", "bench", "scripts"] {
        files(&root().join(dir), &mut all);
    }
    all.extend(["README.md", "CHANGELOG.md"].iter().map(|f| root().join(f)));
    let this = Path::new(file!()).file_name().unwrap();
    let mut found = Vec::new();
    for path in all.iter().filter(|p| p.file_name() != Some(this)) {
        let Ok(text) = std::fs::read_to_string(path) else { continue };
        for (i, line) in text.lines().enumerate() {
            if let Some(what) = internal_reference(line) {
                found.push(format!("{}:{}: {what}: {}", path.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
    // The check itself catches what it is for, and lets a random generator's seed be.
    let (source, tracker) = (["se", "ed"].concat(), ["iss", "ue"].concat());
    assert!(internal_reference(&format!("as {source} 004's Tamp did")).is_some());
    assert!(internal_reference(&format!("({tracker} 27)")).is_some());
    assert!(internal_reference(&format!("the tamp corpus ({source} 4)")).is_none());
}
