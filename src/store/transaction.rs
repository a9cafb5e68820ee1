//! The only way state is written: load the tip → run a mutation → commit the
//! changed files on that tip → move the ref only if it did not move meanwhile
//! → otherwise reload and run the mutation again, a bounded number of times.
//!
//! Because the mutation re-runs on the fresh tip, every rule it checks (a live
//! claim, a fencing epoch) is checked against the state it commits on.

use std::time::Duration;

use crate::codec;
use crate::model::{State, Timestamp};
use crate::store::publish::Draft;
use crate::store::{health, CasResult, Error, GixStore, Message, Oid, Policy};

pub use crate::store::checked::{changes, written, Checked};

/// How many times a writer reloads after losing the race before it gives up.
pub const MAX_ATTEMPTS: u32 = 200;

/// What a mutation asks for: a value to hand back, and the commit message of
/// its change (`None` when it only read).
pub struct Write<R> {
    pub value: R,
    pub message: Option<Message>,
    /// Files the change removes that the state no longer names (the runs
    /// it archived: runs are otherwise never removed).
    pub removed: Vec<String>,
}

impl<R> Write<R> {
    pub fn commit(value: R, message: Message) -> Self {
        Write {
            value,
            message: Some(message),
            removed: Vec::new(),
        }
    }

    pub fn read_only(value: R) -> Self {
        Write {
            value,
            message: None,
            removed: Vec::new(),
        }
    }
}

/// What a transaction did.
#[derive(Debug)]
pub struct Committed<R> {
    pub value: R,
    /// The new tip, or `None` when nothing changed (no commit was made).
    pub commit: Option<Oid>,
    /// The tip the value was computed on (the parent of `commit`).
    pub base: Option<Oid>,
    pub attempts: u32,
}

/// The state at a commit, through the host-local cache (see [`crate::store::cache`]).
pub use crate::store::cache::state_at;

/// The current tip and its state (read-only).
pub fn load(store: &GixStore) -> Result<(Option<Oid>, Option<State>), Error> {
    match store.tip()? {
        Some(tip) => {
            let state = state_at(store, &tip)?;
            Ok((Some(tip), Some(state)))
        }
        None => Ok((None, None)),
    }
}

/// Runs `mutate` on the freshest state until its change lands (see module
/// docs), its change checked under `policy`. `mutate` is also told the tip
/// it works on.
pub fn transact<R, E, F>(
    store: &GixStore,
    policy: &Policy,
    now: Timestamp,
    mut mutate: F,
) -> Result<Committed<R>, E>
where
    E: From<Error>,
    F: FnMut(&mut Option<State>, Option<&Oid>) -> Result<Write<R>, E>,
{
    let mut rng = Jitter::new();
    for attempt in 1..=MAX_ATTEMPTS {
        // Held until the end of this attempt (dropped with the file).
        let _turn = store.writer_lock();
        let base = store.tip()?;
        let mut state = match &base {
            Some(tip) => Some(state_at(store, tip)?),
            None => None,
        };
        let skeleton = state.as_ref().map(codec::Skeleton::of);
        let write = mutate(&mut state, base.as_ref())?;
        let done = |commit| Committed {
            value: write.value,
            commit,
            base: base.clone(),
            attempts: attempt,
        };
        let (Some(message), Some(new)) = (&write.message, state) else {
            return Ok(done(None));
        };
        let draft = Draft::of_state(
            store,
            policy,
            base.as_ref(),
            skeleton.as_ref(),
            new,
            &write.removed,
            message,
        )?;
        if draft.is_empty() {
            return Ok(done(None));
        }
        match draft.compare_and_swap(store, now)? {
            CasResult::Committed(oid) => return Ok(done(Some(oid))),
            CasResult::Unchanged => return Ok(done(None)),
            CasResult::Retry => {
                // A live writer holds the ref lock for well under a
                // millisecond: an older one belongs to a process that died.
                // Holding the writer lock, no git-loopx writer of this host
                // is inside its ref update, so the lock is cleared and the
                // write goes on; without it, waiting will not help.
                if let Some((lock, age_seconds)) = store.lock_age() {
                    if age_seconds >= health::STALE_LOCK_AGE.as_secs() {
                        let cleared = _turn.is_some() && store.clear_dead_locks();
                        if !cleared {
                            return Err(Error::Locked { lock, age_seconds }.into());
                        }
                        continue;
                    }
                }
                std::thread::sleep(rng.backoff(attempt));
            }
        }
    }
    Err(match store.lock_age() {
        Some((lock, age_seconds)) => Error::Locked { lock, age_seconds },
        None => Error::Contended {
            attempts: MAX_ATTEMPTS,
        },
    }
    .into())
}

