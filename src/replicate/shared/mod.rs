//! Sync through shared refs: contention only where two agents want the same
//! todo (docs/multi-machine.md, "How a fleet shares one remote").
//!
//! One ref on the remote is one queue: git serializes the updates of a ref,
//! and a compare-and-swap that lost must fetch and try again. With every
//! peer pushing `loopx-state`, every peer contends with every other for one
//! queue. So the remote holds three kinds of ref instead:
//!
//! - `refs/loopx/peers/<id>`: each clone publishes its local branch on a ref
//!   of its own, a plain fast-forward push no one else makes;
//! - `refs/loopx/leases/<goal>/<todo>`: one per claimed todo, pointing at a
//!   small root commit whose trailers name the holder, the epoch and the
//!   expiry. A claim is confirmed when its push moved that ref from the
//!   value the claimant fetched (`--force-with-lease`, git's own per-ref
//!   compare-and-swap on the remote), in the same atomic push as the
//!   claimant's peer ref: claims on different todos never meet;
//! - `refs/heads/loopx-state`: the merge of all of them, which any peer may
//!   advance (with the lease on the value it fetched). A peer that loses that
//!   race has still published its state on its own ref; the next peer to
//!   sync merges it in. Readers that only fetch `loopx-state` (a fresh
//!   clone, a pull request) see it at most one merge behind.
//!
//! Every sync fetches all three in one `git fetch`, and merges whatever heads
//! are new into one commit (an octopus: the local tip, then the others):
//! first the published heads among themselves, where a todo whose claim both
//! changed goes to the higher epoch (`merge::merge_published`), then that
//! with the local tip, where the remote's claim wins as it always did.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::git_cmd::shared::{self as transport, Update, LEASES, PEERS};
use crate::git_cmd::{self, PushStatus, Remote};
use crate::model::lease::{LeaseStatus, Published};
use crate::model::merge::{self, Conflict, LostClaim};
use crate::model::{Code, Refusal, State, Timestamp};
use crate::session::write::Writer;
use crate::session::Context;
use crate::store::{
    publish, transaction, CasResult, Error as StoreError, Message, Oid, RefTrailers, STATE_REF,
};
use crate::Result;

mod leases;

pub use leases::*;

use super::{check_leaks_excluding, git_failed, refused_by_policy, SyncAction, SyncReport};

/// Whether this repository syncs through shared refs: yes unless
/// `git config loopx.shareRefs false` asks for the single-branch protocol
/// (for a remote that refuses refs outside `refs/heads/`).
pub fn enabled(ctx: &Context) -> bool {
    !matches!(
        ctx.store
            .config_string("loopx.shareRefs")
            .map(|v| v.to_ascii_lowercase())
            .as_deref(),
        Some("false" | "no" | "off" | "0")
    )
}

/// This clone's id among the remote's peers: made once, kept as a host
/// record (so every worktree of the clone shares it). `git config
/// loopx.peer` overrides it.
pub fn peer_id(ctx: &Context) -> String {
    if let Some(id) = ctx.store.config_string("loopx.peer") {
        return id;
    }
    if let Some(id) = ctx
        .store
        .records()
        .get("peer")
        .and_then(|b| String::from_utf8(b).ok())
    {
        return id;
    }
    let seed = format!(
        "{}:{}:{:?}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
        ctx.store.common_dir()
    );
    let id = sha1_smol::Sha1::from(seed).digest().to_string()[..12].to_owned();
    ctx.store.records().set("peer", id.as_bytes());
    id
}

/// The remote ref this clone publishes its branch on.
pub fn peer_ref(id: &str) -> String {
    format!("{PEERS}{id}")
}

/// The remote ref of one todo's lease.
pub fn lease_ref(goal: &str, todo: &str) -> String {
    format!("{LEASES}{goal}/{todo}")
}

/// The leases the remote has published, by (goal, todo).
#[derive(Debug, Default, Clone)]
pub struct Leases(BTreeMap<(String, String), RemoteLease>);

/// One lease ref as fetched.
#[derive(Debug, Clone)]
pub struct RemoteLease {
    /// The commit the ref points at: the value a new claim must replace.
    pub oid: Oid,
    pub lease: Published,
    /// When that commit was written (its committer time, in seconds): when
    /// the end of a lease written before `Loopx-Ended` existed was published.
    pub time: i64,
}

