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
use crate::git_cmd::{self, PushStatus};
use crate::model::lease::{LeaseStatus, Published};
use crate::model::merge::{self, Conflict, LostClaim};
use crate::model::{Code, Refusal, State, Timestamp};
use crate::session::write::Writer;
use crate::session::Context;
use crate::store::{
    publish, transaction, CasResult, Error as StoreError, Message, Oid, RefTrailers, STATE_REF,
};
use crate::Result;

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
        .host_record("peer")
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
    ctx.store.set_host_record("peer", id.as_bytes());
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
pub fn fetch(ctx: &Context, remote: &str) -> Result<Fetched> {
    let dir = ctx.repo_dir().to_owned();
    let mut jitter = transaction::Jitter::new();
    let mut attempt = 1;
    let mut tips = Vec::new();
    for name in [STATE_REF.to_owned(), super::remote_ref(remote)] {
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
            ctx.store.try_find_ref(&super::remote_ref(remote))?
        } else {
            None
        },
        ..Fetched::default()
    };
    let tracking = transport::tracking_prefix(remote);
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
    remote: &str,
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
    remote: &str,
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
    remote: &str,
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

fn invalid_merge(remote: &str, head: &Oid, e: String) -> crate::Error {
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
    remote: &str,
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

/// The lease refs whose end (or renewal) `state` knows and the remote does
/// not yet say: each a lease commit, pushed with the lease on the value
/// fetched, so a newer claim is never overwritten.
fn lease_updates(ctx: &Context, state: &State, leases: &Leases) -> Result<Vec<Update>> {
    let mut updates = Vec::new();
    for RemoteLease { oid, lease, .. } in leases.0.values() {
        let Some(todo) = state
            .goals
            .get(&lease.goal)
            .and_then(|gs| gs.todos.get(&lease.todo))
        else {
            continue;
        };
        let Some(next) = lease.ended_in(todo, ctx.now) else {
            continue;
        };
        let commit = lease_commit(ctx, &next)?;
        if next.ended_at.is_some() {
            // This clone learns of the end as it publishes it.
            ended_seen(ctx, &commit);
        }
        updates.push(Update {
            src: commit.0,
            dst: lease_ref(&next.goal, &next.todo),
            lease: Some(oid.0.clone()),
        });
    }
    Ok(updates)
}

/// How long the ref of an ended lease stays on the remote once its end is
/// published, by default (`git config loopx.leaseRefGrace`).
pub const LEASE_REF_GRACE: i64 = 600;

/// The shortest grace allowed: a claim's fetch and push must fit in a
/// quarter of it.
const MIN_LEASE_REF_GRACE: i64 = 8;

/// The most lease refs one sync deletes: one `git push` names them all.
/// `sync --prune-leases` goes on until none is left.
pub const MAX_LEASE_DELETIONS: usize = 256;

/// How long the ref of an ended lease outlives the publication of its end:
/// `git config loopx.leaseRefGrace`, else [`LEASE_REF_GRACE`].
///
/// Deleting it is safe because a claim that would create a lease ref
/// decides on the remote's `loopx-state` fetched less than a quarter of
/// this ago ([`create_bound`]): a ref deleted before that fetch has its end
/// on the `loopx-state` fetched, and one created and deleted after it would
/// have needed the whole grace in between; a claim whose push landed past
/// half the grace after its fetch withdraws its ref (`ops::lease`), and a
/// deleter counts the grace by its own clock from when it learned of the
/// end ([`deletable`]). Every clone of a remote should use the same value.
pub fn lease_ref_grace(ctx: &Context) -> Result<i64> {
    let Some(text) = ctx.store.config_string("loopx.leaseRefGrace") else {
        return Ok(LEASE_REF_GRACE);
    };
    crate::model::parse_duration(&text)
        .filter(|s| *s >= MIN_LEASE_REF_GRACE)
        .ok_or_else(|| {
            Refusal::invalid_input(format!(
                "git config loopx.leaseRefGrace is `{text}`, not a duration of at least {MIN_LEASE_REF_GRACE}s like 10m"
            ))
            .into()
        })
}

/// How recent the fetch a claim decides on must be, when the claim would
/// create its todo's lease ref (see [`lease_ref_grace`]).
pub fn create_bound(ctx: &Context) -> Result<Duration> {
    let grace = u64::try_from(lease_ref_grace(ctx)?).unwrap_or(0);
    Ok(Duration::from_millis(grace * 250))
}

/// Notes that the local branch has merged a full fetch of `remote` begun
/// no earlier than `at` (a host record): a claim soon after may rely on it
/// ([`merged_within`]).
pub fn note_merged(ctx: &Context, remote: &str, at: Timestamp) {
    let key = format!("merged/{remote}");
    ctx.store
        .set_host_record(&key, at.unix().to_string().as_bytes());
}

/// Whether the local branch has merged a full fetch of `remote` begun less
/// than `bound` before `now` (by the clock of the commands that fetched
/// and that ask).
pub fn merged_within(ctx: &Context, remote: &str, now: Timestamp, bound: Duration) -> bool {
    let key = format!("merged/{remote}");
    let Some(at) = ctx
        .store
        .host_record(&key)
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|t| t.parse::<i64>().ok())
    else {
        return false;
    };
    let age = now.unix() - at;
    (0..i64::try_from(bound.as_secs()).unwrap_or(i64::MAX)).contains(&age)
}

