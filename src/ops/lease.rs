//! `todo claim | renew | release | next | handoff`: lease operations.
//!
//! A holder that asks again for a lease it holds (`claim`, `next --claim`,
//! `renew`) writes only when the lease is worth extending
//! (`model::lease::worth_extending`: more than half of the TTL asked for has
//! run); otherwise it is told `held` and nothing is committed.

mod args;
mod handoff;
mod shared;

pub use args::{ClaimArgs, HandoffArgs, NextArgs, ReleaseArgs, RenewArgs};
pub use handoff::{handoff, handoff_note, parse_handoff_note, release};

use serde::Serialize;

use crate::model::gate::{self, GateAction};
use crate::model::lease::Published;
use crate::model::lease::{self, ClaimAction};
use crate::model::Timestamp;
use crate::model::{select, Claim, Code, Refusal, State, Todo};
use crate::ops::args::Seconds;
use crate::ops::{resolve_todo, touch};
use crate::replicate;
use crate::session::write::Writer;
use crate::session::{local, mutate_maybe, Context};
use crate::store::{transaction, Message, Oid};
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

/// What a claim decided on a state: how it went, the todo after it, and the
/// commit message (none when the holder already held it: nothing to write).
type Decision = ((ClaimAction, Todo), Option<Message>);

/// What the remote's shared refs add to a claim's decision: the leases it
/// has published (a lease newer than the state is laid over its todo), the
/// todos this claimer just lost a lease race for, and how many peers share
/// the remote (`todo next` spreads them over that many ready todos). Empty
/// for a claim that is not confirmed on a remote.
#[derive(Default)]
pub struct RemoteView<'a> {
    leases: Option<&'a replicate::shared::Leases>,
    excluded: &'a [String],
    /// The peers sharing the remote, sorted, and this clone's among them.
    peers: &'a [String],
    me: &'a str,
}

impl RemoteView<'_> {
    fn lease(&self, goal: &str, todo: &str) -> Option<&Published> {
        self.leases?.get(goal, todo).map(|r| &r.lease)
    }

    /// Whether the remote's lease on `todo`, newer than the state, keeps
    /// `agent` from it at `now` (done, or held by another agent).
    fn keeps_from(&self, goal: &str, todo: &Todo, agent: &str, now: Timestamp) -> bool {
        self.lease(goal, &todo.id)
            .is_some_and(|p| p.keeps_from(todo, agent, now))
    }
}

/// Claims the chosen todo `id` for `agent` in `state`: the successor it
/// waits on woken, the remote's newer lease laid over it, the gate rules
/// checked, then the lease taken (or found held, when it is not worth
/// extending). The claim's decisions differ only in how they choose.
fn claim_chosen(
    ctx: &Context,
    state: &mut State,
    goal: &str,
    id: &str,
    agent: &str,
    ttl: i64,
    remote: &RemoteView<'_>,
) -> Result<(ClaimAction, Todo)> {
    let gs = state.goals.get_mut(goal).expect("goal exists");
    select::wake_successor(gs, id);
    let todo = gs.todos.get_mut(id).expect("chosen");
    if let Some(lease) = remote.lease(goal, id) {
        lease.overlay(todo);
    }
    gate::check_reserved(todo, Some(agent), GateAction::Claim)?;
    crate::ops::gate::check_held(ctx, state, goal, id, agent, GateAction::Claim)?;
    let todo = state
        .goals
        .get_mut(goal)
        .expect("goal exists")
        .todos
        .get_mut(id)
        .expect("chosen");
    let action = lease::claim(todo, agent, ctx.now, ttl)?;
    if action != ClaimAction::Held {
        touch(todo, ctx.now);
    }
    Ok((action, todo.clone()))
}