impl Leases {
    /// The lease of one todo, if the remote has one.
    pub fn get(&self, goal: &str, todo: &str) -> Option<&RemoteLease> {
        self.0.get(&(goal.to_owned(), todo.to_owned()))
    }

    fn insert(&mut self, r: RefTrailers, lease: Published) {
        let key = (lease.goal.clone(), lease.todo.clone());
        let remote = RemoteLease {
            oid: r.commit,
            lease,
            time: r.time,
        };
        self.0.insert(key, remote);
    }
}

/// What one fetch found on the remote.
#[derive(Debug, Default)]
pub struct Fetched {
    /// The remote's `loopx-state`.
    pub state: Option<Oid>,
    /// Every peer's published head, this clone's own included, by peer id.
    pub peers: BTreeMap<String, Oid>,
    pub leases: Leases,
}

impl Fetched {
    /// The distinct heads: `loopx-state` and every peer's.
    fn heads(&self) -> Vec<Oid> {
        let mut heads: Vec<Oid> = self
            .state
            .iter()
            .chain(self.peers.values())
            .cloned()
            .collect();
        heads.sort_by(|a, b| a.0.cmp(&b.0));
        heads.dedup();
        heads
    }
}

/// Fetches `loopx-state`, the peers' refs and the leases in one `git fetch`,
/// tried again a few times after a short wait when it fails (see
/// [`super::fetch`]).
pub fn fetch(ctx: &Context, remote: &Remote) -> Result<Fetched> {
    let dir = ctx.repo_dir().to_owned();
    let mut jitter = transaction::Jitter::new();
    let mut attempt = 1;
    let mut tips = Vec::new();
    for name in [STATE_REF.to_owned(), super::remote_ref(&remote.name)] {
        if let Some(tip) = ctx.store.try_find_ref(&name)? {
            tips.push(tip.0);
        }
    }
    tips.dedup();
    let tips: Vec<&str> = tips.iter().map(String::as_str).collect();
    let has_state = loop {
        match transport::fetch(&dir, remote, &tips) {
            Err(git_cmd::TransportError::Failed(message)) if attempt <= super::FETCH_RETRIES => {
                tracing::debug!("fetch from {remote} failed (attempt {attempt}): {message}");
                std::thread::sleep(Duration::from_millis(50 << attempt) + jitter.backoff(attempt));
                attempt += 1;
            }
            other => break other.map_err(git_failed)?,
        }
    };
    let mut fetched = Fetched {
        state: if has_state {
            ctx.store.try_find_ref(&super::remote_ref(&remote.name))?
        } else {
            None
        },
        ..Fetched::default()
    };
    let tracking = transport::tracking_prefix(&remote.name);
    let peers = format!("{tracking}peers/");
    for (name, commit) in ctx.store.refs_under(&peers)? {
        if let Some(id) = name.strip_prefix(&peers) {
            fetched.peers.insert(id.to_owned(), commit);
        }
    }
    let leases = format!("{tracking}leases/");
    for r in ctx.store.refs_with_trailers(&leases)? {
        let Some(lease) = Published::from_trailers(&r.trailers) else {
            tracing::debug!("{} is not a lease git-loopx wrote; ignored", r.name);
            continue;
        };
        fetched.leases.insert(r, lease);
    }
    Ok(fetched)
}

/// What bringing the fetched heads into the local branch did.
pub struct Integrated {
    pub tip: Oid,
    pub action: SyncAction,
    pub conflicts: Vec<Conflict>,
    pub lost_claims: Vec<LostClaim>,
    /// Peer heads left for a later sync ([`MAX_MERGED_HEADS`]).
    pub deferred: usize,
}

/// The most peer heads one sync merges. A sync's merge costs a little per
/// head (docs/multi-machine.md); past this many, the rest wait on their
/// peer refs for the next sync, which is said in its report.
pub const MAX_MERGED_HEADS: usize = 16;

