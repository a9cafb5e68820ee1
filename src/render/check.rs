//! `check` as text: one line per hit as compilers print them
//! (`path:line: rule: excerpt`), then what was skipped and a summary.

use std::fmt::Write as _;

use crate::ops::check::{CheckReport, Hit};

fn hit_line(out: &mut String, h: &Hit, allowed: bool) {
    let mut at = h.file.clone();
    if let Some(line) = h.line {
        let _ = write!(at, ":{line}");
    }
    let rule = match h.via {
        Some(via) => format!("{} ({via})", h.rule),
        None => h.rule.to_owned(),
    };
    let place = if h.line.is_none() {
        " (in the file's name)"
    } else {
        ""
    };
    let tail = if allowed { " (allowed)" } else { "" };
    let _ = writeln!(out, "{at}: {rule}: {}{place}{tail}", h.excerpt);
}

pub fn check(r: &CheckReport) -> String {
    let mut out = String::new();
    for h in &r.hits {
        hit_line(&mut out, h, false);
    }
    for h in &r.allowed {
        hit_line(&mut out, h, true);
    }
    for s in &r.skipped_files {
        let _ = writeln!(out, "skipped {}: {}", s.file, s.reason);
    }
    let what = match &r.state {
        Some(commit) => format!("the state at {}", commit.short()),
        None => "no state (none in this repository: only the paths named)".to_owned(),
    };
    let _ = write!(
        out,
        "scanned {} file(s) ({what}), skipped {}: ",
        r.scanned_files, r.skipped
    );
    let _ = match (r.hits.len(), r.allowed.len()) {
        (0, 0) => writeln!(out, "no credential found"),
        (0, a) => writeln!(out, "{a} allowed hit(s), nothing else found"),
        (n, 0) => writeln!(out, "{n} credential-looking string(s)"),
        (n, a) => writeln!(out, "{n} credential-looking string(s), {a} allowed"),
    };
    out
}