/// The claim of `todo claim ID`, decided on whatever state it is given.
fn claim_decision<'a>(
    ctx: &'a Context,
    agent: &'a str,
    query: &'a str,
    ttl: i64,
) -> impl FnMut(&mut State, &str, &RemoteView<'_>) -> Result<Decision> + 'a {
    move |state, goal, remote| {
        let id = resolve_todo(state.goals.get(goal).expect("goal exists"), query)?;
        let (action, todo) = claim_chosen(ctx, state, goal, &id, agent, ttl, remote)?;
        if action == ClaimAction::Held {
            return Ok(((action, todo), None));
        }
        let verb = if action == ClaimAction::Renewed {
            "renew"
        } else {
            "claim"
        };
        let message = Message::new(
            &format!("todo {verb}"),
            format!(
                "todo {verb} {id} by {agent} (epoch {})",
                claimed(&todo).epoch
            ),
        )
        .trailer("Loopx-Todo", id.clone());
        Ok(((action, todo), Some(message)))
    }
}

/// The claim of `todo next --claim`: the todo `should-run` would select.
fn next_decision<'a>(
    ctx: &'a Context,
    agent: &'a str,
    capabilities: &'a [String],
    ttl: i64,
) -> impl FnMut(&mut State, &str, &RemoteView<'_>) -> Result<Decision> + 'a {
    move |state, goal, remote| {
        let caps = agent_capabilities(state, Some(agent), capabilities);
        let gs = state.goals.get(goal).expect("goal exists");
        let sel = select::select(gs, Some(agent), &caps, ctx.now);
        let id = pick(gs, &sel, agent, goal, remote, ctx.now)?;
        let (action, todo) = claim_chosen(ctx, state, goal, &id, agent, ttl, remote)?;
        if action == ClaimAction::Held {
            return Ok(((action, todo), None));
        }
        let epoch = claimed(&todo).epoch;
        let message = Message::new(
            "todo next --claim",
            format!("todo claim {id} by {agent} (epoch {epoch}, next)"),
        )
        .trailer("Loopx-Todo", id.clone());
        Ok(((action, todo), Some(message)))
    }
}

/// The todo `todo next --claim` takes: the first the selection offers, or,
/// among peers sharing a remote, one of the first few ready todos shared
/// out among the peers by a hash of peer and todo ([`share_out`]), so that
/// machines asking at the same moment take different todos instead of all
/// racing for the first. Todos the remote has leased to others, and those this claimer
/// just lost, are passed over. An agent's own claim always comes first.
fn pick(
    gs: &crate::model::GoalState,
    sel: &select::Selection<'_>,
    agent: &str,
    goal: &str,
    remote: &RemoteView<'_>,
    now: Timestamp,
) -> Result<String> {
    let pool = if sel.first_is_successor() {
        &sel.successors
    } else {
        &sel.candidates
    };
    let mut leased = 0;
    let open: Vec<&str> = pool
        .iter()
        .map(|c| c.id)
        .filter(|id| !remote.excluded.iter().any(|x| x == id))
        .filter(|id| {
            let other = remote.keeps_from(goal, &gs.todos[*id], agent, now);
            leased += usize::from(other);
            !other
        })
        .collect();
    let Some(first) = open.first() else {
        if leased > 0 || !remote.excluded.is_empty() {
            return Err(Refusal::new(
                Code::NothingReady,
                format!(
                    "nothing ready for this agent ({} leased to other agents or done on the remote)",
                    leased + remote.excluded.len()
                ),
            )
            .into());
        }
        return Err(nothing_ready(sel));
    };
    let own = gs.todos[*first]
        .claim
        .as_ref()
        .is_some_and(|c| c.agent == agent);
    if own || remote.peers.len() <= 1 {
        return Ok((*first).to_owned());
    }
    Ok(share_out(&open, remote.peers, remote.me).to_owned())
}

/// Leases a sync fetched less than this long ago are fresh enough for
/// `todo next --claim --sync` to decide on without fetching them again.
const LEASES_FRESH: std::time::Duration = std::time::Duration::from_secs(2);

/// How far down the ready todos `todo next --claim --sync` looks, per peer
/// sharing the remote, and at most.
const SPREAD_PER_PEER: usize = 4;
const SPREAD_MAX: usize = 64;

/// Which of the ready todos `open` (in order) this peer takes when every
/// peer in `peers` may be asking at once. Each todo ranks the peers by
/// rendezvous hashing of peer and todo; of the first few todos, this peer
/// takes the first it ranks highest for — else the first it ranks second
/// for, and so on. A todo's ranking depends on nothing else, so peers
/// whose views differ by a claim or two (the usual case: each decided on
/// leases fetched a moment apart) still each take a different todo rather
/// than racing for one. Priority bends a little: a peer takes one of the
/// first `SPREAD_PER_PEER` × peers todos, not always the first.
fn share_out<'a>(open: &[&'a str], peers: &[String], me: &str) -> &'a str {
    let window = &open[..open
        .len()
        .min(SPREAD_PER_PEER * peers.len())
        .min(SPREAD_MAX)];
    let rank = |id: &str| {
        let mine = (lease::rendezvous(me, id), me);
        peers
            .iter()
            .filter(|p| (lease::rendezvous(p, id), p.as_str()) > mine)
            .count()
    };
    window
        .iter()
        .enumerate()
        .min_by_key(|(i, id)| (rank(id), *i))
        .map(|(_, id)| *id)
        .expect("a non-empty list")
}