/// Brings every fetched head into the local branch: nothing (it has them
/// all), a fast-forward (one head has everything), or one merge commit
/// whose parents are the local tip and every head it lacks.
pub fn integrate(
    ctx: &Context,
    remote: &Remote,
    fetched: &Fetched,
    allow_unrelated: bool,
) -> Result<Integrated> {
    let heads = fetched.heads();
    loop {
        let local = ctx.store.tip()?;
        let done = |tip: Oid, action| Integrated {
            tip,
            action,
            conflicts: Vec::new(),
            lost_claims: Vec::new(),
            deferred: 0,
        };
        let mut all = heads.clone();
        if let Some(l) = &local {
            all.push(l.clone());
        }
        let mut tops = super::independent(ctx, &all)?;
        // The local tip, if it is a top, and at most MAX_MERGED_HEADS others.
        let keep = MAX_MERGED_HEADS + usize::from(local.as_ref().is_some_and(|l| tops.contains(l)));
        let mut deferred = 0;
        if tops.len() > keep {
            deferred = tops.len() - keep;
            let mut others: Vec<Oid> = tops
                .iter()
                .filter(|t| Some(*t) != local.as_ref())
                .cloned()
                .collect();
            // The heads that have the remote's loopx-state go first: a
            // claim relies on having merged it (`lease_ref_grace`).
            if let Some(state) = &fetched.state {
                let mut has_state = Vec::with_capacity(others.len());
                for t in &others {
                    has_state.push(super::is_ancestor(ctx, state, t)?);
                }
                let mut order: Vec<usize> = (0..others.len()).collect();
                order.sort_by_key(|&i| !has_state[i]);
                others = order.into_iter().map(|i| others[i].clone()).collect();
            }
            others.truncate(MAX_MERGED_HEADS);
            tops = local
                .iter()
                .filter(|l| tops.contains(l))
                .cloned()
                .chain(others)
                .collect();
        }
        match (&local, tops.as_slice()) {
            (None, []) => return Err(StoreError::Missing.into()),
            (Some(l), [only]) if only == l => return Ok(done(l.clone(), SyncAction::UpToDate)),
            (None, [only]) => {
                if ctx.store.create_ref(
                    STATE_REF,
                    only,
                    &format!("loopx: sync adopt {remote}"),
                    ctx.now,
                )? {
                    return Ok(done(only.clone(), SyncAction::Adopted));
                }
                continue;
            }
            (Some(l), [only]) => {
                if ctx.store.move_ref(
                    STATE_REF,
                    Some(l),
                    only,
                    &format!("loopx: sync fast-forward to {remote}"),
                    ctx.now,
                )? {
                    return Ok(done(only.clone(), SyncAction::FastForwarded));
                }
                continue;
            }
            _ => {}
        }
        if let Some(mut m) = merge_heads(ctx, remote, local.as_ref(), &tops, allow_unrelated)? {
            m.deferred = deferred;
            return Ok(m);
        }
    }
}

