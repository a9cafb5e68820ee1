//! Human-readable renderings of the reports (`status`'s in `text/status.rs`).

use crate::render::oneline;
use std::fmt::Write as _;

use crate::ops::doctor::{DoctorReport, Level};
use crate::ops::init::{InitAction, InitReport};
use crate::ops::log::LogReport;

mod status;

pub use status::{status, status_all, status_all_repos, status_styled};

pub fn init(r: &InitReport) -> String {
    let what = match r.action {
        InitAction::Created => "Initialised".to_owned(),
        InitAction::Adopted => format!(
            "Adopted the state of remote `{}`",
            r.adopted_from.as_deref().unwrap_or("?")
        ),
        InitAction::Existing => "Already initialised".to_owned(),
        InitAction::Updated => "Replaced the goal's objective (--force)".to_owned(),
    };
    format!(
        "{what}: {} at {}\ngoal {}: {}\n",
        r.state_ref,
        r.commit.short(),
        r.default_goal,
        r.objective
    )
}

/// `1h 5m`, `12m`, `40s`; `expired` for negative spans.
pub fn span(seconds: i64) -> String {
    match seconds {
        s if s < 0 => "expired".into(),
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s => format!("{}h {}m", s / 3600, (s % 3600) / 60),
    }
}

pub fn log(r: &LogReport) -> String {
    let mut out = String::new();
    for e in &r.entries {
        let _ = writeln!(out, "{} {} {}", e.commit.short(), e.time, e.subject);
        for a in &e.ignored_answers {
            let _ = writeln!(
                out,
                "    ! {} {}: an answer not made by you ({}): ignored",
                a.gate,
                oneline(&a.question),
                a.reason
            );
        }
    }
    if r.entries.is_empty() {
        out.push_str("no matching state commits\n");
    }
    if r.more {
        let _ = writeln!(
            out,
            "… older ones left out; `-n {}` shows more",
            r.entries.len() * 2
        );
    }
    if let Some(code) = &r.code_commits {
        if code.is_empty() {
            out.push_str("no code commit carries its Loopx-Todo trailer\n");
        } else {
            out.push_str("code commits:\n");
        }
        for c in code {
            let short = c.commit.get(..12).unwrap_or(&c.commit);
            let _ = writeln!(
                out,
                "{short} {} {} (on {})",
                c.time,
                c.subject,
                c.found_on.join(", ")
            );
        }
    }
    out
}

/// `text` with control characters shown escaped (a reflog subject carries
/// agent-written text).
fn no_controls(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let shown: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            shown
        })
        .collect()
}

pub fn doctor(r: &DoctorReport) -> String {
    let mut out = String::new();
    for c in &r.checks {
        let mark = match c.level {
            Level::Ok => "ok  ",
            Level::Warn => "warn",
            Level::Error => "FAIL",
        };
        let _ = writeln!(out, "{mark}  {:<10} {}", c.name, c.detail);
        if let Some(fix) = &c.fix {
            let _ = writeln!(out, "      {:<10} fix: {fix}", "");
        }
    }
    for line in &r.repaired {
        let _ = writeln!(out, "repaired: {}", no_controls(line));
    }
    for subject in &r.lost_writes {
        let _ = writeln!(out, "lost write: {}", no_controls(subject));
    }
    out
}

/// `doctor --rev`: one line per problem, as compilers print them
/// (`path:line:column: error: field: message`), then a summary line.
pub fn state_check(r: &crate::ops::check_state::StateCheck) -> String {
    use crate::model::validate::Severity;
    let mut out = String::new();
    for p in &r.problems {
        let mut at = p.path.clone();
        for n in [p.line, p.column].into_iter().flatten() {
            let _ = write!(at, ":{n}");
        }
        let level = match p.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let field = p
            .field
            .as_ref()
            .map(|f| format!("{f}: "))
            .unwrap_or_default();
        let _ = writeln!(out, "{at}: {level}: {field}{}", p.message);
    }
    let named = if r.rev == r.commit.0 {
        String::new()
    } else {
        format!(" ({})", r.rev)
    };
    let checked = format!(
        "state commit {}{named}, {} file(s)",
        r.commit.short(),
        r.files
    );
    if r.valid {
        let warned = match r.warnings {
            0 => String::new(),
            n => format!(", {n} warning(s)"),
        };
        let _ = writeln!(out, "ok: {checked}{warned}");
    } else {
        let _ = writeln!(
            out,
            "{} error(s), {} warning(s) in {checked}",
            r.errors, r.warnings
        );
    }
    out
}

pub fn todo_list(r: &crate::ops::todo::ListReport, now: crate::model::Timestamp) -> String {
    let mut out = String::new();
    for t in &r.todos {
        let holder = t
            .live_claim(now)
            .map(|c| format!("  [{} e{}]", c.agent, c.epoch))
            .unwrap_or_default();
        let gate = if t.is_gate() { "[gate] " } else { "" };
        let _ = writeln!(
            out,
            "{:?} {}  {:<8} {gate}{}{holder}",
            t.priority,
            t.id,
            crate::ops::snake(&t.status),
            t.text
        );
    }
    if r.todos.is_empty() {
        out.push_str("no todos\n");
    }
    out
}

pub fn todo_show(t: &crate::model::Todo) -> String {
    String::from_utf8_lossy(&crate::codec::encode(t)).into_owned()
}

