//! The writing half of the cache's binary form: [`Writer`], its
//! primitives (varints, zig-zag integers, length-prefixed strings, one byte
//! for an absent option) and each entity laid out field by field, in the
//! order [`super::read::Reader`] reads them back.

use serde::Serialize;

use crate::model::handoff::{Handoff, Tried};
use crate::model::{
    Claim, Decision, Extra, Monitor, Note, Outcome, Poll, Role, Run, RunKind, Timestamp, Todo,
    TodoClass, TodoStatus, Validation,
};

pub(super) struct Writer(pub(super) Vec<u8>);

impl Writer {
    pub(super) fn u64(&mut self, mut n: u64) {
        while n >= 0x80 {
            self.0.push((n as u8) | 0x80);
            n >>= 7;
        }
        self.0.push(n as u8);
    }

    pub(super) fn len(&mut self, n: usize) {
        self.u64(n as u64);
    }

    pub(super) fn i64(&mut self, n: i64) {
        // zig-zag, so small negative numbers stay small
        self.u64(((n << 1) ^ (n >> 63)) as u64);
    }

    pub(super) fn byte(&mut self, b: u8) {
        self.0.push(b);
    }

    pub(super) fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    pub(super) fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.0.extend_from_slice(b);
    }

    pub(super) fn opt_str(&mut self, s: Option<&str>) {
        match s {
            None => self.byte(0),
            Some(s) => {
                self.byte(1);
                self.str(s);
            }
        }
    }

    pub(super) fn strs(&mut self, v: &[String]) {
        self.len(v.len());
        for s in v {
            self.str(s);
        }
    }

    pub(super) fn opt_u64(&mut self, n: Option<u64>) {
        match n {
            None => self.byte(0),
            Some(n) => {
                self.byte(1);
                self.u64(n);
            }
        }
    }

    pub(super) fn time(&mut self, t: Timestamp) {
        self.i64(t.unix());
    }

    pub(super) fn opt_time(&mut self, t: Option<Timestamp>) {
        match t {
            None => self.byte(0),
            Some(t) => {
                self.byte(1);
                self.time(t);
            }
        }
    }

    /// Writes what `f` writes, preceded by its length.
    pub(super) fn framed(&mut self, f: impl FnOnce(&mut Self)) {
        let mut inner = Writer(std::mem::take(&mut self.0));
        let start = inner.0.len();
        f(&mut inner);
        let body = inner.0.split_off(start);
        self.0 = inner.0;
        self.len(body.len());
        self.0.extend_from_slice(&body);
    }

    pub(super) fn json<T: Serialize>(&mut self, value: &T) {
        let bytes = serde_json::to_vec(value).expect("BUG: entities serialize to JSON");
        self.len(bytes.len());
        self.0.extend_from_slice(&bytes);
    }

    pub(super) fn extra(&mut self, extra: &Extra) {
        if extra.is_empty() {
            self.len(0);
        } else {
            self.json(extra);
        }
    }

    pub(super) fn todo(&mut self, t: &Todo) {
        let Todo {
            id,
            goal,
            text,
            role,
            class,
            status,
            priority,
            created_at,
            seq,
            created_by,
            updated_at,
            rev,
            claim,
            last_epoch,
            requires_capabilities,
            exclude_agents,
            resume_when,
            validate,
            evidence,
            successors,
            unblocks,
            blocks_agent,
            global,
            decision,
            resolved_by,
            resolved_at,
            notes,
            handoff,
            monitor,
            extra,
        } = t;
        self.str(id);
        self.str(goal);
        self.str(text);
        self.byte(match role {
            Role::Agent => 0,
            Role::User => 1,
        });
        self.byte(match class {
            TodoClass::AdvancementTask => 0,
            TodoClass::ContinuousMonitor => 1,
            TodoClass::Blocker => 2,
            TodoClass::UserGate => 3,
            TodoClass::UserAction => 4,
        });
        self.byte(match status {
            TodoStatus::Open => 0,
            TodoStatus::Blocked => 1,
            TodoStatus::Deferred => 2,
            TodoStatus::Done => 3,
        });
        self.byte(*priority as u8);
        self.time(*created_at);
        self.opt_u64(*seq);
        self.opt_str(created_by.as_deref());
        self.time(*updated_at);
        self.u64(*rev);
        match claim {
            None => self.byte(0),
            Some(c) => {
                self.byte(1);
                self.claim(c);
            }
        }
        self.u64(*last_epoch);
        self.strs(requires_capabilities);
        self.strs(exclude_agents);
        self.opt_str(resume_when.as_deref());
        self.opt_str(validate.as_deref());
        self.opt_str(evidence.as_deref());
        self.strs(successors);
        self.opt_str(unblocks.as_deref());
        self.opt_str(blocks_agent.as_deref());
        self.byte(u8::from(*global));
        self.byte(match decision {
            None => 0,
            Some(Decision::Approve) => 1,
            Some(Decision::Reject) => 2,
            Some(Decision::Cancel) => 3,
        });
        self.opt_str(resolved_by.as_deref());
        self.opt_time(*resolved_at);
        self.len(notes.len());
        for note in notes {
            self.note(note);
        }
        match handoff {
            None => self.byte(0),
            Some(h) => {
                self.byte(1);
                self.handoff(h);
            }
        }
        match monitor {
            None => self.byte(0),
            Some(m) => {
                self.byte(1);
                self.monitor(m);
            }
        }
        self.extra(extra);
    }

    fn claim(&mut self, c: &Claim) {
        let Claim {
            agent,
            epoch,
            acquired_at,
            expires_at,
            extra,
        } = c;
        self.str(agent);
        self.u64(*epoch);
        self.time(*acquired_at);
        self.time(*expires_at);
        self.extra(extra);
    }

    fn note(&mut self, n: &Note) {
        let Note {
            at,
            agent,
            text,
            extra,
        } = n;
        self.time(*at);
        self.opt_str(agent.as_deref());
        self.str(text);
        self.extra(extra);
    }

    fn monitor(&mut self, m: &Monitor) {
        let Monitor {
            cadence,
            next_due_at,
            expires_at,
            watch_only,
            last_checked_at,
            consecutive_no_change,
            material_change_generation,
            polls,
            extra,
        } = m;
        self.str(cadence);
        self.opt_time(*next_due_at);
        self.opt_time(*expires_at);
        self.byte(u8::from(*watch_only));
        self.opt_time(*last_checked_at);
        self.u64(*consecutive_no_change);
        self.u64(*material_change_generation);
        self.len(polls.len());
        for poll in polls {
            self.poll(poll);
        }
        self.extra(extra);
    }

    fn poll(&mut self, p: &Poll) {
        let Poll {
            at,
            agent,
            material,
            note,
            follow_up,
            extra,
        } = p;
        self.time(*at);
        self.opt_str(agent.as_deref());
        self.byte(u8::from(*material));
        self.opt_str(note.as_deref());
        self.opt_str(follow_up.as_deref());
        self.extra(extra);
    }

    pub(super) fn handoff(&mut self, h: &Handoff) {
        let Handoff {
            from,
            to,
            at,
            epoch,
            work_summary,
            approaches_tried,
            next_steps,
            open_questions,
            files,
            extra,
        } = h;
        self.str(from);
        self.str(to);
        self.time(*at);
        self.u64(*epoch);
        self.opt_str(work_summary.as_deref());
        self.len(approaches_tried.len());
        for Tried {
            approach,
            reason,
            extra,
        } in approaches_tried
        {
            self.str(approach);
            self.opt_str(reason.as_deref());
            self.extra(extra);
        }
        self.strs(next_steps);
        self.strs(open_questions);
        self.strs(files);
        self.extra(extra);
    }

    pub(super) fn run(&mut self, r: &Run) {
        let Run {
            id,
            kind,
            goal,
            agent,
            at,
            seq,
            todo,
            epoch,
            outcome,
            summary,
            validation,
            artifacts,
            artifact_urls,
            turn,
            slots,
            writeback,
            spend,
            reason,
            decision,
            todo_seq,
            extra,
        } = r;
        self.str(id);
        self.byte(match kind {
            RunKind::Writeback => 0,
            RunKind::Spend => 1,
            RunKind::Void => 2,
            RunKind::Turn => 3,
            RunKind::Note => 4,
        });
        self.str(goal);
        self.opt_str(agent.as_deref());
        self.time(*at);
        self.opt_u64(*seq);
        self.opt_str(todo.as_deref());
        match epoch {
            None => self.byte(0),
            Some(e) => {
                self.byte(1);
                self.u64(*e);
            }
        }
        self.byte(match outcome {
            None => 0,
            Some(Outcome::SurfaceOnly) => 1,
            Some(Outcome::OutcomeGap) => 2,
            Some(Outcome::OutcomeProgress) => 3,
            Some(Outcome::PrimaryGoalOutcome) => 4,
        });
        self.opt_str(summary.as_deref());
        match validation {
            None => self.byte(0),
            Some(Validation {
                command,
                exit_code,
                extra,
            }) => {
                self.byte(1);
                self.str(command);
                self.i64(i64::from(*exit_code));
                self.extra(extra);
            }
        }
        self.strs(artifacts);
        self.strs(artifact_urls);
        self.opt_str(turn.as_deref());
        match slots {
            None => self.byte(0),
            Some(n) => {
                self.byte(1);
                self.u64(u64::from(*n));
            }
        }
        self.opt_str(writeback.as_deref());
        self.opt_str(spend.as_deref());
        self.opt_str(reason.as_deref());
        match decision {
            None => self.byte(0),
            Some(value) => {
                self.byte(1);
                self.json(value);
            }
        }
        self.opt_u64(*todo_seq);
        self.extra(extra);
    }
}
