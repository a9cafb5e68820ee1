//! `status`: what needs the human first, then what runs, what is next, the
//! quota, and recent evidence.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::quota::{self, Usage};
use crate::model::{
    select, Decision, GoalState, GoalStatus, Priority, Role, Run, RunKind, State, Timestamp, Todo,
    TodoClass, TodoCounts, TodoStatus,
};
use crate::session::Context;
use crate::store::Oid;
use crate::Result;

/// `status`, and the `status` tool (see `ops::args`).
#[derive(Debug, Clone, clap::Args, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct StatusArgs {
    /// Every goal: a line for each, then each one's status in full.
    #[arg(long)]
    #[serde(default)]
    pub all: bool,
}

/// How many run records and next todos `status` lists.
const RECENT_RUNS: usize = 5;
const NEXT_TODOS: usize = 5;

#[derive(Debug, Serialize)]
pub struct GoalSummary {
    pub id: String,
    pub objective: String,
    pub status: GoalStatus,
    /// Whether this is the default goal (commands about another goal need
    /// `--goal <id>`).
    pub default: bool,
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
    pub priority: Priority,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
    /// The todo's `validate` command, exactly as written into state. It
    /// runs only when an agent completes the todo, never for the person.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validate: Option<String>,
}

/// An open gate, in the shape every command shows a gate in.
pub type GateLine = crate::model::gate::GateView;

/// A gate a person answered: who, when, and whether it counts.
#[derive(Debug, Serialize)]
pub struct AnsweredLine {
    pub id: String,
    pub question: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// The git identity of the person who resolved it (`name <email>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<Timestamp>,
    /// False when `gate_signers` is set and the resolving commit is not
    /// signed by a gate signer: the gate is then still open in effect.
    pub counts: bool,
}

/// How many answered gates `status` lists.
const ANSWERED_GATES: usize = 5;

/// A monitor's schedule, as `status` shows it.
#[derive(Debug, Serialize)]
pub struct MonitorLine {
    pub id: String,
    pub text: String,
    pub cadence: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_due_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    pub expired: bool,
    pub watch_only: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_poll: Option<crate::model::Poll>,
    /// One line for a person: cadence, next due or expired, last poll.
    pub summary: String,
}

fn monitor_line(todo: &Todo, now: Timestamp) -> Option<MonitorLine> {
    let m = todo.monitor.as_ref()?;
    Some(MonitorLine {
        id: todo.id.clone(),
        text: todo.text.clone(),
        cadence: m.cadence.clone(),
        next_due_at: m.next_due_at,
        expires_at: m.expires_at,
        expired: m.expired(now),
        watch_only: m.watch_only,
        last_poll: m.polls.last().cloned(),
        summary: crate::ops::monitor::summary(todo, now)?,
    })
}

#[derive(Debug, Serialize)]
pub struct ClaimLine {
    pub todo: String,
    pub text: String,
    pub agent: String,
    pub epoch: u64,
    pub expires_at: Timestamp,
    pub seconds_left: i64,
}

#[derive(Debug, Serialize)]
pub struct StatusReport {
    pub commit: Oid,
    pub now: Timestamp,
    pub goal: GoalSummary,
    pub counts: TodoCounts,
    /// Open gates: decisions only the human can make.
    pub gates: Vec<GateLine>,
    /// The latest gates a person answered, newest first.
    pub answered: Vec<AnsweredLine>,
    /// Open `user_action` reminders.
    pub user_actions: Vec<TodoLine>,
    /// Live leases, soonest expiry first.
    pub claims: Vec<ClaimLine>,
    /// Ready, unclaimed agent todos, in the order agents will take them.
    pub next: Vec<TodoLine>,
    /// Agent todos marked `blocked`, and open `blocker`s, with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<BlockedLine>,
    /// Every todo that is not done or deferred.
    pub todos: Vec<TodoLine>,
    /// Open monitors: their cadence, when next due, the last poll.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub monitors: Vec<MonitorLine>,
    pub quota: Usage,
    /// The latest writebacks, newest first.
    pub recent_runs: Vec<Run>,
    /// Each agent registered or named by the goal's runs or claims, by id.
    pub agents: Vec<AgentHealth>,
    /// The latest attempts on the person's authority refused on this host
    /// in the last week (`session::refused`), newest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<crate::session::refused::Refused>,
    /// Answers to gates that do not count under `gate_signers`: each one's
    /// claimed author, time and commit (the gate is listed as open).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored_answers: Vec<crate::ops::signers::IgnoredAnswer>,
    /// Runtimes installed from this clone that their files no longer
    /// govern (a hook file changed or gone): the next session would run
    /// ungoverned.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub governance_lost: Vec<crate::ops::hooks::Ungoverned>,
}

