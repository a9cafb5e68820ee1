//! How a use case writes: one transaction whose only variable is how its
//! commit is published (`store::publish`).
//!
//! Every state commit of a decision — a write's compare-and-swap
//! ([`super::transact`]), a `--sync` claim pushed before the branch moves,
//! a claim confirmed through shared refs, a signed write — is drafted by
//! [`Writer::draft`], which holds the rules of who may write once:
//!
//! 1. the actor backstop: inside an agent runtime with no agent named,
//!    nothing is written ([`Context::actor`]); a turn that ended writes
//!    nothing more (`local::check_own_turn_open`); a named agent is
//!    registered;
//! 2. retention: the runs past the horizon leave in the same commit
//!    (`retention::archive_due`);
//! 3. the store's checks ([`Draft`]: read back, credential scan).
//!
//! A sync merge and a repair decide nothing of their own and are drafted by
//! [`Writer::draft_merge`] (the store's checks only). Whatever lands on
//! `loopx-state` then gets git's upkeep once ([`Writer::landed`]).

use crate::codec::Skeleton;
use crate::model::State;
use crate::session::{local, retention, Context};
use crate::store::{self, Draft, FileChange, Message, Oid, Write};
use crate::Result;

/// The write rules of one command, read once.
pub struct Writer<'c> {
    ctx: &'c Context,
    /// `loopx.runRetention`, read at the first write that needs it (a bad
    /// value refuses writes, not a repair or a read).
    retention: std::cell::OnceCell<retention::Setting>,
}

/// The state at a commit, opened for a decision: the skeleton is taken
/// before the decision runs, so the draft holds only what it wrote.
pub struct Opened {
    pub parent: Oid,
    pub state: State,
    skeleton: Skeleton,
}

impl<'c> Writer<'c> {
    pub fn new(ctx: &'c Context) -> Self {
        Writer {
            ctx,
            retention: std::cell::OnceCell::new(),
        }
    }

    fn retention(&self) -> Result<retention::Setting> {
        if let Some(setting) = self.retention.get() {
            return Ok(*setting);
        }
        let setting = retention::setting(self.ctx)?;
        Ok(*self.retention.get_or_init(|| setting))
    }

    /// The state at `parent`, to decide on (and the commit the decision's
    /// history rules read at, `Context::decide_on`).
    pub fn open(&self, parent: Oid) -> Result<Opened> {
        let state = store::transaction::state_at(&self.ctx.store, &parent)?;
        self.ctx.decide_on(Some(&parent));
        Ok(Opened {
            skeleton: Skeleton::of(&state),
            parent,
            state,
        })
    }

    /// The rules a decided write obeys before it is drafted (see the module
    /// docs): who writes, then retention's archive into `write`. A write
    /// with no message writes nothing and is let through.
    pub fn admit<R>(
        &self,
        state: &mut Option<State>,
        base: Option<&Oid>,
        write: &mut Write<R>,
    ) -> Result<()> {
        if write.message.is_none() {
            return Ok(());
        }
        let ctx = self.ctx;
        ctx.actor()?;
        local::check_own_turn_open(ctx)?;
        if let (Some(agent), Some(state)) = (ctx.agent(), state.as_ref()) {
            state.check_registered(agent)?;
        }
        if let (Some(state), Some(base)) = (state.as_mut(), base) {
            retention::archive_due(ctx, self.retention()?, state, base, write);
        }
        Ok(())
    }

    /// The draft of a decision made on `opened` with `message`: admitted
    /// ([`Writer::admit`]), then checked by the store. The message it
    /// returns carries the archive's trailer when runs left.
    pub fn draft(&self, opened: Opened, message: Message) -> Result<Draft> {
        let Opened {
            parent,
            state,
            skeleton,
        } = opened;
        let mut state = Some(state);
        let mut write = Write::commit((), message);
        self.admit(&mut state, Some(&parent), &mut write)?;
        let (Some(state), Some(message)) = (state, write.message) else {
            unreachable!("admitted with its state and message")
        };
        Ok(Draft::of_state(
            &self.ctx.store,
            self.ctx.policy(),
            Some(&parent),
            Some(&skeleton),
            state,
            &write.removed,
            &message,
        )?)
    }

    /// The draft of a commit that decides nothing of its own — a sync
    /// merge of `parents`, a repair, a lease commit — checked by the store
    /// against every parent.
    pub fn draft_merge(
        &self,
        parents: Vec<Oid>,
        changes: Vec<FileChange>,
        message: &Message,
        state: Option<State>,
    ) -> Result<Draft> {
        Ok(Draft::of_changes(
            &self.ctx.store,
            self.ctx.policy(),
            parents,
            changes,
            message,
            state,
        )?)
    }

    /// After a commit of this command's landed on `loopx-state`: git's own
    /// automatic maintenance, as `git commit` runs it, when it would find
    /// work, or a multi-pack-index over a big pack (see
    /// `Repository::upkeep_due`; looked at on one commit in eight, by its
    /// id). It follows git's settings: `maintenance.auto=false` or
    /// `gc.auto=0` turn it off.
    pub fn landed(&self, commit: &Oid) {
        if !(commit.0.starts_with('0') || commit.0.starts_with('8')) {
            return;
        }
        let store = &self.ctx.store;
        let due = store.upkeep_due();
        if due.maintenance {
            crate::git_cmd::maintenance_detached(store.common_dir());
        } else if due.multi_pack_index {
            crate::git_cmd::multi_pack_index_detached(store.common_dir());
        }
    }
}
