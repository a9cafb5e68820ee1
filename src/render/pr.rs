//! The agent work behind a pull request (`git loopx pr`), as terminal text or
//! as a Markdown comment to post on the pull request.
//!
//! The Markdown starts with [`MARKER`], a hidden line a CI job can look for
//! to update its own comment instead of adding one. Every piece of text that
//! comes from the state or from a commit message goes through
//! [`markdown::text`]; the whole comment goes through [`markdown::fit`], so
//! it stays under the forge's limit and says what it left out.

use std::fmt::Write as _;

use crate::model::Todo;
use crate::ops::pr::{short, ClaimEvent, Link, PrReport, PrTodo, PrWriteback, Via};
use crate::render::markdown;

/// The first line of every `pr --markdown` comment.
pub const MARKER: &str = "<!-- git-loopx pr -->";

/// Renders the view; `md` selects Markdown (cut to a comment's size).
pub fn pr(r: &PrReport, md: bool) -> String {
    if md {
        let body = format!(
            "{MARKER}\n## Agent work behind this pull request\n\n{}",
            Md.body(r)
        );
        markdown::fit(&body, markdown::COMMENT_LIMIT, &r.command())
    } else {
        format!("Agent work behind {}", Text.body(r))
    }
}

/// What differs between the two forms; the layout is shared.
trait Form {
    /// Agent- or commit-written text.
    fn text(&self, s: &str) -> String;
    /// An id (a todo, a run, a commit): literal in Markdown.
    fn id(&self, s: &str) -> String;
    fn title(&self, out: &mut String, title: &str);
    /// A list item at `depth` (0 = top level).
    fn item(&self, depth: usize) -> String;

    fn body(&self, r: &PrReport) -> String {
        let mut out = String::new();
        self.head(&mut out, r);
        self.title(&mut out, "Commits");
        if r.commits.is_empty() {
            let _ = writeln!(out, "{}none: the range is empty", self.item(0));
        }
        for c in &r.commits {
            let _ = write!(
                out,
                "{}{} {} — ",
                self.item(0),
                self.id(short(&c.commit)),
                self.text(&c.subject)
            );
            if c.todos.is_empty() {
                out.push_str("no todo");
            } else {
                let links: Vec<String> = c.todos.iter().map(|l| self.link(l)).collect();
                out.push_str(&links.join(", "));
            }
            for u in &c.unknown_todos {
                let _ = write!(
                    out,
                    "; names {}, which the state does not know",
                    self.text(u)
                );
            }
            out.push('\n');
        }
        for t in &r.todos {
            self.todo(&mut out, t);
        }
        let orphans: Vec<_> = r.orphans().collect();
        if !orphans.is_empty() {
            self.title(&mut out, "Commits without a todo");
            for c in orphans {
                let _ = writeln!(
                    out,
                    "{}{} {}",
                    self.item(0),
                    self.id(short(&c.commit)),
                    self.text(&c.subject)
                );
            }
        }
        out
    }

    fn head(&self, out: &mut String, r: &PrReport) {
        let orphans = r.orphans().count();
        let _ = writeln!(
            out,
            "{}..{}: {} commit(s), {} todo(s), {} commit(s) without a todo",
            self.id(short(&r.base.commit)),
            self.id(short(&r.head.commit)),
            r.commits.len(),
            r.todos.len(),
            orphans
        );
        let mut line = match &r.default_branch {
            Some(branch) => format!(
                "base: the merge base of {} with the default branch {}",
                self.id(&r.head.rev),
                self.id(branch)
            ),
            None => format!(
                "base: {}, head: {}",
                self.id(&r.base.rev),
                self.id(&r.head.rev)
            ),
        };
        match &r.state {
            Some(tip) => {
                let _ = write!(line, "; state read at {}", self.id(short(&tip.0)));
            }
            None => line.push_str("; this repository has no loopx state"),
        }
        let _ = writeln!(out, "{line}");
    }

    fn link(&self, l: &Link) -> String {
        let via = match l.via {
            Via::Trailer => "trailer",
            Via::Writeback => "writeback artifact",
        };
        format!("{} ({via})", self.id(&l.todo))
    }

    fn todo(&self, out: &mut String, t: &PrTodo) {
        let todo = &t.todo;
        self.title(
            out,
            &format!("{} {}", self.id(&todo.id), self.text(&todo.text)),
        );
        let i0 = self.item(0);
        let _ = write!(
            out,
            "{i0}status {}, {} {}",
            crate::ops::snake(&todo.status),
            crate::ops::snake(&todo.class),
            crate::ops::snake(&todo.priority),
        );
        self.holder(out, todo);
        out.push('\n');
        let commits: Vec<String> = t.commits.iter().map(|c| self.id(short(c))).collect();
        let _ = writeln!(out, "{i0}commits: {}", commits.join(", "));
        if !t.claims.is_empty() {
            let _ = writeln!(out, "{i0}claims:");
        }
        for c in &t.claims {
            self.claim_event(out, c);
        }
        if t.writebacks.is_empty() {
            let _ = writeln!(out, "{i0}writebacks: none");
        } else {
            let _ = writeln!(out, "{i0}writebacks:");
        }
        for w in &t.writebacks {
            self.writeback(out, w);
        }
        if let Some(e) = &todo.evidence {
            let _ = writeln!(out, "{i0}done evidence: {}", self.text(e));
        }
        for h in &t.handoffs {
            let _ = writeln!(
                out,
                "{i0}handoff at {}: {} → {}: {}",
                h.at,
                self.text(h.from.as_deref().unwrap_or("?")),
                self.text(&h.to),
                self.text(&h.note)
            );
        }
        for g in &t.gates {
            self.gate(out, g);
        }
        let _ = write!(out, "{i0}quota: {} slot(s) spent", t.spent_slots);
        if t.voided_spends > 0 {
            let _ = write!(out, " ({} spend(s) voided)", t.voided_spends);
        }
        out.push('\n');
    }

