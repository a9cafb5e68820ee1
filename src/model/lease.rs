//! Claims as leases with fencing epochs (SPEC §2.2), as pure functions.
//!
//! Invariants: an epoch never goes backwards (`last_epoch` keeps it after a
//! release); a new holder always gets a higher epoch than any before; a
//! writer that names an epoch other than the current holder's is refused
//! with `stale_epoch` and never overwrites the new holder.

use crate::model::{Claim, Code, Extra, Refusal, Role, Timestamp, Todo};

/// Default lease length: 45 minutes.
pub const DEFAULT_TTL: i64 = 45 * 60;
/// Longest lease: 24 hours.
pub const MAX_TTL: i64 = 24 * 3600;

/// The highest epoch a lease brought in from elsewhere (an import) may
/// carry: far past any count of claims, and every later claim still has an
/// epoch to take (one at `u64::MAX` would fence its todo for good).
pub const MAX_IMPORTED_EPOCH: u64 = 1 << 53;

/// Checks a requested TTL in seconds.
pub fn check_ttl(ttl: i64) -> Result<i64, Refusal> {
    if ttl <= 0 {
        return Err(Refusal::invalid_input("the lease TTL must be positive"));
    }
    if ttl > MAX_TTL {
        return Err(Refusal::invalid_input(format!(
            "a lease TTL of {ttl}s is over the 24h maximum"
        )));
    }
    Ok(ttl)
}

/// What a claim request did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimAction {
    /// A new lease (epoch + 1).
    Acquired,
    /// The same agent already held it: the lease was extended, same epoch.
    Renewed,
    /// The same agent already held it, and under half of the TTL asked for
    /// had run: nothing changed (see [`worth_extending`]).
    Held,
}

/// Whether the holder's live lease, asked again for `ttl` seconds at `now`,
/// is worth a write: only once more than half of that TTL has run (its end
/// is less than `ttl / 2` away). So a holder that polls `claim`, `next
/// --claim` or `renew` writes at most one commit per half lease — at most
/// one a minute for any TTL of two minutes or more — and a lease is always
/// extended well before it ends.
pub fn worth_extending(claim: &Claim, now: Timestamp, ttl: i64) -> bool {
    !claim.is_live(now) || now.seconds_until(claim.expires_at).saturating_mul(2) < ttl
}

fn conflict(todo: &Todo, holder: &Claim) -> Refusal {
    Refusal::new(
        Code::ClaimConflict,
        format!(
            "{} is claimed by {} (epoch {}) until {}",
            todo.id, holder.agent, holder.epoch, holder.expires_at
        ),
    )
    .with_hint("pick another todo (`git loopx todo next --claim`), or wait for the lease to expire")
}

/// Whether `agent` may hold `todo` at all (role, status, exclusions).
pub fn check_claimable(todo: &Todo, agent: &str) -> Result<(), Refusal> {
    if todo.role == Role::User {
        return Err(Refusal::invalid_input(format!(
            "{} is a user todo: only agent todos can be claimed",
            todo.id
        )));
    }
    if todo.status.is_terminal() {
        return Err(Refusal::invalid_input(format!(
            "{} is {}: there is nothing left to claim",
            todo.id,
            crate::model::status_name(todo.status)
        )));
    }
    if todo.exclude_agents.iter().any(|a| a == agent) {
        return Err(Refusal::invalid_input(format!(
            "{} excludes agent {agent}",
            todo.id
        )));
    }
    Ok(())
}

/// The epoch after `current`. Epochs never wrap: a todo whose epoch reached
/// the largest one (only a hand-made or hostile state gets there) cannot be
/// claimed again, and two holders can never share an epoch.
fn next_epoch(todo: &Todo, current: u64) -> Result<u64, Refusal> {
    current.checked_add(1).ok_or_else(|| {
        Refusal::new(
            Code::StaleEpoch,
            format!(
                "{} is at the largest epoch ({current}): it cannot be leased again",
                todo.id
            ),
        )
        .with_hint("add a new todo for this work (`git loopx todo add`)")
    })
}

/// When a lease of `ttl` seconds taken at `now` ends; refused past the last
/// time the state can hold (9999-12-31T23:59:59Z).
fn lease_end(now: Timestamp, ttl: i64) -> Result<Timestamp, Refusal> {
    let end = now.plus_seconds(ttl);
    if end > Timestamp::MAX {
        return Err(Refusal::invalid_input(format!(
            "a lease taken at {now} for {ttl}s would end after {}, the last time the state can hold",
            Timestamp::MAX
        )));
    }
    Ok(end)
}

