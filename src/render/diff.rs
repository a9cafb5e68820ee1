//! `git loopx diff` as terminal text or as Markdown for a pull-request
//! comment: one line per fact, then (`--patch`) the YAML hunks.
//!
//! In Markdown every piece of state text (todo text, summaries, notes,
//! evidence, questions, agent and file names) goes through
//! [`markdown::text`]; ids are code spans; patches sit in fenced blocks
//! whose fence is longer than any backtick run inside them, and the whole
//! comment is cut to [`markdown::COMMENT_LIMIT`].

use std::fmt::Write as _;

use serde_json::Value;

use crate::model::diff::semantic::{Fact, What};
use crate::ops::diff::DiffReport;
use crate::render::markdown;

/// How one output form writes state text and ids.
struct Style {
    md: bool,
}

impl Style {
    /// State text (written by agents or people).
    fn text(&self, raw: &str) -> String {
        if self.md {
            markdown::text(raw)
        } else {
            raw.to_owned()
        }
    }

    /// An id or a name git-loopx checks the grammar of; a code span in
    /// Markdown (escaped as text should it hold anything unexpected).
    fn code(&self, raw: &str) -> String {
        let plain = raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:".contains(c));
        match (self.md, plain) {
            (false, _) => raw.to_owned(),
            (true, true) => format!("`{raw}`"),
            (true, false) => markdown::text(raw),
        }
    }

    fn opt(&self, raw: Option<&str>, none: &str) -> String {
        raw.map_or_else(|| none.to_owned(), |s| self.text(s))
    }