/// One merge commit of `tops` (heads none of which reaches another), the
/// local tip first when it is one of them. `None`: the local branch moved
/// meanwhile (another agent of this clone wrote), so start again.
fn merge_heads(
    ctx: &Context,
    remote: &Remote,
    local: Option<&Oid>,
    tops: &[Oid],
    allow_unrelated: bool,
) -> Result<Option<Integrated>> {
    let local_on_top = local.filter(|l| tops.contains(l));
    // The published heads, merged among themselves first.
    let mut published: Vec<&Oid> = tops.iter().filter(|t| Some(*t) != local_on_top).collect();
    // When the local tip is not a top, one of the heads has it: that head
    // goes first, so the local branch's history stays the first parent.
    if let (Some(l), None) = (local, local_on_top) {
        for (i, h) in published.iter().enumerate() {
            if super::is_ancestor(ctx, l, h)? {
                let h = published.remove(i);
                published.insert(0, h);
                break;
            }
        }
    }
    let mut conflicts = Vec::new();
    let mut lost_claims = Vec::new();
    let mut acc = transaction::state_at(&ctx.store, published[0])?;
    for (i, head) in published.iter().enumerate().skip(1) {
        let before: Vec<&Oid> = published[..i].to_vec();
        let base = base_state(ctx, remote, head, &before, allow_unrelated)?;
        let theirs = transaction::state_at(&ctx.store, head)?;
        let m = merge::merge_published(base.as_ref(), acc, &theirs)
            .map_err(|e| invalid_merge(remote, head, e))?;
        conflicts.extend(m.conflicts);
        lost_claims.extend(m.lost_claims);
        acc = m.state;
        super::shed_notes(&mut acc);
    }
    let (first, others, ours, merged) = match local_on_top {
        Some(l) => {
            let ours = transaction::state_at(&ctx.store, l)?;
            let base = base_state(ctx, remote, l, &published, allow_unrelated)?;
            let m = merge::merge(base.as_ref(), &ours, &acc)
                .map_err(|e| invalid_merge(remote, l, e))?;
            conflicts.extend(m.conflicts);
            lost_claims.extend(m.lost_claims);
            let others: Vec<Oid> = published.iter().map(|h| (*h).clone()).collect();
            let mut merged = m.state;
            super::shed_notes(&mut merged);
            (l.clone(), others, ours, merged)
        }
        None => {
            let first = published[0].clone();
            let ours = transaction::state_at(&ctx.store, &first)?;
            let others: Vec<Oid> = published[1..].iter().map(|h| (*h).clone()).collect();
            (first, others, ours, acc)
        }
    };
    let changes = transaction::changes(Some(&ours), &merged);
    let heads = tops.len() - usize::from(local_on_top.is_some());
    let message = merge_message(remote, heads, local, &conflicts, &lost_claims);
    // Checked as any write, against every parent.
    let writer = Writer::new(ctx);
    let mut parents = vec![first];
    parents.extend(others);
    let draft = writer.draft_merge(parents, changes, &message, Some(merged))?;
    let landed = if local_on_top.is_some() {
        match draft.compare_and_swap(&ctx.store, ctx.now)? {
            CasResult::Committed(oid) => Some(oid),
            CasResult::Unchanged => unreachable!("a merge commit has several parents"),
            CasResult::Retry => None,
        }
    } else {
        // The local tip is an ancestor of the first head: the branch moves
        // from it to the merge.
        let detached = draft.detached_always(&ctx.store, ctx.now)?;
        let oid = detached.id().clone();
        detached
            .land(&ctx.store, local, "", ctx.now)?
            .then_some(oid)
    };
    let Some(commit) = landed else {
        return Ok(None);
    };
    writer.landed(&commit);
    Ok(Some(Integrated {
        tip: commit,
        action: SyncAction::Merged,
        conflicts,
        lost_claims,
        deferred: 0,
    }))
}

/// The message of a merge of `heads` published heads into `local`, with a
/// line for each conflict and each claim lost.
fn merge_message(
    remote: &Remote,
    heads: usize,
    local: Option<&Oid>,
    conflicts: &[Conflict],
    lost_claims: &[LostClaim],
) -> Message {
    let mut message = Message::new(
        "sync merge",
        format!(
            "sync: merge {heads} head{} of {remote} into {}",
            if heads == 1 { "" } else { "s" },
            local.map_or("nothing", |l| l.short())
        ),
    );
    for c in conflicts {
        message = message.line(format!(
            "conflict {} {}: kept {} over {} ({})",
            c.entity, c.field, c.kept, c.lost, c.rule
        ));
    }
    for l in lost_claims {
        message = message.line(format!(
            "claim on {} lost: {} over {}",
            l.todo, l.remote, l.local
        ));
    }
    message
}

fn invalid_merge(remote: &Remote, head: &Oid, e: String) -> crate::Error {
    Refusal::new(
        Code::StateInvalid,
        format!("cannot merge {} of {remote}: {e}", head.short()),
    )
    .into()
}

/// The state at the best common ancestor of `one` and a merge of `others`;
/// `None` for unrelated histories when allowed, refused otherwise.
fn base_state(
    ctx: &Context,
    remote: &Remote,
    one: &Oid,
    others: &[&Oid],
    allow_unrelated: bool,
) -> Result<Option<State>> {
    match super::merge_base(ctx, one, others)? {
        Some(b) => Ok(Some(transaction::state_at(&ctx.store, &b)?)),
        None if allow_unrelated => Ok(None),
        None => Err(super::unrelated(remote, one, others[0])),
    }
}

/// What a publish did.
enum Publish {
    /// Pushed (or nothing to push); whether `loopx-state` took the tip, and
    /// how many lease refs it deleted.
    Done { advanced: bool, deleted: usize },
    /// This clone's own peer ref had moved (another clone publishes under
    /// its id): the next round merges that head in and tries again.
    PeerMoved { dst: String, why: String },
}

