//! `git loopx diff` as terminal text or as Markdown for a pull-request
//! comment: one line per fact, then (`--patch`) the YAML hunks.
//!
//! In Markdown every piece of state text (todo text, summaries, notes,
//! evidence, questions, agent and file names) goes through
//! [`markdown::text`]; ids are code spans; patches sit in fenced blocks
//! whose fence is longer than any backtick run inside them, and the whole
//! comment is cut to [`markdown::COMMENT_LIMIT`].

use std::fmt::Write as _;

use crate::model::diff::semantic::{Fact, What};
use crate::ops::diff::DiffReport;
use crate::render::markdown;

mod sentence;
use sentence::{sentence, Style};

/// Facts grouped by goal (state-wide ones first), time order kept inside.
fn groups(facts: &[Fact]) -> Vec<(Option<&str>, Vec<&What>)> {
    let mut out: Vec<(Option<&str>, Vec<&What>)> = Vec::new();
    let mut keys: Vec<Option<&str>> = facts.iter().map(|f| f.goal.as_deref()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let of: Vec<&What> = facts
            .iter()
            .filter(|f| f.goal.as_deref() == key)
            .map(|f| &f.what)
            .collect();
        out.push((key, of));
    }
    out
}

/// The range as a title.
fn title(r: &DiffReport, s: &Style) -> String {
    let to = s.code(r.to.short());
    let range = match &r.from {
        Some(from) => format!("{}..{to}", s.code(from.short())),
        None => format!("{to} (a root commit, against nothing)"),
    };
    let goal = r
        .goal
        .as_deref()
        .map(|g| format!(", goal {}", s.code(g)))
        .unwrap_or_default();
    let n = r.facts.len();
    format!(
        "State diff {range}{goal}: {n} {}",
        if n == 1 { "fact" } else { "facts" }
    )
}

fn body(r: &DiffReport, s: &Style, out: &mut String) {
    let item = if s.md { "- " } else { "  " };
    if r.facts.is_empty() {
        let _ = writeln!(out, "{item}no change");
    }
    let groups = groups(&r.facts);
    let headed = groups.len() > 1;
    for (goal, facts) in groups {
        if headed {
            let head = match goal {
                Some(g) => format!("goal {}", s.code(g)),
                None => "the whole state".to_owned(),
            };
            if s.md {
                let _ = writeln!(out, "\n**{head}**\n");
            } else {
                let _ = writeln!(out, "{head}:");
            }
        }
        for f in facts {
            let _ = writeln!(out, "{item}{}", sentence(f, s));
        }
    }
    for a in &r.ignored_answers {
        let _ = writeln!(
            out,
            "{item}{} {}: {}",
            s.code(&a.gate),
            s.text(&a.question),
            s.text(&a.sentence())
        );
    }
}

/// Terminal text.
pub fn text(r: &DiffReport) -> String {
    let s = Style { md: false };
    let mut out = title(r, &s);
    out.push('\n');
    body(r, &s, &mut out);
    for p in r.patches.iter().flatten() {
        out.push('\n');
        out.push_str(&p.patch);
    }
    out
}

/// A fence of backticks longer than any run of them in `inner`.
fn fence(inner: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for ch in inner.chars() {
        run = if ch == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat((longest + 1).max(3))
}

/// Markdown for a pull-request comment, cut to the comment limit; `whole`
/// is the command that prints all of it.
pub fn markdown(r: &DiffReport, whole: &str) -> String {
    let s = Style { md: true };
    let mut out = format!("### {}\n\n", title(r, &s));
    body(r, &s, &mut out);
    if let Some(patches) = &r.patches {
        let n = patches.len();
        let _ = writeln!(
            out,
            "\n#### YAML patches ({n} {})",
            if n == 1 { "file" } else { "files" }
        );
        for p in patches {
            let f = fence(&p.patch);
            let _ = write!(out, "\n{}\n\n{f}diff\n{}", s.text(&p.path), p.patch);
            if !p.patch.ends_with('\n') {
                out.push('\n');
            }
            let _ = writeln!(out, "{f}");
        }
    }
    markdown::fit(&out, markdown::COMMENT_LIMIT, whole)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_fence_outruns_every_backtick_run() {
        assert_eq!(super::fence("plain"), "```");
        assert_eq!(super::fence("a ```` b"), "`````");
    }
}
