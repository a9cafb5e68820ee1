//! `status` as text: one goal's view (what needs the person, the agents,
//! the work, the quota), `status --all` and `status --all-repos`.

use std::fmt::Write as _;

use super::span;
use crate::ops::status::StatusReport;
use crate::render::oneline;

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
pub fn status_all(r: &crate::ops::status::AllReport) -> (String, Vec<crate::render::style::Span>) {
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
        spans.extend(more.into_iter().map(|s| crate::render::style::Span {
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
fn attention(out: &mut String, spans: &mut Vec<crate::render::style::Span>, heading: &str) {
    spans.push(crate::render::style::Span {
        range: out.len() + 1..out.len() + 1 + heading.len(),
        role: crate::render::style::Role::Attention,
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
pub fn status_styled(r: &StatusReport) -> (String, Vec<crate::render::style::Span>) {
    let mut spans = Vec::new();
    let mut out = String::new();
    goal_header(&mut out, r);
    refused_and_ungoverned(&mut out, &mut spans, r);
    needs_you(&mut out, &mut spans, r);
    agents(&mut out, &mut spans, r);
    work(&mut out, r);
    quota_and_writebacks(&mut out, r);
    (out, spans)
}

/// The goal, its next action and its todos counted.
fn goal_header(out: &mut String, r: &StatusReport) {
    let paused = match r.goal.status {
        crate::model::GoalStatus::Stopped => "  (STOPPED)",
        crate::model::GoalStatus::Done => "  (DONE)",
        crate::model::GoalStatus::Active => "",
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
}

/// What an agent tried on this host that is the person's, and the
/// runtimes whose next session would run without git-loopx.
fn refused_and_ungoverned(
    out: &mut String,
    spans: &mut Vec<crate::render::style::Span>,
    r: &StatusReport,
) {
    if !r.refused.is_empty() {
        attention(
            out,
            spans,
            "Refused on this host (an agent tried what is yours):",
        );
        for t in &r.refused {
            let first = t.message.lines().next().unwrap_or_default();
            let _ = writeln!(out, "  ! {}  {}: {}", t.at, oneline(&t.by), oneline(first));
        }
    }
    if !r.governance_lost.is_empty() {
        attention(
            out,
            spans,
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
}

/// The gates and reminders waiting for the person, each gate with the
/// command that answers it.
fn needs_you(out: &mut String, spans: &mut Vec<crate::render::style::Span>, r: &StatusReport) {
    // Commands about a goal other than the default must name it.
    let goal_flag = if r.goal.default {
        String::new()
    } else {
        format!(" --goal {}", r.goal.id)
    };
    if r.gates.is_empty() && r.user_actions.is_empty() {
        let _ = writeln!(out, "\nNeeds you: nothing");
    } else {
        attention(out, spans, "Needs you:");
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
            stored_check(out, g.validate.as_deref());
        }
        for a in &r.user_actions {
            let _ = writeln!(out, "  - {}  {}", a.id, oneline(&a.text));
            stored_check(out, a.validate.as_deref());
        }
    }
}

/// The failing agents and why, then every agent's last turn and writeback.
fn agents(out: &mut String, spans: &mut Vec<crate::render::style::Span>, r: &StatusReport) {
    let failing: Vec<_> = r.agents.iter().filter(|a| !a.healthy).collect();
    if !failing.is_empty() {
        attention(out, spans, "Agents failing:");
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
                crate::render::run::agent_ended(last),
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
}

/// The answered gates, the claimed todos, what is ready next, the
/// blocked todos and the monitors.
fn work(out: &mut String, r: &StatusReport) {
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
}

/// The quota window and the recent writebacks.
fn quota_and_writebacks(out: &mut String, r: &StatusReport) {
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
}

/// A blocked todo's line in `status`.
fn blocked_line(b: &crate::ops::status::BlockedLine) -> String {
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
