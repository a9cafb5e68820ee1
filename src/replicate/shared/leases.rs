//! Lease refs (`refs/loopx/leases/<goal>/<todo>`) through their life: a
//! claim's confirmation on the remote (`confirm`, `withdraw`, the rider a
//! sync pushes with a peer ref), the publication of a lease's end or
//! renewal (`lease_updates`, `lease_commit`), and the deletion of the refs
//! of ended leases once their grace is over (`lease_deletions`), with the
//! host records each step keeps.

use super::*;

/// The lease refs whose end (or renewal) `state` knows and the remote does
/// not yet say: each a lease commit, pushed with the lease on the value
/// fetched, so a newer claim is never overwritten.
pub(super) fn lease_updates(ctx: &Context, state: &State, leases: &Leases) -> Result<Vec<Update>> {
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
pub(super) const MIN_LEASE_REF_GRACE: i64 = 8;

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
pub fn note_merged(ctx: &Context, remote: &Remote, at: Timestamp) {
    let key = format!("merged/{remote}");
    ctx.store
        .records()
        .set(&key, at.unix().to_string().as_bytes());
}

/// Whether the local branch has merged a full fetch of `remote` begun less
/// than `bound` before `now` (by the clock of the commands that fetched
/// and that ask).
pub fn merged_within(ctx: &Context, remote: &Remote, now: Timestamp, bound: Duration) -> bool {
    let key = format!("merged/{remote}");
    let Some(at) = ctx
        .store
        .records()
        .get(&key)
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|t| t.parse::<i64>().ok())
    else {
        return false;
    };
    let age = now.unix() - at;
    (0..i64::try_from(bound.as_secs()).unwrap_or(i64::MAX)).contains(&age)
}

/// How many graces a lease ref waits for a clone other than its deleter.
pub(super) const FALLBACK_GRACES: i64 = 4;

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
pub(super) fn lease_deletions(
    ctx: &Context,
    fetched: &Fetched,
    me: &str,
    all: bool,
) -> Result<Vec<Update>> {
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
pub(super) fn deleter<'a>(peers: &[&'a str], todo: &str) -> Option<&'a str> {
    peers
        .iter()
        .copied()
        .max_by_key(|p| crate::model::lease::rendezvous(p, todo))
}

/// The host record of when this clone first knew of the lease end at
/// `commit` (by its own clock), written now if it did not know before.
pub(super) fn ended_seen(ctx: &Context, commit: &Oid) -> i64 {
    let key = format!("{ENDED_SEEN}{}", commit.0);
    let known = ctx
        .store
        .records()
        .get(&key)
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|t| t.parse::<i64>().ok());
    known.unwrap_or_else(|| {
        let now = ctx.now.unix();
        ctx.store.records().set(&key, now.to_string().as_bytes());
        now
    })
}

/// Host records of when this clone first knew of a lease's end.
pub(super) const ENDED_SEEN: &str = "ended-seen/";

/// Forgets when this clone first knew of ends whose refs `leases` (a full
/// fetch of the remote's) no longer has, once that is more than `keep`
/// seconds ago (an end this sync is about to publish is not listed yet).
pub(super) fn forget_ended_seen(ctx: &Context, leases: &Leases, keep: i64) {
    let listed: std::collections::HashSet<&str> =
        leases.0.values().map(|r| r.oid.0.as_str()).collect();
    let now = ctx.now.unix();
    for key in ctx.store.records().keys(ENDED_SEEN) {
        if listed.contains(&key[ENDED_SEEN.len()..]) {
            continue;
        }
        let seen = ctx
            .store
            .records()
            .get(&key)
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|t| t.parse::<i64>().ok());
        if seen.is_none_or(|t| now - t > keep) {
            ctx.store.records().set(&key, b"");
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
pub(super) fn deletable<'a>(
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
    let state = ctx
        .store
        .try_find_ref(&crate::replicate::remote_ref(remote))?;
    let wait = |_: &RemoteLease| grace * FALLBACK_GRACES;
    Ok(deletable(ctx, &leases, state.as_ref(), grace, wait)?.len())
}

/// Forgets this clone's copies of lease refs the remote no longer has.
pub(super) fn forget_leases(ctx: &Context, remote: &Remote, deleted: &[&Update]) {
    let tracking = transport::tracking_prefix(&remote.name);
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
pub(super) fn lease_commit(ctx: &Context, lease: &Published) -> Result<Oid> {
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
pub(super) fn track(ctx: &Context, remote: &Remote, update: &Update) {
    let Some(rest) = update.dst.strip_prefix("refs/loopx/") else {
        return;
    };
    let name = format!("{}{rest}", transport::tracking_prefix(&remote.name));
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
    remote: &Remote,
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
pub fn withdraw(ctx: &Context, remote: &Remote, goal: &str, todo: &str) -> Result<bool> {
    let tracking = format!(
        "{}leases/{goal}/{todo}",
        transport::tracking_prefix(&remote.name)
    );
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
    remote: &Remote,
    goal: &str,
    todo: &str,
    tries: u32,
) -> crate::Error {
    let name = lease_ref(goal, todo);
    let tracking = format!(
        "{}leases/{goal}/{todo}",
        transport::tracking_prefix(&remote.name)
    );
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
pub fn fetch_leases(
    ctx: &Context,
    remote: &Remote,
    goal: &str,
    todo: Option<&str>,
) -> Result<Leases> {
    let dir = ctx.repo_dir().to_owned();
    let pattern = match todo {
        Some(t) => format!("{goal}/{t}"),
        None => format!("{goal}/*"),
    };
    let mut jitter = transaction::Jitter::new();
    let mut attempt = 1;
    let found = loop {
        match transport::fetch_leases(&dir, remote, &pattern) {
            Err(git_cmd::TransportError::Failed(message))
                if attempt <= crate::replicate::FETCH_RETRIES =>
            {
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
pub fn known_leases(
    ctx: &Context,
    remote: &Remote,
    goal: &str,
    todo: Option<&str>,
) -> Result<Leases> {
    let pattern = match todo {
        Some(t) => format!("{goal}/{t}"),
        None => format!("{goal}/*"),
    };
    let prefix = format!(
        "{}leases/{pattern}",
        transport::tracking_prefix(&remote.name)
    );
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
pub fn known_peers(ctx: &Context, remote: &Remote) -> Vec<String> {
    let me = peer_id(ctx);
    let prefix = format!("{}peers/", transport::tracking_prefix(&remote.name));
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