    fn value(&self, v: &Value) -> String {
        match v {
            Value::Null => "(none)".to_owned(),
            Value::String(s) => self.text(s),
            Value::Array(items) if items.iter().all(Value::is_string) => {
                if items.is_empty() {
                    "(none)".to_owned()
                } else {
                    let words: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
                    self.text(&words.join(", "))
                }
            }
            other => self.text(&other.to_string()),
        }
    }
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// One fact as a sentence.
fn sentence(f: &What, s: &Style) -> String {
    let c = |id: &str| s.code(id);
    let c_opt = |id: &Option<String>| id.as_deref().map_or_else(|| "?".to_owned(), |i| s.code(i));
    let who = |a: &Option<String>| s.opt(a.as_deref(), "?");
    match f {
        What::GoalAdded { objective } => format!("goal added: {}", s.text(objective)),
        What::GoalRemoved { objective } => format!("goal removed: {}", s.text(objective)),
        What::NextAction { old, new } => format!(
            "goal next action: {} → {}",
            s.opt(old.as_deref(), "(none)"),
            s.opt(new.as_deref(), "(none)")
        ),
        What::GoalField { field, old, new } => {
            format!("goal {field}: {} → {}", s.value(old), s.value(new))
        }
        What::TodoAdded {
            todo,
            text,
            class,
            priority,
            by,
        } => {
            let by = by
                .as_deref()
                .map(|b| format!(", by {}", s.text(b)))
                .unwrap_or_default();
            format!(
                "todo {} added ({class}, {priority}{by}): {}",
                c(todo),
                s.text(text)
            )
        }
        What::GateOpened {
            gate,
            question,
            unblocks,
            blocks_agent,
        } => {
            let mut line = format!("gate {} opened: {}", c(gate), s.text(question));
            if let Some(t) = unblocks {
                let _ = write!(line, " (holds {})", c(t));
            }
            if let Some(a) = blocks_agent {
                let _ = write!(line, " (blocks agent {})", s.text(a));
            }
            line
        }
        What::TodoRemoved { todo, text } => format!("todo {} removed: {}", c(todo), s.text(text)),
        What::Claim {
            todo,
            agent,
            epoch,
            from,
        } => {
            let from = from
                .as_deref()
                .map(|a| format!(", taking over from {}", s.text(a)))
                .unwrap_or_default();
            format!(
                "todo {} claimed by {} (epoch {epoch}){from}",
                c(todo),
                s.text(agent)
            )
        }
        What::Renew {
            todo,
            agent,
            epoch,
            until,
        } => format!(
            "todo {} lease renewed by {} (epoch {epoch}) until {until}",
            c(todo),
            s.text(agent)
        ),
        What::Release { todo, agent, epoch } => format!(
            "todo {} released by {} (epoch {epoch})",
            c(todo),
            s.text(agent)
        ),
        What::Handoff {
            todo,
            from,
            to,
            epoch,
            note,
        } => {
            let epoch = epoch.map(|e| format!(" (epoch {e})")).unwrap_or_default();
            format!(
                "handoff {} {} → {}{epoch}: {}",
                c(todo),
                who(from),
                s.text(to),
                s.text(note)
            )
        }
        What::Note { todo, agent, text } => {
            let by = agent
                .as_deref()
                .map(|a| format!(" by {}", s.text(a)))
                .unwrap_or_default();
            format!("note on {}{by}: {}", c(todo), s.text(text))
        }
        What::Field {
            todo,
            field,
            old,
            new,
        } => format!(
            "todo {} {field}: {} → {}",
            c(todo),
            s.value(old),
            s.value(new)
        ),
        What::Done { todo, evidence } => format!(
            "todo {} done: {}",
            c(todo),
            s.opt(evidence.as_deref(), "(no evidence)")
        ),
        What::GateResolved {
            gate, decision, by, ..
        } => format!(
            "gate {} resolved: {} by {}",
            c(gate),
            decision.as_deref().unwrap_or("resolved"),
            s.opt(by.as_deref(), "(not recorded)")
        ),
        What::Writeback {
            run,
            todo,
            agent,
            outcome,
            summary,
            validation,
            artifacts,
            ..
        } => {
            let mut line = format!(
                "writeback {} on {} by {}: {}: {}",
                c(run),
                c_opt(todo),
                who(agent),
                outcome.as_deref().unwrap_or("?"),
                s.opt(summary.as_deref(), "(no summary)")
            );
            if let Some(v) = validation {
                let _ = write!(
                    line,
                    " (validated: {} → exit {})",
                    s.text(&v.command),
                    v.exit_code
                );
            }
            if !artifacts.is_empty() {
                let names: Vec<String> = artifacts.iter().map(|a| s.code(short(a))).collect();
                let word = if names.len() == 1 {
                    "artifact"
                } else {
                    "artifacts"
                };
                let _ = write!(line, " ({word} {})", names.join(", "));
            }
            line
        }
        What::Spend {
            run,
            agent,
            slots,
            writeback,
            turn,
        } => {
            let plural = if *slots == 1 { "slot" } else { "slots" };
            let mut line = format!("spend {} by {}: {slots} {plural}", c(run), who(agent));
            match (writeback, turn) {
                (Some(w), _) => {
                    let _ = write!(line, " (writeback {})", c(w));
                }
                (None, Some(t)) => {
                    let _ = write!(line, " (turn {})", s.text(t));
                }
                _ => {}
            }
            line
        }
        What::Void {
            run,
            agent,
            spend,
            reason,
        } => {
            let by = agent
                .as_deref()
                .map(|a| format!(" by {}", s.text(a)))
                .unwrap_or_default();
            format!(
                "void {} of spend {}{by}: {}",
                c(run),
                c_opt(spend),
                s.opt(reason.as_deref(), "(no reason)")
            )
        }
        What::Turn {
            run,
            agent,
            turn,
            action,
            todo,
        } => {
            let on = todo
                .as_deref()
                .map(|t| format!(" on {}", c(t)))
                .unwrap_or_default();
            format!(
                "turn {} by {}: {}{on} (receipt {})",
                s.opt(turn.as_deref(), "?"),
                who(agent),
                s.opt(action.as_deref(), "?"),
                c(run)
            )
        }
        What::RunChanged { run, fields } => format!(
            "run {} edited (runs are append-only): {}",
            c(run),
            s.text(&fields.join(", "))
        ),
        What::RunRemoved { run, run_kind } => {
            format!("run {} ({run_kind}) removed (runs are append-only)", c(run))
        }
        What::AgentAdded { agent, runtime } => {
            let rt = runtime
                .as_deref()
                .map(|r| format!(" (runtime {})", s.text(r)))
                .unwrap_or_default();
            format!("agent {} registered{rt}", s.text(agent))
        }
        What::AgentRemoved { agent } => format!("agent {} removed", s.text(agent)),
        What::AgentField {
            agent,
            field,
            old,
            new,
        } => format!(
            "agent {} {field}: {} → {}",
            s.text(agent),
            s.value(old),
            s.value(new)
        ),
        What::MetaField { field, old, new } => {
            format!("loopx.yaml {field}: {} → {}", s.value(old), s.value(new))
        }
    }
}

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
