//! `todo claim | renew | release | next | handoff`: lease operations.

use serde::Serialize;

use crate::model::lease::{self, ClaimAction};
use crate::model::{select, Claim, Code, Refusal, Todo};
use crate::ops::{add_note, local, mutate, non_empty, resolve_todo, touch, Context};
use crate::store::{Message, Oid, Store};
use crate::Result;

#[derive(Debug, Serialize)]
pub struct ClaimReport {
    pub action: ClaimAction,
    pub todo: Todo,
    pub claim: Claim,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
}

fn claimed(todo: &Todo) -> Claim {
    todo.claim.clone().expect("a claimed todo has a claim")
}

/// `todo claim ID [--ttl]`.
pub fn claim(ctx: &Context, query: &str, ttl: i64) -> Result<ClaimReport> {
    let agent = ctx.require_agent()?.to_owned();
    let ttl = lease::check_ttl(ttl)?;
    let done = mutate(ctx, |state, goal| {
        let gs = state.goals.get_mut(goal).expect("goal exists");
        let id = resolve_todo(gs, query)?;
        let todo = gs.todos.get_mut(&id).expect("resolved");
        let action = lease::claim(todo, &agent, ctx.now, ttl)?;
        touch(todo, ctx.now);
        let c = claimed(todo);
        let verb = if action == ClaimAction::Renewed {
            "renew"
        } else {
            "claim"
        };
        let message = Message::new(
            &format!("todo {verb}"),
            format!("todo {verb} {id} by {agent} (epoch {})", c.epoch),
        )
        .trailer("Loopx-Todo", id.clone());
        Ok(((action, todo.clone()), message))
    })?;
    let (action, todo) = done.value;
    let claim = claimed(&todo);
    local::record_grant(ctx, &agent, &todo.id, claim.epoch);
    Ok(ClaimReport {
        action,
        todo,
        claim,
        commit: done.commit,
    })
}

/// `todo claim --sync` / `todo next --claim --sync`: a remote compare-and-swap.
/// Sync, claim locally, push with the lease; on a rejected push sync again
/// (the remote's claim wins any merge) and decide again. The claim is
/// confirmed only once it is on the remote.
pub fn claim_synced(
    ctx: &Context,
    remote: Option<&str>,
    mut claim_once: impl FnMut() -> Result<ClaimReport>,
) -> Result<ClaimReport> {
    use crate::ops::sync;
    let remote = sync::remote_name(ctx, remote);
    for _ in 0..sync::MAX_ROUNDS {
        let synced = sync::sync(ctx, Some(&remote))?;
        let report = claim_once()?;
        let tip = ctx.store.tip()?.expect("a claim leaves a tip");
        if sync::push(ctx, &remote, &tip, Some(&synced.remote_tip))? {
            return Ok(report);
        }
    }
    Err(Refusal::new(
        Code::PushRejected,
        format!("{remote} kept moving: the claim was not confirmed"),
    )
    .into())
}

/// `todo next [--claim]`: what `should-run` would select for this agent.
pub fn next(
    ctx: &Context,
    capabilities: &[String],
    take: bool,
    ttl: i64,
) -> Result<ClaimReportOrTodo> {
    let ttl = lease::check_ttl(ttl)?;
    if !take {
        let (_, state) = ctx.load()?;
        let gs = ctx.goal(&state)?;
        let caps = agent_capabilities(&state, ctx.agent(), capabilities);
        let sel = select::select(gs, ctx.agent(), &caps, ctx.now);
        let todo = sel
            .first()
            .map(|c| gs.todos[c.id].clone())
            .ok_or_else(|| nothing_ready(&sel))?;
        return Ok(ClaimReportOrTodo::Todo { todo });
    }
    let agent = ctx.require_agent()?.to_owned();
    let done = mutate(ctx, |state, goal| {
        let caps = agent_capabilities(state, Some(&agent), capabilities);
        let gs = state.goals.get(goal).expect("goal exists");
        let sel = select::select(gs, Some(&agent), &caps, ctx.now);
        let id = sel
            .first()
            .map(|c| c.id.to_owned())
            .ok_or_else(|| nothing_ready(&sel))?;
        let todo = state
            .goals
            .get_mut(goal)
            .expect("goal exists")
            .todos
            .get_mut(&id)
            .expect("selected");
        let action = lease::claim(todo, &agent, ctx.now, ttl)?;
        touch(todo, ctx.now);
        let epoch = claimed(todo).epoch;
        let message = Message::new(
            "todo next --claim",
            format!("todo claim {id} by {agent} (epoch {epoch}, next)"),
        )
        .trailer("Loopx-Todo", id.clone());
        Ok(((action, todo.clone()), message))
    })?;
    let (action, todo) = done.value;
    let claim = claimed(&todo);
    local::record_grant(ctx, &agent, &todo.id, claim.epoch);
    Ok(ClaimReportOrTodo::Claimed(ClaimReport {
        action,
        todo,
        claim,
        commit: done.commit,
    }))
}

/// `todo next` without `--claim` reports the todo; with it, the claim.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum ClaimReportOrTodo {
    Claimed(ClaimReport),
    Todo { todo: Todo },
}