/// Claims `todo` for `agent` for `ttl` seconds.
pub fn claim(
    todo: &mut Todo,
    agent: &str,
    now: Timestamp,
    ttl: i64,
) -> Result<ClaimAction, Refusal> {
    check_claimable(todo, agent)?;
    let expires_at = lease_end(now, ttl)?;
    if let Some(current) = todo.live_claim(now) {
        if current.agent != agent {
            return Err(conflict(todo, current));
        }
        if !worth_extending(current, now, ttl) {
            return Ok(ClaimAction::Held);
        }
        let claim = todo.claim.as_mut().expect("live claim exists");
        if claim.expires_at < expires_at {
            claim.expires_at = expires_at;
        }
        return Ok(ClaimAction::Renewed);
    }
    let epoch = next_epoch(todo, todo.epoch())?;
    todo.last_epoch = todo
        .last_epoch
        .max(todo.claim.as_ref().map_or(0, |c| c.epoch));
    todo.claim = Some(Claim {
        agent: agent.to_owned(),
        epoch,
        acquired_at: now,
        expires_at,
        extra: Extra::new(),
    });
    Ok(ClaimAction::Acquired)
}

/// How a writer stands towards a todo's lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// It holds the lease (possibly expired but not taken over) at this epoch.
    Holder(u64),
    /// Nobody holds a live lease, and the writer's epoch (if any) is current.
    Unclaimed,
}

/// The fencing check for every write a holder makes after claiming.
///
/// `expected` is the epoch the writer was given when it claimed (from
/// `--epoch`, or the host-local record of its claims); `None` when it never
/// claimed this todo from here.
pub fn check_writer(
    todo: &Todo,
    agent: &str,
    expected: Option<u64>,
    now: Timestamp,
) -> Result<Standing, Refusal> {
    let stale = |why: String| {
        Refusal::new(Code::StaleEpoch, why).with_hint(
            "your lease is gone: stop work on this todo, re-read it, and claim again if it is free",
        )
    };
    match &todo.claim {
        Some(c) if c.agent == agent => match expected {
            Some(e) if e != c.epoch => Err(stale(format!(
                "{} is now at epoch {}, your lease was epoch {e}",
                todo.id, c.epoch
            ))),
            _ => Ok(Standing::Holder(c.epoch)),
        },
        Some(c) => match expected {
            Some(e) => Err(stale(format!(
                "your lease on {} (epoch {e}) was taken over by {} (epoch {})",
                todo.id, c.agent, c.epoch
            ))),
            None if c.is_live(now) => Err(Refusal::new(
                Code::NotClaimHolder,
                format!(
                    "{} is claimed by {} (epoch {}) until {}",
                    todo.id, c.agent, c.epoch, c.expires_at
                ),
            )
            .with_hint("only the holder may write to a claimed todo")),
            None => Ok(Standing::Unclaimed),
        },
        None => match expected {
            Some(e) if e < todo.last_epoch => Err(stale(format!(
                "{} moved on to epoch {} since your lease (epoch {e})",
                todo.id, todo.last_epoch
            ))),
            _ => Ok(Standing::Unclaimed),
        },
    }
}

/// Extends the holder's lease by `ttl` from now (same epoch), when it is
/// [`worth_extending`]; else leaves it as it is (`Held`).
pub fn renew(
    todo: &mut Todo,
    agent: &str,
    expected: Option<u64>,
    now: Timestamp,
    ttl: i64,
) -> Result<(u64, ClaimAction), Refusal> {
    match check_writer(todo, agent, expected, now)? {
        Standing::Holder(epoch) => {
            let claim = todo.claim.as_mut().expect("holder has a claim");
            if !worth_extending(claim, now, ttl) {
                return Ok((epoch, ClaimAction::Held));
            }
            if !claim.is_live(now) {
                // Expired but not taken over: renewing is safe, the epoch is unchanged.
                claim.acquired_at = now;
            }
            claim.expires_at = lease_end(now, ttl)?;
            Ok((epoch, ClaimAction::Renewed))
        }
        Standing::Unclaimed => Err(Refusal::new(
            Code::NotClaimHolder,
            format!("{} is not claimed by {agent}", todo.id),
        )
        .with_hint("claim it first: `git loopx todo claim <id>`")),
    }
}

