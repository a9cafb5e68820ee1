//! One fact as a sentence, in terminal text or in Markdown (state text
//! through [`markdown::text`], ids as code spans).

use std::fmt::Write as _;

use serde_json::Value;

use crate::model::diff::semantic::What;
use crate::render::markdown;

/// How one output form writes state text and ids.
pub struct Style {
    pub md: bool,
}

impl Style {
    /// State text (written by agents or people).
    pub fn text(&self, raw: &str) -> String {
        if self.md {
            markdown::text(raw)
        } else {
            crate::render::oneline(raw).into_owned()
        }
    }

    /// An id or a name git-loopx checks the grammar of; a code span in
    /// Markdown (escaped as text should it hold anything unexpected).
    pub fn code(&self, raw: &str) -> String {
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
pub fn sentence(f: &What, s: &Style) -> String {
    match f {
        What::GoalAdded { .. }
        | What::GoalRemoved { .. }
        | What::NextAction { .. }
        | What::GoalField { .. }
        | What::AgentAdded { .. }
        | What::AgentRemoved { .. }
        | What::AgentField { .. }
        | What::MetaField { .. } => goal_or_state(f, s),
        What::TodoAdded { .. }
        | What::GateOpened { .. }
        | What::TodoRemoved { .. }
        | What::Note { .. }
        | What::Field { .. }
        | What::Done { .. }
        | What::GateResolved { .. } => todo(f, s),
        What::Claim { .. } | What::Renew { .. } | What::Release { .. } | What::Handoff { .. } => {
            lease(f, s)
        }
        What::Writeback { .. } | What::Spend { .. } | What::Void { .. } | What::Turn { .. } => {
            run(f, s)
        }
        What::RunChanged { .. } | What::RunRemoved { .. } | What::RunsArchived { .. } => {
            runs_touched(f, s)
        }
    }
}

/// A goal's, an agent's or `loopx.yaml`'s own change.
fn goal_or_state(f: &What, s: &Style) -> String {
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
        _ => unreachable!("not a goal, agent or loopx.yaml fact"),
    }
}

/// A todo or gate added, edited, removed, noted, done or resolved.
fn todo(f: &What, s: &Style) -> String {
    let c = |id: &str| s.code(id);
    match f {
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
        _ => unreachable!("not a todo fact"),
    }
}

/// A todo's lease taken, renewed, released or handed off.
fn lease(f: &What, s: &Style) -> String {
    let c = |id: &str| s.code(id);
    let who = |a: &Option<String>| s.opt(a.as_deref(), "?");
    match f {
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
            packet,
        } => {
            let epoch = epoch.map(|e| format!(" (epoch {e})")).unwrap_or_default();
            let packet = packet
                .as_deref()
                .map(|p| format!(" [packet: {}]", s.text(p)))
                .unwrap_or_default();
            format!(
                "handoff {} {} → {}{epoch}: {}{packet}",
                c(todo),
                who(from),
                s.text(to),
                s.text(note)
            )
        }
        _ => unreachable!("not a lease fact"),
    }
}

/// A run record added.
fn run(f: &What, s: &Style) -> String {
    let c = |id: &str| s.code(id);
    let c_opt = |id: &Option<String>| id.as_deref().map_or_else(|| "?".to_owned(), |i| s.code(i));
    let who = |a: &Option<String>| s.opt(a.as_deref(), "?");
    match f {
        What::Writeback {
            run,
            todo,
            agent,
            outcome,
            summary,
            validation,
            artifacts,
            artifact_urls,
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
            if !artifact_urls.is_empty() {
                let urls: Vec<String> = artifact_urls.iter().map(|u| s.text(u)).collect();
                let _ = write!(line, " (evidence {})", urls.join(", "));
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
        _ => unreachable!("not a run fact"),
    }
}

/// A run record edited or removed (runs are append-only), or runs archived.
fn runs_touched(f: &What, s: &Style) -> String {
    let c = |id: &str| s.code(id);
    match f {
        What::RunChanged { run, fields } => format!(
            "run {} edited (runs are append-only): {}",
            c(run),
            s.text(&fields.join(", "))
        ),
        What::RunRemoved { run, run_kind } => {
            format!("run {} ({run_kind}) removed (runs are append-only)", c(run))
        }
        What::RunsArchived {
            through,
            runs,
            commit,
        } => format!(
            "{runs} run(s) through {} archived (kept in {})",
            s.text(through),
            c(&commit[..commit.len().min(12)])
        ),
        _ => unreachable!("not a touched run fact"),
    }
}
