//! Fuzz-style property tests of SQL workload files (`--workload FILE`, `parse_sql_file`):
//! arbitrary and mutated files are a template or a one-line error naming a line of the file,
//! never a panic; a template's parameters all have generators that draw in range; and the text
//! around `:rand(…)` is kept exactly, whatever blanks its arguments hold.
//!
//! Pure tier: [`fuzz::PURE`] cases per target; live tier (`--ignored`): [`fuzz::LIVE`].

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use loadgen::workload::{parse_sql_file, Dialect, Gen, Part};
use loadgen::Error;
use measure::rng::SplitMix64;
use test_support::fuzz::{self, proptest};
use test_tier::live;

use proptest::prelude::*;

fn seeds() -> Vec<String> {
    vec![
        "-- a comment; not a statement\nBEGIN;\nSELECT c FROM t WHERE id = :rand(1, 100) AND s = ':rand(1,2);';\n\
         UPDATE t SET k = k + 1 WHERE id = :rand(5,5);\nCOMMIT;\n"
            .into(),
        "START TRANSACTION;\nSELECT `c` FROM \"t\" WHERE id BETWEEN :rand(-9223372036854775808,0) AND :rand(0,9223372036854775807);\nCOMMIT;".into(),
        "INSERT INTO t (id, v) VALUES (:rand(1,10), 'it''s -- not a comment');\nDELETE FROM t WHERE id = :rand( 3 , 4 )".into(),
        "SELECT 1".into(),
    ]
}

fn files(cases: u32) {
    let parsed = std::cell::Cell::new(0u32);
    fuzz::check(cases, fuzz::text_or_mutated(seeds(), 300), |text| {
        let lines = text.split('\n').count();
        match parse_sql_file(&text) {
            Ok(t) => {
                parsed.set(parsed.get() + 1);
                prop_assert!(!t.statements.is_empty());
                for g in &t.gens {
                    if let Gen::Rand { lo, hi } = g {
                        prop_assert!(lo <= hi);
                    }
                }
                let values = t.values(&mut SplitMix64::new(7));
                prop_assert_eq!(values.len(), t.gens.len());
                for s in &t.statements {
                    for p in &s.parts {
                        if let Part::Param(n) = p {
                            prop_assert!(*n < t.gens.len(), "parameter {} of {}", n, t.gens.len());
                        }
                    }
                    let _ = s.prepared_text(Dialect::Postgres);
                    let _ = s.literal_text(&values);
                }
            }
            Err(Error::SqlFile { line, message }) => {
                prop_assert!(line >= 1 && line <= lines, "line {} of {}", line, lines);
                prop_assert!(!message.contains('\n'), "not one line: {:?}", message);
            }
            Err(other) => prop_assert!(false, "not a SQL file error: {other:?}"),
        }
        Ok(())
    });
    assert!(parsed.get() > cases / 50, "only {} of {cases} files parsed", parsed.get());
}

/// Statements of plain text and `:rand(lo,hi)` with any blanks around the numbers: the
/// prepared text is the file's text with each `:rand(…)` replaced by `?`.
fn rand_text(cases: u32) {
    let blank =
        proptest::sample::select(vec!["", " ", "\t", "\n", "\u{a0}", "\u{3000}", "\u{2028}"]);
    let rand = (any::<i64>(), any::<i64>(), blank.clone(), blank.clone(), blank.clone(), blank)
        .prop_map(|(a, b, w1, w2, w3, w4)| {
            let (lo, hi) = (a.min(b), a.max(b));
            (format!(":rand({w1}{lo}{w2},{w3}{hi}{w4})"), (lo, hi))
        });
    let part = prop_oneof![
        proptest::string::string_regex("[a-z0-9 =<>(),\n]{0,12}").unwrap().prop_map(|t| (t, None)),
        rand.prop_map(|(t, g)| (t, Some(g))),
    ];
    let statements = proptest::collection::vec(proptest::collection::vec(part, 1..6), 1..5);
    fuzz::check(cases, statements, |statements| {
        let mut file = String::new();
        let mut want_text = Vec::new();
        let mut want_gens = Vec::new();
        for parts in &statements {
            let mut text = String::new();
            for (t, g) in parts {
                match g {
                    Some((lo, hi)) => {
                        text.push('?');
                        want_gens.push(Gen::Rand { lo: *lo, hi: *hi });
                    }
                    None => text.push_str(t),
                }
                file.push_str(t);
            }
            file.push_str(";\n");
            if !text.trim().is_empty() {
                want_text.push(text.trim().to_string());
            }
        }
        if want_text.is_empty() {
            prop_assert!(parse_sql_file(&file).is_err());
            return Ok(());
        }
        let t = parse_sql_file(&file).map_err(|e| TestCaseError::fail(format!("{e}: {file:?}")))?;
        let got: Vec<String> =
            t.statements.iter().map(|s| s.prepared_text(Dialect::MariaDb)).collect();
        prop_assert_eq!(got, want_text, "{:?}", file);
        prop_assert_eq!(&t.gens, &want_gens);
        Ok(())
    });
}

#[test]
fn arbitrary_and_mutated_sql_files_are_a_template_or_a_one_line_error() {
    files(fuzz::PURE);
}

#[live("50 000 arbitrary and mutated SQL files")]
fn arbitrary_and_mutated_sql_files_are_a_template_or_a_one_line_error_long() {
    files(fuzz::LIVE);
}

#[test]
fn text_around_rand_is_kept_whatever_blanks_its_arguments_hold() {
    rand_text(fuzz::PURE);
}

#[live("50 000 generated SQL files")]
fn text_around_rand_is_kept_whatever_blanks_its_arguments_hold_long() {
    rand_text(fuzz::LIVE);
}
