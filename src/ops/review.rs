//! `review`: the owner's packet — decisions waiting, what was delivered with
//! its evidence, and what changed since the last review (`refs/loopx/reviewed`).

use serde::Serialize;

use crate::model::diff::{self, Change};
use std::collections::BTreeSet;

use crate::model::{limits, GoalState, Run, RunKind, Todo, TodoClass, TodoStatus};
use crate::ops::signers::IgnoredAnswer;
use crate::session::Context;
use crate::store::{transaction, Error as StoreError, Oid, REVIEWED_REF};
use crate::Result;

#[derive(Debug, Serialize)]
pub struct ReviewReport {
    pub goal: String,
    /// Whether `goal` is the default goal (commands about another goal
    /// need `--goal <id>`).
    pub default: bool,
    pub objective: String,
    /// The state commit reviewed last (or `--since`); `None` reviews everything.
    pub since: Option<Oid>,
    pub tip: Oid,
    /// State commits since then.
    pub commits: usize,
    /// Open gates: the decisions waiting for you.
    pub decisions: Vec<Todo>,
    pub user_actions: Vec<Todo>,
    /// Gates a person answered since then, with who answered
    /// (`resolved_by`) and whether the answer counts.
    pub answered: Vec<Answered>,
    /// Writebacks recorded since then, oldest first.
    pub delivered: Vec<Run>,
    /// Todos completed since then.
    pub completed: Vec<Todo>,
    /// Blocked todos and open blockers now, with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<crate::ops::status::BlockedLine>,
    /// Handoffs made since then, with their notes.
    pub handoffs: Vec<ReviewHandoff>,
    /// Everything else that changed.
    pub changes: Vec<Change>,
    /// `--ack` moved `refs/loopx/reviewed` to `tip`.
    pub acked: bool,
    /// Every answer that does not count under `gate_signers` (its gate is
    /// among `decisions`), however long ago it was made.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored_answers: Vec<crate::ops::signers::IgnoredAnswer>,
}

/// A gate answered since the last review.
#[derive(Debug, Serialize)]
pub struct Answered {
    #[serde(flatten)]
    pub gate: Todo,
    /// False when `gate_signers` is set and the resolving commit is not
    /// signed by a gate signer: the gate is then still open in effect.
    pub counts: bool,
    /// When it does not count: who it claims, when, and its commit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignored: Option<crate::ops::signers::IgnoredAnswer>,
}

/// A handoff made since the last review.
#[derive(Debug, Serialize)]
pub struct ReviewHandoff {
    pub todo: String,
    pub text: String,
    #[serde(flatten)]
    pub handoff: crate::ops::pr::Handoff,
    /// The packet this handoff left, while it is the todo's latest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packet: Option<crate::model::handoff::Handoff>,
}

impl ReviewReport {
    pub fn is_empty(&self) -> bool {
        self.commits == 0
    }
}

pub fn review(ctx: &Context, since: Option<&str>, ack: bool) -> Result<ReviewReport> {
    if ack {
        ctx.person_moves(crate::session::PersonRef::Reviewed)?;
    }
    let (tip, mut state) = ctx.load()?;
    let goal_id = ctx.goal(&state)?.goal.id.clone();
    let ignored_answers =
        crate::ops::signers::ignored_answers_of(ctx, &tip, &state, &ctx.goal(&state)?.goal.id)?;
    let unsigned: BTreeSet<String> = ignored_answers.iter().map(|a| a.gate.clone()).collect();
    let reviewed = ctx.store.try_find_ref(REVIEWED_REF)?;
    let since = match since {
        Some(rev) => Some(crate::ops::revision::state_commit(ctx, rev)?),
        None => reviewed.clone(),
    };
    let old_state = match &since {
        Some(commit) => Some(transaction::state_at(&ctx.store, commit)?),
        None => None,
    };
    let gs = ctx.goal(&state)?;
    let goal = gs.goal.id.clone();
    let commits = commits_since(ctx, since.as_ref(), &tip)?;
    let changes = if commits == 0 {
        Vec::new()
    } else {
        diff::diff(old_state.as_ref(), &state, &goal)
    };
    let old_goal = old_state.as_ref().and_then(|s| s.goals.get(&goal));
    let handoffs = handoffs_in(&changes, gs, old_goal);
    let Sorted {
        mut delivered,
        completed,
        answered,
        rest,
    } = sort_changes(changes, gs, &unsigned, &ignored_answers);
    if commits > 0 {
        let mut all = archived_writebacks(ctx, gs, old_goal)?;
        all.append(&mut delivered);
        delivered = all;
    }
    delivered.sort_by(|a, b| (a.at, &a.id).cmp(&(b.at, &b.id)));
    let _ = gs;
    crate::ops::signers::reopen(&mut state, &goal_id, &unsigned);
    let gs = ctx.goal(&state)?;
    let mut decisions: Vec<Todo> = gs
        .todos
        .values()
        .filter(|t| t.is_gate() && t.status == TodoStatus::Open)
        .cloned()
        .collect();
    decisions.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
    let user_actions = gs
        .todos
        .values()
        .filter(|t| t.class == TodoClass::UserAction && !t.status.is_terminal())
        .cloned()
        .collect();
    let acked = ack && acknowledge(ctx, reviewed.as_ref(), &tip)?;
    Ok(ReviewReport {
        default: goal == state.meta.default_goal,
        goal,
        objective: gs.goal.objective.clone(),
        since,
        tip,
        commits,
        decisions,
        user_actions,
        answered,
        delivered,
        completed,
        blocked: crate::ops::status::blocked(gs),
        handoffs,
        changes: rest,
        acked,
        ignored_answers,
    })
}

