//! Human-readable renderings of the reports.

use crate::render::oneline;
use std::fmt::Write as _;

use crate::ops::doctor::{DoctorReport, Level};
use crate::ops::init::{InitAction, InitReport};
use crate::ops::log::LogReport;
use crate::ops::status::StatusReport;

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

/// `approve by Name <email> at T`, and why it does not count when it does not.
fn answer(g: &crate::ops::status::AnsweredLine) -> String {
    let mut out = g
        .decision
        .map_or_else(|| "resolved".to_owned(), |d| crate::ops::snake(&d));
    let _ = write!(
        out,
        " by {}",
        g.resolved_by.as_deref().unwrap_or("(not recorded)")
    );
    if let Some(at) = g.resolved_at {
        let _ = write!(out, " at {at}");
    }
    let _ = write!(out, ": {}", oneline(&g.question));
    if !g.counts {
        out.push_str("  [not made by you (not signed by a gate signer): ignored, still open]");
    }
    out
}

pub fn status(r: &StatusReport) -> String {
    status_styled(r).0
}

/// `status --all`: a line per goal, then each goal's status in full.
pub fn status_all(r: &crate::ops::status::AllReport) -> (String, Vec<super::style::Span>) {
    let mut out = String::new();
    let mut spans = Vec::new();
    let _ = writeln!(out, "{} goal(s):", r.goals.len());
    for g in &r.goals {
        let state = goal_state(g.goal.status);
        let needs = g.gates.len() + g.user_actions.len();
        let default = if g.goal.default { " (default)" } else { "" };
        let _ = writeln!(
            out,
            "  {}{default}  {state}, {} need(s) you, {} ready, {} running, {} done: {}",
            g.goal.id,
            needs,
            g.counts.ready,
            g.counts.running,
            g.counts.done,
            oneline(&g.goal.objective)
        );
    }
    for g in &r.goals {
        let (text, more) = status_styled(g);
        let _ = writeln!(out, "\n────────");
        let at = out.len();
        out.push_str(&text);
        spans.extend(more.into_iter().map(|s| super::style::Span {
            range: s.range.start + at..s.range.end + at,
            role: s.role,
        }));
    }
    (out, spans)
}

fn goal_state(status: crate::model::GoalStatus) -> &'static str {
    match status {
        crate::model::GoalStatus::Active => "active",
        crate::model::GoalStatus::Stopped => "stopped",
        crate::model::GoalStatus::Done => "done",
    }
}