/// How many graces a lease ref waits for a clone other than its deleter.
const FALLBACK_GRACES: i64 = 4;

/// The lease refs a sync deletes: ended (`done` or `released`) for at
/// least the grace, and recorded as ended by the remote's `loopx-state` as
/// fetched — so a claimer, which merges that branch before it creates a
/// lease ref, knows the end without the ref. Each is deleted with the lease
/// on the value fetched: a ref a new claim moved meanwhile stays.
///
/// One peer deletes each ref (chosen by a hash of peer and todo among the
/// peers fetched), the others only once it has waited [`FALLBACK_GRACES`]
/// graces (that peer may be gone): sixteen clones each pushing the same
/// deletions refused one another's by the thousand. `all` (`sync
/// --prune-leases`) deletes every ref past the grace.
fn lease_deletions(ctx: &Context, fetched: &Fetched, me: &str, all: bool) -> Result<Vec<Update>> {
    let grace = lease_ref_grace(ctx)?;
    forget_ended_seen(ctx, &fetched.leases, grace * FALLBACK_GRACES);
    let peers: Vec<&str> = fetched.peers.keys().map(String::as_str).collect();
    let wait = |r: &RemoteLease| {
        if all || deleter(&peers, &r.lease.todo).is_none_or(|d| d == me) {
            grace
        } else {
            grace * FALLBACK_GRACES
        }
    };
    Ok(
        deletable(ctx, &fetched.leases, fetched.state.as_ref(), grace, wait)?
            .into_iter()
            .take(MAX_LEASE_DELETIONS)
            .map(|r| Update {
                src: String::new(),
                dst: lease_ref(&r.lease.goal, &r.lease.todo),
                lease: Some(r.oid.0.clone()),
            })
            .collect(),
    )
}

/// The peer that deletes `todo`'s lease ref: the one a hash of peer and
/// todo ranks first ([`crate::model::lease::rendezvous`]).
fn deleter<'a>(peers: &[&'a str], todo: &str) -> Option<&'a str> {
    peers
        .iter()
        .copied()
        .max_by_key(|p| crate::model::lease::rendezvous(p, todo))
}

/// The host record of when this clone first knew of the lease end at
/// `commit` (by its own clock), written now if it did not know before.
fn ended_seen(ctx: &Context, commit: &Oid) -> i64 {
    let key = format!("{ENDED_SEEN}{}", commit.0);
    let known = ctx
        .store
        .host_record(&key)
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|t| t.parse::<i64>().ok());
    known.unwrap_or_else(|| {
        let now = ctx.now.unix();
        ctx.store.set_host_record(&key, now.to_string().as_bytes());
        now
    })
}

