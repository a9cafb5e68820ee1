//! The only way state is written: load the tip → run a mutation → commit the
//! changed files on that tip → move the ref only if it did not move meanwhile
//! → otherwise reload and run the mutation again, a bounded number of times.
//!
//! Because the mutation re-runs on the fresh tip, every rule it checks (a live
//! claim, a fencing epoch) is checked against the state it commits on.

use std::time::Duration;

use crate::codec;
use crate::model::{leaks, State, Timestamp};
use crate::store::cache::remember_delta;
use crate::store::{health, CasResult, Error, FileChange, GixStore, Message, Oid};

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
/// docs). `mutate` is also told the tip it works on.
pub fn transact<R, E, F>(store: &GixStore, now: Timestamp, mut mutate: F) -> Result<Committed<R>, E>
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
        let (Some(message), Some(new)) = (&write.message, &state) else {
            return Ok(done(None));
        };
        let mut changes = written(skeleton.as_ref(), new);
        changes.extend(
            write
                .removed
                .iter()
                .map(|path| FileChange::Remove { path: path.clone() }),
        );
        if changes.is_empty() {
            return Ok(done(None));
        }
        let checked = Checked::new(store, &base.iter().collect::<Vec<_>>(), changes, message)?;
        match store.commit(base.as_ref(), None, &checked, now)? {
            CasResult::Committed(oid) => {
                remember_delta(store, &oid, base.as_ref(), new, checked.changes());
                if let Some(mut new) = state {
                    new.clean();
                    store.memo_put(oid.clone(), new);
                }
                return Ok(done(Some(oid)));
            }
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

/// A change that passed every check a write makes, and the only thing the
/// store commits ([`GixStore::commit`], and its detached and merge
/// commits all take one): whatever publishes a write — a compare-and-swap
/// of the local ref, a commit pushed before the ref moves, a signed commit,
/// a sync merge, a repair — cannot skip a check.
///
/// The checks, in order: the files read back ([`check_readable`]); the
/// files and the message add no credential the parents did not hold
/// ([`refuse_new_leaks`]), and a rule `--allow-secret-pattern` let through
/// is named in a `Loopx-Allowed-Secret-Pattern` trailer ([`with_allowances`]).
#[derive(Debug)]
pub struct Checked {
    changes: Vec<FileChange>,
    message: Message,
}

impl Checked {
    /// Checks `changes` and `message` for a commit whose parents are
    /// `bases` (none for a root commit).
    pub fn new(
        store: &GixStore,
        bases: &[&Oid],
        changes: Vec<FileChange>,
        message: &Message,
    ) -> Result<Self, Error> {
        check_readable(&changes)?;
        let passed = refuse_new_leaks(store, bases, &changes, message)?;
        let message = with_allowances(message, &passed).unwrap_or_else(|| message.clone());
        Ok(Checked { changes, message })
    }

    pub fn changes(&self) -> &[FileChange] {
        &self.changes
    }

    /// The message, with its allowance trailers.
    pub fn message(&self) -> &Message {
        &self.message
    }
}

/// Refuses changes a reader would refuse (a file too large, a time out of
/// range): nothing is ever committed that would make the state unreadable.
fn check_readable(changes: &[FileChange]) -> Result<(), Error> {
    for change in changes {
        if let FileChange::Upsert { path, bytes } = change {
            codec::check_file(path, bytes).map_err(Error::Unwritable)?;
        }
    }
    Ok(())
}

/// Refuses a write that would commit a credential (SPEC §5, `leak_detected`):
/// the changed files' bytes and the commit message are scanned
/// ([`leaks::scan`]). A credential the file already held at one of `bases`
/// (the parents: a merge has several; one that arrived from a remote or
/// predates the scan) does not block the write:
/// refusing it would make that todo unwritable, even to clear it, and the
/// write adds nothing new. `sync` still refuses to push it, and `redact`
/// removes it from unpushed history.
///
/// A new hit of a rule the store allows ([`GixStore::allowed_leaks`]) passes;
/// the rules that let one through are returned, for the commit's
/// `Loopx-Allowed-Secret-Pattern` trailers ([`with_allowances`]).
fn refuse_new_leaks(
    store: &GixStore,
    bases: &[&Oid],
    changes: &[FileChange],
    message: &Message,
) -> Result<Vec<&'static str>, Error> {
    let allowed = store.allowed_leaks();
    let mut passed: Vec<&'static str> = Vec::new();
    let mut pass = |kind: &'static str| {
        let ok = allowed.contains(&kind);
        if ok && !passed.contains(&kind) {
            passed.push(kind);
        }
        ok
    };
    // Each changed file as every base holds it, read once when needed.
    let mut old: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut old_at = |i: usize| -> Result<Vec<Vec<u8>>, Error> {
        if old.is_empty() {
            old = changes
                .iter()
                .map(|c| {
                    let path = match c {
                        FileChange::Upsert { path, .. } | FileChange::Remove { path } => path,
                    };
                    let mut held = Vec::new();
                    for base in bases {
                        held.extend(store.read_file(base, path)?);
                    }
                    Ok(held)
                })
                .collect::<Result<_, Error>>()?;
        }
        Ok(old[i].clone())
    };
    let held_before = |secret: &str, versions: &[Vec<u8>]| {
        versions
            .iter()
            .any(|b| String::from_utf8_lossy(b).contains(secret))
    };
    for (i, change) in changes.iter().enumerate() {
        let FileChange::Upsert { path, bytes } = change else {
            continue;
        };
        for leak in leaks::scan_bytes(bytes) {
            if !held_before(&leak.secret, &old_at(i)?) && !pass(leak.kind) {
                let text = String::from_utf8_lossy(bytes);
                let line = leaks::lines_of(&text, &leak.secret)[0];
                let place = match field_of(&text, &leak.secret) {
                    Some(field) => format!("{path}:{line} (field `{field}`)"),
                    None => format!("{path}:{line}"),
                };
                return Err(Error::Leak {
                    place,
                    what: leak.describe(),
                });
            }
        }
    }
    for leak in leaks::scan(&message.render()) {
        let mut known = false;
        for i in 0..changes.len() {
            known |= held_before(&leak.secret, &old_at(i)?);
        }
        if !known && !pass(leak.kind) {
            return Err(Error::Leak {
                place: format!(
                    "the message of this `{}` commit",
                    leak_free_subject(message)
                ),
                what: leak.describe(),
            });
        }
    }
    Ok(passed)
}