/// Drops the lease, keeping its epoch in `last_epoch`.
pub fn release(todo: &mut Todo) {
    if let Some(c) = todo.claim.take() {
        todo.last_epoch = todo.last_epoch.max(c.epoch);
    }
}

/// Takes the lease away from its holder, live or expired (a person's
/// `release --force`): the claim is dropped and the epoch moves one past
/// it, so the old holder's later writes under its epoch are refused with
/// `stale_epoch`. Returns the claim taken, `None` when there was none.
pub fn take_back(todo: &mut Todo) -> Result<Option<Claim>, Refusal> {
    let Some(taken) = todo.claim.clone() else {
        return Ok(None);
    };
    let epoch = next_epoch(todo, todo.epoch())?;
    todo.claim = None;
    todo.last_epoch = epoch;
    Ok(Some(taken))
}

/// Moves the lease to `to` with a fresh epoch (a handoff).
pub fn transfer(todo: &mut Todo, to: &str, now: Timestamp, ttl: i64) -> Result<u64, Refusal> {
    check_claimable(todo, to)?;
    let expires_at = lease_end(now, ttl)?;
    let epoch = next_epoch(todo, todo.epoch())?;
    release(todo);
    todo.claim = Some(Claim {
        agent: to.to_owned(),
        epoch,
        acquired_at: now,
        expires_at,
        extra: Extra::new(),
    });
    Ok(epoch)
}

/// The rendezvous-hashing score of `who` for `what` (FNV-1a over both,
/// stable across versions and machines): the highest-scoring one of
/// several agents or peers is the one for that todo. `todo next` spreads
/// agents with it; a sync picks the peer that deletes a lease ref with it.
pub fn rendezvous(who: &str, what: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in who.bytes().chain([0]).chain(what.bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A lease as published on the remote's per-todo ref
/// (`refs/loopx/leases/<goal>/<todo>`, see `replicate::shared`): the commit
/// that ref points at carries these as trailers. The ref is the remote's
/// compare-and-swap for one todo's epochs: a claim confirmed on the remote
/// is one whose push moved that ref from the value the claimant saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Published {
    pub goal: String,
    pub todo: String,
    pub agent: String,
    pub epoch: u64,
    pub acquired_at: Timestamp,
    pub expires_at: Timestamp,
    /// What became of the lease, as the last sync that saw it end published.
    pub status: LeaseStatus,
    /// When a sync published its end (`Loopx-Ended`; none while it is held,
    /// or on an ended lease written before the trailer existed).
    pub ended_at: Option<Timestamp>,
}

/// The life of a published lease: a claim confirms it `held`; a sync that
/// finds its end in the merged state (the holder released it, handed it
/// off, or the todo was done) publishes that, so peers that have not merged
/// the holder's state yet still see the todo free, or finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseStatus {
    Held,
    Released,
    Done,
}

impl LeaseStatus {
    pub fn name(self) -> &'static str {
        match self {
            LeaseStatus::Held => "held",
            LeaseStatus::Released => "released",
            LeaseStatus::Done => "done",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "held" => LeaseStatus::Held,
            "released" => LeaseStatus::Released,
            "done" => LeaseStatus::Done,
            _ => return None,
        })
    }
}

impl Published {
    /// The lease a claim holds, published for `goal`.
    pub fn of(goal: &str, todo: &str, claim: &Claim) -> Self {
        Published {
            goal: goal.to_owned(),
            todo: todo.to_owned(),
            agent: claim.agent.clone(),
            epoch: claim.epoch,
            acquired_at: claim.acquired_at,
            expires_at: claim.expires_at,
            status: LeaseStatus::Held,
            ended_at: None,
        }
    }

    /// The update a sync publishes at `now` for this lease, from a state
    /// that has seen its epoch: `None` when the ref already says what the
    /// state does.
    pub fn ended_in(&self, todo: &Todo, now: Timestamp) -> Option<Published> {
        if self.status != LeaseStatus::Held || todo.epoch() != self.epoch {
            return None;
        }
        let mut next = self.clone();
        if todo.status == crate::model::TodoStatus::Done {
            next.status = LeaseStatus::Done;
            next.ended_at = Some(now);
        } else {
            match &todo.claim {
                None => {
                    next.status = LeaseStatus::Released;
                    next.ended_at = Some(now);
                }
                Some(c) if c.epoch == self.epoch && c.agent == self.agent => {
                    next.expires_at = c.expires_at;
                }
                Some(_) => return None,
            }
        }
        (next != *self).then_some(next)
    }