/// Host records of when this clone first knew of a lease's end.
const ENDED_SEEN: &str = "ended-seen/";

/// Forgets when this clone first knew of ends whose refs `leases` (a full
/// fetch of the remote's) no longer has, once that is more than `keep`
/// seconds ago (an end this sync is about to publish is not listed yet).
fn forget_ended_seen(ctx: &Context, leases: &Leases, keep: i64) {
    let listed: std::collections::HashSet<&str> =
        leases.0.values().map(|r| r.oid.0.as_str()).collect();
    let now = ctx.now.unix();
    for key in ctx.store.host_record_keys(ENDED_SEEN) {
        if listed.contains(&key[ENDED_SEEN.len()..]) {
            continue;
        }
        let seen = ctx
            .store
            .host_record(&key)
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|t| t.parse::<i64>().ok());
        if seen.is_none_or(|t| now - t > keep) {
            ctx.store.set_host_record(&key, b"");
        }
    }
}

/// The leases of `leases` whose refs may go, given the remote's
/// `loopx-state` at `state`: ended at least `wait(lease)` seconds ago (see
/// [`lease_deletions`]). Counted from the end's publication (the
/// publisher's clock, `Loopx-Ended`) when this clone first knew of it within
/// an eighth of the `grace` after that (their clocks agree, near enough);
/// else from the moment it first knew of it (its own clock): a clone whose
/// clock runs ahead of the publisher's would otherwise delete the ref at
/// once, while a clone that fetched a moment before could still claim the
/// finished todo.
fn deletable<'a>(
    ctx: &Context,
    leases: &'a Leases,
    state: Option<&Oid>,
    grace: i64,
    wait: impl Fn(&RemoteLease) -> i64,
) -> Result<Vec<&'a RemoteLease>> {
    let now = ctx.now.unix();
    let ended: Vec<&RemoteLease> = leases
        .0
        .values()
        .filter(|r| r.lease.status != LeaseStatus::Held)
        .filter(|r| {
            // Written before `Loopx-Ended` existed: the commit's own time.
            let published = r.lease.ended_at.map_or(r.time, |t| t.unix());
            let seen = ended_seen(ctx, &r.oid);
            let ended = if seen - published <= grace / 8 {
                published
            } else {
                seen
            };
            now - ended >= wait(r)
        })
        .collect();
    let Some(tip) = state.filter(|_| !ended.is_empty()) else {
        return Ok(Vec::new());
    };
    let state = transaction::state_at(&ctx.store, tip)?;
    Ok(ended
        .into_iter()
        .filter(|r| {
            state
                .goals
                .get(&r.lease.goal)
                .and_then(|gs| gs.todos.get(&r.lease.todo))
                .is_some_and(|todo| r.lease.recorded_in(todo))
        })
        .collect())
}

/// How many lease refs `remote` still has, as this clone last fetched
/// them, that their deleter should have deleted by now: ended more than
/// [`FALLBACK_GRACES`] graces ago (for `doctor`; no network).
pub fn lingering_leases(ctx: &Context, remote: &str) -> Result<usize> {
    let grace = lease_ref_grace(ctx)?;
    let prefix = format!("{}leases/", transport::tracking_prefix(remote));
    let mut leases = Leases::default();
    for r in ctx.store.refs_with_trailers(&prefix)? {
        if let Some(lease) = Published::from_trailers(&r.trailers) {
            leases.insert(r, lease);
        }
    }
    let state = ctx.store.try_find_ref(&super::remote_ref(remote))?;
    let wait = |_: &RemoteLease| grace * FALLBACK_GRACES;
    Ok(deletable(ctx, &leases, state.as_ref(), grace, wait)?.len())
}

