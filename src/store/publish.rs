//! A checked change on its way to `loopx-state`, and the ways it is
//! published. Every state commit git-loopx makes is a [`Draft`] — the
//! change passed the pipeline's checks ([`Checked`]) against every parent —
//! and leaves through one of its ends:
//!
//! - [`Draft::compare_and_swap`]: the commit, and the state ref moved only
//!   if it still holds the first parent (a write, a sync merge);
//! - [`Draft::detached`]: the commit alone, no ref moved; the caller
//!   publishes it elsewhere first (a `--sync` claim's push, a lease ref, a
//!   signature), then [`Detached::land`]s it on the state ref,
//!   [`Detached::land_as`] another commit of the same tree (the signed
//!   one), or [`Detached::settle`]s it (a ref elsewhere reaches it, or it
//!   is given up);
//! - [`Draft::restore`]: a repair, moving the ref from a tip a reader
//!   refuses.
//!
//! Each end caches the new state as a commit of this host's
//! (`StateCache::remember_delta`, and the cache's memo once the ref holds it),
//! so a write on the next line starts from it. This module is the only
//! caller of the store's commit entry points (`Repository::write_commit`,
//! `Repository::write_detached`, `pub(in crate::store)`;
//! `tests/it/layers.rs` holds it).

use crate::codec::Skeleton;
use crate::model::{State, Timestamp};
use crate::store::checked::written;
use crate::store::{
    CasResult, Checked, Error, FileChange, GixStore, Message, Oid, Policy, Repository, StateCache,
    STATE_REF,
};

/// A change that passed every check, with the parents it was checked
/// against and the state it makes.
#[derive(Debug)]
pub struct Draft {
    parents: Vec<Oid>,
    checked: Checked,
    state: Option<State>,
}

impl Draft {
    /// What a decision wrote to the state loaded at `parent` (`before` is
    /// that state's skeleton, taken before the decision ran), plus the
    /// files it removes (`removed`: archived runs), checked.
    pub fn of_state(
        repo: &Repository,
        policy: &Policy,
        parent: Option<&Oid>,
        before: Option<&Skeleton>,
        state: State,
        removed: &[String],
        message: &Message,
    ) -> Result<Draft, Error> {
        let mut changes = written(before, &state);
        changes.extend(
            removed
                .iter()
                .map(|path| FileChange::Remove { path: path.clone() }),
        );
        let parents: Vec<Oid> = parent.into_iter().cloned().collect();
        Draft::of_changes(repo, policy, parents, changes, message, Some(state))
    }

    /// `changes` on the tree of `parents[0]`, a commit whose parents are
    /// `parents` (a merge has several, a lease commit none), checked
    /// against each under `policy`; `state` is the state it makes, when
    /// there is one.
    pub fn of_changes(
        repo: &Repository,
        policy: &Policy,
        parents: Vec<Oid>,
        changes: Vec<FileChange>,
        message: &Message,
        state: Option<State>,
    ) -> Result<Draft, Error> {
        let bases: Vec<&Oid> = parents.iter().collect();
        let checked = Checked::new(repo, policy, &bases, changes, message)?;
        Ok(Draft {
            parents,
            checked,
            state,
        })
    }

    /// Whether the change touches no file.
    pub fn is_empty(&self) -> bool {
        self.checked.changes().is_empty()
    }

    /// The message, with its allowance trailers.
    pub fn message(&self) -> &Message {
        self.checked.message()
    }

    /// Commits on the first parent and moves the state ref only if it still
    /// holds that parent (`MustNotExist` for a root commit). `Retry` when
    /// another writer moved it first; `Unchanged` when the tree is the
    /// parent's (no commit).
    pub fn compare_and_swap(self, store: &GixStore, now: Timestamp) -> Result<CasResult, Error> {
        let (first, others) = match self.parents.split_first() {
            Some((first, others)) => (Some(first), others),
            None => (None, &[][..]),
        };
        let done = store.write_commit(first, others, &self.checked, now)?;
        if let CasResult::Committed(oid) = &done {
            self.cached(store.cache(), oid);
            self.remembered(store.cache(), oid.clone());
        }
        Ok(done)
    }

    /// Writes the commit and moves no ref. `None` when the tree did not
    /// change (a commit on one parent only: a merge or a root is always
    /// written).
    pub fn detached(self, store: &GixStore, now: Timestamp) -> Result<Option<Detached>, Error> {
        let always = self.parents.len() != 1;
        self.write_detached(store, now, always)
    }