    /// Who holds the todo's lease, or held it last.
    fn holder(&self, out: &mut String, todo: &Todo) {
        match &todo.claim {
            Some(c) => {
                let _ = write!(
                    out,
                    "; held by {} (epoch {}) since {} until {}",
                    self.text(&c.agent),
                    c.epoch,
                    c.acquired_at,
                    c.expires_at
                );
            }
            None if todo.last_epoch > 0 => {
                let _ = write!(out, "; not held (last epoch {})", todo.last_epoch);
            }
            None => out.push_str("; never claimed"),
        }
    }

    /// One claim, renewal, handoff or release, with its commit.
    fn claim_event(&self, out: &mut String, c: &ClaimEvent) {
        let i1 = self.item(1);
        let by = self.text(c.agent.as_deref().unwrap_or("?"));
        let what = match (c.op.as_str(), &c.to) {
            ("todo handoff", Some(to)) => format!("handoff {by} → {}", self.text(to)),
            ("todo release", _) => format!("released by {by}"),
            (op, _) => format!("{} by {by}", op.trim_start_matches("todo ")),
        };
        let _ = write!(out, "{i1}{} {what}", c.time);
        if let Some(e) = c.epoch {
            let _ = write!(out, " (epoch {e})");
        }
        let _ = writeln!(out, " in {}", self.id(short(&c.commit)));
    }

    /// One writeback of the todo: its outcome, validation, artifacts and
    /// the slots it spent.
    fn writeback(&self, out: &mut String, w: &PrWriteback) {
        let i1 = self.item(1);
        let run = &w.run;
        let _ = write!(
            out,
            "{i1}{} {} by {} at {}: {}",
            self.id(&run.id),
            run.outcome
                .map(|o| crate::ops::snake(&o))
                .unwrap_or_default(),
            self.text(run.agent.as_deref().unwrap_or("?")),
            run.at,
            self.text(run.summary.as_deref().unwrap_or(""))
        );
        if let Some(v) = &run.validation {
            let _ = write!(
                out,
                "; validation {} → exit {}",
                self.text(&v.command),
                v.exit_code
            );
        }
        if !run.artifacts.is_empty() {
            let artifacts: Vec<String> = run.artifacts.iter().map(|a| self.id(a)).collect();
            let _ = write!(out, "; artifacts {}", artifacts.join(", "));
        }
        if !run.artifact_urls.is_empty() {
            let urls: Vec<String> = run.artifact_urls.iter().map(|u| self.text(u)).collect();
            let _ = write!(out, "; evidence {}", urls.join(", "));
        }
        if w.spent_slots > 0 {
            let _ = write!(out, "; spent {} slot(s)", w.spent_slots);
        }
        out.push('\n');
    }

    /// A gate that holds the todo: its answer, or its status while open.
    fn gate(&self, out: &mut String, g: &Todo) {
        let i0 = self.item(0);
        let _ = write!(out, "{i0}gate {} {}: ", self.id(&g.id), self.text(&g.text));
        match (&g.decision, &g.resolved_by) {
            (Some(d), by) => {
                let _ = write!(
                    out,
                    "{} by {}",
                    crate::ops::snake(d),
                    self.text(by.as_deref().unwrap_or("(not recorded)"))
                );
                if let Some(at) = g.resolved_at {
                    let _ = write!(out, " at {at}");
                }
            }
            (None, _) => {
                let _ = write!(out, "{}", crate::ops::snake(&g.status));
            }
        }
        out.push('\n');
    }
}

struct Text;

impl Form for Text {
    fn text(&self, s: &str) -> String {
        crate::render::oneline(s).into_owned()
    }
    fn id(&self, s: &str) -> String {
        s.to_owned()
    }
    fn title(&self, out: &mut String, title: &str) {
        let _ = writeln!(out, "\n{title}");
    }
    fn item(&self, depth: usize) -> String {
        "  ".repeat(depth + 1)
    }
}

struct Md;

impl Form for Md {
    fn text(&self, s: &str) -> String {
        markdown::text(s)
    }
    fn id(&self, s: &str) -> String {
        markdown::code(s)
    }
    fn title(&self, out: &mut String, title: &str) {
        let _ = writeln!(out, "\n### {title}\n");
    }
    fn item(&self, depth: usize) -> String {
        format!("{}- ", "  ".repeat(depth))
    }
}
