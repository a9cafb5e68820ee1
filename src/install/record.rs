//! What `hooks install` did to each file, kept host-locally under
//! `<git common dir>/loopx/installed/` (never on the state branch, never in the
//! worktree): whether we created the file (and which directories), the
//! user's original bytes, and a hash of what we wrote. `uninstall` restores
//! the original bytes exactly when the file still holds what we wrote, and
//! `status` tells a file changed by hand since.
//!
//! Each file has two records named by a hash of its path: `<key>.json` (the
//! record) and `<key>.orig` (the original bytes, absent for a file we
//! created).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Repo;
use crate::model::{Code, Refusal};

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Record {
    /// The file this is about.
    pub path: PathBuf,
    /// We created the file (it did not exist before the first install).
    pub created: bool,
    /// Directories we created for it, innermost first.
    #[serde(default)]
    pub dirs: Vec<PathBuf>,
    /// SHA-1 of the bytes we last wrote.
    pub written: String,
    /// For a JSON file, SHA-1 of the value we last wrote without a
    /// top-level `$schema` (see [`holds_ours`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_value: Option<String>,
    /// The `.orig` bytes are the user's file before we touched it, and the
    /// file has not been changed by hand between two installs.
    #[serde(default)]
    pub exact: bool,
}

pub fn digest(bytes: &[u8]) -> String {
    sha1_smol::Sha1::from(bytes).digest().to_string()
}

/// SHA-1 of a JSON file's value without its top-level `$schema` key, in
/// one canonical form; `None` when the bytes are not a JSON object.
/// OpenCode adds `"$schema"` to `opencode.json` on its first run (and writes
/// the file back in its own layout): that is not a change by hand.
///
/// For a file with comments (JSONC) the comments count too, in order: a
/// `$schema` added or a new layout is still not a change by hand, but a
/// comment written, changed or taken out is (uninstall then takes out only
/// our entries instead of putting back the bytes from before).
pub fn value_digest(bytes: &[u8]) -> Option<String> {
    if let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(bytes) {
        value.as_object_mut()?.shift_remove("$schema");
        return Some(digest(value.to_string().as_bytes()));
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let mut value = super::jsonc::parse(text).ok()??;
    value.as_object_mut()?.shift_remove("$schema");
    // A value's canonical form has no line break: the two forms never meet.
    let comments = super::jsonc::comments(text)?.join("\n");
    Some(digest(format!("{value}\n{comments}").as_bytes()))
}

/// Whether `now` is still what we wrote: the same bytes, or, for a JSON
/// file, the same value once a `$schema` a runtime added is set aside.
pub fn holds_ours(record: &Record, now: &[u8]) -> bool {
    digest(now) == record.written
        || record
            .written_value
            .as_ref()
            .is_some_and(|ours| value_digest(now).as_ref() == Some(ours))
}

fn dir(repo: &Repo<'_>) -> PathBuf {
    repo.local_dir.join("installed")
}

fn key(path: &Path) -> String {
    digest(path.as_os_str().as_encoded_bytes())
}

pub fn io_error(what: &str, path: &Path, e: &std::io::Error) -> Refusal {
    Refusal::new(
        Code::GitFailed,
        format!("cannot {what} {}: {e}", path.display()),
    )
}

/// The record of `path` and the user's original bytes, if any.
pub fn load(repo: &Repo<'_>, path: &Path) -> Option<(Record, Option<Vec<u8>>)> {
    let base = dir(repo).join(key(path));
    let record: Record =
        serde_json::from_slice(&std::fs::read(base.with_extension("json")).ok()?).ok()?;
    if record.path != path {
        return None;
    }
    let original = std::fs::read(base.with_extension("orig")).ok();
    Some((record, original))
}

/// Saves the record of `record.path`, with the original bytes when given
/// (the `.orig` file is removed when `original` is `None`).
pub fn save(repo: &Repo<'_>, record: &Record, original: Option<&[u8]>) -> Result<(), Refusal> {
    let dir = dir(repo);
    std::fs::create_dir_all(&dir).map_err(|e| io_error("create", &dir, &e))?;
    let base = dir.join(key(&record.path));
    let orig = base.with_extension("orig");
    match original {
        Some(bytes) => std::fs::write(&orig, bytes).map_err(|e| io_error("write", &orig, &e))?,
        None => {
            let _ = std::fs::remove_file(&orig);
        }
    }
    let json = base.with_extension("json");
    let text = serde_json::to_vec_pretty(record).expect("records serialize");
    std::fs::write(&json, text).map_err(|e| io_error("write", &json, &e))
}

/// Forgets the record of `path`.
pub fn forget(repo: &Repo<'_>, path: &Path) {
    let base = dir(repo).join(key(path));
    let _ = std::fs::remove_file(base.with_extension("json"));
    let _ = std::fs::remove_file(base.with_extension("orig"));
}
