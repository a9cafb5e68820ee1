//! The vetted rules' corpus (`tests/fixtures/leaks/corpus.tsv`, written by
//! `cargo run --example leak_corpus`): for every rule of the table, text it
//! must catch, the same split over lines and as base64 where the rule
//! starts with a literal, and a near miss it must let through.

use std::collections::BTreeSet;

use loopx::model::leaks::{scan, vetted_rules};

use crate::leak_rules::kinds as found;

const CORPUS: &str = include_str!("../fixtures/leaks/corpus.tsv");

struct Row {
    rule: &'static str,
    /// `kind`, `kind/split`, `kind/base64`, or `-` (passes).
    expect: &'static str,
    text: String,
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('\\') => out.push('\\'),
            other => panic!("corpus: a bad escape \\{other:?}"),
        }
    }
    out
}

fn rows() -> Vec<Row> {
    CORPUS
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|line| {
            let mut fields = line.splitn(3, '\t');
            let (Some(rule), Some(expect), Some(text)) =
                (fields.next(), fields.next(), fields.next())
            else {
                panic!("corpus: a row without three fields: {line:?}");
            };
            Row {
                rule,
                expect,
                text: unescape(text),
            }
        })
        .collect()
}

#[test]
fn every_vetted_rule_has_text_it_catches_and_a_near_miss_it_lets_through() {
    let rows = rows();
    let mut catches = BTreeSet::new();
    let mut passes = BTreeSet::new();
    for row in &rows {
        if row.expect == "-" {
            passes.insert(row.rule);
        } else if !row.expect.contains('/') {
            catches.insert(row.rule);
        }
    }
    let mut missing = Vec::new();
    for rule in vetted_rules() {
        if !catches.contains(rule.kind) {
            missing.push(format!("{}: nothing to catch", rule.kind));
        }
        if !passes.contains(rule.kind) {
            missing.push(format!("{}: no near miss", rule.kind));
        }
    }
    assert!(
        missing.is_empty(),
        "the corpus lacks:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_corpus_is_caught_and_let_through_as_it_says() {
    let mut wrong = Vec::new();
    for row in rows() {
        let found = found(&row.text);
        let ok = if row.expect == "-" {
            found.is_empty()
        } else {
            found.iter().any(|f| f == row.expect)
        };
        if !ok {
            wrong.push(format!(
                "{} expects {}: {:?} gives {found:?}",
                row.rule, row.expect, row.text
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} rows:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn what_a_vetted_rule_catches_is_what_redaction_removes() {
    for row in rows().into_iter().filter(|r| r.expect != "-") {
        let leaks = scan(&row.text);
        let secrets: Vec<String> = leaks.iter().map(|l| l.secret.clone()).collect();
        let redacted = loopx::model::leaks::redact(&row.text, &secrets);
        assert!(
            found(&redacted).is_empty(),
            "{}: redacted {:?} still gives {:?}",
            row.rule,
            redacted,
            found(&redacted)
        );
    }
}
