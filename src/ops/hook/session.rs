//! Host-local, disposable records of the hook programs, as small JSON files
//! under `<git common dir>/loopx/hooks/` (never on the state branch):
//!
//! - `sessions/<runtime>/<session>.json`: the session's turn counter and
//!   its loop guard (blocks in a row, and the agent's writeback count when
//!   last seen). Deleting it starts the guard over; the turn counter is
//!   found again from the writebacks on the branch.
//! - `guards/<runtime>/<agent>.json`: the agent's loop guard over all its
//!   sessions, and the sessions it let go since the agent's last writeback
//!   (`status` shows them).
//! - `heartbeats/<runtime>/<agent>.json`: when the agent's last turn
//!   completed (Codex `notify`).
//!
//! A record that cannot be read is taken as absent. Each is written to a
//! temporary file and renamed into place, so a reader sees a whole record.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::Timestamp;
use crate::ops::prompt::Runtime;
use crate::session::Context;
use crate::{Error, Result};

/// The longest session part of a turn key.
const SESSION_CHARS: usize = 64;

/// A session id made safe for a turn key and a file name: ASCII letters,
/// digits, `.`, `_` and `-` kept, anything else `_`, at most 64 characters
/// (a longer id is cut and given a hash of the whole, so two long ids
/// sharing a prefix stay apart); a missing or empty id is `session`.
pub fn session_name(id: Option<&str>) -> String {
    let id = id.map(str::trim).filter(|s| !s.is_empty());
    let Some(id) = id else {
        return String::from("session");
    };
    let mut safe: String = id
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
            '.' => '.',
            _ => '_',
        })
        .collect();
    if safe.starts_with('.') {
        safe.replace_range(..1, "_");
    }
    if safe.len() > SESSION_CHARS {
        let hash = sha1_smol::Sha1::from(id).digest().to_string();
        safe.truncate(SESSION_CHARS - 9);
        safe.push('-');
        safe.push_str(&hash[..8]);
    }
    safe
}

/// The turn key of turn `n` of `session`.
pub fn turn_key(session: &str, n: u32) -> String {
    format!("{session}-{n}")
}

fn runtime_dir(runtime: Runtime) -> &'static str {
    runtime.name()
}

fn record_path(ctx: &Context, kind: &str, runtime: Runtime, name: &str) -> PathBuf {
    ctx.store
        .local_dir()
        .join("hooks")
        .join(kind)
        .join(runtime_dir(runtime))
        .join(format!("{name}.json"))
}

fn read<T: for<'de> Deserialize<'de>>(path: &Path) -> Option<T> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn write(path: &Path, value: &impl Serialize) -> Result<()> {
    let fail =
        |e: std::io::Error| Error::invalid_input(format!("cannot write {}: {e}", path.display()));
    let dir = path.parent().expect("record paths have a directory");
    std::fs::create_dir_all(dir).map_err(fail)?;
    let tmp = dir.join(format!(".tmp-{}", std::process::id()));
    let bytes = serde_json::to_vec(value).expect("records serialize");
    std::fs::write(&tmp, bytes).map_err(fail)?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(e)
    })
}

/// A session's turn counter and loop guard.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// The turn number last handed out (0: none yet).
    pub turn: u32,
    /// Blocks in a row with no new writeback under this session's turn keys.
    pub blocks: u32,
    /// The writebacks under this session's turn keys when last seen.
    pub writebacks: u64,
}

impl Session {
    pub fn load(ctx: &Context, runtime: Runtime, session: &str) -> Self {
        read(&record_path(ctx, "sessions", runtime, session)).unwrap_or_default()
    }

    pub fn save(&self, ctx: &Context, runtime: Runtime, session: &str) -> Result<()> {
        write(&record_path(ctx, "sessions", runtime, session), self)
    }
}

/// The agent's loop guard over all its sessions: blocks in a row with no
/// writeback by the agent at all, so that a fresh session id per stop does
/// not start the count over.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentGuard {
    pub blocks: u32,
    /// The agent's writebacks in the goal when last seen.
    pub writebacks: u64,
    /// Sessions the guard let end since that many writebacks.
    #[serde(default)]
    pub released: u32,
}

impl AgentGuard {
    pub fn load(ctx: &Context, runtime: Runtime, agent: &str) -> Self {
        read(&record_path(ctx, "guards", runtime, agent)).unwrap_or_default()
    }

    pub fn save(&self, ctx: &Context, runtime: Runtime, agent: &str) -> Result<()> {
        write(&record_path(ctx, "guards", runtime, agent), self)
    }
}

/// Sessions of `agent` that the Stop hook's loop guard let end (on this
/// host, in every runtime) since its `writebacks`-th writeback; none once
/// it wrote back again.
pub fn guard_releases(ctx: &Context, agent: &str, writebacks: u64) -> u32 {
    Runtime::HOSTS
        .iter()
        .map(|&runtime| AgentGuard::load(ctx, runtime, agent))
        .filter(|guard| guard.writebacks == writebacks)
        .map(|guard| guard.released)
        .sum()
}

/// When an agent's last turn completed, as its runtime reported it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heartbeat {
    pub at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

impl Heartbeat {
    pub fn save(&self, ctx: &Context, runtime: Runtime, agent: &str) -> Result<()> {
        write(&record_path(ctx, "heartbeats", runtime, agent), self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_are_safe_and_distinct() {
        assert_eq!(session_name(None), "session");
        assert_eq!(session_name(Some("  ")), "session");
        assert_eq!(
            session_name(Some("4b1c-9f/../x y")),
            "4b1c-9f_.._x_y".to_owned()
        );
        assert_eq!(session_name(Some(".hidden")), "_hidden");
        let long_a = "a".repeat(100);
        let long_b = format!("{}b", "a".repeat(99));
        let (a, b) = (session_name(Some(&long_a)), session_name(Some(&long_b)));
        assert_eq!(a.len(), SESSION_CHARS);
        assert_ne!(a, b);
        assert_eq!(turn_key("s", 3), "s-3");
    }
}
