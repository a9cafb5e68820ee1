//! The owner's review packet, as terminal text or Markdown (for a PR comment).

use std::fmt::Write as _;

use crate::model::diff::Change;
use crate::ops::review::ReviewReport;
use crate::render::markdown;

/// Renders the packet; `md` selects Markdown, where every piece of state
/// text goes through [`markdown::text`] (terminal text is unchanged).
pub fn review(r: &ReviewReport, md: bool) -> String {
    let mut out = String::new();
    let form = Form { md };
    let item = form.item();
    let code = |s: &str| form.code(s);
    let t = |s: &str| form.text(s);
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

    decisions(&mut out, r, form);
    blocked(&mut out, r, form);
    if r.is_empty() {
        let _ = writeln!(out, "\nNothing new since the last review.");
        return out;
    }

    if !r.answered.is_empty() {
        form.heading(&mut out, "Answered");
    }
    for a in &r.answered {
        let _ = writeln!(out, "{item}{}", answered(a, md));
    }

    delivered(&mut out, r, form);
    handoffs(&mut out, r, form);
    changed(&mut out, r, form);
    if r.acked {
        let _ = writeln!(
            out,
            "\nMarked reviewed: refs/loopx/reviewed → {}",
            code(r.tip.short())
        );
    }
    out
}

/// The form a packet is written in: Markdown or terminal text.
#[derive(Clone, Copy)]
struct Form {
    md: bool,
}

impl Form {
    fn heading(self, out: &mut String, title: &str) {
        if self.md {
            let _ = writeln!(out, "\n### {title}\n");
        } else {
            let _ = writeln!(out, "\n{title}:");
        }
    }

    /// How a list item starts.
    fn item(self) -> &'static str {
        if self.md {
            "- "
        } else {
            "  "
        }
    }

    fn code(self, s: &str) -> String {
        id_text(s, self.md)
    }

    /// State text (agent- or person-written).
    fn text(self, s: &str) -> String {
        state_text(s, self.md)
    }
}

/// The gates that wait for the person, each with the command that answers
/// it and the answers it ignored, and their reminders.
fn decisions(out: &mut String, r: &ReviewReport, form: Form) {
    let item = form.item();
    form.heading(out, "Decisions waiting for you");
    if r.decisions.is_empty() && r.user_actions.is_empty() {
        let _ = writeln!(out, "{item}none");
    }
    for g in &r.decisions {
        let _ = writeln!(
            out,
            "{item}{} {} — {}",
            form.code(&g.id),
            form.text(&g.text),
            form.code(&format!(
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
            let _ = writeln!(out, "  {}", form.text(&a.sentence()));
        }
    }
    for a in &r.user_actions {
        let _ = writeln!(
            out,
            "{item}{} {} (reminder)",
            form.code(&a.id),
            form.text(&a.text)
        );
    }
}

/// The blocked todos and blockers, each with why.
fn blocked(out: &mut String, r: &ReviewReport, form: Form) {
    let item = form.item();
    if !r.blocked.is_empty() {
        form.heading(out, "Blocked");
        for b in &r.blocked {
            let what = if b.class == crate::model::TodoClass::Blocker {
                "blocker "
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "{item}{what}{} {}: {}",
                form.code(&b.id),
                form.text(&b.text),
                form.text(b.why.as_deref().unwrap_or("no reason given"))
            );
        }
    }
}

/// The writebacks in the range and the todos done.
fn delivered(out: &mut String, r: &ReviewReport, form: Form) {
    let item = form.item();
    form.heading(out, "Delivered");
    if r.delivered.is_empty() && r.completed.is_empty() {
        let _ = writeln!(out, "{item}nothing");
    }
    for w in &r.delivered {
        let outcome = w.outcome.map(|o| crate::ops::snake(&o)).unwrap_or_default();
        let _ = write!(
            out,
            "{item}{} {} on {} by {}: {}",
            form.code(&w.id),
            outcome,
            form.code(w.todo.as_deref().unwrap_or("the goal")),
            form.text(w.agent.as_deref().unwrap_or("?")),
            form.text(w.summary.as_deref().unwrap_or(""))
        );
        if let Some(v) = &w.validation {
            let _ = write!(
                out,
                " (validated: {} → {})",
                form.text(&v.command),
                v.exit_code
            );
        }
        for a in &w.artifacts {
            let _ = write!(
                out,
                " {}",
                form.code(&a.chars().take(12).collect::<String>())
            );
        }
        for u in &w.artifact_urls {
            let _ = write!(out, " {}", form.text(u));
        }
        out.push('\n');
    }
    for d in &r.completed {
        let _ = writeln!(out, "{item}{}", completed(d, form.md));
    }
}

/// Each handoff, with its packet.
fn handoffs(out: &mut String, r: &ReviewReport, form: Form) {
    let item = form.item();
    if !r.handoffs.is_empty() {
        form.heading(out, "Handoffs");
    }
    for x in &r.handoffs {
        let _ = writeln!(
            out,
            "{item}{} {}: {} → {} at {}: {}",
            form.code(&x.todo),
            form.text(&x.text),
            form.text(x.handoff.from.as_deref().unwrap_or("?")),
            form.text(&x.handoff.to),
            x.handoff.at,
            form.text(&x.handoff.note)
        );
        if let Some(p) = &x.packet {
            let indent = if form.md { "  " } else { "    " };
            out.push_str(&p.sections(indent, &|s: &str| form.text(s)));
        }
    }
}

/// Every other change, one line each.
fn changed(out: &mut String, r: &ReviewReport, form: Form) {
    let item = form.item();
    form.heading(out, "Changed");
    if r.changes.is_empty() {
        let _ = writeln!(out, "{item}nothing else");
    }
    for c in &r.changes {
        let _ = writeln!(out, "{item}{}", change(c, form));
    }
}

/// One change as a line.
fn change(c: &Change, form: Form) -> String {
    match c {
        Change::TodoAdded { id, text, class } => {
            format!(
                "added {} {} ({})",
                form.code(id),
                form.text(text),
                form.text(class)
            )
        }
        Change::TodoRemoved { id, text } => {
            format!("removed {} {}", form.code(id), form.text(text))
        }
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
            format!(
                "{} {}: {}",
                form.code(id),
                form.text(text),
                form.text(&what)
            )
        }
        Change::RunAdded {
            id,
            kind,
            agent,
            summary,
        } => format!(
            "{kind} {} by {}{}",
            form.code(id),
            form.text(agent.as_deref().unwrap_or("?")),
            summary
                .as_deref()
                .map(|s| format!(": {}", form.text(s)))
                .unwrap_or_default()
        ),
        Change::GoalChanged { id, fields } => {
            format!("goal {} {}", form.code(id), form.text(&fields.join(", ")))
        }
    }
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