/// What says an agent is failing in a goal.
#[derive(Debug, Serialize)]
pub struct AgentHealth {
    pub id: String,
    /// None of the failures below.
    pub healthy: bool,
    /// Its latest turn receipt (`should-run --turn`) in the goal (archived
    /// ones too).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_turn: Option<Timestamp>,
    /// Its latest writeback in the goal (archived ones too).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_writeback: Option<Timestamp>,
    /// Its `git loopx run` turns in a row that failed, on this host.
    pub consecutive_failures: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<crate::ops::run::Turn>,
    /// Sessions the Stop hook's loop guard let end since its last
    /// writeback, on this host.
    pub guard_releases: u32,
    /// The todos whose lease it let expire with no writeback on them since
    /// it took the lease.
    pub expired_leases: Vec<String>,
}

/// [`AgentHealth`] of each agent of the goal: from this host's records of
/// `run` and the Stop hook, and the leases and writebacks on the branch.
fn agents(ctx: &Context, state: &State, gs: &GoalState, todos: &[&Todo]) -> Vec<AgentHealth> {
    let mut writebacks: BTreeMap<&str, Vec<(Option<&str>, Timestamp)>> = state
        .agents
        .keys()
        .map(|id| (id.as_str(), Vec::new()))
        .collect();
    let mut turns: BTreeMap<&str, Timestamp> = BTreeMap::new();
    for run in gs.runs.all_facts() {
        if let Some(agent) = run.agent {
            let seen = writebacks.entry(agent).or_default();
            match run.kind {
                RunKind::Writeback => seen.push((run.todo, run.at)),
                RunKind::Turn => {
                    let last = turns.entry(agent).or_insert(run.at);
                    *last = (*last).max(run.at);
                }
                _ => {}
            }
        }
    }
    let mut expired: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for t in todos.iter().filter(|t| !t.status.is_terminal()) {
        let Some(c) = t.claim.as_ref() else { continue };
        let wrote = writebacks.get(c.agent.as_str()).is_some_and(|w| {
            w.iter()
                .any(|&(todo, at)| todo == Some(t.id.as_str()) && at >= c.acquired_at)
        });
        if !c.is_live(ctx.now) && !wrote {
            expired.entry(&c.agent).or_default().push(t.id.clone());
        }
        writebacks.entry(&c.agent).or_default();
    }
    let goal = &gs.goal.id;
    // What the archived runs said of each: a day away reads the same.
    let archived = crate::model::retention::last_seen(&gs.goal.archive);
    for id in archived.keys() {
        writebacks.entry(id).or_default();
    }
    writebacks
        .into_iter()
        .map(|(id, wrote)| {
            let before = archived.get(id);
            let failed = crate::ops::run::failures(ctx, goal, id);
            let guard_releases =
                crate::ops::hook::session::guard_releases(ctx, id, wrote.len() as u64);
            let expired_leases = expired.remove(id).unwrap_or_default();
            AgentHealth {
                id: id.to_owned(),
                healthy: failed.count == 0 && guard_releases == 0 && expired_leases.is_empty(),
                last_turn: turns.get(id).copied().max(before.and_then(|b| b.turn)),
                last_writeback: wrote
                    .iter()
                    .map(|&(_, at)| at)
                    .max()
                    .max(before.and_then(|b| b.writeback)),
                consecutive_failures: failed.count,
                last_failure: failed.last,
                guard_releases,
                expired_leases,
            }
        })
        .collect()
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
        validate: todo.validate.clone(),
    }
}

/// Every goal's status, the default goal first, then by id.
#[derive(Debug, Serialize)]
pub struct AllReport {
    pub commit: Oid,
    pub goals: Vec<StatusReport>,
}

pub fn status(ctx: &Context) -> Result<StatusReport> {
    let (tip, state) = ctx.load()?;
    let goal_id = ctx.goal(&state)?.goal.id.clone();
    of_goal(ctx, tip, &state, &goal_id)
}

/// `status --all`: [`status`] of every goal.
pub fn status_all(ctx: &Context) -> Result<AllReport> {
    let (tip, state) = ctx.load()?;
    let mut ids: Vec<String> = state.goals.keys().cloned().collect();
    ids.sort_by_key(|id| (*id != state.meta.default_goal, id.clone()));
    let goals = ids
        .iter()
        .map(|id| of_goal(ctx, tip.clone(), &state, id))
        .collect::<Result<_>>()?;
    Ok(AllReport { commit: tip, goals })
}

