//! `status`: what needs the human, what runs, who holds what, recent evidence.

use serde::Serialize;

use crate::model::{
    Claim, GoalStatus, Role, Run, Timestamp, Todo, TodoClass, TodoCounts, TodoStatus,
};
use crate::ops::Context;
use crate::store::Oid;
use crate::Result;

/// How many run records `status` lists.
const RECENT_RUNS: usize = 5;

#[derive(Debug, Serialize)]
pub struct GoalSummary {
    pub id: String,
    pub objective: String,
    pub status: GoalStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_action: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct TodoLine {
    pub id: String,
    pub text: String,
    pub role: Role,
    pub class: TodoClass,
    pub status: TodoStatus,
    pub priority: crate::model::Priority,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct ClaimLine {
    pub todo: String,
    pub agent: String,
    pub epoch: u64,
    pub expires_at: Timestamp,
    pub seconds_left: i64,
}

#[derive(Debug, Serialize)]
pub struct QuotaLine {
    pub allowed_slots: u32,
    pub window_hours: u32,
}

#[derive(Debug, Serialize)]
pub struct StatusReport {
    pub commit: Oid,
    pub now: Timestamp,
    pub goal: GoalSummary,
    pub counts: TodoCounts,
    pub gates: Vec<TodoLine>,
    pub claims: Vec<ClaimLine>,
    pub todos: Vec<TodoLine>,
    pub quota: QuotaLine,
    pub recent_runs: Vec<Run>,
}

fn line(todo: &Todo, now: Timestamp) -> TodoLine {
    TodoLine {
        id: todo.id.clone(),
        text: todo.text.clone(),
        role: todo.role,
        class: todo.class,
        status: todo.status,
        priority: todo.priority,
        claimed_by: todo.live_claim(now).map(|c| c.agent.clone()),
    }
}

pub fn status(ctx: &Context) -> Result<StatusReport> {
    let (snapshot, state) = ctx.load()?;
    let gs = ctx.goal(&state)?;
    let now = ctx.now;
    let mut todos: Vec<&Todo> = gs.todos.values().collect();
    todos.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
    let gates = todos
        .iter()
        .filter(|t| t.is_gate() && t.status == TodoStatus::Open)
        .map(|t| line(t, now))
        .collect();
    let claims = todos
        .iter()
        .filter(|t| !t.status.is_terminal())
        .filter_map(|t| t.live_claim(now).map(|c: &Claim| (t, c)))
        .map(|(t, c)| ClaimLine {
            todo: t.id.clone(),
            agent: c.agent.clone(),
            epoch: c.epoch,
            expires_at: c.expires_at,
            seconds_left: now.seconds_until(c.expires_at),
        })
        .collect();
    let open = todos
        .iter()
        .filter(|t| !t.status.is_terminal() && !t.is_gate())
        .map(|t| line(t, now))
        .collect();
    let mut runs: Vec<&Run> = gs.runs.values().collect();
    runs.sort_by(|a, b| (b.at, &b.id).cmp(&(a.at, &a.id)));
    Ok(StatusReport {
        commit: snapshot.commit.expect("loaded state has a commit"),
        now,
        goal: GoalSummary {
            id: gs.goal.id.clone(),
            objective: gs.goal.objective.clone(),
            status: gs.goal.status,
            next_action: gs.goal.next_action.clone(),
        },
        counts: state.counts(&gs.goal.id, now),
        gates,
        claims,
        todos: open,
        quota: QuotaLine {
            allowed_slots: gs.goal.quota.allowed_slots(),
            window_hours: gs.goal.quota.window_hours,
        },
        recent_runs: runs.into_iter().take(RECENT_RUNS).cloned().collect(),
    })
}
