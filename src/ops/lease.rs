//! `todo claim | renew | release | next | handoff`: lease operations.
//!
//! A holder that asks again for a lease it holds (`claim`, `next --claim`,
//! `renew`) writes only when the lease is worth extending
//! (`model::lease::worth_extending`: more than half of the TTL asked for has
//! run); otherwise it is told `held` and nothing is committed.

mod args;
mod handoff;

pub use args::{ClaimArgs, HandoffArgs, NextArgs, ReleaseArgs, RenewArgs};
pub use handoff::{handoff, handoff_note, parse_handoff_note, release};

use serde::Serialize;

use crate::codec;
use crate::model::gate::{self, GateAction};
use crate::model::lease::Published;
use crate::model::lease::{self, ClaimAction};
use crate::model::Timestamp;
use crate::model::{select, Claim, Code, Refusal, State, Todo};
use crate::ops::args::Seconds;
use crate::ops::{local, mutate_maybe, resolve_todo, sync, touch, Context};
use crate::store::{cache, transaction, Checked, Message, Oid, STATE_REF};
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
pub struct Remote<'a> {
    leases: Option<&'a sync::shared::Leases>,
    excluded: &'a [String],
    /// The peers sharing the remote, sorted, and this clone's among them.
    peers: &'a [String],
    me: &'a str,
}

impl Remote<'_> {
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

