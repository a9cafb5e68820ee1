//! `report`: what an unattended stretch did, per goal — what was delivered
//! (todos done with evidence, writebacks with their commits), what waits on
//! the person, what comes next, the risks, the quota spent against each
//! window's allowance, failures, handoffs and each agent's activity. Each
//! goal's part is `review`'s packet over the same range (so archived
//! writebacks count too); the quota and the agents' turns are read from the
//! runs of the range, archived ones included (`retention::runs_since`).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::{parse_duration, Goal, Outcome, Run, RunKind, Timestamp};
use crate::ops::review::{self, ReviewReport};
use crate::session::Context;
use crate::store::{CommitInfo, Oid};
use crate::{codec, Result};

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
    /// `git loopx run` turns of the range that failed, on this host, even
    /// when the agent recovered since (oldest first).
    pub failed_turns: Vec<crate::ops::run::FailedTurn>,
    pub agents: Vec<AgentActivity>,
    /// What happens next, most urgent first: the person's answers, then
    /// the work agents take next.
    pub next_actions: Vec<NextAction>,
    /// What may be going wrong.
    pub risks: Vec<Risk>,
}

/// One thing to do next: who does it, what, and the command when there is one.
#[derive(Debug, Serialize)]
pub struct NextAction {
    /// `you` or `agents`.
    pub by: &'static str,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// One risk the report saw.
#[derive(Debug, Serialize)]
pub struct Risk {
    /// `failing_agent`, `expired_lease`, `throttled`, `unproven_done`, `stale_agent`.
    pub kind: &'static str,
    pub text: String,
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
    /// Each window of the range, oldest first, with the allowance the
    /// goal's policy gave when it began.
    pub windows: Vec<QuotaWindow>,
}

#[derive(Debug, Serialize)]
pub struct QuotaWindow {
    pub start: Timestamp,
    pub hours: u32,
    pub allowed_slots: u32,
    pub spent: u32,
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
    /// Its failed `run` turns in the range (see [`GoalReport::failed_turns`]).
    pub failed_turns: usize,
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
    // The first-parent history back to the range's start, not beyond it.
    let (from, from_time, log) = match parse_duration(since).filter(|s| *s > 0) {
        Some(seconds) => {
            let start = Timestamp::from_unix(ctx.now.unix() - seconds);
            let log = ctx.store.first_parent_log_while(&tip, |c| c.time > start)?;
            // The state as it was then: the newest commit made by then.
            (
                log.iter().find(|c| c.time <= start).map(|c| c.id.clone()),
                Some(start),
                log,
            )
        }
        None => {
            let commit = crate::ops::revision::state_commit(ctx, since).map_err(|e| {
                if since.starts_with(|c: char| c.is_ascii_digit()) && e.code() == crate::model::Code::InvalidInput {
                    crate::model::Refusal::invalid_input(format!(
                        "`{since}` is neither a duration nor a commit git knows"
                    ))
                    .with_hint("a duration back from now (24h, 4d, 1w, 1h30m) or a revision of loopx-state")
                    .into()
                } else {
                    e
                }
            })?;
            let log = ctx.store.first_parent_log_while(&tip, |c| c.id != commit)?;
            let at = log.iter().find(|c| c.id == commit).map(|c| c.time);
            (Some(commit), at, log)
        }
    };
    let log = &log[..];
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
        let runs = crate::session::retention::runs_since(ctx, gs, from_time)?;
        let usage = crate::model::quota::usage(gs, ctx.now);
        let hours = from_time.map_or(0, |t| (ctx.now.unix() - t.unix() + 3599) / 3600);
        let windows = match from_time {
            Some(from) => windows(ctx, log, &gs.goal, &runs, from)?,
            None => Vec::new(),
        };
        let allowance = if windows.is_empty() {
            u64::from(usage.allowed_slots)
        } else {
            windows.iter().map(|w| u64::from(w.allowed_slots)).sum()
        };
        let failures: Vec<Run> = review
            .delivered
            .iter()
            .filter(|r| failed(r))
            .cloned()
            .collect();
        let failed_turns: Vec<_> = crate::ops::run::failed_turns(ctx, id)
            .into_iter()
            .filter(|t| from_time.is_none_or(|f| t.at > f))
            .collect();
        let health = status.goals.iter().find(|g| g.goal.id == *id);
        let mut agents = activity(&review.delivered, health.map(|g| &g.agents[..]));
        for t in &failed_turns {
            if let Some(a) = agents.iter_mut().find(|a| a.id == t.agent) {
                a.failed_turns += 1;
            }
        }
        let quota = QuotaSpent {
            spent: spent(&runs),
            allowed_slots: usage.allowed_slots,
            window_hours: usage.window_hours,
            hours,
            allowance,
            window_spent: usage.spent_slots,
            throttled: usage.throttled(),
            windows,
        };
        let next_actions = health.map(|h| next_actions(h, &review)).unwrap_or_default();
        let risks = risks(ctx, health, &review, &agents, &quota);
        goals.push(GoalReport {
            quota,
            failures,
            failed_turns,
            agents,
            next_actions,
            risks,
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
            failed_turns: 0,
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

/// Slots the range's spends charged, voids taken off.
fn spent(runs: &[Run]) -> u32 {
    let voided: std::collections::BTreeSet<&str> = runs
        .iter()
        .filter(|r| r.kind == RunKind::Void)
        .filter_map(|r| r.spend.as_deref())
        .collect();
    runs.iter()
        .filter(|r| r.kind == RunKind::Spend && !voided.contains(r.id.as_str()))
        .map(|r| u64::from(r.slots.unwrap_or(1)))
        .sum::<u64>()
        .try_into()
        .unwrap_or(u32::MAX)
}

/// The range's quota windows from `from`: each with the allowance the
/// goal's policy gave when the window ended (or now, for the last): read
/// from the goal file of the newest state commit made by then, and what
/// was spent in it.
fn windows(
    ctx: &Context,
    log: &[CommitInfo],
    goal: &Goal,
    runs: &[Run],
    from: Timestamp,
) -> Result<Vec<QuotaWindow>> {
    // A window an hour long over a year is 8,760 windows: past this many,
    // the current policy stands for the rest.
    const MOST: usize = 2_000;
    let path = codec::goal_path(&goal.id);
    let mut seen: BTreeMap<String, crate::model::QuotaPolicy> = BTreeMap::new();
    let mut out = Vec::new();
    let mut at = from;
    // How long the window before was (the first: as the goal's is now).
    let mut hours_now = goal.quota.window_hours;
    while at < ctx.now {
        // The policy the window ended under (or stands under now): the
        // newest commit made by then.
        let until = at
            .plus_seconds(i64::from(hours_now.max(1)) * 3600)
            .min(ctx.now);
        let commit = log.iter().find(|c| c.time <= until).map(|c| c.id.clone());
        let policy = match commit {
            Some(c) if out.len() < MOST => match seen.get(&c.0) {
                Some(p) => p.clone(),
                None => {
                    let p = match ctx.store.read_file(&c, &path)? {
                        Some(bytes) => {
                            codec::decode::<Goal>(&path, &bytes)
                                .map_err(|source| crate::store::Error::Corrupt {
                                    commit: c.clone(),
                                    source,
                                })?
                                .quota
                        }
                        // The goal did not exist yet: nothing was allowed.
                        None => crate::model::QuotaPolicy {
                            allowed_slots: Some(0),
                            ..goal.quota.clone()
                        },
                    };
                    seen.insert(c.0.clone(), p.clone());
                    p
                }
            },
            _ => goal.quota.clone(),
        };
        let hours = policy.window_hours.max(1);
        hours_now = hours;
        let end = at.plus_seconds(i64::from(hours) * 3600);
        let spends: Vec<Run> = runs
            .iter()
            .filter(|r| r.at > at && r.at <= end)
            .cloned()
            .collect();
        let spent_here = spent(&spends);
        out.push(QuotaWindow {
            start: at,
            hours,
            allowed_slots: policy.allowed_slots(),
            spent: spent_here,
        });
        at = end;
    }
    Ok(out)
}

/// The person's answers first (gates, with the command; reminders), then
/// the goal's own next action, then the todos agents take next.
fn next_actions(h: &crate::ops::status::StatusReport, review: &ReviewReport) -> Vec<NextAction> {
    let flag = if review.default {
        String::new()
    } else {
        format!(" --goal {}", review.goal)
    };
    let mut out = Vec::new();
    if h.goal.status == crate::model::GoalStatus::Stopped {
        out.push(NextAction {
            by: "you",
            text: "the goal is stopped: resume it when agents may go on".to_owned(),
            command: Some(format!("git loopx{flag} goal resume")),
        });
    }
    for d in &review.decisions {
        out.push(NextAction {
            by: "you",
            text: format!("answer gate {}: {}", d.id, d.text),
            command: Some(format!(
                "git loopx{flag} gate resolve {} --approve|--reject",
                d.id
            )),
        });
    }
    for a in &review.user_actions {
        out.push(NextAction {
            by: "you",
            text: format!("do reminder {}: {}", a.id, a.text),
            command: Some(format!("git loopx{flag} todo done {}", a.id)),
        });
    }
    if let Some(next) = &h.goal.next_action {
        out.push(NextAction {
            by: "agents",
            text: next.clone(),
            command: None,
        });
    }
    let c = &h.counts;
    if h.next.is_empty() && c.ready + c.held_by_gate + c.waiting > 0 {
        out.push(NextAction {
            by: "agents",
            text: format!(
                "nothing they may take now: {} held by a gate, {} waiting{}",
                c.held_by_gate,
                c.waiting,
                if h.quota.throttled() {
                    ", and the quota is spent"
                } else {
                    ""
                }
            ),
            command: None,
        });
    }
    for t in &h.next {
        out.push(NextAction {
            by: "agents",
            text: format!("take {} ({:?}): {}", t.id, t.priority, t.text),
            command: None,
        });
    }
    for c in &h.claims {
        out.push(NextAction {
            by: "agents",
            text: format!("{} goes on with {}: {}", c.agent, c.todo, c.text),
            command: None,
        });
    }
    out
}

/// Failing agents, leases that expired unused, windows spent to the
/// allowance, todos marked done with no writeback on them, and agents
/// holding work that were not seen for a day.
fn risks(
    ctx: &Context,
    health: Option<&crate::ops::status::StatusReport>,
    review: &ReviewReport,
    agents: &[AgentActivity],
    quota: &QuotaSpent,
) -> Vec<Risk> {
    let mut out = Vec::new();
    for a in agents {
        if a.consecutive_failures > 0 {
            out.push(Risk {
                kind: "failing_agent",
                text: format!(
                    "{} failed its last {} turn(s) in a row",
                    a.id, a.consecutive_failures
                ),
            });
        } else if a.failed_turns > 0 {
            out.push(Risk {
                kind: "failing_agent",
                text: format!(
                    "{} failed {} turn(s) in the range, and recovered",
                    a.id, a.failed_turns
                ),
            });
        }
        if a.failures > 0 {
            out.push(Risk {
                kind: "failing_agent",
                text: format!(
                    "{}: {} writeback(s) failed validation or made no progress",
                    a.id, a.failures
                ),
            });
        }
        if a.guard_releases > 0 {
            out.push(Risk {
                kind: "failing_agent",
                text: format!(
                    "{}: the loop guard ended {} session(s) with no writeback",
                    a.id, a.guard_releases
                ),
            });
        }
        for todo in &a.expired_leases {
            out.push(Risk {
                kind: "expired_lease",
                text: format!("{}'s lease on {todo} expired with no writeback", a.id),
            });
        }
    }
    let throttled: Vec<&QuotaWindow> = quota
        .windows
        .iter()
        .filter(|w| w.allowed_slots > 0 && w.spent >= w.allowed_slots)
        .collect();
    if let (Some(first), Some(last)) = (throttled.first(), throttled.last()) {
        out.push(Risk {
            kind: "throttled",
            text: format!(
                "the quota ran out in {} window(s), from {} to {}",
                throttled.len(),
                first.start,
                last.start.plus_seconds(i64::from(last.hours) * 3600)
            ),
        });
    } else if quota.throttled {
        out.push(Risk {
            kind: "throttled",
            text: "the quota's window is spent now: agents wait".to_owned(),
        });
    }
    for t in &review.completed {
        let proven = review
            .delivered
            .iter()
            .any(|r| r.kind == RunKind::Writeback && r.todo.as_deref() == Some(t.id.as_str()));
        if !proven && t.evidence.is_none() {
            out.push(Risk {
                kind: "unproven_done",
                text: format!("{} was marked done with no writeback or evidence", t.id),
            });
        }
    }
    if let Some(h) = health {
        for c in &h.claims {
            let seen = h
                .agents
                .iter()
                .find(|a| a.id == c.agent)
                .and_then(|a| a.last_turn.max(a.last_writeback));
            if seen.is_none_or(|s| s.seconds_until(ctx.now) > 24 * 3600) {
                out.push(Risk {
                    kind: "stale_agent",
                    text: format!("{} holds {} and was not seen for a day", c.agent, c.todo),
                });
            }
        }
    }
    // The worst first: agents failing, work stopped by the quota, agents
    // gone quiet, leases lost, then proof missing.
    let rank = |kind: &str| {
        [
            "failing_agent",
            "throttled",
            "stale_agent",
            "expired_lease",
            "unproven_done",
        ]
        .iter()
        .position(|k| *k == kind)
    };
    out.sort_by_key(|r| rank(r.kind));
    out
}
