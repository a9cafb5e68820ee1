//! A claim confirmed through shared refs (`sync::shared`), as a sequence
//! of steps over one state read a round:
//!
//! 1. **base**: the local tip; or, when the last merge of the remote is
//!    older than a lease ref may be trusted to be missing
//!    (`shared::create_bound`), or a decision on the local tip refused,
//!    the remote's heads fetched and merged first, with every lease;
//! 2. **decide** on that state with the remote's leases laid over it — as
//!    last fetched, at first — and draft the claim's commit
//!    ([`Writer::draft`]);
//! 3. **confirm**: push the todo's lease with the lease on the value known,
//!    a compare-and-swap of that ref alone. Refused, the lease moved: the
//!    leases (of the todo named, or of the goal for `todo next`) are
//!    fetched and the claim decided again — for `todo next`, on another
//!    todo if someone leased this one, at once and without giving up;
//! 4. **record**: the claim's commit on the local branch
//!    ([`commit_confirmed`]).

use std::time::{Duration, Instant};

use super::{claimed, granted, ClaimReport, Decision, RemoteView, LEASES_FRESH};
use crate::git_cmd::Remote;
use crate::model::lease::ClaimAction;
use crate::model::lease::Published;
use crate::model::{Code, Refusal, State, Timestamp, Todo};
use crate::ops::resolve_todo;
use crate::replicate;
use crate::replicate::shared::{self, Confirm, Leases, Patience, RemoteLease};
use crate::session::write::Writer;
use crate::session::Context;
use crate::store::{Detached, Draft, Message, Oid};
use crate::Result;

/// Claims withdrawn for landing too late, in a row, before the claim stops.
const LATE_TRIES: u32 = 3;

/// Refusals by one lease ref, each after its value was fetched, before a
/// claim of that todo stops and names the ref (a live race refuses twice
/// in a row only when another claimer wins twice).
const UNREADABLE_TRIES: u32 = 3;

/// A claim through shared refs: see the module docs.
pub(super) fn claim_shared(
    ctx: &Context,
    agent: &str,
    remote: &Remote,
    one: Option<&str>,
    mut decide: impl FnMut(&mut State, &str, &RemoteView<'_>) -> Result<Decision>,
) -> Result<ClaimReport> {
    let mut claim = SharedClaim::new(ctx, agent, remote, one)?;
    loop {
        claim.patience.attempts += 1;
        let base = claim.base()?;
        match claim.decide(base, &mut decide)? {
            Decided::Again => {}
            Decided::Held { action, todo } => return Ok(granted(ctx, agent, action, *todo, None)),
            Decided::Round(round) => {
                if let Some(report) = claim.confirm(*round)? {
                    return Ok(report);
                }
            }
        }
    }
}

/// What the claim has learnt so far, round after round.
struct SharedClaim<'a> {
    ctx: &'a Context,
    agent: &'a str,
    remote: &'a Remote,
    /// The todo named (`todo claim ID`); `None` for `todo next`.
    one: Option<&'a str>,
    writer: Writer<'a>,
    patience: Patience,
    /// Todos whose lease a `todo next` just lost: it takes another.
    excluded: Vec<String>,
    peers: Vec<String>,
    me: String,
    /// Fetch and merge the remote before the next decision.
    merge_first: bool,
    /// Fetch the leases before the next decision.
    fetch_leases: bool,
    /// Pushes refused in a row although the leases were fetched just
    /// before, and of those, refusals by a lease ref that reads as no
    /// lease at all.
    lost: u32,
    unreadable: u32,
    /// Claims whose push landed too late to trust.
    late: u32,
    create_bound: Duration,
    began: Instant,
}

/// The state a round decides on.
struct Base {
    parent: Oid,
    /// Every lease, when this round fetched and merged the remote.
    fetched: Option<Leases>,
    fetched_at: Instant,
}

/// What a round decided.
enum Decided {
    /// Decide again after merging the remote.
    Again,
    /// The remote has this very lease already: nothing to push or write.
    Held {
        action: ClaimAction,
        todo: Box<Todo>,
    },
    /// A claim to confirm.
    Round(Box<Round>),
}