/// Publishes `tip`: on this clone's peer ref (a fast-forward no one else
/// makes) and, with the lease on the value fetched, on `loopx-state`.
/// Returns whether `loopx-state` took it (another peer advanced it first
/// otherwise: harmless, since the peer ref has it).
fn publish(
    ctx: &Context,
    remote: &Remote,
    tip: &Oid,
    fetched: &Fetched,
    me: &str,
    advance: bool,
    prune_all: bool,
) -> Result<Publish> {
    let own = fetched.peers.get(me);
    let peer_current = own == Some(tip);
    let state_current = !advance || fetched.state.as_ref() == Some(tip);
    // Never publish what a reader would refuse, or a credential.
    let state = transaction::state_at(&ctx.store, tip)?;
    let mut updates = lease_updates(ctx, &state, &fetched.leases)?;
    updates.extend(lease_deletions(ctx, fetched, me, prune_all)?);
    if peer_current && state_current && updates.is_empty() {
        return Ok(Publish::Done {
            advanced: true,
            deleted: 0,
        });
    }
    let exclude: Vec<Oid> = fetched.heads();
    check_leaks_excluding(ctx, tip, &exclude)?;
    if !peer_current {
        updates.push(Update {
            src: tip.0.clone(),
            dst: peer_ref(me),
            lease: None,
        });
    }
    if !state_current {
        updates.push(Update {
            src: tip.0.clone(),
            dst: format!("refs/heads/{}", super::BRANCH),
            lease: Some(
                fetched
                    .state
                    .as_ref()
                    .map_or(String::new(), |o| o.0.clone()),
            ),
        });
    }
    let pushed = transport::push(ctx.repo_dir(), remote, &updates, false);
    for u in updates.iter().filter(|u| u.dst.starts_with(LEASES)) {
        if !u.src.is_empty() {
            publish::settle(&ctx.store, &Oid(u.src.clone()));
        }
    }
    let statuses = pushed.map_err(git_failed)?;
    let mut state_taken = state_current;
    let mut deleted = Vec::new();
    for (u, status) in updates.iter().zip(statuses) {
        let is_lease = u.dst.starts_with(LEASES);
        match status {
            PushStatus::Updated if u.src.is_empty() => deleted.push(u),
            // A deletion refused (moved by a new claim, or a remote that
            // keeps every ref): the ref stays, which only costs a little.
            PushStatus::Rejected(why) if u.src.is_empty() => {
                tracing::debug!("{} was not deleted: {why}", u.dst);
            }
            PushStatus::Updated | PushStatus::UpToDate => {
                state_taken |= u.lease.is_some() && !is_lease;
            }
            // A lease that moved meanwhile (a new claim): nothing to say.
            PushStatus::Rejected(why) if is_lease && !refused_by_policy(&why) => {
                tracing::debug!("{} moved before its end was published: {why}", u.dst);
            }
            PushStatus::Rejected(why) if refused_by_policy(&why) => {
                return Err(policy_refusal(remote, &u.dst, &why));
            }
            PushStatus::Rejected(why) if u.lease.is_none() => {
                // Our own ref moved: another clone publishes under our id
                // (a copied .git). The next round merges its head in.
                tracing::debug!("push of {} to {remote} rejected: {why}", u.dst);
                return Ok(Publish::PeerMoved {
                    dst: u.dst.clone(),
                    why,
                });
            }
            PushStatus::Rejected(why) => {
                tracing::debug!("{remote} has a newer loopx-state: {why}");
            }
        }
    }
    if !deleted.is_empty() {
        forget_leases(ctx, remote, &deleted);
    }
    Ok(Publish::Done {
        advanced: state_taken,
        deleted: deleted.len(),
    })
}

fn policy_refusal(remote: &Remote, dst: &str, why: &str) -> crate::Error {
    let hint = if dst.starts_with("refs/loopx/") {
        format!("nothing was published; {remote} refuses refs outside refs/heads/ ({dst}): ask its owner to allow refs/loopx/*, or sync through loopx-state alone with `git config loopx.shareRefs false`")
    } else {
        "nothing was published; the remote's policy (a hook, branch protection or permissions) refused it: ask its owner, then sync again".to_owned()
    };
    Refusal::new(
        Code::PushRejected,
        format!("{remote} refused the push of {dst}: {why}"),
    )
    .with_hint(hint)
    .into()
}