/// State commits from `since` (exclusive) up to `tip`, along first
/// parents; every commit when there is no `since`.
fn commits_since(ctx: &Context, since: Option<&Oid>, tip: &Oid) -> Result<usize> {
    Ok(match since {
        Some(s) if s == tip => 0,
        Some(s) => {
            let log = ctx.store.first_parent_log_while(tip, |c| c.id != *s)?;
            log.iter().position(|c| c.id == *s).unwrap_or(log.len())
        }
        None => ctx.store.first_parent_log(tip, usize::MAX)?.len(),
    })
}

/// The handoffs the added or changed todos' new notes record, each with its
/// packet while it is the todo's latest.
fn handoffs_in(
    changes: &[Change],
    gs: &GoalState,
    old_goal: Option<&GoalState>,
) -> Vec<ReviewHandoff> {
    let mut handoffs = Vec::new();
    // Each todo's notes, moved ones included: the runs read once a side.
    let mut old_moved = old_goal.map(|g| g.moved_notes()).unwrap_or_default();
    let mut moved = gs.moved_notes();
    for change in changes {
        if let Change::TodoChanged { id, .. } | Change::TodoAdded { id, .. } = change {
            let todo = &gs.todos[id];
            let seen = old_goal
                .and_then(|g| g.todos.get(id))
                .map(|t| limits::with_moved(t, old_moved.remove(id).unwrap_or_default()))
                .unwrap_or_default();
            let notes = limits::with_moved(todo, moved.remove(id).unwrap_or_default());
            let new = notes.iter().filter(|n| !seen.contains(n));
            for h in crate::ops::pr::handoffs(new) {
                let packet = todo
                    .handoff
                    .as_ref()
                    .filter(|p| p.has_packet() && p.to == h.to && p.at == h.at)
                    .map(|p| (**p).clone());
                handoffs.push(ReviewHandoff {
                    todo: id.clone(),
                    text: todo.text.clone(),
                    handoff: h,
                    packet,
                });
            }
        }
    }
    handoffs
}

/// The changes, sorted by what the packet tells of them.
struct Sorted {
    delivered: Vec<Run>,
    completed: Vec<Todo>,
    answered: Vec<Answered>,
    /// Everything else (gates answered and todos done too: their
    /// other fields may have changed).
    rest: Vec<Change>,
}

/// Sorts the changes: writebacks delivered, todos completed, gates
/// answered (counting unless `unsigned` holds them), and the rest.
fn sort_changes(
    changes: Vec<Change>,
    gs: &GoalState,
    unsigned: &BTreeSet<String>,
    ignored_answers: &[IgnoredAnswer],
) -> Sorted {
    let mut delivered = Vec::new();
    let mut completed = Vec::new();
    let mut rest = Vec::new();
    let mut answered = Vec::new();
    for change in changes {
        match &change {
            Change::TodoChanged { id, .. } | Change::TodoAdded { id, .. }
                if gs.todos[id].is_gate() && gs.todos[id].status == TodoStatus::Done =>
            {
                answered.push(Answered {
                    gate: gs.todos[id].clone(),
                    counts: !unsigned.contains(id),
                    ignored: ignored_answers.iter().find(|a| a.gate == *id).cloned(),
                });
                rest.push(change);
            }
            Change::RunAdded { id, .. } if gs.runs[id].kind == RunKind::Writeback => {
                delivered.push(gs.runs[id].clone())
            }
            Change::TodoChanged { id, .. } | Change::TodoAdded { id, .. }
                if gs.todos[id].status == TodoStatus::Done
                    && gs.todos[id].class != TodoClass::UserGate =>
            {
                completed.push(gs.todos[id].clone());
                rest.push(change);
            }
            _ => rest.push(change),
        }
    }
    Sorted {
        delivered,
        completed,
        answered,
        rest,
    }
}

/// Runs written in the range and archived in it too: the two ends'
/// states do not hold them, the archives made since do. A first
/// review (or one from before the goal) takes every archive.
fn archived_writebacks(
    ctx: &Context,
    gs: &GoalState,
    old_goal: Option<&GoalState>,
) -> Result<Vec<Run>> {
    let live: BTreeSet<&str> = gs.runs.keys().collect();
    let archived = match old_goal {
        Some(old) => crate::session::retention::archived_since(ctx, &gs.goal, &live, Some(old))?,
        None => crate::session::retention::archived_runs(ctx, &gs.goal, "0000-00-00", None)?
            .into_iter()
            .filter(|r| !live.contains(r.id.as_str()))
            .collect(),
    };
    Ok(archived
        .into_iter()
        .filter(|r| r.kind == RunKind::Writeback)
        .collect())
}

/// Moves `refs/loopx/reviewed` from `reviewed` to `tip` (`--ack`); whether
/// it moved (not when it was there already).
fn acknowledge(ctx: &Context, reviewed: Option<&Oid>, tip: &Oid) -> Result<bool> {
    if reviewed == Some(tip) {
        return Ok(false);
    }
    let moved = ctx
        .store
        .move_ref(REVIEWED_REF, reviewed, tip, "loopx: review --ack", ctx.now)?;
    if !moved {
        return Err(StoreError::Contended { attempts: 1 }.into());
    }
    Ok(true)
}
