//! Identifier grammar (SPEC §2): goal and agent names, todo and run ids, and
//! unique-prefix resolution in the style of git's short object names; new
//! ids (derived from their parts and a nonce), and the one-line headline of
//! a text that commit subjects quote next to an id.

use crate::model::{Refusal, Timestamp};

/// Longest goal or agent id.
const MAX_NAME: usize = 64;

/// `^[a-z][a-z0-9_.-]{0,63}$`: goal and agent ids.
pub fn is_valid_name(id: &str) -> bool {
    let mut chars = id.chars();
    matches!(chars.next(), Some('a'..='z'))
        && id.len() <= MAX_NAME
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_' | '.' | '-'))
        && !id.contains("..")
}

/// `todo_` + 12 lowercase hex.
pub fn is_valid_todo_id(id: &str) -> bool {
    is_hex_id(id, "todo_")
}

/// `run_` + 12 lowercase hex.
pub fn is_valid_run_id(id: &str) -> bool {
    is_hex_id(id, "run_")
}

fn is_hex_id(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix).is_some_and(|hex| {
        hex.len() == 12 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// Checks a goal or agent id, naming `what` in the refusal.
pub fn check_name(what: &str, id: &str) -> Result<(), Refusal> {
    if is_valid_name(id) {
        Ok(())
    } else {
        Err(Refusal::invalid_input(format!(
            "`{id}` is not a valid {what} id: use 1-64 characters of a-z, 0-9, `_`, `.`, `-`, starting with a letter"
        )))
    }
}

/// Derives a new id as `prefix` + the first 12 hex digits of a SHA-1 over `parts`.
/// Callers include a nonce so two peers creating the same text never collide.
pub fn derive_id(prefix: &str, parts: &[&str]) -> String {
    let mut hasher = sha1_smol::Sha1::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update(&[0]);
    }
    let hex = hasher.digest().to_string();
    format!("{prefix}{}", &hex[..12])
}

/// A random value for id derivation, so two peers adding the same text at
/// the same second still get different ids: std's per-process random hash
/// keys and the process id.
pub fn nonce() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

/// A fresh todo id: a hash of goal, text, creator, time and a nonce.
pub fn new_todo_id(
    goal: &str,
    text: &str,
    creator: Option<&str>,
    now: Timestamp,
    nonce: &str,
) -> String {
    derive_id(
        "todo_",
        &[goal, text, creator.unwrap_or(""), &now.to_string(), nonce],
    )
}

/// First line of `text`, cut to `max` characters, for commit subjects.
pub fn headline(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() <= max {
        line.to_owned()
    } else {
        let cut: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// The two-hex-digit shard directory of a todo or run id (`todo_3f2a…` → `3f`).
pub fn shard(id: &str) -> &str {
    let hex = id.split_once('_').map_or(id, |(_, hex)| hex);
    hex.get(..2).unwrap_or("00")
}

/// Resolves `query` against `ids`: an exact match, else a unique prefix.
/// `kind` names the entity for messages (`todo`, `run`).
pub fn resolve_prefix<'a, I>(kind: &str, query: &str, ids: I) -> Result<&'a str, Refusal>
where
    I: IntoIterator<Item = &'a str>,
{
    let query = query.trim();
    if query.is_empty() {
        return Err(Refusal::invalid_input(format!("empty {kind} id")));
    }
    let mut matches = Vec::new();
    for id in ids {
        if id == query {
            return Ok(id);
        }
        let short = id.split_once('_').map_or(id, |(_, hex)| hex);
        if id.starts_with(query) || short.starts_with(query) {
            matches.push(id);
        }
    }
    match matches.as_slice() {
        [one] => Ok(one),
        [] => Err(Refusal::new(
            crate::model::Code::TodoNotFound,
            format!("no {kind} matches `{query}`"),
        )
        .with_hint(format!("`git loopx {kind} list` shows the ids"))),
        many => {
            let mut shown: Vec<&str> = many.to_vec();
            shown.sort_unstable();
            shown.truncate(5);
            Err(Refusal::new(
                crate::model::Code::AmbiguousId,
                format!(
                    "`{query}` matches {} {kind}s: {}",
                    many.len(),
                    shown.join(", ")
                ),
            )
            .with_hint("give more characters of the id"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_grammar() {
        for ok in ["a", "agent-a", "main", "x.y_z-1"] {
            assert!(is_valid_name(ok), "{ok}");
        }
        for bad in ["", "A", "1abc", "-a", "a/b", "a b", "a..b", &"a".repeat(65)] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn hex_ids_and_shards() {
        let id = derive_id("todo_", &["g", "text", "me", "t", "nonce"]);
        assert!(is_valid_todo_id(&id), "{id}");
        assert_eq!(shard(&id), &id[5..7]);
        assert!(!is_valid_todo_id("todo_ABCDEF012345"));
        assert!(!is_valid_todo_id("todo_123"));
        assert!(is_valid_run_id("run_0123456789ab"));
    }

    #[test]
    fn prefixes() {
        let ids = [
            "todo_aaaa00000000",
            "todo_aaab00000000",
            "todo_b00000000000",
        ];
        assert_eq!(resolve_prefix("todo", "b", ids).unwrap(), ids[2]);
        assert_eq!(resolve_prefix("todo", "todo_aaaa", ids).unwrap(), ids[0]);
        let err = resolve_prefix("todo", "aaa", ids).unwrap_err();
        assert_eq!(err.code, crate::model::Code::AmbiguousId);
        let err = resolve_prefix("todo", "c", ids).unwrap_err();
        assert_eq!(err.code, crate::model::Code::TodoNotFound);
    }
}