pub fn claim(r: &crate::ops::lease::ClaimReport) -> String {
    let verb = match r.action {
        crate::model::lease::ClaimAction::Acquired => "claimed",
        crate::model::lease::ClaimAction::Renewed => "renewed",
        crate::model::lease::ClaimAction::Held => "already held",
    };
    format!(
        "{verb} {} for {} (epoch {}, until {}): {}\n",
        r.todo.id,
        r.claim.agent,
        r.claim.epoch,
        r.claim.expires_at,
        oneline(&r.todo.text)
    )
}

pub fn poll(r: &crate::ops::monitor::PollReport) -> String {
    let due = r.todo.monitor.as_ref().and_then(|m| m.next_due_at);
    let due = due.map_or(String::new(), |d| d.to_string());
    let what = if r.poll.material { "material" } else { "quiet" };
    let mut text = format!("polled {} ({what}): next due {due}\n", r.todo.id);
    if let Some(f) = &r.follow_up {
        let _ = writeln!(text, "added {}: {}", f.id, f.text);
    }
    text
}

pub fn done(r: &crate::ops::done::DoneReport) -> String {
    if let Some(v) = r.validation.as_ref().filter(|v| !v.passed()) {
        return failed_validation(v);
    }
    let mut out = format!("done {}: {}\n", r.todo.id, oneline(&r.todo.text));
    if let Some(v) = &r.validation {
        let _ = writeln!(out, "validated: `{}` exited {}", v.command, v.exit_code);
    }
    if let Some(n) = &r.validation_not_run {
        let _ = writeln!(
            out,
            "validate not run ({}): `{}`\n  a command written into state runs only for an agent, never as you: read it, and run it yourself if you want the check",
            n.reason, n.command
        );
    }
    if let Some(s) = &r.successor {
        let _ = writeln!(out, "next {}: {}", s.id, oneline(&s.text));
    }
    if r.goal_done {
        let _ = writeln!(
            out,
            "goal {} is done: no follow-up, and no open todo is left (`git loopx goal resume` reopens it)",
            r.todo.goal
        );
    }
    out
}

/// A failed `validate`: what happened, then the last lines of each stream
/// that printed anything, indented, each headed by what was cut before it.
fn failed_validation(v: &crate::ops::done::ValidationRun) -> String {
    let mut out = format!(
        "validate `{}` {} ({:.1}s)\n",
        v.command,
        v.what(),
        v.seconds
    );
    for (name, tail) in [("stdout", &v.stdout), ("stderr", &v.stderr)] {
        if tail.text.is_empty() {
            continue;
        }
        let shown = tail.text.lines().count();
        let head = if tail.lines_cut > 0 {
            format!(
                "{name} (last {shown} lines, {} earlier lines cut):",
                tail.lines_cut
            )
        } else if tail.bytes_cut > 0 {
            format!(
                "{name} (last {} bytes, {} earlier bytes cut):",
                tail.text.len(),
                tail.bytes_cut
            )
        } else {
            format!("{name}:")
        };
        let _ = writeln!(out, "{head}");
        for line in tail.text.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}

pub fn runs(runs: &[crate::model::Run]) -> String {
    let mut out = String::new();
    for r in runs {
        let what = r.summary.as_deref().or(r.reason.as_deref()).unwrap_or("");
        let _ = writeln!(
            out,
            "{} {} {:<9} {:<8} {} {}",
            r.at,
            r.id,
            crate::ops::snake(&r.kind),
            r.agent.as_deref().unwrap_or("-"),
            r.todo.as_deref().unwrap_or(""),
            oneline(what)
        );
    }
    if runs.is_empty() {
        out.push_str("no run records\n");
    }
    out
}

/// `should-run`, from its JSON fields (a replayed turn has only those).
pub fn should_run(d: &serde_json::Value) -> String {
    let s = |k: &str| d[k].as_str().unwrap_or("?").to_owned();
    let mut out = format!(
        "{}: {} ({})\n",
        s("decision"),
        s("effective_action"),
        s("reason")
    );
    if let Some(t) = d["selected_todo"].as_object() {
        let claim = if t["claimed_by_me"] == true {
            "yours"
        } else {
            "claim it first"
        };
        let _ = writeln!(
            out,
            "todo: {}  {} [{claim}]",
            t["id"].as_str().unwrap_or("?"),
            t["text"].as_str().unwrap_or("")
        );
    }
    for g in d["gates"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "gate: {}  {}",
            g["id"].as_str().unwrap_or("?"),
            g["question"].as_str().unwrap_or("")
        );
    }
    let q = &d["quota"];
    let _ = writeln!(
        out,
        "quota: {}/{} slots",
        q["spent_slots"], q["allowed_slots"]
    );
    let h = &d["scheduler_hint"];
    let _ = writeln!(
        out,
        "next: {} in {}s",
        h["action"].as_str().unwrap_or("?"),
        h["wake_after_seconds"]
    );
    out
}

pub fn quota(r: &crate::ops::quota::QuotaReport) -> String {
    let q = &r.quota;
    let mut out = format!(
        "{}/{} slots used in the last {}h (compute {}, {}-minute slots)\n",
        q.spent_slots, q.allowed_slots, q.window_hours, r.compute, r.slot_minutes
    );
    if q.throttled() {
        let _ = writeln!(out, "throttled until {}", q.next_eligible_at);
    }
    for s in &r.spends {
        let _ = writeln!(
            out,
            "  {} {} {} slot(s) for {}",
            s.at,
            s.id,
            s.slots.unwrap_or(1),
            s.writeback.as_deref().unwrap_or("?")
        );
    }
    out
}
