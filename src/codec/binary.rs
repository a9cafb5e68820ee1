//! A compact binary form of a parsed [`State`], for the host-local cache only.
//!
//! The cache exists so a command does not re-read ten thousand YAML files;
//! JSON made it parse in 12–20 ms at 10,000 todos, most of it in string
//! scanning and `flatten` buffering. This form is read field by field with
//! no intermediate values: strings are length-prefixed, numbers are varints,
//! enums are one byte, and unknown fields (`extra`) are a length-prefixed
//! JSON blob that is empty for nearly every entity.
//!
//! Invariants: `decode(encode(s)) == Some(s)` for every state (a property
//! test holds it to that); a truncated, foreign or older blob decodes to
//! `None`, never to a wrong state, so the caller falls back to git. The small
//! entities (meta, agents, goals) go through JSON: there are few of them.
//! Every entity is destructured field by field, so adding a field to the
//! model does not compile until this file encodes it too.

use serde::de::DeserializeOwned;
use serde::Serialize;

use std::ops::Range;
use std::sync::Arc;

use crate::model::facts::{RunFacts, TodoFacts};
use crate::model::handoff::{Handoff, Tried};
use crate::model::tracked::Source;
use crate::model::{
    Claim, Decision, Extra, GoalState, Monitor, Note, Outcome, Poll, Priority, Role, Run, RunKind,
    State, Timestamp, Todo, TodoClass, TodoStatus, Tracked, Validation,
};

/// Changes whenever the layout below changes (the cache key holds it too).
pub const MAGIC: &[u8; 8] = b"LXSTATE9";

/// The state as cache bytes.
pub fn encode(state: &State) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(64 * 1024));
    w.0.extend_from_slice(MAGIC);
    w.json(&state.meta);
    w.json(&state.agents);
    w.len(state.goals.len());
    for (id, gs) in &state.goals {
        w.str(id);
        w.json(&gs.goal);
        w.len(gs.todos.len());
        for id in gs.todos.keys() {
            w.str(id);
            match gs.todos.encoded(id) {
                Some(bytes) => w.bytes(bytes),
                None => w.framed(|w| w.todo(&gs.todos[id])),
            }
        }
        w.len(gs.runs.len());
        for id in gs.runs.keys() {
            w.str(id);
            match gs.runs.encoded(id) {
                Some(bytes) => w.bytes(bytes),
                None => w.framed(|w| w.run(&gs.runs[id])),
            }
        }
    }
    let sum = checksum(&w.0);
    w.0.extend_from_slice(&sum.to_le_bytes());
    w.0
}

/// The state in `bytes`, or `None` when they are not a whole, intact blob of
/// this layout. Todos and runs stay encoded until read (see [`Tracked::lazy`]):
/// the checksum vouches for their bytes, which this encoder wrote.
pub fn decode(bytes: Vec<u8>) -> Option<State> {
    let shared = Arc::new(bytes);
    let (body, sum) = shared.split_at_checked(shared.len().checked_sub(8)?)?;
    if u64::from_le_bytes(sum.try_into().ok()?) != checksum(body) || body.len() > u32::MAX as usize
    {
        return None;
    }
    let mut r = Reader { b: body, at: 0 };
    if r.take(MAGIC.len())? != MAGIC {
        return None;
    }
    let mut state = State::new(r.json()?);
    state.agents = r.json()?;
    for _ in 0..r.len()? {
        let id = r.string()?;
        let mut gs = GoalState::new(r.json()?);
        let todos = r.frames()?;
        gs.todos = Tracked::lazy(
            Source {
                bytes: shared.clone(),
                decode: |b| Reader::whole(b, |r| r.todo()),
                facts: todo_facts,
            },
            todos,
        );
        let runs = r.frames()?;
        gs.runs = Tracked::lazy(
            Source {
                bytes: shared.clone(),
                decode: |b| Reader::whole(b, |r| r.run()),
                facts: run_facts,
            },
            runs,
        );
        state.goals.insert(id, gs);
    }
    (r.at == body.len()).then_some(state)
}

/// Changes whenever the delta layout below changes.
pub const DELTA_MAGIC: &[u8; 8] = b"LXDELTA8";

/// One file a commit changed, as a cached delta carries it: todos and runs
/// in this compact form (replaying them decodes no YAML), anything else as
/// the file's bytes.
pub enum DeltaFile {
    Removed,
    Yaml(Vec<u8>),
    Todo(Box<Todo>),
    Run(Box<Run>),
}

