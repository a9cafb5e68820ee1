//! The person is told when their authority was tried (issue 45): every
//! refusal that guards it — `gate_reserved` (an agent at a gate),
//! `gate_open` (a write a gate holds), `person_only` (a person's command
//! inside an agent runtime) — is recorded host-locally, in the git common
//! dir's `loopx/refused.jsonl`, and `status` (and so the dashboard) shows
//! the latest. The record is this host's only: it says what an agent tried
//! here, not on a peer's machine, and an agent that can write `.git` can
//! remove it (the signatures of `gate_signers` are what hold then).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::{Code, Timestamp};

/// The record is cut back to its newer half past this size.
const MAX_BYTES: u64 = 256 * 1024;

/// One refused attempt on the person's authority.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refused {
    pub at: Timestamp,
    /// `gate_reserved`, `gate_open` or `person_only`.
    pub code: String,
    /// Who tried: the agent, or the runtime the command ran inside.
    pub by: String,
    /// The refusal as the agent was told it.
    pub message: String,
}

fn path(common_dir: &Path) -> PathBuf {
    common_dir.join("loopx").join("refused.jsonl")
}

/// Whether a refusal of `code` guards the person's authority.
pub fn guards_the_person(code: Code) -> bool {
    matches!(code, Code::GateReserved | Code::GateOpen | Code::PersonOnly)
}

/// Appends `error`, when it guards the person, to the host's record.
pub fn record(common_dir: &Path, at: Timestamp, by: &str, error: &crate::Error) {
    if !guards_the_person(error.code()) {
        return;
    }
    let entry = Refused {
        at,
        code: error.code().as_str().to_owned(),
        by: by.to_owned(),
        message: error.to_string(),
    };
    let Ok(mut line) = serde_json::to_string(&entry) else {
        return;
    };
    line.push('\n');
    let file = path(common_dir);
    let _ = std::fs::create_dir_all(common_dir.join("loopx"));
    // One writer at a time (the OS's lock, gone with its holder): a trim
    // that reads and renames over the file loses no line appended meanwhile.
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(common_dir.join("loopx").join("refused.lock"));
    let _held = lock.as_ref().ok().filter(|f| f.lock().is_ok());
    if std::fs::metadata(&file).is_ok_and(|m| m.len() > MAX_BYTES) {
        let kept = std::fs::read_to_string(&file).unwrap_or_default();
        let half: Vec<&str> = kept.lines().collect();
        let tail = half[half.len() / 2..].join("\n") + "\n";
        let tmp = file.with_extension(format!("jsonl.{}.tmp", std::process::id()));
        if std::fs::write(&tmp, tail).is_ok() {
            let _ = std::fs::rename(&tmp, &file);
        }
    }
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
    {
        let _ = f.write_all(line.as_bytes());
    }
}

/// The latest `n` refused attempts at or after `since`, newest first.
pub fn latest(common_dir: &Path, since: Timestamp, n: usize) -> Vec<Refused> {
    let text = std::fs::read_to_string(path(common_dir)).unwrap_or_default();
    let mut out: Vec<Refused> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Refused>(l).ok())
        .filter(|r| r.at >= since)
        .collect();
    out.reverse();
    out.truncate(n);
    out
}
