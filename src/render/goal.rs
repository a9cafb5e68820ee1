//! `goal …` as human text.

use std::fmt::Write as _;

use crate::model::GoalStatus;
use crate::ops::goal::GoalReport;

/// What a `goal` subcommand did, for the first line of its text.
#[derive(Clone, Copy, Debug)]
pub enum Action {
    Show,
    Set,
    Stop,
    Resume,
    Done,
    Add,
}

/// The first line says what happened; the goal's fields follow.
pub fn goal(r: &GoalReport, action: Action) -> String {
    let g = &r.goal;
    let commit = r
        .commit
        .as_ref()
        .map(|c| format!(" ({})", c.short()))
        .unwrap_or_default();
    let mut out = match action {
        Action::Show => String::new(),
        Action::Set => format!("updated goal {}{commit}\n", g.id),
        Action::Stop => format!(
            "stopped goal {}{commit}: no agent runs until `git loopx goal resume`\n",
            g.id
        ),
        Action::Resume => format!("resumed goal {}{commit}\n", g.id),
        Action::Done => format!(
            "marked goal {} done{commit}: should-run answers terminal_no_followup until `git loopx goal resume`\n",
            g.id
        ),
        Action::Add => format!(
            "added goal {}{commit}{}\n",
            g.id,
            if r.default { ", now the default" } else { "" }
        ),
    };
    if matches!(action, Action::Stop | Action::Resume | Action::Done) {
        return out;
    }
    let default = if r.default { " (default)" } else { "" };
    let _ = writeln!(
        out,
        "goal {}{default}: {}",
        g.id,
        crate::render::oneline(&g.objective)
    );
    let status = match g.status {
        GoalStatus::Active => "active",
        GoalStatus::Stopped => "stopped",
        GoalStatus::Done => "done",
    };
    let _ = writeln!(out, "  status:      {status}");
    if g.status == GoalStatus::Done {
        let by = g.done_by.as_deref().unwrap_or("someone");
        let at = g.done_at.map(|t| format!(" at {t}")).unwrap_or_default();
        let _ = writeln!(out, "  done by:     {by}{at}");
        if let Some(n) = &g.done_note {
            let _ = writeln!(out, "  done note:   {}", crate::render::oneline(n));
        }
    }
    if g.replan_when_blocked == Some(false) {
        let _ = writeln!(out, "  replan:      not when blocked (waits for a person)");
    }
    if !g.person_only.is_empty() {
        let _ = writeln!(out, "  person only: goal {}", g.person_only.join(", goal "));
    }
    if let Some(next) = &g.next_action {
        let _ = writeln!(out, "  next action: {}", crate::render::oneline(next));
    }
    for guard in &g.guards {
        let _ = writeln!(out, "  guard:       {guard}");
    }
    if !g.write_scope.is_empty() {
        let _ = writeln!(out, "  write scope: {}", g.write_scope.join(", "));
    }
    let q = &g.quota;
    let allowed = q
        .allowed_slots
        .map(|a| format!(", {a} slots allowed"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "  quota:       compute {}, {}h window, {}m slots{allowed}",
        q.compute, q.window_hours, q.slot_minutes
    );
    let _ = writeln!(out, "  rev {}, updated {}", g.rev, g.updated_at);
    out
}