fn of_goal(ctx: &Context, tip: Oid, state: &State, goal_id: &str) -> Result<StatusReport> {
    let ignored_answers = crate::ops::signers::ignored_answers_of(ctx, &tip, state, goal_id)?;
    let unsigned: std::collections::BTreeSet<String> =
        ignored_answers.iter().map(|a| a.gate.clone()).collect();
    let reopened;
    let state = if unsigned.is_empty() {
        state
    } else {
        let mut copy = state.clone();
        crate::ops::signers::reopen(&mut copy, goal_id, &unsigned);
        reopened = copy;
        &reopened
    };
    let gs = &state.goals[goal_id];
    let now = ctx.now;
    let mut todos: Vec<&Todo> = gs.todos.values().collect();
    todos.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
    let gates = todos
        .iter()
        .filter(|t| t.is_gate() && t.status == TodoStatus::Open)
        .map(|t| GateLine {
            resolution_not_signed: unsigned.contains(&t.id),
            ..GateLine::of(t)
        })
        .collect();
    let mut answered: Vec<AnsweredLine> = todos
        .iter()
        .filter(|t| t.is_gate() && (t.status == TodoStatus::Done || unsigned.contains(&t.id)))
        .map(|t| AnsweredLine {
            id: t.id.clone(),
            question: t.text.clone(),
            decision: t.decision,
            resolved_by: t.resolved_by.clone(),
            resolved_at: t.resolved_at,
            counts: !unsigned.contains(&t.id),
        })
        .collect();
    answered.sort_by(|a, b| (b.resolved_at, &b.id).cmp(&(a.resolved_at, &a.id)));
    answered.truncate(ANSWERED_GATES);
    let user_actions = todos
        .iter()
        .filter(|t| t.class == TodoClass::UserAction && !t.status.is_terminal())
        .map(|t| line(t, now))
        .collect();
    let mut claims: Vec<ClaimLine> = todos
        .iter()
        .filter(|t| !t.status.is_terminal())
        .filter_map(|t| t.live_claim(now).map(|c| (t, c)))
        .map(|(t, c)| ClaimLine {
            todo: t.id.clone(),
            text: t.text.clone(),
            agent: c.agent.clone(),
            epoch: c.epoch,
            expires_at: c.expires_at,
            seconds_left: now.seconds_until(c.expires_at),
        })
        .collect();
    claims.sort_by(|a, b| (a.expires_at, &a.todo).cmp(&(b.expires_at, &b.todo)));
    // What an agent with every capability would be offered next.
    let all_caps: Vec<String> = gs
        .todos
        .values()
        .flat_map(|t| t.requires_capabilities.iter().cloned())
        .collect();
    let next = select::select(gs, None, &all_caps, now)
        .candidates
        .iter()
        .take(NEXT_TODOS)
        .map(|c| line(&gs.todos[c.id], now))
        .collect();
    let open = todos
        .iter()
        .filter(|t| !t.status.is_terminal())
        .map(|t| line(t, now))
        .collect();
    let monitors = todos
        .iter()
        .filter(|t| !t.status.is_terminal())
        .filter_map(|t| monitor_line(t, now))
        .collect();
    let mut runs: Vec<&Run> = gs
        .runs
        .values()
        .filter(|r| r.kind == RunKind::Writeback)
        .collect();
    runs.sort_by(|a, b| b.added_key().cmp(&a.added_key()));
    Ok(StatusReport {
        commit: tip,
        now,
        goal: GoalSummary {
            id: gs.goal.id.clone(),
            objective: gs.goal.objective.clone(),
            status: gs.goal.status,
            default: gs.goal.id == state.meta.default_goal,
            next_action: gs.goal.next_action.clone(),
        },
        counts: state.counts(&gs.goal.id, now),
        gates,
        answered,
        user_actions,
        claims,
        next,
        blocked: blocked(gs),
        todos: open,
        monitors,
        quota: quota::usage(gs, now),
        recent_runs: runs.into_iter().take(RECENT_RUNS).cloned().collect(),
        agents: agents(ctx, state, gs, &todos),
        refused: crate::session::refused::latest(
            ctx.store.common_dir(),
            now.plus_seconds(-7 * 24 * 3600),
            REFUSED_SHOWN,
        ),
        ignored_answers,
        governance_lost: crate::ops::hooks::governance_lost(ctx),
    })
}

/// A blocked todo or an open blocker, and why.
#[derive(Debug, Clone, Serialize)]
pub struct BlockedLine {
    pub id: String,
    pub text: String,
    pub class: TodoClass,
    pub priority: Priority,
    /// The todo's latest note (what whoever blocked it said), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// The goal's blocked agent todos and open blockers, by order.
pub fn blocked(gs: &GoalState) -> Vec<BlockedLine> {
    let mut out: Vec<&Todo> = gs
        .todos
        .values()
        .filter(|t| t.role == Role::Agent)
        .filter(|t| {
            t.status == TodoStatus::Blocked
                || (t.class == TodoClass::Blocker && !t.status.is_terminal())
        })
        .collect();
    out.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
    out.into_iter()
        .map(|t| BlockedLine {
            id: t.id.clone(),
            text: t.text.clone(),
            class: t.class,
            priority: t.priority,
            why: t.notes.last().map(|n| n.text.clone()),
        })
        .collect()
}

/// How many refused attempts on the person's authority `status` shows.
const REFUSED_SHOWN: usize = 5;