    /// The trailers of the lease's commit.
    pub fn trailers(&self) -> Vec<(&'static str, String)> {
        let mut trailers = vec![
            ("Loopx-Goal", self.goal.clone()),
            ("Loopx-Todo", self.todo.clone()),
            ("Loopx-Agent", self.agent.clone()),
            ("Loopx-Epoch", self.epoch.to_string()),
            ("Loopx-Acquired", self.acquired_at.to_string()),
            ("Loopx-Expires", self.expires_at.to_string()),
            ("Loopx-Lease", self.status.name().to_owned()),
        ];
        if let Some(ended) = self.ended_at {
            trailers.push(("Loopx-Ended", ended.to_string()));
        }
        trailers
    }

    /// Reads a lease back from its commit's trailers; `None` when one is
    /// missing or malformed (such a ref is not one of ours, and is ignored).
    pub fn from_trailers(trailers: &[(String, String)]) -> Option<Self> {
        let get = |key: &str| {
            trailers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(key))
                .map(|(_, v)| v.as_str())
        };
        Some(Published {
            goal: get("Loopx-Goal")?.to_owned(),
            todo: get("Loopx-Todo")?.to_owned(),
            agent: get("Loopx-Agent")?.to_owned(),
            epoch: get("Loopx-Epoch")?.parse().ok()?,
            acquired_at: Timestamp::parse(get("Loopx-Acquired")?)?,
            expires_at: Timestamp::parse(get("Loopx-Expires")?)?,
            status: match get("Loopx-Lease") {
                Some(text) => LeaseStatus::parse(text)?,
                None => LeaseStatus::Held,
            },
            ended_at: match get("Loopx-Ended") {
                Some(text) => Some(Timestamp::parse(text)?),
                None => None,
            },
        })
    }

    /// Lays the lease over a todo whose state has not seen it yet (its
    /// epoch is newer than any the todo has handed out): the todo then reads
    /// as the remote already decided — held by the lease's agent, released,
    /// or done. A todo
    /// that has seen this epoch (or a later one) knows better — a renewal,
    /// a release or a takeover since — and is left alone. Returns whether
    /// it changed the todo.
    pub fn overlay(&self, todo: &mut Todo) -> bool {
        if self.epoch <= todo.epoch() {
            return false;
        }
        todo.last_epoch = self.epoch;
        todo.claim = (self.status == LeaseStatus::Held).then(|| Claim {
            agent: self.agent.clone(),
            epoch: self.epoch,
            acquired_at: self.acquired_at,
            expires_at: self.expires_at,
            extra: Extra::default(),
        });
        if self.status == LeaseStatus::Done {
            todo.status = crate::model::TodoStatus::Done;
        }
        true
    }

    /// Whether `todo`, as a state has it, records this ended lease's end, so
    /// the lease ref has nothing left to tell a peer that holds that state:
    /// the todo has seen the lease's epoch and is not held at it, and a
    /// lease that ended `done` is done there (or claimed again since).
    pub fn recorded_in(&self, todo: &Todo) -> bool {
        let seen =
            todo.epoch() >= self.epoch && todo.claim.as_ref().is_none_or(|c| c.epoch > self.epoch);
        seen && match self.status {
            LeaseStatus::Held => false,
            LeaseStatus::Released => true,
            LeaseStatus::Done => {
                todo.status == crate::model::TodoStatus::Done || todo.epoch() > self.epoch
            }
        }
    }

    /// Whether this lease, newer than the state of `todo`, keeps `agent`
    /// from taking it at `now`: the todo is done, or another agent holds it.
    pub fn keeps_from(&self, todo: &Todo, agent: &str, now: Timestamp) -> bool {
        self.epoch > todo.epoch()
            && match self.status {
                LeaseStatus::Done => true,
                LeaseStatus::Released => false,
                LeaseStatus::Held => self.agent != agent && now < self.expires_at,
            }
    }
}
