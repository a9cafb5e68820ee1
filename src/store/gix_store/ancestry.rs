//! Ancestry of state commits, answered in process: merge bases, "is this
//! an ancestor", and which of some heads no other reaches — what a sync
//! asks once per peer head.
//!
//! The walks are git's own (`paint_down_to_common` in git's
//! `commit-reach.c`, without generation numbers): from the commits asked
//! about, newest committer date first, painting each commit with the sides
//! that reach it, until every commit still queued is reached from both
//! sides through a common ancestor already found. The store keeps every
//! commit these walks read (parents and date), so the questions of one
//! sync, which walk the same recent history again and again, read each
//! commit once. A process per question (`git merge-base`) cost 3-6 ms each
//! on a fleet's history of octopus merges.

use std::collections::BinaryHeap;
use std::rc::Rc;

use gix::hashtable::HashMap;
use gix::ObjectId;

use super::{git_err, object_id, oid, Repository};
use crate::store::{Error, Oid};

const ONE: u8 = 1;
const TWO: u8 = 2;
const STALE: u8 = 4;
const RESULT: u8 = 8;

/// The most commits one walk takes off its queue. A sync's questions are
/// about recent history; one that reaches further (a peer ref far behind,
/// a fresh clone's first sync over thousands of octopus merges) is left to
/// git, which walks old history faster than reading it commit by commit
/// here. `None` from the public questions means "ask git".
const BUDGET: usize = 2_000;

/// A commit as the walks see it.
#[derive(Clone)]
pub(super) struct Node {
    time: i64,
    parents: Rc<[ObjectId]>,
}

/// One walk's paint and queue. It counts the queued entries that are not
/// stale, and keeps the count exact as commits turn stale, so it never
/// scans its queue to know whether to go on.
#[derive(Default)]
struct Walk {
    flags: HashMap<ObjectId, u8>,
    /// How many times each commit is queued.
    queued: HashMap<ObjectId, u32>,
    live: usize,
    queue: BinaryHeap<(i64, ObjectId)>,
}

impl Walk {
    fn stale(&self, id: &ObjectId) -> bool {
        self.flags.get(id).is_some_and(|f| f & STALE != 0)
    }

    fn push(&mut self, time: i64, id: ObjectId) {
        self.queue.push((time, id));
        *self.queued.entry(id).or_default() += 1;
        if !self.stale(&id) {
            self.live += 1;
        }
    }

    /// The newest queued commit and its paint.
    fn pop(&mut self) -> Option<(ObjectId, u8)> {
        let (_, id) = self.queue.pop()?;
        if let Some(n) = self.queued.get_mut(&id) {
            *n -= 1;
        }
        if !self.stale(&id) {
            self.live -= 1;
        }
        Some((id, self.flags.get(&id).copied().unwrap_or(0)))
    }

    /// Adds `paint` to `id`'s; whether that changed it (and it must be
    /// queued).
    fn paint(&mut self, id: ObjectId, paint: u8) -> bool {
        let f = self.flags.entry(id).or_default();
        if *f & paint == paint {
            return false;
        }
        let was_stale = *f & STALE != 0;
        *f |= paint;
        if !was_stale && *f & STALE != 0 {
            // Its entries already queued are stale now too.
            self.live -= self.queued.get(&id).copied().unwrap_or(0) as usize;
        }
        true
    }
}

impl Repository {
    fn node(&self, id: ObjectId) -> Result<Node, Error> {
        if let Some(n) = self.commits.borrow().get(&id) {
            return Ok(n.clone());
        }
        let node = {
            let repo = self.repo.borrow();
            let c = repo
                .find_commit(id)
                .map_err(|e| git_err(&format!("reading commit {id}"), e))?;
            let decoded = c.decode().map_err(|e| git_err("decoding commit", e))?;
            let time = decoded
                .committer()
                .map_err(|e| git_err("commit committer", e))?
                .seconds();
            Node {
                time,
                parents: decoded.parents().collect::<Vec<_>>().into(),
            }
        };
        self.commits.borrow_mut().insert(id, node.clone());
        Ok(node)
    }