/// Forgets this clone's copies of lease refs the remote no longer has.
fn forget_leases(ctx: &Context, remote: &str, deleted: &[&Update]) {
    let tracking = transport::tracking_prefix(remote);
    let refs: Vec<(String, Oid)> = deleted
        .iter()
        .filter_map(|u| {
            let name = u.dst.strip_prefix("refs/loopx/")?;
            Some((format!("{tracking}{name}"), Oid(u.lease.clone()?)))
        })
        .collect();
    if let Err(e) = ctx.store.delete_refs(&refs) {
        // The next fetch prunes them.
        tracing::debug!("could not delete the copies of deleted leases: {e}");
    }
}

/// Writes the small root commit a lease ref points at: the empty tree, the
/// lease in its trailers.
fn lease_commit(ctx: &Context, lease: &Published) -> Result<Oid> {
    let what = match lease.status {
        LeaseStatus::Held => "to",
        LeaseStatus::Released => "released by",
        LeaseStatus::Done => "done by",
    };
    let mut message = Message::new(
        "lease",
        format!(
            "lease {} {what} {} (epoch {})",
            lease.todo, lease.agent, lease.epoch
        ),
    );
    for (k, v) in lease.trailers() {
        message = message.trailer(k, v);
    }
    // Checked as any write: the message names the agent. Kept until the
    // caller settles it after the push (`publish::settle`).
    let draft = Writer::new(ctx).draft_merge(Vec::new(), Vec::new(), &message, None)?;
    Ok(draft.detached_always(&ctx.store, ctx.now)?.into_pending())
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
    remote: &str,
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

fn policy_refusal(remote: &str, dst: &str, why: &str) -> crate::Error {
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
fn peer_moved(remote: &str, dst: &str, why: &str) -> crate::Error {
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
    remote: &str,
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
                .try_find_ref(&super::remote_ref(remote))?
                .unwrap_or_else(|| tip.clone())
        };
        return Ok(SyncReport {
            remote: remote.to_owned(),
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

/// A claim's attempt to be confirmed on the remote.
pub enum Confirm {
    /// The lease ref moved from the value fetched to the claim's lease.
    Confirmed,
    /// The lease ref already held this very lease: the same agent claimed
    /// the todo at the same epoch, in the same second, from elsewhere.
    AlreadyThere,
    /// The lease ref had moved: another agent leased this todo first.
    LostLease,
}

/// Records in this clone's copy of the remote's refs that the remote took
/// `update` (best effort: the next fetch says so anyway).
fn track(ctx: &Context, remote: &str, update: &Update) {
    let Some(rest) = update.dst.strip_prefix("refs/loopx/") else {
        return;
    };
    let name = format!("{}{rest}", transport::tracking_prefix(remote));
    let Ok(known) = ctx.store.try_find_ref(&name) else {
        return;
    };
    let moved = ctx.store.move_ref(
        &name,
        known.as_ref(),
        &Oid(update.src.clone()),
        "loopx: pushed with a claim",
        ctx.now,
    );
    if let Err(e) = moved {
        tracing::debug!("{name} not updated: {e}");
    }
}

/// What a claim's push carries besides its lease: the ends of the leases
/// this clone knows ended (a `todo done`, a release) as its `tip` records
/// them — the lease updates a sync would publish, without its fetch and
/// merge. So a done reaches the remote's lease ref with the agent's next
/// claim, in the same `git push`: a peer deciding on the leases passes the
/// todo over even once the lease would have expired, before any sync
/// publishes the state. The state itself waits for the next sync (a claim
/// that published it would hand peers a claim the lease refs have since
/// moved past, for their merges to weigh against the refs).
pub fn rider(ctx: &Context, tip: &Oid, leases: &Leases) -> Result<Vec<Update>> {
    let state = transaction::state_at(&ctx.store, tip)?;
    lease_updates(ctx, &state, leases)
}

/// Pushes a claim's lease onto the todo's lease ref, with the lease on
/// `expected` (none: the ref must not exist yet) — one small root commit,
/// the remote's compare-and-swap for this todo alone — and, in the same
/// `git push` but not bound to it, the `rider` ([`rider`]). The claim's
/// state commit is not pushed: it is on the local branch, and the next
/// sync publishes it on this clone's peer ref; until then the lease ref
/// tells every peer who holds the todo.
pub fn confirm(
    ctx: &Context,
    remote: &str,
    lease: &Published,
    expected: Option<&Oid>,
    rider: &[Update],
) -> Result<Confirm> {
    let lease_commit = lease_commit(ctx, lease)?;
    let update = Update {
        src: lease_commit.0.clone(),
        dst: lease_ref(&lease.goal, &lease.todo),
        lease: Some(expected.map_or(String::new(), |o| o.0.clone())),
    };
    let mut updates = vec![update.clone()];
    updates.extend(rider.iter().filter(|u| u.dst != update.dst).cloned());
    let pushed = transport::push(ctx.repo_dir(), remote, &updates, false);
    publish::settle(&ctx.store, &lease_commit);
    for u in updates[1..].iter().filter(|u| u.dst.starts_with(LEASES)) {
        publish::settle(&ctx.store, &Oid(u.src.clone()));
    }
    let mut statuses = pushed.map_err(git_failed)?;
    for (u, status) in updates.iter().zip(&statuses) {
        match status {
            // What the remote took is what this clone now knows it has: the
            // next claim decides on it, and its rider does not push it again.
            PushStatus::Updated | PushStatus::UpToDate => track(ctx, remote, u),
            PushStatus::Rejected(why) => {
                tracing::debug!("{} was not published with the claim: {why}", u.dst);
            }
        }
    }
    match statuses.remove(0) {
        PushStatus::Updated => Ok(Confirm::Confirmed),
        PushStatus::UpToDate => Ok(Confirm::AlreadyThere),
        PushStatus::Rejected(why) if refused_by_policy(&why) => {
            Err(policy_refusal(remote, &update.dst, &why))
        }
        PushStatus::Rejected(why) => {
            tracing::debug!("lease {} lost: {why}", update.dst);
            Ok(Confirm::LostLease)
        }
    }
}

/// Deletes on `remote` the lease ref of `goal`'s `todo` that this clone's
/// claim just created, if it still holds what the claim pushed (its
/// tracking copy): a claim whose push landed too late to trust (see
/// `ops::lease`). Returns whether the remote took the deletion.
pub fn withdraw(ctx: &Context, remote: &str, goal: &str, todo: &str) -> Result<bool> {
    let tracking = format!("{}leases/{goal}/{todo}", transport::tracking_prefix(remote));
    let Some(pushed) = ctx.store.try_find_ref(&tracking)? else {
        return Ok(false);
    };
    let update = Update {
        src: String::new(),
        dst: lease_ref(goal, todo),
        lease: Some(pushed.0.clone()),
    };
    let statuses = transport::push(ctx.repo_dir(), remote, std::slice::from_ref(&update), false)
        .map_err(git_failed)?;
    let taken = matches!(statuses.first(), Some(PushStatus::Updated));
    if taken {
        let _ = ctx.store.delete_refs(&[(tracking, pushed)]);
    }
    Ok(taken)
}

/// The error for a lease ref on `remote` that refuses a claim however often
/// it is fetched, yet reads as no lease: a commit another tool put there, or
/// a remote that hides the ref from fetches.
pub fn unreadable_lease(
    ctx: &Context,
    remote: &str,
    goal: &str,
    todo: &str,
    tries: u32,
) -> crate::Error {
    let name = lease_ref(goal, todo);
    let tracking = format!("{}leases/{goal}/{todo}", transport::tracking_prefix(remote));
    let what = match ctx.store.try_find_ref(&tracking) {
        Ok(Some(oid)) => format!("holds commit {}, which is not a git-loopx lease", oid.0),
        _ => "exists there, but a fetch does not bring it (does the remote hide it, e.g. with uploadpack.hideRefs?)".to_owned(),
    };
    Refusal::new(
        Code::StateInvalid,
        format!("{remote}'s {name} {what}; the claim was refused {tries} times and nothing was pushed"),
    )
    .with_hint(format!(
        "inspect it with `git fetch {remote} {name}` and `git log -1 FETCH_HEAD`; if no git-loopx peer holds that todo, delete the ref (`git push {remote} :{name}`) and claim again"
    ))
    .into()
}

/// Fetches the remote's leases of `goal` — of one todo, or all of them —
/// and nothing else: what a claim needs to decide (a lease fetch carries a
/// root commit or two, where the peers' heads carry their states).
pub fn fetch_leases(ctx: &Context, remote: &str, goal: &str, todo: Option<&str>) -> Result<Leases> {
    let dir = ctx.repo_dir().to_owned();
    let pattern = match todo {
        Some(t) => format!("{goal}/{t}"),
        None => format!("{goal}/*"),
    };
    let mut jitter = transaction::Jitter::new();
    let mut attempt = 1;
    let found = loop {
        match transport::fetch_leases(&dir, remote, &pattern) {
            Err(git_cmd::TransportError::Failed(message)) if attempt <= super::FETCH_RETRIES => {
                tracing::debug!(
                    "fetch of leases from {remote} failed (attempt {attempt}): {message}"
                );
                std::thread::sleep(Duration::from_millis(50 << attempt) + jitter.backoff(attempt));
                attempt += 1;
            }
            other => break other.map_err(git_failed)?,
        }
    };
    if !found {
        return Ok(Leases::default());
    }
    known_leases(ctx, remote, goal, todo)
}

/// The leases of `goal` (of one todo, or all) as this clone last fetched
/// them, without asking the remote: a claim pushes with the lease on these
/// values, and fetches only when the remote says they moved.
pub fn known_leases(ctx: &Context, remote: &str, goal: &str, todo: Option<&str>) -> Result<Leases> {
    let pattern = match todo {
        Some(t) => format!("{goal}/{t}"),
        None => format!("{goal}/*"),
    };
    let prefix = format!("{}leases/{pattern}", transport::tracking_prefix(remote));
    let prefix = prefix.trim_end_matches('*');
    let mut leases = Leases::default();
    for r in ctx.store.refs_with_trailers(prefix)? {
        if let Some(lease) = Published::from_trailers(&r.trailers) {
            if lease.goal == goal && todo.is_none_or(|t| lease.todo == t) {
                leases.insert(r, lease);
            }
        }
    }
    Ok(leases)
}

/// The peers this clone saw on the remote at its last sync, by id, sorted,
/// itself included: `todo next --claim --sync` shares the first ready
/// todos out among them.
pub fn known_peers(ctx: &Context, remote: &str) -> Vec<String> {
    let me = peer_id(ctx);
    let prefix = format!("{}peers/", transport::tracking_prefix(remote));
    let mut peers: Vec<String> = ctx
        .store
        .refs_under(&prefix)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(name, _)| name.strip_prefix(&prefix).map(str::to_owned))
        .collect();
    peers.push(me);
    peers.sort();
    peers.dedup();
    peers
}

/// The waits between attempts whose failure was not a lost lease, and the
/// error of a claimer that ran out of them.
pub struct Patience {
    started: Instant,
    jitter: transaction::Jitter,
    pub attempts: u32,
}

impl Patience {
    pub fn new() -> Self {
        Patience {
            started: Instant::now(),
            jitter: transaction::Jitter::new(),
            attempts: 0,
        }
    }

    /// How long since the claim began.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Sleeps a full-jitter exponential backoff (up to 2 s) before the next
    /// attempt.
    pub fn wait(&mut self) {
        let d = self.jitter.full(
            self.attempts.min(16),
            Duration::from_millis(25),
            Duration::from_secs(2),
        );
        std::thread::sleep(d);
    }
}

impl Default for Patience {
    fn default() -> Self {
        Self::new()
    }
}
