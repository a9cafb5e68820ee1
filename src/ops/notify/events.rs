//! The events a look finds in the state now, by key: each goal's (gates
//! and reminders open, its end or stop, its quota throttled, agents
//! failing, answers that do not count) and this host's (refused attempts,
//! runtimes no longer governed).

use std::collections::BTreeMap;

use super::{repo_name, Event};
use crate::model::GoalStatus;
use crate::ops::status::{AgentHealth, AllReport, StatusReport};
use crate::session::Context;
use crate::Result;

/// How many of the last week's refused attempts a look tells.
const REFUSED_TOLD: usize = 50;

/// The events the state holds now, by key.
pub fn conditions(ctx: &Context) -> Result<BTreeMap<String, Event>> {
    let repo = repo_name(ctx);
    let all = crate::ops::status::status_all(ctx)?;
    let mut events = Events {
        ctx,
        repo,
        found: BTreeMap::new(),
    };
    for g in &all.goals {
        goal_events(&mut events, g);
    }
    host_events(&mut events, &all);
    Ok(events.found)
}

/// The events a look finds, by key, each of this repository at this time.
struct Events<'a> {
    ctx: &'a Context,
    repo: String,
    found: BTreeMap<String, Event>,
}

impl Events<'_> {
    fn add(&mut self, key: String, kind: &str, goal: &str, id: Option<&str>, text: String) {
        self.found.insert(
            key,
            Event {
                kind: kind.to_owned(),
                repo: self.repo.clone(),
                goal: goal.to_owned(),
                id: id.map(str::to_owned),
                text,
                at: self.ctx.now,
                keys: Vec::new(),
            },
        );
    }
}

/// A goal's events: its gates and reminders open, its end or stop, its
/// quota throttled, its agents failing, the answers that do not count.
fn goal_events(events: &mut Events<'_>, g: &StatusReport) {
    let goal = g.goal.id.as_str();
    for gate in &g.gates {
        let key = format!("gate_opened/{goal}/{}", gate.id);
        events.add(
            key,
            "gate_opened",
            goal,
            Some(&gate.id),
            gate.question.clone(),
        );
    }
    for t in &g.user_actions {
        let key = format!("reminder_opened/{goal}/{}", t.id);
        events.add(key, "reminder_opened", goal, Some(&t.id), t.text.clone());
    }
    match g.goal.status {
        GoalStatus::Done => events.add(
            format!("goal_done/{goal}"),
            "goal_done",
            goal,
            None,
            g.goal.objective.clone(),
        ),
        GoalStatus::Stopped => events.add(
            format!("goal_stopped/{goal}"),
            "goal_stopped",
            goal,
            None,
            g.goal.objective.clone(),
        ),
        GoalStatus::Active if g.quota.throttled() => events.add(
            format!("quota_throttled/{goal}/{}", g.quota.next_eligible_at),
            "quota_throttled",
            goal,
            None,
            format!(
                "{} of {} slots spent in {} h; the next one frees at {}",
                g.quota.spent_slots,
                g.quota.allowed_slots,
                g.quota.window_hours,
                g.quota.next_eligible_at
            ),
        ),
        GoalStatus::Active => {}
    }
    for a in g.agents.iter().filter(|a| !a.healthy) {
        let key = format!("agent_failing/{goal}/{}", a.id);
        events.add(key, "agent_failing", goal, Some(&a.id), failing_why(a));
    }
    for a in &g.ignored_answers {
        let key = format!("answer_ignored/{goal}/{}/{}", a.gate, a.commit);
        events.add(key, "answer_ignored", goal, Some(&a.gate), a.sentence());
    }
}

/// Why an agent is failing: its failed turns in a row, its loop-guard
/// releases, its leases that expired with no writeback.
fn failing_why(a: &AgentHealth) -> String {
    let mut why = Vec::new();
    if a.consecutive_failures > 0 {
        why.push(format!(
            "{} failed turn(s) in a row",
            a.consecutive_failures
        ));
    }
    if a.guard_releases > 0 {
        why.push(format!("{} loop-guard release(s)", a.guard_releases));
    }
    if !a.expired_leases.is_empty() {
        why.push(format!(
            "lease(s) expired with no writeback: {}",
            a.expired_leases.join(", ")
        ));
    }
    why.join("; ")
}

/// What is told of this host, not of a goal (under the default goal): the
/// attempts on the person's authority refused in the last week, and the
/// runtimes no longer governed.
fn host_events(events: &mut Events<'_>, all: &AllReport) {
    let goal = all
        .goals
        .first()
        .map(|g| g.goal.id.clone())
        .unwrap_or_default();
    let week_ago = events.ctx.now.plus_seconds(-7 * 24 * 3600);
    for r in crate::session::refused::latest(events.ctx.store.common_dir(), week_ago, REFUSED_TOLD)
    {
        let what = format!("{} {} {} {}", r.at, r.code, r.by, r.message);
        let key = format!(
            "refused/{}/{}",
            r.at.unix(),
            &sha1_smol::Sha1::from(&what).digest().to_string()[..12]
        );
        let first = r.message.lines().next().unwrap_or_default();
        events.add(key, "refused", &goal, None, format!("{}: {first}", r.by));
    }
    if let Some(g) = all.goals.first() {
        for u in &g.governance_lost {
            let key = format!("governance_lost/{}/{}", u.runtime, u.path.display());
            events.add(
                key,
                "governance_lost",
                &goal,
                None,
                format!(
                    "{} is not governed: {}: {}; {}",
                    u.runtime,
                    u.path.display(),
                    u.problem,
                    u.fix
                ),
            );
        }
    }
}
