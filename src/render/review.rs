//! The owner's review packet, as terminal text or Markdown (for a PR comment).

use std::fmt::Write as _;

use crate::model::diff::Change;
use crate::ops::review::ReviewReport;
use crate::render::markdown;

/// Renders the packet; `md` selects Markdown, where every piece of state
/// text goes through [`markdown::text`] (terminal text is unchanged).
pub fn review(r: &ReviewReport, md: bool) -> String {
    let mut out = String::new();
    let h = |out: &mut String, title: &str| {
        if md {
            let _ = writeln!(out, "\n### {title}\n");
        } else {
            let _ = writeln!(out, "\n{title}:");
        }
    };
    let item = if md { "- " } else { "  " };
    let code = |s: &str| id_text(s, md);
    // State text (agent- or person-written).
    let t = |s: &str| state_text(s, md);
    let since = r
        .since
        .as_ref()
        .map_or("the beginning".to_owned(), |s| code(s.short()));
    if md {
        let _ = writeln!(
            out,
            "## Review of goal {}: {}",
            code(&r.goal),
            t(&r.objective)
        );
    } else {
        let _ = writeln!(out, "Review of goal {}: {}", r.goal, t(&r.objective));
    }
    let _ = writeln!(
        out,
        "{} state commit(s) since {since}, up to {}",
        r.commits,
        code(r.tip.short())
    );

    h(&mut out, "Decisions waiting for you");
    if r.decisions.is_empty() && r.user_actions.is_empty() {
        let _ = writeln!(out, "{item}none");
    }
    for g in &r.decisions {
        let _ = writeln!(
            out,
            "{item}{} {} — {}",
            code(&g.id),
            t(&g.text),
            code(&format!(
                "git loopx{} gate resolve {} --approve|--reject",
                if r.default {
                    String::new()
                } else {
                    format!(" --goal {}", r.goal)
                },
                g.id
            ))
        );
        for a in r.ignored_answers.iter().filter(|a| a.gate == g.id) {
            let _ = writeln!(out, "  {}", t(&a.sentence()));
        }
    }
    for a in &r.user_actions {
        let _ = writeln!(out, "{item}{} {} (reminder)", code(&a.id), t(&a.text));
    }

    if !r.blocked.is_empty() {
        h(&mut out, "Blocked");
        for b in &r.blocked {
            let what = if b.class == crate::model::TodoClass::Blocker {
                "blocker "
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "{item}{what}{} {}: {}",
                code(&b.id),
                t(&b.text),
                t(b.why.as_deref().unwrap_or("no reason given"))
            );
        }
    }

    if r.is_empty() {
        let _ = writeln!(out, "\nNothing new since the last review.");
        return out;
    }

    if !r.answered.is_empty() {
        h(&mut out, "Answered");
    }
    for a in &r.answered {
        let _ = writeln!(out, "{item}{}", answered(a, md));
    }

    h(&mut out, "Delivered");
    if r.delivered.is_empty() && r.completed.is_empty() {
        let _ = writeln!(out, "{item}nothing");
    }
    for w in &r.delivered {
        let outcome = w.outcome.map(|o| crate::ops::snake(&o)).unwrap_or_default();
        let _ = write!(
            out,
            "{item}{} {} on {} by {}: {}",
            code(&w.id),
            outcome,
            code(w.todo.as_deref().unwrap_or("the goal")),
            t(w.agent.as_deref().unwrap_or("?")),
            t(w.summary.as_deref().unwrap_or(""))
        );
        if let Some(v) = &w.validation {
            let _ = write!(out, " (validated: {} → {})", t(&v.command), v.exit_code);
        }
        for a in &w.artifacts {
            let _ = write!(out, " {}", code(&a.chars().take(12).collect::<String>()));
        }
        for u in &w.artifact_urls {
            let _ = write!(out, " {}", t(u));
        }
        out.push('\n');
    }
    for d in &r.completed {
        let _ = writeln!(out, "{item}{}", completed(d, md));
    }

    if !r.handoffs.is_empty() {
        h(&mut out, "Handoffs");
    }
    for x in &r.handoffs {
        let _ = writeln!(
            out,
            "{item}{} {}: {} → {} at {}: {}",
            code(&x.todo),
            t(&x.text),
            t(x.handoff.from.as_deref().unwrap_or("?")),
            t(&x.handoff.to),
            x.handoff.at,
            t(&x.handoff.note)
        );
        if let Some(p) = &x.packet {
            let indent = if md { "  " } else { "    " };
            out.push_str(&p.sections(indent, &t));
        }
    }

    h(&mut out, "Changed");
    if r.changes.is_empty() {
        let _ = writeln!(out, "{item}nothing else");
    }
    for c in &r.changes {
        let line = match c {
            Change::TodoAdded { id, text, class } => {
                format!("added {} {} ({})", code(id), t(text), t(class))
            }
            Change::TodoRemoved { id, text } => format!("removed {} {}", code(id), t(text)),
            Change::TodoChanged {
                id,
                text,
                fields,
                summary,
            } => {
                let what = if summary.is_empty() {
                    fields.join(", ")
                } else {
                    summary.join("; ")
                };
                format!("{} {}: {}", code(id), t(text), t(&what))
            }
            Change::RunAdded {
                id,
                kind,
                agent,
                summary,
            } => format!(
                "{kind} {} by {}{}",
                code(id),
                t(agent.as_deref().unwrap_or("?")),
                summary
                    .as_deref()
                    .map(|s| format!(": {}", t(s)))
                    .unwrap_or_default()
            ),
            Change::GoalChanged { id, fields } => {
                format!("goal {} {}", code(id), t(&fields.join(", ")))
            }
        };
        let _ = writeln!(out, "{item}{line}");
    }
    if r.acked {
        let _ = writeln!(
            out,
            "\nMarked reviewed: refs/loopx/reviewed → {}",
            code(r.tip.short())
        );
    }
    out
}

/// State text as `md` wants it: inert Markdown, or one terminal line.
pub(super) fn state_text(s: &str, md: bool) -> String {
    if md {
        markdown::text(s)
    } else {
        crate::render::oneline(s).into_owned()
    }
}

/// What git-loopx names (an id, a commit) as `md` wants it.
pub(super) fn id_text(s: &str, md: bool) -> String {
    if md {
        markdown::code(s)
    } else {
        s.to_owned()
    }
}

/// An answered gate's line (without its bullet): `review` and `report`.
pub(super) fn answered(a: &crate::ops::review::Answered, md: bool) -> String {
    let g = &a.gate;
    let decision = g
        .decision
        .map_or_else(|| "resolved".to_owned(), |d| crate::ops::snake(&d));
    let mut line = format!(
        "{} {}: {decision} by {}",
        id_text(&g.id, md),
        state_text(&g.text, md),
        state_text(g.resolved_by.as_deref().unwrap_or("(not recorded)"), md)
    );
    if let Some(at) = g.resolved_at {
        let _ = write!(line, " at {at}");
    }
    match &a.ignored {
        Some(i) => {
            let _ = write!(
                line,
                " — not made by you (commit {}, {}): ignored, still open",
                id_text(i.commit.short(), md),
                i.reason
            );
        }
        None if !a.counts => line.push_str(" — not signed by a gate signer: ignored, still open"),
        None => {}
    }
    line
}

/// A completed todo's line (without its bullet): `review` and `report`.
pub(super) fn completed(d: &crate::model::Todo, md: bool) -> String {
    format!(
        "done {} {}: {}",
        id_text(&d.id, md),
        state_text(&d.text, md),
        state_text(d.evidence.as_deref().unwrap_or("no evidence"), md)
    )
}