/// `status --all-repos`: what needs the person across every repository,
/// then a line for each repository and each of its goals.
pub fn status_all_repos(r: &crate::ops::repos::ReposReport) -> String {
    let mut out = String::new();
    if r.repos.is_empty() {
        let _ = writeln!(
            out,
            "no repositories listed in {} (`git loopx repos add` adds one)",
            r.file.display()
        );
        return out;
    }
    match r.needs.len() {
        0 => out.push_str("nothing needs you\n"),
        n => {
            let _ = writeln!(out, "{n} thing(s) need you:");
        }
    }
    for n in &r.needs {
        let goal = n
            .goal
            .as_deref()
            .map(|g| format!(" {g}"))
            .unwrap_or_default();
        let id = n.id.as_deref().map(|i| format!(" {i}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "  {:<13} {}{goal}{id}: {}",
            n.kind,
            n.repo.display(),
            oneline(&n.text)
        );
        if n.kind == "gate" {
            let goal_flag = n
                .goal
                .as_deref()
                .map(|g| format!(" --goal {g}"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{:16}answer: git -C {} loopx{goal_flag} gate resolve {} --approve|--reject [--note …]",
                "",
                n.repo.display(),
                n.id.as_deref().unwrap_or("")
            );
        }
    }
    let _ = writeln!(out, "\n{} repositories:", r.repos.len());
    for repo in &r.repos {
        match &repo.error {
            Some(e) => {
                let _ = writeln!(
                    out,
                    "  {}  {}: {}",
                    repo.path.display(),
                    repo.condition,
                    oneline(&e.message)
                );
                if let Some(hint) = e.hint.as_deref().filter(|_| repo.condition == "refused") {
                    let _ = writeln!(out, "    {}", oneline(hint));
                }
            }
            None if repo.condition != "ok" => {
                let _ = writeln!(out, "  {}  {}", repo.path.display(), repo.condition);
            }
            None => {
                let _ = writeln!(out, "  {}", repo.path.display());
            }
        }
        for g in &repo.goals {
            let _ = writeln!(
                out,
                "    {}  {}, {} need(s) you, {} ready, {} running, {} done, quota {}/{}: {}",
                g.goal.id,
                goal_state(g.goal.status),
                g.gates.len() + g.user_actions.len(),
                g.counts.ready,
                g.counts.running,
                g.counts.done,
                g.quota.spent_slots,
                g.quota.allowed_slots,
                oneline(&g.goal.objective)
            );
        }
    }
    out
}

/// A heading after a blank line, marked for attention.
fn attention(out: &mut String, spans: &mut Vec<super::style::Span>, heading: &str) {
    spans.push(super::style::Span {
        range: out.len() + 1..out.len() + 1 + heading.len(),
        role: super::style::Role::Attention,
    });
    let _ = writeln!(out, "\n{heading}");
}

/// The line under a person's todo that carries a `validate`: the command
/// exactly, and that it is not run for them.
fn stored_check(out: &mut String, validate: Option<&str>) {
    if let Some(command) = validate {
        let _ = writeln!(
            out,
            "      check written into state, not run for you: `{command}`"
        );
    }
}

/// [`status`], with the `Needs you:` and `Agents failing:` headings marked
/// when something does.
pub fn status_styled(r: &StatusReport) -> (String, Vec<super::style::Span>) {
    let mut spans = Vec::new();
    let mut out = String::new();
    let paused = match r.goal.status {
        crate::model::GoalStatus::Stopped => "  (STOPPED)",
        crate::model::GoalStatus::Done => "  (DONE)",
        crate::model::GoalStatus::Active => "",
    };
    // Commands about a goal other than the default must name it.
    let goal_flag = if r.goal.default {
        String::new()
    } else {
        format!(" --goal {}", r.goal.id)
    };
    let _ = writeln!(
        out,
        "Goal {}: {}{paused}",
        r.goal.id,
        oneline(&r.goal.objective)
    );
    if let Some(next) = &r.goal.next_action {
        let _ = writeln!(out, "Next action: {}", oneline(next));
    }
    let c = &r.counts;
    let _ = writeln!(
        out,
        "Todos: {} ready, {} running, {} held by a gate, {} waiting, {} for you, {} deferred, {} done",
        c.ready, c.running, c.held_by_gate, c.waiting, c.for_user, c.deferred, c.done
    );
    if r.goal.status == crate::model::GoalStatus::Done {
        let _ = writeln!(out, "This goal is done: no agent will run for it.");
    }

    if !r.refused.is_empty() {
        attention(
            &mut out,
            &mut spans,
            "Refused on this host (an agent tried what is yours):",
        );
        for t in &r.refused {
            let first = t.message.lines().next().unwrap_or_default();
            let _ = writeln!(out, "  ! {}  {}: {}", t.at, oneline(&t.by), oneline(first));
        }
    }
    if !r.governance_lost.is_empty() {
        attention(
            &mut out,
            &mut spans,
            "Not governed (the next session runs without git-loopx):",
        );
        for u in &r.governance_lost {
            let _ = writeln!(
                out,
                "  ! {}: {}: {}",
                u.runtime,
                u.path.display(),
                u.problem
            );
            let _ = writeln!(out, "      fix: {}", u.fix);
        }
    }
    if r.gates.is_empty() && r.user_actions.is_empty() {
        let _ = writeln!(out, "\nNeeds you: nothing");
    } else {
        attention(&mut out, &mut spans, "Needs you:");
        for g in &r.gates {
            let _ = writeln!(
                out,
                "  ? {}  {}  [{}]",
                g.id,
                oneline(&g.question),
                g.scope_label
            );
            for a in r.ignored_answers.iter().filter(|a| a.gate == g.id) {
                let _ = writeln!(out, "      {}", a.sentence());
                let _ = writeln!(
                    out,
                    "      it does not count: the gate waits for your signed answer"
                );
            }
            let _ = writeln!(
                out,
                "      answer: git loopx{goal_flag} gate resolve {} --approve|--reject [--note …]",
                g.id
            );
            stored_check(&mut out, g.validate.as_deref());
        }
        for a in &r.user_actions {
            let _ = writeln!(out, "  - {}  {}", a.id, oneline(&a.text));
            stored_check(&mut out, a.validate.as_deref());
        }
    }
    let failing: Vec<_> = r.agents.iter().filter(|a| !a.healthy).collect();
    if !failing.is_empty() {
        attention(&mut out, &mut spans, "Agents failing:");
    }
    for a in failing {
        let mut what = Vec::new();
        if let Some(last) = &a.last_failure {
            let no_writeback = match last.wrote_back {
                Some(false) => ", no writeback",
                _ => "",
            };
            what.push(format!(
                "{} `run` turn(s) failed in a row (the last: {}{no_writeback}, turn {})",
                a.consecutive_failures,
                super::run::agent_ended(last),
                last.key
            ));
        }
        if a.guard_releases > 0 {
            what.push(format!(
                "{} session(s) let go by the loop guard without a writeback",
                a.guard_releases
            ));
        }
        if !a.expired_leases.is_empty() {
            what.push(format!(
                "lease expired with no writeback on {}",
                a.expired_leases.join(", ")
            ));
        }
        let _ = writeln!(out, "  {}: {}", a.id, what.join("; "));
    }
    if !r.agents.is_empty() {
        let _ = writeln!(out, "\nAgents:");
    }
    for a in &r.agents {
        let at =
            |t: Option<crate::model::Timestamp>| t.map_or("never".to_owned(), |t| t.to_string());
        let _ = writeln!(
            out,
            "  {}: last turn {}, last writeback {}{}",
            a.id,
            at(a.last_turn),
            at(a.last_writeback),
            if a.healthy { "" } else { " (failing: above)" }
        );
    }
    if !r.answered.is_empty() {
        let _ = writeln!(out, "\nAnswered gates:");
        for g in &r.answered {
            let _ = writeln!(out, "  {}  {}", g.id, answer(g));
        }
    }

    let _ = writeln!(out, "\nRunning:");
    if r.claims.is_empty() {
        let _ = writeln!(out, "  nothing is claimed");
    }
    for c in &r.claims {
        let _ = writeln!(
            out,
            "  {}  {:<10} {}  (epoch {}, {} left)",
            c.todo,
            c.agent,
            oneline(&c.text),
            c.epoch,
            span(c.seconds_left)
        );
    }

    let _ = writeln!(out, "\nNext up:");
    if r.next.is_empty() {
        let _ = writeln!(out, "  nothing is ready");
    }
    for t in &r.next {
        let _ = writeln!(out, "  {:?} {}  {}", t.priority, t.id, oneline(&t.text));
    }

    if !r.blocked.is_empty() {
        let _ = writeln!(out, "\nBlocked:");
        for b in &r.blocked {
            let _ = writeln!(out, "  {}", blocked_line(b));
        }
    }

    if !r.monitors.is_empty() {
        let _ = writeln!(out, "\nMonitors:");
        for m in &r.monitors {
            let _ = writeln!(out, "  {}  {}", m.id, oneline(&m.text));
            let _ = writeln!(out, "      {}", oneline(&m.summary));
        }
    }

    let q = &r.quota;
    let _ = write!(
        out,
        "\nQuota: {}/{} slots in the last {}h",
        q.spent_slots, q.allowed_slots, q.window_hours
    );
    if q.throttled() {
        let _ = write!(out, ", throttled until {}", q.next_eligible_at);
    }
    out.push('\n');

    if !r.recent_runs.is_empty() {
        let _ = writeln!(out, "\nRecent writebacks:");
        for run in &r.recent_runs {
            let outcome = run
                .outcome
                .map(|o| crate::ops::snake(&o))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {}  {:<10} {:<20} {}",
                run.at,
                run.agent.as_deref().unwrap_or("-"),
                outcome,
                oneline(run.summary.as_deref().unwrap_or(""))
            );
        }
    }
    (out, spans)
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
fn failed_validation(v: &crate::ops::validate::ValidationRun) -> String {
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

/// A blocked todo's line: `status` and `review`.
pub fn blocked_line(b: &crate::ops::status::BlockedLine) -> String {
    let what = if b.class == crate::model::TodoClass::Blocker {
        "blocker "
    } else {
        ""
    };
    format!(
        "{what}{} {}: {}",
        b.id,
        oneline(&b.text),
        b.why
            .as_deref()
            .map_or_else(|| "no reason given".to_owned(), |w| oneline(w).into_owned())
    )
}