/// What a delta is encoded from (see [`DeltaFile`]).
pub enum DeltaFileRef<'a> {
    Removed,
    Yaml(&'a [u8]),
    Todo(&'a Todo),
    Run(&'a Run),
}

/// A commit's cached delta (see `store::cache`): its parent and the files
/// it changed.
pub struct Delta {
    pub parent: String,
    pub files: Vec<(String, DeltaFile)>,
}

/// Encodes a delta. `files` give each changed path and what to carry.
pub fn encode_delta(parent: &str, files: &[(&str, DeltaFileRef<'_>)]) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(1024));
    w.0.extend_from_slice(DELTA_MAGIC);
    w.str(parent);
    w.len(files.len());
    for (path, file) in files {
        w.str(path);
        match file {
            DeltaFileRef::Removed => w.byte(0),
            DeltaFileRef::Yaml(bytes) => {
                w.byte(1);
                w.bytes(bytes);
            }
            DeltaFileRef::Todo(t) => {
                w.byte(2);
                w.framed(|w| w.todo(t));
            }
            DeltaFileRef::Run(r) => {
                w.byte(3);
                w.framed(|w| w.run(r));
            }
        }
    }
    w.0
}

/// Decodes a delta; `None` for anything but a whole delta of this layout.
pub fn decode_delta(bytes: &[u8]) -> Option<Delta> {
    Reader::whole(bytes, |r| {
        if r.take(DELTA_MAGIC.len())? != DELTA_MAGIC {
            return None;
        }
        let parent = r.string()?;
        let n = r.len()?;
        let mut files = Vec::with_capacity(n.min(bytes.len()));
        for _ in 0..n {
            let path = r.string()?;
            let file = match r.byte()? {
                0 => DeltaFile::Removed,
                1 => {
                    let n = r.len()?;
                    DeltaFile::Yaml(r.take(n)?.to_vec())
                }
                2 => {
                    let n = r.len()?;
                    let todo = Reader::whole(r.take(n)?, |r| r.todo())?;
                    DeltaFile::Todo(Box::new(todo))
                }
                3 => {
                    let n = r.len()?;
                    let run = Reader::whole(r.take(n)?, |r| r.run())?;
                    DeltaFile::Run(Box::new(run))
                }
                _ => return None,
            };
            files.push((path, file));
        }
        Some(Delta { parent, files })
    })
}

/// `body` with its checksum appended, as [`encode`] ends a snapshot: lets
/// the fuzz tests reach the structure checks behind the checksum.
#[doc(hidden)]
pub fn seal(mut body: Vec<u8>) -> Vec<u8> {
    let sum = checksum(&body);
    body.extend_from_slice(&sum.to_le_bytes());
    body
}

/// The todo in a snapshot entry's bytes, if they hold a whole one.
#[doc(hidden)]
pub fn todo_from(bytes: &[u8]) -> Option<Todo> {
    Reader::whole(bytes, |r| r.todo())
}

/// The run in a snapshot entry's bytes, if they hold a whole one.
#[doc(hidden)]
pub fn run_from(bytes: &[u8]) -> Option<Run> {
    Reader::whole(bytes, |r| r.run())
}

fn todo_facts(bytes: &[u8]) -> Option<TodoFacts<'_>> {
    Reader::whole(bytes, Reader::todo_facts)
}

fn run_facts(bytes: &[u8]) -> Option<RunFacts<'_>> {
    Reader::whole(bytes, Reader::run_facts)
}

/// A fast 64-bit checksum (multiply-rotate over 8-byte words): it only has
/// to catch a damaged or foreign file, not an adversary.
fn checksum(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        h = (h ^ w).wrapping_mul(K).rotate_left(29);
    }
    for &b in words.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(K).rotate_left(29);
    }
    h ^ (h >> 32)
}

struct Writer(Vec<u8>);

impl Writer {
    fn u64(&mut self, mut n: u64) {
        while n >= 0x80 {
            self.0.push((n as u8) | 0x80);
            n >>= 7;
        }
        self.0.push(n as u8);
    }

    fn len(&mut self, n: usize) {
        self.u64(n as u64);
    }

    fn i64(&mut self, n: i64) {
        // zig-zag, so small negative numbers stay small
        self.u64(((n << 1) ^ (n >> 63)) as u64);
    }