/// `message` with a `Loopx-Allowed-Secret-Pattern` trailer for each rule
/// `--allow-secret-pattern` let through, so a reviewer sees the allowance.
fn with_allowances(message: &Message, passed: &[&'static str]) -> Option<Message> {
    if passed.is_empty() {
        return None;
    }
    let mut message = message.clone();
    for rule in passed {
        message = message.trailer("Loopx-Allowed-Secret-Pattern", *rule);
    }
    Some(message)
}

/// The YAML key whose value holds `secret` in a file we wrote: the nearest
/// `key:` at or above the line it starts on.
fn field_of(text: &str, secret: &str) -> Option<String> {
    let at = text.find(secret)?;
    text[..at]
        .lines()
        .rev()
        .chain(text[at..].lines().take(1))
        .find_map(|line| {
            let line = line.trim_start().trim_start_matches("- ");
            let key = &line[..line.find(':')?];
            (!key.is_empty() && key.bytes().all(|c| c.is_ascii_lowercase() || c == b'_'))
                .then(|| key.to_owned())
        })
}

/// The message's operation, for naming it without repeating its text.
fn leak_free_subject(message: &Message) -> String {
    message
        .trailers
        .iter()
        .find(|(k, _)| *k == "Loopx-Op")
        .map_or_else(String::new, |(_, v)| v.clone())
}

/// What a mutation wrote, as file changes (see [`codec::written_files`]).
pub fn written(before: Option<&codec::Skeleton>, new: &State) -> Vec<FileChange> {
    to_changes(codec::written_files(before, new))
}

fn to_changes(edits: Vec<codec::FileEdit>) -> Vec<FileChange> {
    edits
        .into_iter()
        .map(|(path, bytes)| match bytes {
            Some(bytes) => FileChange::Upsert { path, bytes },
            None => FileChange::Remove { path },
        })
        .collect()
}

/// The file changes that turn `old` into `new`. Files outside the layout are
/// never touched, and neither are entities that did not change.
pub fn changes(old: Option<&State>, new: &State) -> Vec<FileChange> {
    to_changes(codec::changed_files(old, new))
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
        transact::<_, Error, _>(store, t(1), |s, _| {
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
        let done = transact::<_, Error, _>(&store, t(2), |s, _| {
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
                let checked = Checked::new(&store, &[], changes(Some(&theirs), &new), &message);
                let moved = store.commit(tip.as_ref(), None, &checked.unwrap(), t(2));
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
