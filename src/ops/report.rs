//! `report`: what an unattended stretch did, per goal — what was delivered
//! (todos done with evidence, writebacks with their commits), what waits on
//! the person, the quota spent against the allowance, failures, and each
//! agent's activity. Each goal's part is `review`'s packet over the same
//! range (so archived writebacks count too), with the quota, the failures
//! and the agents added.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::{parse_duration, Outcome, Run, RunKind, Timestamp};
use crate::ops::review::{self, ReviewReport};
use crate::ops::Context;
use crate::store::Oid;
use crate::Result;

#[derive(Debug, Serialize)]
pub struct Report {
    pub now: Timestamp,
    /// What `--since` asked for (`24h`, a revision).
    pub since: String,
    /// The state commit the range starts after (`None`: from the first).
    pub from: Option<Oid>,
    /// The time the range starts at: the duration's start, or the commit's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_time: Option<Timestamp>,
    pub tip: Oid,
    /// The default goal first, then by id.
    pub goals: Vec<GoalReport>,
}

#[derive(Debug, Serialize)]
pub struct GoalReport {
    /// `review`'s packet over the range: decisions and reminders waiting,
    /// answered gates, writebacks and completed todos, handoffs.
    pub review: ReviewReport,
    pub quota: QuotaSpent,
    /// Writebacks of the range whose validation failed or that recorded
    /// no progress (`outcome_gap`), oldest first.
    pub failures: Vec<Run>,
    pub agents: Vec<AgentActivity>,
}

#[derive(Debug, Serialize)]
pub struct QuotaSpent {
    /// Slots spent (not voided) in the range.
    pub spent: u32,
    /// The allowance: `allowed_slots` each `window_hours`.
    pub allowed_slots: u32,
    pub window_hours: u32,
    /// The range's length in hours (rounded up).
    pub hours: i64,
    /// What the allowance gave over the range: `allowed_slots` for each
    /// window the range began (at least one).
    pub allowance: u64,
    /// Now: spent in the current window, and whether that is all of it.
    pub window_spent: u32,
    pub throttled: bool,
}

#[derive(Debug, Serialize)]
pub struct AgentActivity {
    pub id: String,
    /// Writebacks in the range.
    pub writebacks: usize,
    /// The todos those writebacks were on.
    pub todos: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_writeback: Option<Timestamp>,
    /// Failed writebacks in the range (see [`GoalReport::failures`]).
    pub failures: usize,
    /// From `status`: turns failed in a row on this host, loop-guard
    /// releases, leases that expired with no writeback.
    pub consecutive_failures: u32,
    pub guard_releases: u32,
    pub expired_leases: Vec<String>,
}

/// The report since `since`: a duration back from now (`24h`, `4d`) or a
/// revision of the state branch.
pub fn report(ctx: &mut Context, since: &str) -> Result<Report> {
    let (tip, state) = ctx.load()?;
    let log = ctx.store.first_parent_log(&tip, usize::MAX)?;
    let (from, from_time) = match parse_duration(since).filter(|s| *s > 0) {
        Some(seconds) => {
            let start = Timestamp::from_unix(ctx.now.unix() - seconds);
            // The state as it was then: the newest commit made by then.
            (
                log.iter().find(|c| c.time <= start).map(|c| c.id.clone()),
                Some(start),
            )
        }
        None => {
            let commit = crate::ops::revision::state_commit(ctx, since)?;
            let at = log.iter().find(|c| c.id == commit).map(|c| c.time);
            (Some(commit), at)
        }
    };
    // From the beginning: the first commit (`init`) records no work.
    let start = from
        .clone()
        .or_else(|| log.last().map(|c| c.id.clone()))
        .unwrap_or_else(|| tip.clone());
    let mut ids: Vec<String> = state.goals.keys().cloned().collect();
    ids.sort_by_key(|id| (*id != state.meta.default_goal, id.clone()));
    let status = crate::ops::status::status_all(ctx)?;
    let saved = ctx.goal_flag().map(str::to_owned);
    let mut goals = Vec::new();
    for id in &ids {
        ctx.set_goal(Some(id.clone()));
        let review = review::review(ctx, Some(&start.0), false)?;
        let gs = &state.goals[id];
        let since_at = from_time.unwrap_or(Timestamp::from_unix(i64::MIN / 2));
        let spent: u32 = crate::model::quota::live_spends(gs)
            .iter()
            .filter(|r| r.at > since_at)
            .map(|r| r.slots.unwrap_or(1))
            .sum();
        let usage = crate::model::quota::usage(gs, ctx.now);
        let hours = from_time.map_or(0, |t| (ctx.now.unix() - t.unix() + 3599) / 3600);
        let windows = (hours.max(1) + i64::from(usage.window_hours.max(1)) - 1)
            / i64::from(usage.window_hours.max(1));
        let failures: Vec<Run> = review
            .delivered
            .iter()
            .filter(|r| failed(r))
            .cloned()
            .collect();
        let health = status.goals.iter().find(|g| g.goal.id == *id);
        let agents = activity(&review.delivered, health.map(|g| &g.agents[..]));
        goals.push(GoalReport {
            quota: QuotaSpent {
                spent,
                allowed_slots: usage.allowed_slots,
                window_hours: usage.window_hours,
                hours,
                allowance: u64::from(usage.allowed_slots) * windows.max(1) as u64,
                window_spent: usage.spent_slots,
                throttled: usage.throttled(),
            },
            failures,
            agents,
            review,
        });
    }
    ctx.set_goal(saved);
    Ok(Report {
        now: ctx.now,
        since: since.to_owned(),
        from,
        from_time,
        tip,
        goals,
    })
}

/// A writeback whose validation failed, or that recorded no progress.
fn failed(run: &Run) -> bool {
    run.kind == RunKind::Writeback
        && (run.validation.as_ref().is_some_and(|v| v.exit_code != 0)
            || run.outcome == Some(Outcome::OutcomeGap))
}

fn activity(
    delivered: &[Run],
    health: Option<&[crate::ops::status::AgentHealth]>,
) -> Vec<AgentActivity> {
    fn slot<'a>(by: &'a mut BTreeMap<String, AgentActivity>, id: &str) -> &'a mut AgentActivity {
        by.entry(id.to_owned()).or_insert_with(|| AgentActivity {
            id: id.to_owned(),
            writebacks: 0,
            todos: Vec::new(),
            last_writeback: None,
            failures: 0,
            consecutive_failures: 0,
            guard_releases: 0,
            expired_leases: Vec::new(),
        })
    }
    let mut by = BTreeMap::new();
    for run in delivered.iter().filter(|r| r.kind == RunKind::Writeback) {
        let Some(agent) = run.agent.as_deref() else {
            continue;
        };
        let a = slot(&mut by, agent);
        a.writebacks += 1;
        a.failures += usize::from(failed(run));
        a.last_writeback = a.last_writeback.max(Some(run.at));
        if let Some(todo) = &run.todo {
            if !a.todos.contains(todo) {
                a.todos.push(todo.clone());
            }
        }
    }
    for h in health.unwrap_or_default() {
        let a = slot(&mut by, &h.id);
        a.consecutive_failures = h.consecutive_failures;
        a.guard_releases = h.guard_releases;
        a.expired_leases = h.expired_leases.clone();
    }
    by.into_values().collect()
}