    fn byte(&mut self, b: u8) {
        self.0.push(b);
    }

    fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.0.extend_from_slice(b);
    }

    fn opt_str(&mut self, s: Option<&str>) {
        match s {
            None => self.byte(0),
            Some(s) => {
                self.byte(1);
                self.str(s);
            }
        }
    }

    fn strs(&mut self, v: &[String]) {
        self.len(v.len());
        for s in v {
            self.str(s);
        }
    }

    fn opt_u64(&mut self, n: Option<u64>) {
        match n {
            None => self.byte(0),
            Some(n) => {
                self.byte(1);
                self.u64(n);
            }
        }
    }

    fn time(&mut self, t: Timestamp) {
        self.i64(t.unix());
    }

    fn opt_time(&mut self, t: Option<Timestamp>) {
        match t {
            None => self.byte(0),
            Some(t) => {
                self.byte(1);
                self.time(t);
            }
        }
    }

    /// Writes what `f` writes, preceded by its length.
    fn framed(&mut self, f: impl FnOnce(&mut Self)) {
        let mut inner = Writer(std::mem::take(&mut self.0));
        let start = inner.0.len();
        f(&mut inner);
        let body = inner.0.split_off(start);
        self.0 = inner.0;
        self.len(body.len());
        self.0.extend_from_slice(&body);
    }

    fn json<T: Serialize>(&mut self, value: &T) {
        let bytes = serde_json::to_vec(value).expect("BUG: entities serialize to JSON");
        self.len(bytes.len());
        self.0.extend_from_slice(&bytes);
    }

    fn extra(&mut self, extra: &Extra) {
        if extra.is_empty() {
            self.len(0);
        } else {
            self.json(extra);
        }
    }

    fn todo(&mut self, t: &Todo) {
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
            Some(Claim {
                agent,
                epoch,
                acquired_at,
                expires_at,
                extra,
            }) => {
                self.byte(1);
                self.str(agent);
                self.u64(*epoch);
                self.time(*acquired_at);
                self.time(*expires_at);
                self.extra(extra);
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
        for Note {
            at,
            agent,
            text,
            extra,
        } in notes
        {
            self.time(*at);
            self.opt_str(agent.as_deref());
            self.str(text);
            self.extra(extra);
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
            Some(Monitor {
                cadence,
                next_due_at,
                expires_at,
                watch_only,
                last_checked_at,
                consecutive_no_change,
                material_change_generation,
                polls,
                extra,
            }) => {
                self.byte(1);
                self.str(cadence);
                self.opt_time(*next_due_at);
                self.opt_time(*expires_at);
                self.byte(u8::from(*watch_only));
                self.opt_time(*last_checked_at);
                self.u64(*consecutive_no_change);
                self.u64(*material_change_generation);
                self.len(polls.len());
                for Poll {
                    at,
                    agent,
                    material,
                    note,
                    follow_up,
                    extra,
                } in polls
                {
                    self.time(*at);
                    self.opt_str(agent.as_deref());
                    self.byte(u8::from(*material));
                    self.opt_str(note.as_deref());
                    self.opt_str(follow_up.as_deref());
                    self.extra(extra);
                }
                self.extra(extra);
            }
        }
        self.extra(extra);
    }

    fn handoff(&mut self, h: &Handoff) {
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

    fn run(&mut self, r: &Run) {
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

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let out = self.b.get(self.at..end)?;
        self.at = end;
        Some(out)
    }

    /// Runs `f` over all of `bytes`, which it must consume exactly.
    fn whole<T>(bytes: &'a [u8], f: impl FnOnce(&mut Reader<'a>) -> Option<T>) -> Option<T> {
        let mut r = Reader { b: bytes, at: 0 };
        let value = f(&mut r)?;
        (r.at == bytes.len()).then_some(value)
    }

    /// `n` then `n` × (key, framed entity): where each key (UTF-8,
    /// strictly ascending) and each entity's bytes lie.
    fn frames(&mut self) -> Option<Vec<(Range<usize>, Range<usize>)>> {
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

    fn byte(&mut self) -> Option<u8> {
        let b = *self.b.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn u64(&mut self) -> Option<u64> {
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

    fn len(&mut self) -> Option<usize> {
        usize::try_from(self.u64()?).ok()
    }

    fn i64(&mut self) -> Option<i64> {
        let n = self.u64()?;
        Some(((n >> 1) as i64) ^ -((n & 1) as i64))
    }

    fn bool(&mut self) -> Option<bool> {
        match self.byte()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    fn str(&mut self) -> Option<&'a str> {
        let n = self.len()?;
        std::str::from_utf8(self.take(n)?).ok()
    }

    fn string(&mut self) -> Option<String> {
        self.str().map(str::to_owned)
    }

    fn opt<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.bool()? {
            f(self).map(Some)
        } else {
            Some(None)
        }
    }

    fn opt_string(&mut self) -> Option<Option<String>> {
        self.opt(Self::string)
    }

    fn strings(&mut self) -> Option<Vec<String>> {
        let n = self.len()?;
        (0..n).map(|_| self.string()).collect()
    }

    fn strs(&mut self) -> Option<Vec<&'a str>> {
        let n = self.len()?;
        (0..n).map(|_| self.str()).collect()
    }

    /// Passes over a length-prefixed field (a string, a JSON blob) unread.
    fn skip(&mut self) -> Option<()> {
        let n = self.len()?;
        self.take(n).map(drop)
    }

    fn skip_opt(&mut self) -> Option<()> {
        self.opt(Self::skip).map(drop)
    }

    fn skip_list(&mut self) -> Option<()> {
        (0..self.len()?).try_for_each(|_| self.skip())
    }

    fn skip_extra(&mut self) -> Option<()> {
        if self.b.get(self.at) == Some(&0) {
            self.at += 1;
            return Some(());
        }
        self.skip()
    }

    fn role(&mut self) -> Option<Role> {
        Some(match self.byte()? {
            0 => Role::Agent,
            1 => Role::User,
            _ => return None,
        })
    }

    fn class(&mut self) -> Option<TodoClass> {
        Some(match self.byte()? {
            0 => TodoClass::AdvancementTask,
            1 => TodoClass::ContinuousMonitor,
            2 => TodoClass::Blocker,
            3 => TodoClass::UserGate,
            4 => TodoClass::UserAction,
            _ => return None,
        })
    }

    fn status(&mut self) -> Option<TodoStatus> {
        Some(match self.byte()? {
            0 => TodoStatus::Open,
            1 => TodoStatus::Blocked,
            2 => TodoStatus::Deferred,
            3 => TodoStatus::Done,
            _ => return None,
        })
    }

    fn priority(&mut self) -> Option<Priority> {
        Some(match self.byte()? {
            0 => Priority::P0,
            1 => Priority::P1,
            2 => Priority::P2,
            3 => Priority::P3,
            4 => Priority::P4,
            _ => return None,
        })
    }

    fn outcome(&mut self) -> Option<Option<Outcome>> {
        Some(match self.byte()? {
            0 => None,
            1 => Some(Outcome::SurfaceOnly),
            2 => Some(Outcome::OutcomeGap),
            3 => Some(Outcome::OutcomeProgress),
            4 => Some(Outcome::PrimaryGoalOutcome),
            _ => return None,
        })
    }

    fn run_kind(&mut self) -> Option<RunKind> {
        Some(match self.byte()? {
            0 => RunKind::Writeback,
            1 => RunKind::Spend,
            2 => RunKind::Void,
            3 => RunKind::Turn,
            4 => RunKind::Note,
            _ => return None,
        })
    }

    fn time(&mut self) -> Option<Timestamp> {
        self.i64().map(Timestamp::from_unix)
    }

    fn json<T: DeserializeOwned>(&mut self) -> Option<T> {
        let n = self.len()?;
        serde_json::from_slice(self.take(n)?).ok()
    }

    fn extra(&mut self) -> Option<Extra> {
        if self.b.get(self.at) == Some(&0) {
            self.at += 1;
            return Some(Extra::new());
        }
        self.json()
    }

    fn todo(&mut self) -> Option<Todo> {
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

    fn handoff(&mut self) -> Option<Handoff> {
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

    /// A todo's [`TodoFacts`], borrowed from its encoding: the fields in the
    /// order [`Reader::todo`] reads them, the rest passed over.
    fn todo_facts(&mut self) -> Option<TodoFacts<'a>> {
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
    fn run_facts(&mut self) -> Option<RunFacts<'a>> {
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

    fn run(&mut self) -> Option<Run> {
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