/// The error of a sync that found its own peer ref moved round after round.
fn peer_moved(remote: &Remote, dst: &str, why: &str) -> crate::Error {
    Refusal::new(
        Code::PushRejected,
        format!("{remote}'s {dst} moved while this clone published it ({why})"),
    )
    .with_hint("another clone publishes under this clone's peer id (a copied .git?): give this one its own with `git config loopx.peer <new-id>`, then sync again")
    .into()
}

/// Up to this many peers, every sync advances `loopx-state`. Past it, a
/// sync leaves it to others while it moved less than
/// [`ADVANCE_SPACING`] × peers ago: one ref's pushes are serialized, and
/// a thousand machines each advancing it at every sync would queue on it
/// (docs/fleet-sim-results.md) although their states are already published.
const ADVANCE_ALWAYS_UP_TO: usize = 8;
const ADVANCE_SPACING_MS: i64 = 100;

/// Whether this sync should try to advance the remote's `loopx-state`.
fn advance_due(ctx: &Context, fetched: &Fetched) -> Result<bool> {
    let Some(state) = &fetched.state else {
        return Ok(true);
    };
    let peers = fetched.peers.len();
    if peers <= ADVANCE_ALWAYS_UP_TO {
        return Ok(true);
    }
    let Some(last) = ctx.store.first_parent_log(state, 1)?.into_iter().next() else {
        return Ok(true);
    };
    let age_ms = (ctx.now.unix() - last.time.unix()) * 1000;
    Ok(age_ms >= ADVANCE_SPACING_MS * i64::try_from(peers).unwrap_or(i64::MAX))
}

/// A sync through shared refs, by a caller that holds the clone's sync turn;
/// `prune_all`: delete every lease ref that may go, not only this peer's.
pub fn sync_locked(
    ctx: &Context,
    remote: &Remote,
    allow_unrelated: bool,
    prune_all: bool,
) -> Result<SyncReport> {
    let me = peer_id(ctx);
    let mut conflicts = Vec::new();
    let mut lost_claims = Vec::new();
    let mut action = SyncAction::UpToDate;
    let mut leases_deleted = 0;
    let mut round = 0;
    loop {
        round += 1;
        let fetched = fetch(ctx, remote)?;
        let integrated = integrate(ctx, remote, &fetched, allow_unrelated)?;
        note_merged(ctx, remote, ctx.now);
        let deferred_heads = integrated.deferred;
        conflicts.extend(integrated.conflicts);
        lost_claims.extend(integrated.lost_claims);
        action = combine(action, integrated.action);
        let tip = integrated.tip;
        let pushes = fetched.peers.get(&me) != Some(&tip) || fetched.state.as_ref() != Some(&tip);
        let advance = advance_due(ctx, &fetched)?;
        let advanced = match publish(ctx, remote, &tip, &fetched, &me, advance, prune_all)? {
            Publish::Done { advanced, deleted } => {
                leases_deleted += deleted;
                advanced
            }
            Publish::PeerMoved { .. } if round < super::MAX_ROUNDS => continue,
            Publish::PeerMoved { dst, why } => return Err(peer_moved(remote, &dst, &why)),
        };
        if pushes && action == SyncAction::UpToDate {
            action = SyncAction::Pushed;
        }
        // A refused advance is not tried again: the state is published on
        // this clone's own ref, and another round would fetch, merge and
        // push again only to race the same queue (the drain benchmark's
        // second rounds were most of its operations past three a todo).
        let remote_tip = if advance && advanced {
            tip.clone()
        } else {
            ctx.store
                .try_find_ref(&super::remote_ref(&remote.name))?
                .unwrap_or_else(|| tip.clone())
        };
        return Ok(SyncReport {
            remote: remote.name.clone(),
            action,
            tip,
            remote_tip,
            rounds: round,
            conflicts,
            lost_claims,
            peer: Some(peer_ref(&me)),
            deferred_heads,
            leases_deleted,
        });
    }
}

/// The action of a sync of several rounds: the most telling one.
fn combine(before: SyncAction, now: SyncAction) -> SyncAction {
    use SyncAction::*;
    let rank = |a: SyncAction| match a {
        UpToDate => 0,
        Pushed => 1,
        FastForwarded => 2,
        Adopted => 3,
        Merged => 4,
    };
    if rank(now) > rank(before) {
        now
    } else {
        before
    }
}