/// Jittered exponential backoff without a random-number dependency.
pub struct Jitter(u64);

impl Default for Jitter {
    fn default() -> Self {
        Self::new()
    }
}

impl Jitter {
    pub fn new() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() as u64);
        Jitter(nanos ^ (u64::from(std::process::id()) << 32) | 1)
    }

    fn next(&mut self) -> u64 {
        // xorshift64
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// "Full jitter": a wait drawn evenly from zero to `base << attempt`
    /// (at most `cap`). Every contender draws afresh each round, so the one
    /// that won last has no head start on the next.
    pub fn full(&mut self, attempt: u32, base: Duration, cap: Duration) -> Duration {
        let ceiling = (base.as_micros() << attempt.min(20))
            .min(cap.as_micros())
            .max(1);
        let ceiling = u64::try_from(ceiling).unwrap_or(u64::MAX);
        Duration::from_micros(self.next() % ceiling)
    }

    /// A random wait that grows with `attempt`, up to about 40 ms.
    pub fn backoff(&mut self, attempt: u32) -> Duration {
        let cap_us = (500u64 << attempt.min(6)).min(40_000);
        Duration::from_micros(cap_us / 2 + self.next() % cap_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Goal;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_unix(1_800_000_000 + s)
    }

    fn fresh() -> State {
        State::with_goal(Goal::new("g", "o", t(0)), t(0))
    }

    /// A store on a new, empty repository.
    fn store() -> (tempfile::TempDir, GixStore) {
        let dir = tempfile::tempdir().unwrap();
        let made = std::process::Command::new("git")
            .args(["init", "-q"])
            .arg(dir.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .unwrap();
        assert!(made.success());
        let store = GixStore::discover(dir.path()).unwrap();
        (dir, store)
    }

    fn run(store: &GixStore, f: impl Fn(&mut Option<State>)) -> Committed<()> {
        transact::<_, Error, _>(store, &Policy::default(), t(1), |s, _| {
            f(s);
            Ok(Write::commit((), Message::new("test", "test")))
        })
        .unwrap()
    }

    #[test]
    fn root_commit_then_no_commit_when_nothing_changes() {
        let (_dir, store) = store();
        let first = run(&store, |s| *s = Some(fresh()));
        assert!(first.commit.is_some() && first.base.is_none());
        let second = run(&store, |_| {});
        assert_eq!(second.commit, None, "an unchanged tree makes no commit");
        let third = run(&store, |s| {
            s.as_mut().unwrap().goals.get_mut("g").unwrap().goal.rev = 2
        });
        assert_eq!(third.base, first.commit);
        assert_eq!(
            store
                .first_parent_log(third.commit.as_ref().unwrap(), 10)
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn a_lost_race_reruns_the_mutation_on_the_new_tip() {
        let (_dir, store) = store();
        run(&store, |s| *s = Some(fresh()));
        let mut calls = 0;
        let done = transact::<_, Error, _>(&store, &Policy::default(), t(2), |s, _| {
            calls += 1;
            if calls == 1 {
                // Another writer lands between our read and our CAS (its
                // commit made directly: this attempt holds the writer lock).
                let (tip, Some(theirs)) = load(&store).unwrap() else {
                    unreachable!("the state exists")
                };
                let mut new = theirs.clone();
                new.goals.get_mut("g").unwrap().goal.objective = "theirs".into();
                let message = Message::new("test", "theirs");
                let parents = tip.into_iter().collect();
                let draft = Draft::of_changes(
                    &store,
                    &Policy::default(),
                    parents,
                    changes(Some(&theirs), &new),
                    &message,
                    None,
                );
                let moved = draft.unwrap().compare_and_swap(&store, t(2));
                assert!(matches!(moved, Ok(CasResult::Committed(_))));
            }
            let gs = s.as_mut().unwrap().goals.get_mut("g").unwrap();
            gs.goal.rev += 1;
            Ok(Write::commit(
                gs.goal.objective.clone(),
                Message::new("test", "mine"),
            ))
        })
        .unwrap();
        assert_eq!(calls, 2);
        assert_eq!(
            done.value, "theirs",
            "the retry saw the other writer's change"
        );
        assert_eq!(done.attempts, 2);
    }
}