/// The report of a claim the remote (or this clone) granted, with its grant
/// recorded on this host, so the agent's later writes find their epoch.
fn granted(
    ctx: &Context,
    agent: &str,
    action: ClaimAction,
    todo: Todo,
    commit: Option<Oid>,
) -> ClaimReport {
    let claim = claimed(&todo);
    local::record_grant(ctx, agent, &todo.id, claim.epoch);
    ClaimReport {
        action,
        todo,
        claim,
        commit,
    }
}

/// A claim committed on the local branch; its grant recorded on this host.
fn claim_locally(
    ctx: &Context,
    agent: &str,
    mut decide: impl FnMut(&mut State, &str, &RemoteView<'_>) -> Result<Decision>,
) -> Result<ClaimReport> {
    let done = mutate_maybe(ctx, |state, goal| {
        decide(state, goal, &RemoteView::default())
    })?;
    let (action, todo) = done.value;
    Ok(granted(ctx, agent, action, todo, done.commit))
}

/// The lease length asked for (`--ttl`, default 45m), checked.
fn ttl(asked: Option<Seconds>) -> Result<i64> {
    Ok(lease::check_ttl(asked.map_or(lease::DEFAULT_TTL, |s| s.0))?)
}

/// `todo claim ID [--ttl] [--sync [--remote R]]`: with `--sync`, the claim
/// confirmed on the remote.
pub fn claim(ctx: &Context, args: &ClaimArgs) -> Result<ClaimReport> {
    let agent = ctx.require_agent()?.to_owned();
    let ttl = ttl(args.ttl)?;
    let decide = claim_decision(ctx, &agent, &args.todo, ttl);
    if args.sync {
        let remote = args.remote.as_deref();
        ctx.told(claim_synced(ctx, &agent, remote, Some(&args.todo), decide))
    } else {
        claim_locally(ctx, &agent, decide)
    }
}

/// A remote compare-and-swap: sync, decide the claim on the synced tip, and
/// push the claim's commit with the lease on the remote tip; on a rejected
/// push sync again (the remote's claim wins any merge) and decide again.
///
/// The claim's commit is written *detached*: the local branch moves to it,
/// and this host records the grant, only once the remote has accepted it.
/// A claim that fails (refused through every round, a remote that rejects
/// it, a network error, a timeout, a kill) leaves nothing that a later
/// `sync` would publish — only unreferenced objects, which `git gc` prunes.
/// Syncs in this clone wait meanwhile (`replicate::sync_turn`).
fn claim_synced(
    ctx: &Context,
    agent: &str,
    remote: Option<&str>,
    one: Option<&str>,
    mut decide: impl FnMut(&mut State, &str, &RemoteView<'_>) -> Result<Decision>,
) -> Result<ClaimReport> {
    // Registered as this clone knows it (the claim is refused before any
    // remote operation).
    if let Ok((_, state)) = ctx.load() {
        state.check_registered(agent)?;
    }
    let remote = replicate::prepare(ctx, remote, None)?;
    let _turn = replicate::sync_turn(ctx);
    if replicate::shared::enabled(ctx) {
        return shared::claim_shared(ctx, agent, &remote, one, decide);
    }
    let started = std::time::Instant::now();
    let mut jitter = transaction::Jitter::new();
    let writer = Writer::new(ctx);
    for round in 0..replicate::MAX_ROUNDS {
        if round > 0 {
            std::thread::sleep(jitter.full(
                round,
                std::time::Duration::from_millis(20),
                std::time::Duration::from_secs(1),
            ));
        }
        let synced = replicate::sync_locked(ctx, &remote, false)?;
        let mut opened = writer.open(synced.tip)?;
        let goal = ctx.goal(&opened.state)?.goal.id.clone();
        let ((action, todo), message) = decide(&mut opened.state, &goal, &RemoteView::default())?;
        // Held on the synced tip: the remote holds this very claim already.
        let Some(message) = message else {
            return Ok(granted(ctx, agent, action, todo, None));
        };
        let message = message
            .trailer("Loopx-Goal", goal)
            .trailer("Loopx-Agent", agent);
        let parent = opened.parent.clone();
        let draft = writer.draft(opened, message)?;
        let Some(claim) = draft.detached(&ctx.store, ctx.now)? else {
            // Nothing to change: the remote holds this very claim already.
            return Ok(granted(ctx, agent, action, todo, None));
        };
        let pushed = replicate::push(ctx, &remote, claim.id(), Some(&synced.remote_tip));
        if !matches!(pushed, Ok(true)) {
            claim.settle(&ctx.store);
            pushed?;
            continue;
        }
        // On the remote: now the local branch may have it.
        let commit = claim.id().clone();
        let how = format!(" (confirmed on {remote})");
        if claim.land(&ctx.store, Some(&parent), &how, ctx.now)? {
            writer.landed(&commit);
        } else if let Err(e) = replicate::sync_locked(ctx, &remote, false) {
            // A local write landed meanwhile; the next sync merges the claim in.
            tracing::warn!("the claim is on {remote}, but merging it here failed: {e}");
        }
        return Ok(granted(ctx, agent, action, todo, Some(commit)));
    }
    Err(Refusal::new(
        Code::PushRejected,
        format!(
            "{remote} refused the claim in every one of {} rounds over {:.1}s: it was not confirmed, and nothing of it is left to publish",
            replicate::MAX_ROUNDS,
            started.elapsed().as_secs_f64()
        ),
    )
    .with_hint("other peers kept pushing loopx-state first; claim again, or sync through shared refs (`git config --unset loopx.shareRefs`), where claims on different todos do not contend")
    .into())
}

/// `todo next [--claim [--sync [--remote R]]]`: what `should-run` would
/// select for this agent; with `--claim`, claimed (with `--sync`, the claim
/// confirmed on the remote).
pub fn next(ctx: &Context, args: &NextArgs) -> Result<ClaimReportOrTodo> {
    let ttl = ttl(args.ttl)?;
    let capabilities = &args.capabilities;
    if !args.claim {
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
    let decide = next_decision(ctx, &agent, capabilities, ttl);
    let claimed = if args.sync {
        claim_synced(ctx, &agent, args.remote.as_deref(), None, decide)
    } else {
        claim_locally(ctx, &agent, decide)
    };
    claimed.map(ClaimReportOrTodo::Claimed)
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
    if sel.blocked > 0 {
        why.push(format!("{} blocked", sel.blocked));
    }
    if sel.waiting > 0 {
        why.push(format!("{} waiting on a condition", sel.waiting));
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

#[derive(Debug, Serialize)]
pub struct RenewReport {
    /// `renewed` (the lease was extended: one commit) or `held` (under half
    /// of the TTL asked for had run: nothing written).
    pub action: ClaimAction,
    pub renewed: bool,
    pub todo: Todo,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
}

/// `todo renew ID [--ttl] [--epoch]`.
pub fn renew(ctx: &Context, args: &RenewArgs) -> Result<RenewReport> {
    let agent = ctx.require_agent()?.to_owned();
    let ttl = ttl(args.ttl)?;
    let done = mutate_maybe(ctx, |state, goal| {
        let gs = state.goals.get_mut(goal).expect("goal exists");
        let id = resolve_todo(gs, &args.todo)?;
        let expected = local::expected_epoch(ctx, &agent, &id, args.epoch);
        crate::ops::gate::check_held(ctx, state, goal, &id, &agent, GateAction::Renew)?;
        let gs = state.goals.get_mut(goal).expect("goal exists");
        let todo = gs.todos.get_mut(&id).expect("resolved");
        gate::check_reserved(todo, Some(&agent), GateAction::Renew)?;
        let (e, action) = lease::renew(todo, &agent, expected, ctx.now, ttl)?;
        if action == ClaimAction::Held {
            return Ok(((action, todo.clone()), None));
        }
        touch(todo, ctx.now);
        let message = Message::new(
            "todo renew",
            format!("todo renew {id} by {agent} (epoch {e})"),
        )
        .trailer("Loopx-Todo", id.clone());
        Ok(((action, todo.clone()), Some(message)))
    })?;
    let (action, todo) = done.value;
    Ok(RenewReport {
        action,
        renewed: action == ClaimAction::Renewed,
        todo,
        commit: done.commit,
    })
}
