//! Writes the vetted credential rules' corpus, `tests/fixtures/leaks/corpus.tsv`:
//! for every rule, text it must catch (drawn from its regex, seeded, so the
//! file is the same on every machine), the same text split over lines and
//! encoded as base64 when the rule starts with a literal, and text it must
//! let through (the sample with its secret cut to half, else blanked).
//!
//!     cargo run --example leak_corpus
//!
//! Run it again after `scripts/leak-rules.py` changes the table, and read
//! the diff: a rule whose sample the scan no longer catches is named on
//! stderr and the run fails. The test `leak_corpus` reads the file back.

use std::fmt::Write as _;

use base64::Engine as _;
use loopx::model::leaks::{scan, vetted_rules, Leak, VettedRule};
use rand::SeedableRng;
use regex_syntax::hir::{Capture, Hir, HirKind, Repetition};

/// How many samples to draw a rule before giving up.
const TRIES: usize = 400;

fn main() {
    let mut out = String::from(
        "# Written by `cargo run --example leak_corpus`: do not edit by hand.\n\
         # rule<TAB>expect<TAB>text; expect is rule[/split|/base64] (caught so) or - (passes).\n",
    );
    let mut failed = Vec::new();
    let mut notes = Vec::new();
    for rule in vetted_rules() {
        let Some((sample, secret, caught)) = catch_sample(rule) else {
            failed.push(format!(
                "{}: no sample of {} is caught",
                rule.kind, rule.regex
            ));
            continue;
        };
        let kind = rule.kind;
        if caught != kind {
            notes.push(format!("{kind}: caught first by {caught}"));
        }
        row(&mut out, kind, caught, &sample);
        if !rule.prefix.is_empty() {
            match split_sample(&[caught, kind], &sample, &secret) {
                Some((split, how)) => row(&mut out, kind, &how, &split),
                None => notes.push(format!("{kind}: not caught split over lines")),
            }
            let encoded = base64::engine::general_purpose::STANDARD.encode(&sample);
            if kinds(&encoded).contains(&format!("{caught}/base64")) {
                row(&mut out, kind, &format!("{caught}/base64"), &encoded);
            } else {
                failed.push(format!("{kind}: its sample as base64 passes"));
            }
        }
        match pass_sample(&sample, &secret) {
            Some(pass) => row(&mut out, kind, "-", &pass),
            None => failed.push(format!("{kind}: no near miss of {sample:?} passes")),
        }
    }
    std::fs::write("tests/fixtures/leaks/corpus.tsv", out).expect("write the corpus");
    for line in notes.iter().chain(&failed) {
        eprintln!("{line}");
    }
    if !failed.is_empty() {
        std::process::exit(1);
    }
}

fn row(out: &mut String, kind: &str, expect: &str, text: &str) {
    let escaped = text
        .replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('\t', "\\t")
        .replace('\r', "\\r");
    writeln!(out, "{kind}\t{expect}\t{escaped}").expect("write to a string");
}

fn kinds(text: &str) -> Vec<String> {
    scan(text)
        .into_iter()
        .map(|l: Leak| match l.via {
            Some(via) => format!("{}/{via}", l.kind),
            None => l.kind.to_owned(),
        })
        .collect()
}

/// Text the rule catches, the secret found in it and the rule that found
/// it: the first seeded draw that is printable and that the scan reports
/// under `rule`'s kind, else the first any other rule reports (a hand rule
/// may find the same token first). A draw that holds none of the rule's
/// keywords gets the first one before it, as a line of real text would.
fn catch_sample(rule: VettedRule) -> Option<(String, String, &'static str)> {
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(rule.regex)
        .ok()?;
    let generator = rand_regex::Regex::with_hir(drawable(&hir), 8).ok()?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(47);
    let mut other = None;
    for _ in 0..TRIES {
        let bytes: Vec<u8> = rand::distr::Distribution::sample(&generator, &mut rng);
        let Ok(mut text) = String::from_utf8(bytes) else {
            continue;
        };
        if !text
            .chars()
            .all(|c| c.is_ascii_graphic() || " \t\n\r".contains(c))
        {
            continue;
        }
        let lower = text.to_ascii_lowercase();
        if !rule.keywords.iter().any(|k| lower.contains(k)) {
            text = format!("{} {text}", rule.keywords.first()?);
        }
        let leaks = scan(&text);
        if let Some(leak) = leaks
            .iter()
            .find(|l| l.kind == rule.kind && l.via.is_none())
        {
            return Some((text.clone(), leak.secret.clone(), rule.kind));
        }
        if let (None, Some(leak)) = (&other, leaks.iter().find(|l| l.via.is_none())) {
            other = Some((text.clone(), leak.secret.clone(), leak.kind));
        }
    }
    other
}

/// `hir` as the generator can draw it: its assertions (`\b`, `$`) taken
/// out (a draw that breaks one is not caught, and another is drawn), and
/// `.` drawn as a dot (the rules write `hooks.slack.com` for
/// `hooks\.slack\.com`; any byte there would rarely be printable).
fn drawable(hir: &Hir) -> Hir {
    let dot = Hir::dot(regex_syntax::hir::Dot::AnyByteExceptLF);
    match hir.kind() {
        HirKind::Look(_) => Hir::empty(),
        HirKind::Class(_) if *hir == dot => Hir::literal(*b"."),
        HirKind::Repetition(r) => Hir::repetition(Repetition {
            sub: Box::new(drawable(&r.sub)),
            ..r.clone()
        }),
        HirKind::Capture(c) => Hir::capture(Capture {
            sub: Box::new(drawable(&c.sub)),
            ..c.clone()
        }),
        HirKind::Concat(subs) => Hir::concat(subs.iter().map(drawable).collect()),
        HirKind::Alternation(subs) => Hir::alternation(subs.iter().map(drawable).collect()),
        _ => hir.clone(),
    }
}

/// The sample with its secret broken over two lines, as an agent might
/// wrap it, and how it is caught: under one of `kinds_` as split, or
/// plainly when its first line is a token still (a long one cut late).
fn split_sample(kinds_: &[&str], sample: &str, secret: &str) -> Option<(String, String)> {
    let at = sample.find(secret)? + secret.len() / 2;
    let split = format!("{}\n  {}", &sample[..at], &sample[at..]);
    let found = kinds(&split);
    let split_kinds = kinds_.iter().map(|k| format!("{k}/split"));
    split_kinds
        .chain(kinds_.iter().map(|k| (*k).to_owned()))
        .find(|how| found.contains(how))
        .map(|how| (split, how))
}

/// A near miss that no rule catches: the sample with its secret cut to
/// half its length, else with the secret's characters all one, else with a
/// variable in its place (`${SECRET}`, as a template would write it).
fn pass_sample(sample: &str, secret: &str) -> Option<String> {
    let at = sample.find(secret)?;
    let half: String = secret.chars().take(secret.chars().count() / 2).collect();
    let first = secret.chars().next()?;
    let blank: String = std::iter::repeat_n(first, secret.chars().count()).collect();
    [half, blank, "${SECRET}".to_owned()]
        .into_iter()
        .map(|s| format!("{}{s}{}", &sample[..at], &sample[at + secret.len()..]))
        .find(|candidate| scan(candidate).is_empty())
}