fn nothing_ready(sel: &select::Selection<'_>) -> crate::Error {
    let mut why = Vec::new();
    if sel.held_by_others > 0 {
        why.push(format!("{} held by other agents", sel.held_by_others));
    }
    if !sel.gated.is_empty() {
        why.push(format!("{} waiting for a gate", sel.gated.len()));
    }
    if sel.waiting > 0 {
        why.push(format!("{} blocked or waiting", sel.waiting));
    }
    let detail = if why.is_empty() {
        "no open agent todos".to_owned()
    } else {
        why.join(", ")
    };
    Refusal::new(
        Code::NothingReady,
        format!("nothing ready for this agent ({detail})"),
    )
    .into()
}

/// Capabilities: the agent's registered ones plus those passed on the command line.
pub fn agent_capabilities(
    state: &crate::model::State,
    agent: Option<&str>,
    extra: &[String],
) -> Vec<String> {
    let mut caps: Vec<String> = agent
        .and_then(|a| state.agents.get(a))
        .map(|a| a.capabilities.clone())
        .unwrap_or_default();
    caps.extend(extra.iter().cloned());
    caps.sort();
    caps.dedup();
    caps
}

#[derive(Debug, Serialize)]
pub struct LeaseReport {
    pub todo: Todo,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
}

/// `todo renew ID [--ttl] [--epoch]`.
pub fn renew(ctx: &Context, query: &str, ttl: i64, epoch: Option<u64>) -> Result<LeaseReport> {
    let agent = ctx.require_agent()?.to_owned();
    let ttl = lease::check_ttl(ttl)?;
    let done = mutate(ctx, |state, goal| {
        let gs = state.goals.get_mut(goal).expect("goal exists");
        let id = resolve_todo(gs, query)?;
        let expected = local::expected_epoch(ctx, &agent, &id, epoch);
        let todo = gs.todos.get_mut(&id).expect("resolved");
        let e = lease::renew(todo, &agent, expected, ctx.now, ttl)?;
        touch(todo, ctx.now);
        let message = Message::new(
            "todo renew",
            format!("todo renew {id} by {agent} (epoch {e})"),
        )
        .trailer("Loopx-Todo", id.clone());
        Ok((todo.clone(), message))
    })?;
    Ok(LeaseReport {
        todo: done.value,
        commit: done.commit,
    })
}

/// `todo release ID [--epoch]`.
pub fn release(ctx: &Context, query: &str, epoch: Option<u64>) -> Result<LeaseReport> {
    let agent = ctx.require_agent()?.to_owned();
    let done = mutate(ctx, |state, goal| {
        let gs = state.goals.get_mut(goal).expect("goal exists");
        let id = resolve_todo(gs, query)?;
        let expected = local::expected_epoch(ctx, &agent, &id, epoch);
        let todo = gs.todos.get_mut(&id).expect("resolved");
        match lease::check_writer(todo, &agent, expected, ctx.now)? {
            lease::Standing::Holder(e) => {
                lease::release(todo);
                touch(todo, ctx.now);
                let message = Message::new(
                    "todo release",
                    format!("todo release {id} by {agent} (epoch {e})"),
                )
                .trailer("Loopx-Todo", id.clone());
                Ok((todo.clone(), message))
            }
            lease::Standing::Unclaimed => Err(Refusal::new(
                Code::NotClaimHolder,
                format!("{id} is not claimed by {agent}"),
            )
            .into()),
        }
    })?;
    local::forget_grant(ctx, &agent, &done.value.id);
    Ok(LeaseReport {
        todo: done.value,
        commit: done.commit,
    })
}

/// `todo handoff ID --to B --note T`: the lease moves to B with a new epoch.
pub fn handoff(
    ctx: &Context,
    query: &str,
    to: &str,
    note: &str,
    ttl: i64,
    epoch: Option<u64>,
) -> Result<ClaimReport> {
    let agent = ctx.require_agent()?.to_owned();
    crate::model::ids::check_name("agent", to)?;
    let note = non_empty("--note", note)?;
    let ttl = lease::check_ttl(ttl)?;
    if to == agent {
        return Err(Refusal::invalid_input("a handoff goes to another agent").into());
    }
    let done = mutate(ctx, |state, goal| {
        let gs = state.goals.get_mut(goal).expect("goal exists");
        let id = resolve_todo(gs, query)?;
        let expected = local::expected_epoch(ctx, &agent, &id, epoch);
        let todo = gs.todos.get_mut(&id).expect("resolved");
        lease::check_writer(todo, &agent, expected, ctx.now)?;
        let e = lease::transfer(todo, to, ctx.now, ttl)?;
        add_note(
            todo,
            ctx.now,
            Some(&agent),
            &format!("handoff to {to}: {note}"),
        )?;
        touch(todo, ctx.now);
        let message = Message::new(
            "todo handoff",
            format!("todo handoff {id} from {agent} to {to} (epoch {e})"),
        )
        .line(note.clone())
        .trailer("Loopx-Todo", id.clone());
        Ok((todo.clone(), message))
    })?;
    let todo = done.value;
    local::forget_grant(ctx, &agent, &todo.id);
    let claim = claimed(&todo);
    local::record_grant(ctx, to, &todo.id, claim.epoch);
    Ok(ClaimReport {
        action: ClaimAction::Acquired,
        todo,
        claim,
        commit: done.commit,
    })
}
