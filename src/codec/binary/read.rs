//! The reading half of the cache's binary form: [`Reader`], its
//! primitives and each entity decoded whole. Every read is checked (a length
//! past the end, a byte no enum has, text that is not UTF-8) and gives
//! `None`, never a wrong value.

use serde::de::DeserializeOwned;

use std::ops::Range;

use crate::model::handoff::{Handoff, Tried};
use crate::model::{
    Claim, Decision, Extra, Monitor, Note, Outcome, Poll, Priority, Role, Run, RunKind, Timestamp,
    Todo, TodoClass, TodoStatus, Validation,
};

pub(super) struct Reader<'a> {
    pub(super) b: &'a [u8],
    pub(super) at: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let out = self.b.get(self.at..end)?;
        self.at = end;
        Some(out)
    }

    /// Runs `f` over all of `bytes`, which it must consume exactly.
    pub(super) fn whole<T>(
        bytes: &'a [u8],
        f: impl FnOnce(&mut Reader<'a>) -> Option<T>,
    ) -> Option<T> {
        let mut r = Reader { b: bytes, at: 0 };
        let value = f(&mut r)?;
        (r.at == bytes.len()).then_some(value)
    }

    /// `n` then `n` × (key, framed entity): where each key (UTF-8,
    /// strictly ascending) and each entity's bytes lie.
    pub(super) fn frames(&mut self) -> Option<Vec<(Range<usize>, Range<usize>)>> {
        let n = self.len()?;
        let mut out = Vec::with_capacity(n.min(self.b.len()));
        let mut last: Option<&str> = None;
        for _ in 0..n {
            let key = self.str()?;
            if last.is_some_and(|last| last >= key) {
                return None;
            }
            last = Some(key);
            let key = self.at - key.len()..self.at;
            let len = self.len()?;
            let start = self.at;
            self.take(len)?;
            out.push((key, start..self.at));
        }
        Some(out)
    }

    pub(super) fn byte(&mut self) -> Option<u8> {
        let b = *self.b.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    pub(super) fn u64(&mut self) -> Option<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(n);
            }
        }
        None
    }

    pub(super) fn len(&mut self) -> Option<usize> {
        usize::try_from(self.u64()?).ok()
    }

    pub(super) fn i64(&mut self) -> Option<i64> {
        let n = self.u64()?;
        Some(((n >> 1) as i64) ^ -((n & 1) as i64))
    }

    pub(super) fn bool(&mut self) -> Option<bool> {
        match self.byte()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    pub(super) fn str(&mut self) -> Option<&'a str> {
        let n = self.len()?;
        std::str::from_utf8(self.take(n)?).ok()
    }

    pub(super) fn string(&mut self) -> Option<String> {
        self.str().map(str::to_owned)
    }

    pub(super) fn opt<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.bool()? {
            f(self).map(Some)
        } else {
            Some(None)
        }
    }

    pub(super) fn opt_string(&mut self) -> Option<Option<String>> {
        self.opt(Self::string)
    }

    pub(super) fn strings(&mut self) -> Option<Vec<String>> {
        let n = self.len()?;
        (0..n).map(|_| self.string()).collect()
    }

    pub(super) fn strs(&mut self) -> Option<Vec<&'a str>> {
        let n = self.len()?;
        (0..n).map(|_| self.str()).collect()
    }

    /// Passes over a length-prefixed field (a string, a JSON blob) unread.
    pub(super) fn skip(&mut self) -> Option<()> {
        let n = self.len()?;
        self.take(n).map(drop)
    }

    pub(super) fn skip_opt(&mut self) -> Option<()> {
        self.opt(Self::skip).map(drop)
    }

    pub(super) fn skip_list(&mut self) -> Option<()> {
        (0..self.len()?).try_for_each(|_| self.skip())
    }

    pub(super) fn skip_extra(&mut self) -> Option<()> {
        if self.b.get(self.at) == Some(&0) {
            self.at += 1;
            return Some(());
        }
        self.skip()
    }

    pub(super) fn role(&mut self) -> Option<Role> {
        Some(match self.byte()? {
            0 => Role::Agent,
            1 => Role::User,
            _ => return None,
        })
    }

    pub(super) fn class(&mut self) -> Option<TodoClass> {
        Some(match self.byte()? {
            0 => TodoClass::AdvancementTask,
            1 => TodoClass::ContinuousMonitor,
            2 => TodoClass::Blocker,
            3 => TodoClass::UserGate,
            4 => TodoClass::UserAction,
            _ => return None,
        })
    }

    pub(super) fn status(&mut self) -> Option<TodoStatus> {
        Some(match self.byte()? {
            0 => TodoStatus::Open,
            1 => TodoStatus::Blocked,
            2 => TodoStatus::Deferred,
            3 => TodoStatus::Done,
            _ => return None,
        })
    }

    pub(super) fn priority(&mut self) -> Option<Priority> {
        Some(match self.byte()? {
            0 => Priority::P0,
            1 => Priority::P1,
            2 => Priority::P2,
            3 => Priority::P3,
            4 => Priority::P4,
            _ => return None,
        })
    }

    pub(super) fn outcome(&mut self) -> Option<Option<Outcome>> {
        Some(match self.byte()? {
            0 => None,
            1 => Some(Outcome::SurfaceOnly),
            2 => Some(Outcome::OutcomeGap),
            3 => Some(Outcome::OutcomeProgress),
            4 => Some(Outcome::PrimaryGoalOutcome),
            _ => return None,
        })
    }

    pub(super) fn run_kind(&mut self) -> Option<RunKind> {
        Some(match self.byte()? {
            0 => RunKind::Writeback,
            1 => RunKind::Spend,
            2 => RunKind::Void,
            3 => RunKind::Turn,
            4 => RunKind::Note,
            _ => return None,
        })
    }

    pub(super) fn time(&mut self) -> Option<Timestamp> {
        self.i64().map(Timestamp::from_unix)
    }

    pub(super) fn json<T: DeserializeOwned>(&mut self) -> Option<T> {
        let n = self.len()?;
        serde_json::from_slice(self.take(n)?).ok()
    }

    pub(super) fn extra(&mut self) -> Option<Extra> {
        if self.b.get(self.at) == Some(&0) {
            self.at += 1;
            return Some(Extra::new());
        }
        self.json()
    }

    pub(super) fn todo(&mut self) -> Option<Todo> {
        Some(Todo {
            id: self.string()?,
            goal: self.string()?,
            text: self.string()?,
            role: self.role()?,
            class: self.class()?,
            status: self.status()?,
            priority: self.priority()?,
            created_at: self.time()?,
            seq: self.opt(Self::u64)?,
            created_by: self.opt_string()?,
            updated_at: self.time()?,
            rev: self.u64()?,
            claim: self.opt(|r| {
                Some(Claim {
                    agent: r.string()?,
                    epoch: r.u64()?,
                    acquired_at: r.time()?,
                    expires_at: r.time()?,
                    extra: r.extra()?,
                })
            })?,
            last_epoch: self.u64()?,
            requires_capabilities: self.strings()?,
            exclude_agents: self.strings()?,
            resume_when: self.opt_string()?,
            validate: self.opt_string()?,
            evidence: self.opt_string()?,
            successors: self.strings()?,
            unblocks: self.opt_string()?,
            blocks_agent: self.opt_string()?,
            global: self.bool()?,
            decision: match self.byte()? {
                0 => None,
                1 => Some(Decision::Approve),
                2 => Some(Decision::Reject),
                3 => Some(Decision::Cancel),
                _ => return None,
            },
            resolved_by: self.opt_string()?,
            resolved_at: self.opt(Self::time)?,
            notes: {
                let n = self.len()?;
                (0..n)
                    .map(|_| {
                        Some(Note {
                            at: self.time()?,
                            agent: self.opt_string()?,
                            text: self.string()?,
                            extra: self.extra()?,
                        })
                    })
                    .collect::<Option<Vec<_>>>()?
            },
            handoff: self.opt(Self::handoff)?.map(Box::new),
            monitor: self.opt(|r| {
                Some(Monitor {
                    cadence: r.string()?,
                    next_due_at: r.opt(Self::time)?,
                    expires_at: r.opt(Self::time)?,
                    watch_only: r.bool()?,
                    last_checked_at: r.opt(Self::time)?,
                    consecutive_no_change: r.u64()?,
                    material_change_generation: r.u64()?,
                    polls: {
                        let n = r.len()?;
                        (0..n)
                            .map(|_| {
                                Some(Poll {
                                    at: r.time()?,
                                    agent: r.opt_string()?,
                                    material: r.bool()?,
                                    note: r.opt_string()?,
                                    follow_up: r.opt_string()?,
                                    extra: r.extra()?,
                                })
                            })
                            .collect::<Option<Vec<_>>>()?
                    },
                    extra: r.extra()?,
                })
            })?,
            extra: self.extra()?,
        })
    }

    pub(super) fn handoff(&mut self) -> Option<Handoff> {
        Some(Handoff {
            from: self.string()?,
            to: self.string()?,
            at: self.time()?,
            epoch: self.u64()?,
            work_summary: self.opt_string()?,
            approaches_tried: {
                let n = self.len()?;
                (0..n)
                    .map(|_| {
                        Some(Tried {
                            approach: self.string()?,
                            reason: self.opt_string()?,
                            extra: self.extra()?,
                        })
                    })
                    .collect::<Option<Vec<_>>>()?
            },
            next_steps: self.strings()?,
            open_questions: self.strings()?,
            files: self.strings()?,
            extra: self.extra()?,
        })
    }

    pub(super) fn run(&mut self) -> Option<Run> {
        Some(Run {
            id: self.string()?,
            kind: self.run_kind()?,
            goal: self.string()?,
            agent: self.opt_string()?,
            at: self.time()?,
            seq: self.opt(Self::u64)?,
            todo: self.opt_string()?,
            epoch: self.opt(Self::u64)?,
            outcome: self.outcome()?,
            summary: self.opt_string()?,
            validation: self.opt(|r| {
                Some(Validation {
                    command: r.string()?,
                    exit_code: i32::try_from(r.i64()?).ok()?,
                    extra: r.extra()?,
                })
            })?,
            artifacts: self.strings()?,
            artifact_urls: self.strings()?,
            turn: self.opt_string()?,
            slots: self.opt(|r| u32::try_from(r.u64()?).ok())?,
            writeback: self.opt_string()?,
            spend: self.opt_string()?,
            reason: self.opt_string()?,
            decision: self.opt(Self::json)?,
            todo_seq: self.opt(Self::u64)?,
            extra: self.extra()?,
        })
    }
}
