//! The facts scans read straight from an entity's encoding
//! ([`TodoFacts`], [`RunFacts`]): the fields in the order the whole decoders
//! of [`super::read`] read them, the ones a scan needs borrowed from the
//! bytes and the rest passed over unread.

use crate::model::facts::{RunFacts, TodoFacts};

use super::read::Reader;

impl<'a> Reader<'a> {
    /// A todo's [`TodoFacts`], borrowed from its encoding: the fields in the
    /// order [`Reader::todo`] reads them, the rest passed over.
    pub(super) fn todo_facts(&mut self) -> Option<TodoFacts<'a>> {
        let id = self.str()?;
        self.skip()?; // goal
        self.skip()?; // text
        let (role, class, status, priority) = (
            self.role()?,
            self.class()?,
            self.status()?,
            self.priority()?,
        );
        let created_at = self.time()?;
        let seq = self.opt(Self::u64)?;
        self.skip_opt()?; // created_by
        self.time()?; // updated_at
        self.u64()?; // rev
        let claim = self.opt(|r| {
            let agent = r.str()?;
            r.u64()?; // epoch
            r.time()?; // acquired_at
            let expires_at = r.time()?;
            r.skip_extra()?;
            Some((agent, expires_at))
        })?;
        self.u64()?; // last_epoch
        let requires_capabilities = self.strs()?;
        let exclude_agents = self.strs()?;
        let resume_when = self.opt(Self::str)?;
        self.skip_opt()?; // validate
        self.skip_opt()?; // evidence
        self.skip_list()?; // successors
        let unblocks = self.opt(Self::str)?;
        let blocks_agent = self.opt(Self::str)?;
        let global = self.bool()?;
        if self.byte()? > 3 {
            return None; // decision
        }
        self.skip_opt()?; // resolved_by
        self.opt(Self::time)?; // resolved_at
        for _ in 0..self.len()? {
            self.time()?;
            self.skip_opt()?;
            self.skip()?;
            self.skip_extra()?;
        } // notes
        self.opt(|r| {
            r.skip()?; // from
            r.skip()?; // to
            r.time()?; // at
            r.u64()?; // epoch
            r.skip_opt()?; // work_summary
            for _ in 0..r.len()? {
                r.skip()?;
                r.skip_opt()?;
                r.skip_extra()?;
            } // approaches_tried
            r.skip_list()?; // next_steps
            r.skip_list()?; // open_questions
            r.skip_list()?; // files
            r.skip_extra()
        })?; // handoff
        let monitor = self.opt(|r| {
            r.skip()?; // cadence
            let due = r.opt(Self::time)?;
            let expires_at = r.opt(Self::time)?;
            r.bool()?; // watch_only
            r.opt(Self::time)?; // last_checked_at
            r.u64()?; // consecutive_no_change
            r.u64()?; // material_change_generation
            for _ in 0..r.len()? {
                r.time()?;
                r.skip_opt()?;
                r.bool()?;
                r.skip_opt()?;
                r.skip_opt()?;
                r.skip_extra()?;
            } // polls
            r.skip_extra()?;
            Some((due, expires_at))
        })?;
        let monitor_due = monitor.map(|(due, _)| due);
        let monitor_expires_at = monitor.and_then(|(_, expires_at)| expires_at);
        self.skip_extra()?;
        Some(TodoFacts {
            id,
            role,
            class,
            status,
            priority,
            created_at,
            seq,
            claim,
            requires_capabilities,
            exclude_agents,
            resume_when,
            unblocks,
            blocks_agent,
            global,
            monitor_due,
            monitor_expires_at,
        })
    }

    /// A run's [`RunFacts`], borrowed from its encoding (see [`Reader::run`]).
    pub(super) fn run_facts(&mut self) -> Option<RunFacts<'a>> {
        let id = self.str()?;
        let kind = self.run_kind()?;
        self.skip()?; // goal
        let agent = self.opt(Self::str)?;
        let at = self.time()?;
        let seq = self.opt(Self::u64)?;
        let todo = self.opt(Self::str)?;
        self.opt(Self::u64)?; // epoch
        let outcome = self.outcome()?;
        self.skip_opt()?; // summary
        self.opt(|r| {
            r.skip()?;
            r.i64()?;
            r.skip_extra()
        })?; // validation
        self.skip_list()?; // artifacts
        self.skip_list()?; // artifact_urls
        let turn = self.opt(Self::str)?;
        let slots = self.opt(|r| u32::try_from(r.u64()?).ok())?;
        let writeback = self.opt(Self::str)?;
        let spend = self.opt(Self::str)?;
        let reason = self.opt(Self::str)?;
        self.skip_opt()?; // decision
        self.opt(Self::u64)?; // todo_seq
        self.skip_extra()?;
        Some(RunFacts {
            id,
            kind,
            agent,
            at,
            seq,
            todo,
            reason,
            outcome,
            turn,
            slots,
            writeback,
            spend,
        })
    }
}