/// One round's decision, drafted and not yet confirmed.
struct Round {
    parent: Oid,
    goal: String,
    action: ClaimAction,
    todo: Todo,
    /// The remote's lease ref of the todo, as known when deciding.
    lease: Option<RemoteLease>,
    leases: Leases,
    merged_now: bool,
    fetched_at: Instant,
    draft: Draft,
}

impl<'a> SharedClaim<'a> {
    fn new(
        ctx: &'a Context,
        agent: &'a str,
        remote: &'a Remote,
        one: Option<&'a str>,
    ) -> Result<Self> {
        let create_bound = shared::create_bound(ctx)?;
        Ok(SharedClaim {
            ctx,
            agent,
            remote,
            one,
            writer: Writer::new(ctx),
            patience: Patience::new(),
            excluded: Vec::new(),
            peers: shared::known_peers(ctx, remote),
            me: shared::peer_id(ctx),
            // A claim that creates a lease ref decides on a merge newer
            // than the bound (see `decide`): when the last one is older,
            // merge before deciding rather than after.
            merge_first: !shared::merged_within(ctx, remote, ctx.now, create_bound),
            // `todo next` decides on the leases as they are now: other
            // clones claimed since this one last looked, and a claim
            // decided on old leases mostly picks a todo someone took
            // meanwhile. A sync a moment ago fetched them already.
            fetch_leases: one.is_none()
                && !shared::merged_within(ctx, remote, ctx.now, LEASES_FRESH),
            lost: 0,
            unreadable: 0,
            late: 0,
            create_bound,
            began: Instant::now(),
        })
    }

    /// The command's clock as the claim goes on.
    fn now(&self) -> Timestamp {
        let elapsed = i64::try_from(self.began.elapsed().as_secs()).unwrap_or(i64::MAX);
        self.ctx.now.plus_seconds(elapsed)
    }

    /// Step 1: the commit to decide on.
    fn base(&mut self) -> Result<Base> {
        let fetched_at = Instant::now();
        if let (Some(tip), false) = (self.ctx.store.tip()?, self.merge_first) {
            return Ok(Base {
                parent: tip,
                fetched: None,
                fetched_at,
            });
        }
        self.merge_first = true;
        let fetched = shared::fetch(self.ctx, self.remote)?;
        let tip = shared::integrate(self.ctx, self.remote, &fetched, false)?.tip;
        shared::note_merged(self.ctx, self.remote, self.now());
        Ok(Base {
            parent: tip,
            fetched: Some(fetched.leases),
            fetched_at,
        })
    }