/// The claim of `todo claim ID`, decided on whatever state it is given.
fn claim_decision<'a>(
    ctx: &'a Context,
    agent: &'a str,
    query: &'a str,
    ttl: i64,
) -> impl FnMut(&mut State, &str, &Remote<'_>) -> Result<Decision> + 'a {
    move |state, goal, remote| {
        let gs = state.goals.get_mut(goal).expect("goal exists");
        let id = resolve_todo(gs, query)?;
        select::wake_successor(gs, &id);
        let todo = gs.todos.get_mut(&id).expect("resolved");
        if let Some(lease) = remote.lease(goal, &id) {
            lease.overlay(todo);
        }
        gate::check_reserved(todo, Some(agent), GateAction::Claim)?;
        crate::ops::gate::check_held(ctx, state, goal, &id, agent, GateAction::Claim)?;
        let todo = state
            .goals
            .get_mut(goal)
            .expect("goal exists")
            .todos
            .get_mut(&id)
            .expect("resolved");
        let action = lease::claim(todo, agent, ctx.now, ttl)?;
        if action == ClaimAction::Held {
            return Ok(((action, todo.clone()), None));
        }
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
        Ok(((action, todo.clone()), Some(message)))
    }
}

/// The claim of `todo next --claim`: the todo `should-run` would select.
fn next_decision<'a>(
    ctx: &'a Context,
    agent: &'a str,
    capabilities: &'a [String],
    ttl: i64,
) -> impl FnMut(&mut State, &str, &Remote<'_>) -> Result<Decision> + 'a {
    move |state, goal, remote| {
        let caps = agent_capabilities(state, Some(agent), capabilities);
        let gs = state.goals.get(goal).expect("goal exists");
        let sel = select::select(gs, Some(agent), &caps, ctx.now);
        let id = pick(gs, &sel, agent, goal, remote, ctx.now)?;
        let gs = state.goals.get_mut(goal).expect("goal exists");
        select::wake_successor(gs, &id);
        let todo = gs.todos.get_mut(&id).expect("selected");
        if let Some(lease) = remote.lease(goal, &id) {
            lease.overlay(todo);
        }
        gate::check_reserved(todo, Some(agent), GateAction::Claim)?;
        crate::ops::gate::check_held(ctx, state, goal, &id, agent, GateAction::Claim)?;
        let todo = state
            .goals
            .get_mut(goal)
            .expect("goal exists")
            .todos
            .get_mut(&id)
            .expect("resolved");
        let action = lease::claim(todo, agent, ctx.now, ttl)?;
        if action == ClaimAction::Held {
            return Ok(((action, todo.clone()), None));
        }
        touch(todo, ctx.now);
        let epoch = claimed(todo).epoch;
        let message = Message::new(
            "todo next --claim",
            format!("todo claim {id} by {agent} (epoch {epoch}, next)"),
        )
        .trailer("Loopx-Todo", id.clone());
        Ok(((action, todo.clone()), Some(message)))
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
    remote: &Remote<'_>,
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
    mut decide: impl FnMut(&mut State, &str, &Remote<'_>) -> Result<Decision>,
) -> Result<ClaimReport> {
    let done = mutate_maybe(ctx, |state, goal| decide(state, goal, &Remote::default()))?;
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
/// Syncs in this clone wait meanwhile (`sync::sync_turn`).
fn claim_synced(
    ctx: &Context,
    agent: &str,
    remote: Option<&str>,
    one: Option<&str>,
    mut decide: impl FnMut(&mut State, &str, &Remote<'_>) -> Result<Decision>,
) -> Result<ClaimReport> {
    // Registered as this clone knows it (the claim is refused before any
    // remote operation).
    if let Ok((_, state)) = ctx.load() {
        state.check_registered(agent)?;
    }
    let remote = sync::prepare(ctx, &sync::SyncOptions::remote(remote))?;
    let _turn = sync::sync_turn(ctx);
    if sync::shared::enabled(ctx) {
        return claim_shared(ctx, agent, &remote, one, decide);
    }
    let started = std::time::Instant::now();
    let mut jitter = transaction::Jitter::new();
    for round in 0..sync::MAX_ROUNDS {
        if round > 0 {
            std::thread::sleep(jitter.full(
                round,
                std::time::Duration::from_millis(20),
                std::time::Duration::from_secs(1),
            ));
        }
        let synced = sync::sync_locked(ctx, &remote, false)?;
        let parent = synced.tip;
        let mut state = transaction::state_at(&ctx.store, &parent)?;
        let skeleton = codec::Skeleton::of(&state);
        let goal = ctx.goal(&state)?.goal.id.clone();
        ctx.decide_on(Some(&parent));
        let ((action, todo), message) = decide(&mut state, &goal, &Remote::default())?;
        // Held on the synced tip: the remote holds this very claim already.
        let Some(message) = message else {
            return Ok(granted(ctx, agent, action, todo, None));
        };
        let message = message
            .trailer("Loopx-Goal", goal)
            .trailer("Loopx-Agent", agent);
        let changes = transaction::written(Some(&skeleton), &state);
        let checked = Checked::new(&ctx.store, &[&parent], changes, &message)?;
        let Some(commit) = ctx.store.commit_detached(&parent, &checked, ctx.now)? else {
            // Nothing to change: the remote holds this very claim already.
            return Ok(granted(ctx, agent, action, todo, None));
        };
        // Cached like any write (the push's leak check reads it next); an
        // entry for a commit that never lands on a ref is harmless.
        cache::remember_delta(
            &ctx.store,
            &commit,
            Some(&parent),
            &state,
            checked.changes(),
        );
        let pushed = sync::push(ctx, &remote, &commit, Some(&synced.remote_tip));
        if !matches!(pushed, Ok(true)) {
            ctx.store.settle_detached(&commit);
            pushed?;
            continue;
        }
        // On the remote: now the local branch may have it.
        let reflog = format!(
            "loopx: {} (confirmed on {remote})",
            checked.message().subject
        );
        let moved = ctx
            .store
            .move_ref(STATE_REF, Some(&parent), &commit, &reflog, ctx.now);
        ctx.store.settle_detached(&commit);
        if moved? {
            state.clean();
            ctx.store.memo_put(commit.clone(), state);
        } else if let Err(e) = sync::sync_locked(ctx, &remote, false) {
            // A local write landed meanwhile; the next sync merges the claim in.
            tracing::warn!("the claim is on {remote}, but merging it here failed: {e}");
        }
        return Ok(granted(ctx, agent, action, todo, Some(commit)));
    }
    Err(Refusal::new(
        Code::PushRejected,
        format!(
            "{remote} refused the claim in every one of {} rounds over {:.1}s: it was not confirmed, and nothing of it is left to publish",
            sync::MAX_ROUNDS,
            started.elapsed().as_secs_f64()
        ),
    )
    .with_hint("other peers kept pushing loopx-state first; claim again, or sync through shared refs (`git config --unset loopx.shareRefs`), where claims on different todos do not contend")
    .into())
}

/// A claim confirmed through shared refs (`sync::shared`): decided on the
/// local tip with the remote's leases laid over it — as last fetched, at
/// first — then confirmed by pushing the todo's lease with the lease on the
/// value known, a compare-and-swap of that ref alone. A refused push means
/// the lease moved: the leases (of the todo named, or of the goal for
/// `todo next`) are fetched and the claim decided again — for `todo next`,
/// on another todo if someone leased this one, at once and without giving
/// up. The peers' states are merged first only when a decision refuses (a
/// todo this clone has not heard of, nothing ready here): then it decides
/// again on everything.
fn claim_shared(
    ctx: &Context,
    agent: &str,
    remote: &str,
    one: Option<&str>,
    mut decide: impl FnMut(&mut State, &str, &Remote<'_>) -> Result<Decision>,
) -> Result<ClaimReport> {
    use sync::shared::{self, Confirm, Patience};
    let mut patience = Patience::new();
    let mut excluded: Vec<String> = Vec::new();
    let peers = shared::known_peers(ctx, remote);
    let me = shared::peer_id(ctx);
    let mut merge_first = false;
    // `todo next` decides on the leases as they are now: other clones
    // claimed since this one last looked, and a claim decided on old
    // leases mostly picks a todo someone took meanwhile (a refused push,
    // then the fetch anyway). A sync a moment ago fetched them already.
    let mut fetch_leases =
        one.is_none() && !shared::merged_within(ctx, remote, ctx.now, LEASES_FRESH);
    // Pushes refused in a row although the leases were fetched just before,
    // and of those, refusals by a lease ref that reads as no lease at all.
    let (mut lost, mut unreadable) = (0, 0);
    // Claims whose push landed too late to trust (see below).
    let mut late = 0;
    let create_bound = shared::create_bound(ctx)?;
    // The command's clock as the claim goes on.
    let began = std::time::Instant::now();
    let now = || {
        let elapsed = i64::try_from(began.elapsed().as_secs()).unwrap_or(i64::MAX);
        ctx.now.plus_seconds(elapsed)
    };
    loop {
        patience.attempts += 1;
        let mut all = None;
        let fetched_at = std::time::Instant::now();
        let parent = match ctx.store.tip()? {
            Some(tip) if !merge_first => tip,
            _ => {
                merge_first = true;
                let fetched = shared::fetch(ctx, remote)?;
                let tip = shared::integrate(ctx, remote, &fetched, false)?.tip;
                shared::note_merged(ctx, remote, now());
                all = Some(fetched.leases);
                tip
            }
        };
        let merged_now = all.is_some();
        let mut state = transaction::state_at(&ctx.store, &parent)?;
        let skeleton = codec::Skeleton::of(&state);
        let target = ctx.goal(&state).and_then(|gs| {
            let id = one.map(|q| resolve_todo(gs, q)).transpose()?;
            Ok((gs.goal.id.clone(), id))
        });
        let (goal, id) = match target {
            Err(_) if !merge_first => {
                merge_first = true;
                continue;
            }
            other => other?,
        };
        // The leases as last fetched, at first: most claims land on them,
        // and a push refused because one moved sends us to fetch them.
        let leases = match all {
            Some(leases) => leases,
            None if fetch_leases => shared::fetch_leases(ctx, remote, &goal, id.as_deref())?,
            None => shared::known_leases(ctx, remote, &goal, id.as_deref())?,
        };
        let view = Remote {
            leases: Some(&leases),
            excluded: &excluded,
            peers: &peers,
            me: &me,
        };
        ctx.decide_on(Some(&parent));
        let ((action, todo), message) = match decide(&mut state, &goal, &view) {
            Err(_) if !merge_first => {
                merge_first = true;
                continue;
            }
            other => other?,
        };
        let claim = claimed(&todo);
        let lease = leases.get(&goal, &todo.id);
        // No lease ref for this todo: the claim creates one. The ref of an
        // ended lease is deleted once the remote's loopx-state records the
        // end (`shared::lease_ref_grace`), so a claim decided on an older
        // state could take a todo someone already finished: it decides on
        // a fetch merged less than a quarter of the grace ago — its own,
        // or the last sync's — else it fetches and merges first.
        let fresh = if merged_now {
            fetched_at.elapsed() <= create_bound
        } else {
            shared::merged_within(ctx, remote, now(), create_bound)
        };
        if lease.is_none() && !fresh {
            merge_first = true;
            continue;
        }
        let on_remote = lease.is_some_and(|r| {
            let p = &r.lease;
            p.agent == agent && p.epoch == claim.epoch && p.expires_at >= claim.expires_at
        });
        let message = match message {
            // The remote has this very lease already.
            None if on_remote => {
                return Ok(granted(ctx, agent, action, todo, None));
            }
            // Held here but not confirmed as it stands (a claim made
            // without --sync, a renewal): confirm it now, or learn that
            // someone else has the todo.
            None => Message::new(
                "todo claim",
                format!(
                    "todo claim {} by {agent} (epoch {}, confirmed)",
                    todo.id, claim.epoch
                ),
            )
            .trailer("Loopx-Todo", todo.id.clone()),
            Some(message) => message,
        };
        let message = message
            .trailer("Loopx-Goal", goal.clone())
            .trailer("Loopx-Agent", agent);
        let changes = transaction::written(Some(&skeleton), &state);
        let checked = Checked::new(&ctx.store, &[&parent], changes, &message)?;
        let published = Published::of(&goal, &todo.id, &claim);
        let rider = shared::rider(ctx, &parent, &leases)?;
        let action = match shared::confirm(ctx, remote, &published, lease.map(|r| &r.oid), &rider) {
            // The claim created the lease ref, deciding on a fetch less than
            // a quarter of the grace old; but a push can take long to land
            // (a slow remote, a hook), and an ended lease's ref deleted
            // meanwhile would let it take a finished todo at a used epoch.
            // Landed past half the grace, it is not trusted: the ref is
            // deleted again and the claim decided on a new fetch.
            Ok(Confirm::Confirmed)
                if lease.is_none() && {
                    let half = create_bound * 2;
                    let in_time = if merged_now {
                        fetched_at.elapsed() <= half
                    } else {
                        shared::merged_within(ctx, remote, now(), half)
                    };
                    !in_time
                } =>
            {
                late += 1;
                let withdrawn = shared::withdraw(ctx, remote, &goal, &todo.id)?;
                tracing::warn!(
                    "the lease on {} reached {remote} {:.1}s after the fetch it was decided on, past half of loopx.leaseRefGrace: {}",
                    todo.id,
                    fetched_at.elapsed().as_secs_f64(),
                    if withdrawn { "withdrawn, deciding again" } else { "it moved since" }
                );
                if late >= LATE_TRIES {
                    return Err(too_slow(remote, &todo.id, create_bound * 4));
                }
                merge_first = true;
                continue;
            }
            Ok(Confirm::Confirmed) => action,
            // The same agent holds this very lease already (its claim from
            // another clone, in the same second): this claim holds it too.
            Ok(Confirm::AlreadyThere) => ClaimAction::Held,
            Ok(Confirm::LostLease) => {
                // The lease moved since we last fetched it: someone leased
                // this very todo, or our copy was old. Fetch the leases and
                // decide again (a `todo next` takes another todo first).
                if fetch_leases && one.is_none() {
                    // Another todo cannot conflict: try it at once.
                    excluded.push(todo.id.clone());
                } else if fetch_leases {
                    lost += 1;
                    if lease.is_none() {
                        unreadable += 1;
                    }
                    // Fetched, decided on no lease, refused as if there were
                    // one, three times over: the ref is there but unreadable.
                    if unreadable >= UNREADABLE_TRIES {
                        return Err(shared::unreadable_lease(ctx, remote, &goal, &todo.id, lost));
                    }
                    if lost >= sync::MAX_ROUNDS {
                        return Err(lost_every_round(remote, &todo.id, &patience));
                    }
                    patience.wait();
                }
                fetch_leases = true;
                continue;
            }
            Err(e) => return Err(starved(e, &patience)),
        };
        // Held here already, in this very form (claimed without --sync in
        // the same second): the remote now has it, and the branch needs no
        // commit.
        if checked.changes().is_empty() {
            return Ok(granted(ctx, agent, action, todo, None));
        }
        // On the remote: now the local branch records it.
        let commit = commit_confirmed(ctx, remote, &parent, state, &checked)?;
        return Ok(granted(ctx, agent, action, todo, Some(commit)));
    }
}

/// Records a confirmed claim on the local branch: a commit on `parent`,
/// which the branch moves to if it is still there, else merges (another
/// agent of this clone wrote meanwhile). The lease on the remote is what
/// counts; the next sync publishes this commit.
fn commit_confirmed(
    ctx: &Context,
    remote: &str,
    parent: &Oid,
    mut state: State,
    checked: &Checked,
) -> Result<Oid> {
    let commit = ctx
        .store
        .commit_detached_on(std::slice::from_ref(parent), checked, ctx.now)?;
    cache::remember_delta(&ctx.store, &commit, Some(parent), &state, checked.changes());
    let reflog = format!(
        "loopx: {} (confirmed on {remote})",
        checked.message().subject
    );
    let moved = ctx
        .store
        .move_ref(STATE_REF, Some(parent), &commit, &reflog, ctx.now);
    let merged = match moved {
        Ok(true) => {
            state.clean();
            ctx.store.memo_put(commit.clone(), state);
            Ok(())
        }
        Ok(false) => {
            let claim = sync::shared::Fetched {
                peers: [("(this claim)".to_owned(), commit.clone())].into(),
                ..Default::default()
            };
            sync::shared::integrate(ctx, remote, &claim, false).map(drop)
        }
        Err(e) => Err(e.into()),
    };
    ctx.store.settle_detached(&commit);
    if let Err(e) = merged {
        tracing::warn!(
            "the claim is on {remote}, but merging it here failed: {e}; the next sync merges it"
        );
    }
    Ok(commit)
}

/// Claims withdrawn for landing too late, in a row, before the claim stops.
const LATE_TRIES: u32 = 3;

/// A claim whose lease push landed past half the grace every time.
fn too_slow(remote: &str, todo: &str, grace: std::time::Duration) -> crate::Error {
    Refusal::new(
        Code::PushRejected,
        format!(
            "the lease on {todo} reached {remote} past half of loopx.leaseRefGrace ({}s) after its fetch, {LATE_TRIES} times: it was withdrawn each time",
            grace.as_secs()
        ),
    )
    .with_hint("raise `git config loopx.leaseRefGrace` on every clone, or find what slows pushes to the remote (a hook, the network)")
    .into()
}

/// Refusals by one lease ref, each after its value was fetched, before a
/// claim of that todo stops and names the ref (a live race refuses twice
/// in a row only when another claimer wins twice).
const UNREADABLE_TRIES: u32 = 3;

/// A claim whose lease push was refused in every round although the lease
/// was fetched before each: the todo's lease keeps moving.
fn lost_every_round(remote: &str, todo: &str, patience: &sync::shared::Patience) -> crate::Error {
    Refusal::new(
        Code::PushRejected,
        format!(
            "{remote} refused the lease on {todo} in each of {} rounds over {:.1}s: others keep claiming it",
            sync::MAX_ROUNDS,
            patience.elapsed().as_secs_f64()
        ),
    )
    .with_hint("claim again later, or take another todo (`todo next --claim --sync`)")
    .into()
}

/// A claim's error, telling how long it tried when it tried more than once.
fn starved(e: crate::Error, patience: &sync::shared::Patience) -> crate::Error {
    if patience.attempts <= 1 {
        return e;
    }
    match e {
        crate::Error::Refused(mut r) => {
            r.message = format!(
                "{} (after {} attempts over {:.1}s)",
                r.message,
                patience.attempts,
                patience.elapsed().as_secs_f64()
            );
            r.into()
        }
        other => other,
    }
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