    /// git's `paint_down_to_common`: paints `one` and its ancestors ONE,
    /// the `others` and theirs TWO, newest first, until every commit
    /// still queued is below a common ancestor found (STALE) — or, with
    /// `until_two_on` set, until that commit is painted TWO. Returns the
    /// common ancestors found, newest first, and every commit's paint.
    #[allow(clippy::type_complexity)]
    fn paint(
        &self,
        one: ObjectId,
        others: &[ObjectId],
        until_two_on: Option<ObjectId>,
    ) -> Result<Option<(Vec<ObjectId>, HashMap<ObjectId, u8>)>, Error> {
        let mut w = Walk::default();
        w.flags.insert(one, ONE);
        w.push(self.node(one)?.time, one);
        for o in others {
            *w.flags.entry(*o).or_default() |= TWO;
            w.push(self.node(*o)?.time, *o);
        }
        let mut found = Vec::new();
        let mut popped = 0;
        while w.live > 0 {
            popped += 1;
            if popped > BUDGET {
                return Ok(None);
            }
            if until_two_on.is_some_and(|t| w.flags.get(&t).is_some_and(|f| f & TWO != 0)) {
                break;
            }
            let Some((id, f)) = w.pop() else { break };
            let mut paint = f & (ONE | TWO | STALE);
            if paint == ONE | TWO {
                if f & RESULT == 0 {
                    w.flags.insert(id, f | RESULT);
                    found.push(id);
                }
                paint |= STALE;
            }
            for &p in self.node(id)?.parents.iter() {
                if w.paint(p, paint) {
                    w.push(self.node(p)?.time, p);
                }
            }
        }
        let flags = w.flags;
        Ok(Some((found, flags)))
    }

    /// The best common ancestors of `one` and any of `others` (git's
    /// `merge_bases_many` and `remove_redundant`), newest first.
    fn bases(&self, one: ObjectId, others: &[ObjectId]) -> Result<Option<Vec<ObjectId>>, Error> {
        if others.contains(&one) {
            return Ok(Some(vec![one]));
        }
        let Some((found, flags)) = self.paint(one, others, None)? else {
            return Ok(None);
        };
        let mut bases: Vec<ObjectId> = found
            .into_iter()
            .filter(|id| flags.get(id).is_some_and(|f| f & STALE == 0))
            .collect();
        if bases.len() > 1 {
            match self.remove_redundant(&bases)? {
                Some(kept) => bases = kept,
                None => return Ok(None),
            }
        }
        Ok(Some(bases))
    }

    /// Of `candidates`, those no other of them reaches.
    fn remove_redundant(&self, candidates: &[ObjectId]) -> Result<Option<Vec<ObjectId>>, Error> {
        let mut out = Vec::new();
        for (i, c) in candidates.iter().enumerate() {
            let mut reached = false;
            for (j, other) in candidates.iter().enumerate() {
                if i == j {
                    continue;
                }
                match self.reaches(*other, *c)? {
                    Some(true) => {
                        reached = true;
                        break;
                    }
                    Some(false) => {}
                    None => return Ok(None),
                }
            }
            if !reached {
                out.push(*c);
            }
        }
        Ok(Some(out))
    }

    /// Whether `from` reaches `target` (or is it): painted from both, the
    /// walk stops once `target` is painted from `from`, or once it is past
    /// their common ancestors. No date cuts it short, so a commit dated
    /// before its parent is still found.
    fn reaches(&self, from: ObjectId, target: ObjectId) -> Result<Option<bool>, Error> {
        if from == target {
            return Ok(Some(true));
        }
        Ok(self
            .paint(target, &[from], Some(target))?
            .map(|(_, flags)| flags.get(&target).is_some_and(|f| f & TWO != 0)))
    }

    /// A best common ancestor of `one` and the commits `others` (as if
    /// merged), as `git merge-base one others…` (`Some(None)`: unrelated;
    /// `None`: past the walk's budget, ask git).
    pub fn merge_base(&self, one: &Oid, others: &[&Oid]) -> Result<Option<Option<Oid>>, Error> {
        let others: Vec<ObjectId> = others
            .iter()
            .map(|o| object_id(o))
            .collect::<Result<_, _>>()?;
        let bases = self.bases(object_id(one)?, &others)?;
        Ok(bases.map(|b| b.into_iter().next().map(oid)))
    }

    /// Whether `ancestor` is `descendant` or reachable from it (`None`:
    /// past the walk's budget, ask git).
    pub fn is_ancestor(&self, ancestor: &Oid, descendant: &Oid) -> Result<Option<bool>, Error> {
        self.reaches(object_id(descendant)?, object_id(ancestor)?)
    }

    /// The commits of `commits` no other one of them reaches, each once,
    /// in their first order (`git merge-base --independent`; `None`: past
    /// the walk's budget, ask git).
    pub fn independent(&self, commits: &[Oid]) -> Result<Option<Vec<Oid>>, Error> {
        let mut unique: Vec<ObjectId> = Vec::new();
        for c in commits {
            let id = object_id(c)?;
            if !unique.contains(&id) {
                unique.push(id);
            }
        }
        Ok(self
            .remove_redundant(&unique)?
            .map(|kept| kept.into_iter().map(oid).collect()))
    }
}