    /// Step 2: the claim decided on `base` and drafted; or `Again`, after
    /// merging the remote, when the local state did not know the todo, had
    /// nothing ready, or is too old to create a lease ref on.
    fn decide(
        &mut self,
        base: Base,
        decide: &mut impl FnMut(&mut State, &str, &RemoteView<'_>) -> Result<Decision>,
    ) -> Result<Decided> {
        let merged_now = base.fetched.is_some();
        let mut opened = self.writer.open(base.parent)?;
        let target = self.ctx.goal(&opened.state).and_then(|gs| {
            let id = self.one.map(|q| resolve_todo(gs, q)).transpose()?;
            Ok((gs.goal.id.clone(), id))
        });
        let (goal, id) = match target {
            Err(_) if !self.merge_first => return Ok(self.merge_first()),
            other => other?,
        };
        // The leases as last fetched, at first: most claims land on them,
        // and a push refused because one moved sends us to fetch them.
        let (ctx, remote) = (self.ctx, self.remote);
        let leases = match base.fetched {
            Some(leases) => leases,
            None if self.fetch_leases => shared::fetch_leases(ctx, remote, &goal, id.as_deref())?,
            None => shared::known_leases(ctx, remote, &goal, id.as_deref())?,
        };
        let view = RemoteView {
            leases: Some(&leases),
            excluded: &self.excluded,
            peers: &self.peers,
            me: &self.me,
        };
        let ((action, todo), message) = match decide(&mut opened.state, &goal, &view) {
            Err(_) if !self.merge_first => return Ok(self.merge_first()),
            other => other?,
        };
        let lease = leases.get(&goal, &todo.id).cloned();
        // No lease ref for this todo: the claim creates one. The ref of an
        // ended lease is deleted once the remote's loopx-state records the
        // end (`shared::lease_ref_grace`), so a claim decided on an older
        // state could take a todo someone already finished: it decides on
        // a fetch merged less than a quarter of the grace ago — its own,
        // or the last sync's — else it fetches and merges first.
        if lease.is_none() && !self.in_time(merged_now, base.fetched_at, self.create_bound) {
            return Ok(self.merge_first());
        }
        let claim = claimed(&todo);
        let on_remote = lease.as_ref().is_some_and(|r| {
            let p = &r.lease;
            p.agent == self.agent && p.epoch == claim.epoch && p.expires_at >= claim.expires_at
        });
        let message = match message {
            // The remote has this very lease already: nothing to write.
            None if on_remote => {
                let todo = Box::new(todo);
                return Ok(Decided::Held { action, todo });
            }
            // Held here but not confirmed as it stands (a claim made
            // without --sync, a renewal): confirm it now, or learn that
            // someone else has the todo.
            None => Message::new(
                "todo claim",
                format!(
                    "todo claim {} by {} (epoch {}, confirmed)",
                    todo.id, self.agent, claim.epoch
                ),
            )
            .trailer("Loopx-Todo", todo.id.clone()),
            Some(message) => message,
        };
        let message = message
            .trailer("Loopx-Goal", goal.clone())
            .trailer("Loopx-Agent", self.agent);
        let parent = opened.parent.clone();
        let draft = self.writer.draft(opened, message)?;
        Ok(Decided::Round(Box::new(Round {
            parent,
            goal,
            action,
            todo,
            lease,
            leases,
            merged_now,
            fetched_at: base.fetched_at,
            draft,
        })))
    }

    fn merge_first(&mut self) -> Decided {
        self.merge_first = true;
        Decided::Again
    }

    /// Whether the fetch the round decided on is younger than `bound`: its
    /// own, or the last sync's.
    fn in_time(&self, merged_now: bool, fetched_at: Instant, bound: Duration) -> bool {
        if merged_now {
            fetched_at.elapsed() <= bound
        } else {
            shared::merged_within(self.ctx, self.remote, self.now(), bound)
        }
    }

    /// Steps 3 and 4: the lease pushed, then the claim recorded here.
    /// `None`: decide again.
    fn confirm(&mut self, round: Round) -> Result<Option<ClaimReport>> {
        let (ctx, remote) = (self.ctx, self.remote);
        let grant = |action, todo, commit| Ok(Some(granted(ctx, self.agent, action, todo, commit)));
        let claim = claimed(&round.todo);
        let published = Published::of(&round.goal, &round.todo.id, &claim);
        let rider = shared::rider(ctx, &round.parent, &round.leases)?;
        let expected = round.lease.as_ref().map(|r| &r.oid);
        let action = match shared::confirm(ctx, remote, &published, expected, &rider) {
            // The claim created the lease ref, deciding on a fetch less than
            // a quarter of the grace old; but a push can take long to land
            // (a slow remote, a hook), and an ended lease's ref deleted
            // meanwhile would let it take a finished todo at a used epoch.
            // Landed past half the grace, it is not trusted: the ref is
            // deleted again and the claim decided on a new fetch.
            Ok(Confirm::Confirmed)
                if round.lease.is_none()
                    && !self.in_time(round.merged_now, round.fetched_at, self.create_bound * 2) =>
            {
                self.withdraw(&round)?;
                return Ok(None);
            }
            Ok(Confirm::Confirmed) => round.action,
            // The same agent holds this very lease already (its claim from
            // another clone, in the same second): this claim holds it too.
            Ok(Confirm::AlreadyThere) => ClaimAction::Held,
            Ok(Confirm::LostLease) => {
                self.lost_lease(&round)?;
                return Ok(None);
            }
            Err(e) => return Err(starved(e, &self.patience)),
        };
        // Held here already, in this very form (claimed without --sync in
        // the same second): the remote now has it, and the branch needs no
        // commit.
        if round.draft.is_empty() {
            return grant(action, round.todo, None);
        }
        // On the remote: now the local branch records it.
        let detached = round.draft.detached_always(&ctx.store, ctx.now)?;
        let commit = commit_confirmed(ctx, &self.writer, remote, &round.parent, detached)?;
        grant(action, round.todo, Some(commit))
    }

    /// A lease that reached the remote too late to trust, deleted again.
    fn withdraw(&mut self, round: &Round) -> Result<()> {
        self.late += 1;
        let (ctx, remote, todo) = (self.ctx, self.remote, &round.todo.id);
        let withdrawn = shared::withdraw(ctx, remote, &round.goal, todo)?;
        tracing::warn!(
            "the lease on {todo} reached {remote} {:.1}s after the fetch it was decided on, past half of loopx.leaseRefGrace: {}",
            round.fetched_at.elapsed().as_secs_f64(),
            if withdrawn { "withdrawn, deciding again" } else { "it moved since" }
        );
        if self.late >= LATE_TRIES {
            return Err(too_slow(remote, todo, self.create_bound * 4));
        }
        self.merge_first = true;
        Ok(())
    }

    /// The lease moved since we last fetched it: someone leased this very
    /// todo, or our copy was old. The leases are fetched and the claim
    /// decided again (a `todo next` takes another todo first).
    fn lost_lease(&mut self, round: &Round) -> Result<()> {
        let todo = &round.todo.id;
        if self.fetch_leases && self.one.is_none() {
            // Another todo cannot conflict: try it at once.
            self.excluded.push(todo.clone());
        } else if self.fetch_leases {
            self.lost += 1;
            if round.lease.is_none() {
                self.unreadable += 1;
            }
            // Fetched, decided on no lease, refused as if there were one,
            // three times over: the ref is there but unreadable.
            if self.unreadable >= UNREADABLE_TRIES {
                let (ctx, remote) = (self.ctx, self.remote);
                return Err(shared::unreadable_lease(
                    ctx,
                    remote,
                    &round.goal,
                    todo,
                    self.lost,
                ));
            }
            if self.lost >= replicate::MAX_ROUNDS {
                return Err(lost_every_round(self.remote, todo, &self.patience));
            }
            self.patience.wait();
        }
        self.fetch_leases = true;
        Ok(())
    }
}

/// Records a confirmed claim on the local branch: its commit on `parent`,
/// which the branch moves to if it is still there, else merges (another
/// agent of this clone wrote meanwhile). The lease on the remote is what
/// counts; the next sync publishes this commit.
fn commit_confirmed(
    ctx: &Context,
    writer: &Writer<'_>,
    remote: &Remote,
    parent: &Oid,
    claim: Detached,
) -> Result<Oid> {
    let commit = claim.id().clone();
    let how = format!(" (confirmed on {remote})");
    let merged = match claim.land(&ctx.store, Some(parent), &how, ctx.now) {
        Ok(true) => {
            writer.landed(&commit);
            Ok(())
        }
        Ok(false) => {
            let claim = shared::Fetched {
                peers: [("(this claim)".to_owned(), commit.clone())].into(),
                ..Default::default()
            };
            shared::integrate(ctx, remote, &claim, false).map(drop)
        }
        Err(e) => Err(e.into()),
    };
    if let Err(e) = merged {
        tracing::warn!(
            "the claim is on {remote}, but merging it here failed: {e}; the next sync merges it"
        );
    }
    Ok(commit)
}

/// A claim whose lease push landed past half the grace every time.
fn too_slow(remote: &Remote, todo: &str, grace: Duration) -> crate::Error {
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

/// A claim whose lease push was refused in every round although the lease
/// was fetched before each: the todo's lease keeps moving.
fn lost_every_round(remote: &Remote, todo: &str, patience: &Patience) -> crate::Error {
    Refusal::new(
        Code::PushRejected,
        format!(
            "{remote} refused the lease on {todo} in each of {} rounds over {:.1}s: others keep claiming it",
            replicate::MAX_ROUNDS,
            patience.elapsed().as_secs_f64()
        ),
    )
    .with_hint("claim again later, or take another todo (`todo next --claim --sync`)")
    .into()
}

/// A claim's error, telling how long it tried when it tried more than once.
fn starved(e: crate::Error, patience: &Patience) -> crate::Error {
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
