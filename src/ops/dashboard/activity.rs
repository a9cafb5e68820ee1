//! The dashboard's agents and its charts' numbers: who was last seen when,
//! and writebacks, finished todos and spent slots per hour.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::{quota, GoalState, Role, RunKind, State, Timestamp, TodoStatus};

use super::GoalPanel;

/// How many hours the activity chart covers, ending with the current one.
pub const HOURS: usize = 24;

/// One agent, as a supervisor wants to see it.
#[derive(Debug, Serialize)]
pub struct AgentLine {
    pub id: String,
    /// In the registry (`agent register`); an agent only seen in records is not.
    pub registered: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// The latest turn receipt (`should-run --turn`) of any goal.
    pub last_turn: Option<Timestamp>,
    /// The latest writeback of any goal.
    pub last_writeback: Option<LastWriteback>,
    /// Its live claims, in every goal.
    pub claims: Vec<AgentClaim>,
    /// The latest of its turns, writebacks and claims.
    pub last_seen: Option<Timestamp>,
    /// Not seen for longer than the report's `stale_after_seconds`, or never.
    pub stale: bool,
}

#[derive(Debug, Serialize)]
pub struct LastWriteback {
    pub goal: String,
    pub run: String,
    pub at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub todo: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct AgentClaim {
    pub goal: String,
    pub todo: String,
    pub text: String,
    pub epoch: u64,
    pub expires_at: Timestamp,
    pub seconds_left: i64,
}

/// Per hour, oldest first: `hours[i]` starts at `start + i` hours.
#[derive(Debug, Serialize)]
pub struct Activity {
    pub start: Timestamp,
    pub hours: usize,
    /// One series per agent (by id), plus `-` for records with no agent.
    pub series: Vec<Series>,
}

#[derive(Debug, Serialize)]
pub struct Series {
    pub agent: String,
    pub writebacks: Vec<u32>,
    /// Agents' todos finished that hour, counted for the agent whose
    /// writeback on the todo came last (a person's gates and reminders are
    /// not counted).
    pub done: Vec<u32>,
}

/// The registered agents and every agent named by a run or a claim.
pub fn agents(
    state: &State,
    goals: &[GoalPanel],
    now: Timestamp,
    stale_after: i64,
) -> Vec<AgentLine> {
    let mut lines: BTreeMap<String, AgentLine> = BTreeMap::new();
    let blank = |id: &str| AgentLine {
        id: id.to_owned(),
        registered: false,
        runtime: None,
        last_turn: None,
        last_writeback: None,
        claims: Vec::new(),
        last_seen: None,
        stale: true,
    };
    for (id, agent) in &state.agents {
        let line = lines.entry(id.clone()).or_insert_with(|| blank(id));
        line.registered = true;
        line.runtime = agent.runtime.clone();
    }
    for (goal, gs) in &state.goals {
        // What the goal's archives say, then the tip's own runs.
        for (agent, seen) in crate::model::retention::last_seen(&gs.goal.archive) {
            let line = lines.entry(agent.clone()).or_insert_with(|| blank(&agent));
            line.last_turn = line.last_turn.max(seen.turn);
            if let (Some(at), Some(run)) = (seen.writeback, &seen.run) {
                if line.last_writeback.as_ref().is_none_or(|w| w.at < at) {
                    line.last_writeback = Some(LastWriteback {
                        goal: goal.clone(),
                        run: run.clone(),
                        at,
                        todo: seen.todo.clone(),
                    });
                }
            }
            line.last_seen = line.last_seen.max(seen.turn).max(seen.writeback);
        }
        for run in gs.runs.all_facts() {
            let Some(agent) = run.agent else { continue };
            let line = lines
                .entry(agent.to_owned())
                .or_insert_with(|| blank(agent));
            match run.kind {
                RunKind::Turn => line.last_turn = line.last_turn.max(Some(run.at)),
                RunKind::Writeback
                    if line.last_writeback.as_ref().is_none_or(|w| w.at < run.at) =>
                {
                    line.last_writeback = Some(LastWriteback {
                        goal: goal.clone(),
                        run: run.id.to_owned(),
                        at: run.at,
                        todo: run.todo.map(str::to_owned),
                    });
                }
                _ => {}
            }
            line.last_seen = line.last_seen.max(Some(run.at));
        }
    }
    for panel in goals {
        for c in &panel.status.claims {
            let line = lines
                .entry(c.agent.clone())
                .or_insert_with(|| blank(&c.agent));
            line.claims.push(AgentClaim {
                goal: panel.status.goal.id.clone(),
                todo: c.todo.clone(),
                text: c.text.clone(),
                epoch: c.epoch,
                expires_at: c.expires_at,
                seconds_left: c.seconds_left,
            });
            let acquired = state.goals[&panel.status.goal.id]
                .todos
                .get(&c.todo)
                .and_then(|t| t.claim.as_ref())
                .map(|claim| claim.acquired_at);
            line.last_seen = line.last_seen.max(acquired);
        }
    }
    lines
        .into_values()
        .map(|mut line| {
            line.stale = line
                .last_seen
                .is_none_or(|seen| seen.seconds_until(now) > stale_after);
            line
        })
        .collect()
}

/// The hour `now` is in, and the [`HOURS`] - 1 before it.
fn window(now: Timestamp) -> Timestamp {
    let hour = now.unix().div_euclid(3600) * 3600;
    Timestamp::from_unix(hour - 3600 * (HOURS as i64 - 1))
}

fn slot(start: Timestamp, at: Timestamp, hours: usize) -> Option<usize> {
    usize::try_from(start.seconds_until(at).div_euclid(3600))
        .ok()
        .filter(|&i| i < hours)
}

/// Writebacks and finished todos per hour and agent, over every goal.
pub fn activity(state: &State, now: Timestamp) -> Activity {
    let start = window(now);
    let mut series: BTreeMap<String, Series> = BTreeMap::new();
    let mut bump = |agent: Option<&str>, at: Timestamp, done: bool| {
        let Some(i) = slot(start, at, HOURS) else {
            return;
        };
        let agent = agent.unwrap_or("-");
        let s = series.entry(agent.to_owned()).or_insert_with(|| Series {
            agent: agent.to_owned(),
            writebacks: vec![0; HOURS],
            done: vec![0; HOURS],
        });
        if done {
            s.done[i] += 1;
        } else {
            s.writebacks[i] += 1;
        }
    };
    for gs in state.goals.values() {
        // Who wrote back last on each todo: the agent a finished todo counts for.
        let mut last: BTreeMap<&str, (Timestamp, Option<&str>)> = BTreeMap::new();
        for run in gs.runs.all_facts() {
            if run.kind != RunKind::Writeback {
                continue;
            }
            bump(run.agent, run.at, false);
            if let Some(todo) = run.todo {
                let entry = last.entry(todo).or_insert((run.at, run.agent));
                if run.at >= entry.0 {
                    *entry = (run.at, run.agent);
                }
            }
        }
        // An agent's todo: a gate answered or a reminder done is the person's.
        let done: Vec<&str> = gs
            .todos
            .all_facts()
            .filter(|t| t.status == TodoStatus::Done && t.role == Role::Agent)
            .map(|t| t.id)
            .collect();
        for id in done {
            if let Some(todo) = gs.todos.get(id) {
                let agent = last.get(id).and_then(|(_, a)| *a);
                bump(agent, todo.updated_at, true);
            }
        }
    }
    Activity {
        start,
        hours: HOURS,
        series: series.into_values().collect(),
    }
}

/// Slots spent per hour over the goal's quota window (at most 48 hours),
/// oldest first, as the quota counts them.
pub fn spent_per_hour(gs: &GoalState, now: Timestamp) -> Vec<u32> {
    let hours = (gs.goal.quota.window_hours as usize).clamp(1, 48);
    let start = Timestamp::from_unix(now.unix() - 3600 * hours as i64);
    let mut out = vec![0; hours];
    for spend in quota::counted_spends(gs, now) {
        // (start, now]: a spend exactly `hours` ago has left the window.
        if let Some(i) = slot(start, spend.at.plus_seconds(-1), hours) {
            out[i] += spend.slots.unwrap_or(1);
        }
    }
    out
}