    /// Like [`Draft::detached`], and a commit even when the tree did not
    /// change (a lease commit, a claim already confirmed on the remote).
    pub fn detached_always(self, store: &GixStore, now: Timestamp) -> Result<Detached, Error> {
        Ok(self
            .write_detached(store, now, true)?
            .expect("an always-written commit"))
    }

    fn write_detached(
        self,
        store: &GixStore,
        now: Timestamp,
        always: bool,
    ) -> Result<Option<Detached>, Error> {
        let Some(commit) = store.write_detached(&self.parents, &self.checked, now, always)? else {
            return Ok(None);
        };
        // Cached like any write (a push's leak check reads it next); an
        // entry for a commit that never lands on a ref is harmless.
        self.cached(store.cache(), &commit);
        Ok(Some(Detached {
            commit,
            draft: self,
        }))
    }

    /// A repair: a new commit on the first parent (the newest commit that
    /// reads), and the state ref moved to it from `broken` (the tip a reader
    /// refuses, or the tip whose objects are gone). `None` when the ref no
    /// longer holds `broken`.
    pub fn restore(
        self,
        store: &GixStore,
        broken: &Oid,
        now: Timestamp,
    ) -> Result<Option<Oid>, Error> {
        let detached = self.detached_always(store, now)?;
        let commit = detached.id().clone();
        let landed = detached.land(store, Some(broken), "", now)?;
        Ok(landed.then_some(commit))
    }

    fn cached(&self, cache: &StateCache, commit: &Oid) {
        if let Some(state) = &self.state {
            let parent = self.parents.first();
            cache.remember_delta(commit, parent, state, self.checked.changes());
        }
    }

    fn remembered(self, cache: &StateCache, commit: Oid) {
        if let Some(mut state) = self.state {
            state.clean();
            cache.memo_put(commit, state);
        }
    }
}

/// A commit written and not yet on the state ref; its objects are kept
/// (against a `git gc` beside it) until it lands or is settled.
#[derive(Debug)]
#[must_use = "a detached commit lands on the state ref or is settled"]
pub struct Detached {
    commit: Oid,
    draft: Draft,
}

impl Detached {
    pub fn id(&self) -> &Oid {
        &self.commit
    }

    /// The message it was written with.
    pub fn message(&self) -> &Message {
        self.draft.message()
    }

    /// Moves the state ref from `from` (created when `None`) to this
    /// commit; `false` when the ref no longer holds `from`. The reflog
    /// entry is `loopx: <subject><how>`.
    pub fn land(
        self,
        store: &GixStore,
        from: Option<&Oid>,
        how: &str,
        now: Timestamp,
    ) -> Result<bool, Error> {
        let commit = self.commit.clone();
        self.land_as(store, &commit, from, how, now)
    }

    /// Like [`Detached::land`], onto `commit`: another commit of this one's
    /// tree and parents (the same change, signed by git).
    pub fn land_as(
        self,
        store: &GixStore,
        commit: &Oid,
        from: Option<&Oid>,
        how: &str,
        now: Timestamp,
    ) -> Result<bool, Error> {
        let reflog = format!("loopx: {}{how}", self.draft.message().subject);
        let moved = match from {
            Some(from) => store.move_ref(STATE_REF, Some(from), commit, &reflog, now),
            None => store.create_ref(STATE_REF, commit, &reflog, now),
        };
        store.settle_detached(&self.commit);
        if moved? {
            if *commit != self.commit {
                self.draft.cached(store.cache(), commit);
            }
            self.draft.remembered(store.cache(), commit.clone());
            return Ok(true);
        }
        Ok(false)
    }

    /// Forgets it: a ref elsewhere holds it now (a remote's, a lease
    /// ref), or it was given up. Its objects are checked first.
    pub fn settle(self, repo: &Repository) -> Oid {
        repo.settle_detached(&self.commit);
        self.commit
    }

    /// Keeps it pending past this value (a lease commit travels as an id
    /// in a push); [`settle`] it once the push is over.
    pub fn into_pending(self) -> Oid {
        self.commit
    }
}

/// Settles a commit [`Detached::into_pending`] kept: a push that carried it
/// is over.
pub fn settle(repo: &Repository, commit: &Oid) {
    repo.settle_detached(commit);
}
