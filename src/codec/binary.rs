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
//! model does not compile until the writer (`write.rs`) encodes it too; the
//! reader (`read.rs`) and the facts scans (`facts.rs`) follow its order.

use std::sync::Arc;

use crate::model::facts::{RunFacts, TodoFacts};
use crate::model::tracked::Source;
use crate::model::{GoalState, Run, State, Todo, Tracked};

mod facts;
mod read;
mod write;

use read::Reader;
use write::Writer;

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
