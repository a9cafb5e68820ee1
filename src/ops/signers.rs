//! The `gate_signers` policy (docs/gates.md): which gate resolutions count.
//!
//! The policy in effect at a state commit C (`effective`) follows C's first
//! parent P: unchanged when C leaves `gate_signers` as P had it; otherwise
//! C's list takes effect only when P had no policy in effect, when a merge
//! brings it from a parent where it was in effect, or when C is signed by a
//! key of P's policy. So a hand-made commit that drops or replaces the list
//! without a signer's key changes nothing.
//!
//! A resolution counts when the policy in effect at the tip is empty, when
//! the commit that made it (`resolving_commit`) came before any policy, or
//! when that commit is signed by a key of the policy in effect at its
//! parent. Everything is cached host-locally under `.git/loopx/gates/`
//! (by commit id, and by the gate file's content), so `should-run` spawns
//! no `git` once a state has been seen.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::model::{Code, Refusal, State, Todo, TodoClass, TodoStatus};
use crate::ops::Context;
use crate::store::Oid;
use crate::Result;

/// How many commits' policies the host-local cache keeps.
const POLICY_CACHE: usize = 128;

fn dir(ctx: &Context) -> PathBuf {
    ctx.store.common_dir().join("loopx").join("gates")
}

fn hash(text: &str) -> String {
    sha1_smol::Sha1::from(text).digest().to_string()
}

/// A key as compared: its type and base64 body, without the comment.
pub fn key_body(key: &str) -> String {
    key.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Entry {
    commit: String,
    /// `gate_signers` as the commit's loopx.yaml has it.
    file: Vec<String>,
    /// The policy in effect at the commit.
    effective: Vec<String>,
}

fn load_cache(ctx: &Context) -> Vec<Entry> {
    std::fs::read(dir(ctx).join("policy.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

fn save_cache(ctx: &Context, mut entries: Vec<Entry>) {
    let cut = entries.len().saturating_sub(POLICY_CACHE);
    entries.drain(..cut);
    let d = dir(ctx);
    let tmp = d.join(format!("policy.json.{}.tmp", std::process::id()));
    if std::fs::create_dir_all(&d).is_ok()
        && serde_json::to_vec(&entries)
            .ok()
            .is_some_and(|b| std::fs::write(&tmp, b).is_ok())
    {
        let _ = std::fs::rename(&tmp, d.join("policy.json"));
    }
}

/// `gate_signers` in loopx.yaml at `commit`.
fn file_signers(ctx: &Context, commit: &Oid) -> Result<Vec<String>> {
    let Some(bytes) = ctx.store.read_file(commit, crate::codec::META_PATH)? else {
        return Ok(Vec::new());
    };
    let meta: crate::model::Meta =
        crate::codec::decode(crate::codec::META_PATH, &bytes).map_err(|source| {
            crate::store::Error::Corrupt {
                commit: commit.clone(),
                source,
            }
        })?;
    Ok(meta.gate_signers)
}

/// The policy in effect at `commit` (empty: none).
pub fn effective(ctx: &Context, commit: &Oid) -> Result<Vec<String>> {
    let mut cache = load_cache(ctx);
    let known = cache.len();
    let found = entry(ctx, &mut cache, commit)?;
    if cache.len() != known {
        save_cache(ctx, cache);
    }
    Ok(found.effective)
}

fn entry(ctx: &Context, cache: &mut Vec<Entry>, commit: &Oid) -> Result<Entry> {
    if let Some(e) = cache.iter().find(|e| e.commit == commit.0) {
        return Ok(e.clone());
    }
    // The first-parent chain back to a commit whose policy is known.
    let mut chain = Vec::new();
    let mut base = None;
    let mut next = Some(commit.clone());
    // Usually the parent is known (the tip before the last write).
    let mut chunk = 2;
    'walk: while let Some(from) = next.take() {
        let infos = ctx.store.first_parent_log(&from, chunk)?;
        chunk = 64;
        for info in infos {
            if let Some(e) = cache.iter().find(|e| e.commit == info.id.0) {
                base = Some(e.clone());
                break 'walk;
            }
            next = info.parents.first().cloned();
            chain.push(info);
        }
    }
    let mut parent = base;
    for info in chain.into_iter().rev() {
        let file = file_signers(ctx, &info.id)?;
        let effective = match &parent {
            None => file.clone(),
            Some(p) if file == p.file => p.effective.clone(),
            Some(p) if file == p.effective || p.effective.is_empty() => file.clone(),
            Some(p) => {
                let mut took = false;
                for other in info.parents.iter().skip(1) {
                    if entry(ctx, cache, other)?.effective == file {
                        took = true;
                        break;
                    }
                }
                if took || signed_by_any(ctx, &info.id, &p.effective)? {
                    file.clone()
                } else {
                    p.effective.clone()
                }
            }
        };
        let e = Entry {
            commit: info.id.0.clone(),
            file,
            effective,
        };
        cache.push(e.clone());
        parent = Some(e);
    }
    parent.ok_or_else(|| Refusal::new(Code::StateInvalid, "empty state history").into())
}

/// Whether `commit` is signed by one of `keys` (cached by commit and keys).
pub fn signed_by_any(ctx: &Context, commit: &Oid, keys: &[String]) -> Result<bool> {
    let body = keys
        .iter()
        .map(|k| format!("* {}\n", key_body(k)))
        .collect::<String>();
    let set = hash(&body);
    let d = dir(ctx);
    let marker = d.join("verified").join(format!("{}-{set}", commit.0));
    if let Ok(v) = std::fs::read_to_string(&marker) {
        return Ok(v == "1");
    }
    std::fs::create_dir_all(d.join("verified"))
        .map_err(|e| crate::Error::invalid_input(format!("{}: {e}", d.display())))?;
    let allowed = d.join(format!("allowed-signers-{set}"));
    if !allowed.exists() {
        std::fs::write(&allowed, &body)
            .map_err(|e| crate::Error::invalid_input(format!("{}: {e}", allowed.display())))?;
    }
    let ok =
        crate::git_cmd::signing::signed_by(ctx.repo_dir(), &commit.0, &allowed).map_err(|e| {
            Refusal::new(
                Code::GitFailed,
                format!("checking {commit}'s signature: {e}"),
            )
        })?;
    let _ = std::fs::write(&marker, if ok { "1" } else { "0" });
    Ok(ok)
}

/// The gates of the selected goal whose resolution does not count: resolved
/// (done) at `tip`, but not by a commit a gate signer signed.
pub fn unsigned_resolutions(ctx: &Context, tip: &Oid, state: &State) -> Result<BTreeSet<String>> {
    unsigned_resolutions_of(ctx, tip, state, &ctx.goal(state)?.goal.id)
}

/// [`unsigned_resolutions`] of the goal `goal`.
pub fn unsigned_resolutions_of(
    ctx: &Context,
    tip: &Oid,
    state: &State,
    goal: &str,
) -> Result<BTreeSet<String>> {
    let gs = &state.goals[goal];
    let resolved: Vec<&str> = gs
        .todos
        .all_facts()
        .filter(|t| t.class == TodoClass::UserGate && t.status == TodoStatus::Done)
        .map(|t| t.id)
        .collect();
    let mut out = BTreeSet::new();
    if resolved.is_empty() || effective(ctx, tip)?.is_empty() {
        return Ok(out);
    }
    // Verdicts by the gate's content (its canonical encoding): the same
    // resolution is judged once, whatever commit it is read at.
    let file = dir(ctx).join("resolutions");
    let known = std::fs::read_to_string(&file).unwrap_or_default();
    let mut added = String::new();
    for id in resolved {
        let gate = &gs.todos[id];
        let key = sha1_smol::Sha1::from(crate::codec::encode(gate))
            .digest()
            .to_string();
        let cached = known
            .lines()
            .find_map(|l| l.strip_prefix(key.as_str()))
            .map(|v| v.trim() == "1");
        let counts = match cached {
            Some(c) => c,
            None => {
                let path = crate::codec::todo_path(gate);
                let Some(bytes) = ctx.store.read_file(tip, &path)? else {
                    continue;
                };
                let counts = resolution_counts(ctx, tip, &path, &bytes)?;
                added.push_str(&format!("{key} {}\n", u8::from(counts)));
                counts
            }
        };
        if !counts {
            out.insert(id.to_owned());
        }
    }
    if !added.is_empty() {
        use std::io::Write as _;
        let _ = std::fs::create_dir_all(dir(ctx));
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
        {
            let _ = f.write_all(added.as_bytes());
        }
    }
    Ok(out)
}

/// Whether the commit that wrote `bytes` at `path` (walking back from `tip`
/// while a parent still holds them) was made before any policy, or signed
/// by a key of the policy in effect at its parent.
fn resolution_counts(ctx: &Context, tip: &Oid, path: &str, bytes: &[u8]) -> Result<bool> {
    let mut cur = tip.clone();
    let parent = loop {
        let info = ctx.store.first_parent_log(&cur, 1)?.remove(0);
        let mut older = None;
        for p in &info.parents {
            if ctx.store.read_file(p, path)?.as_deref() == Some(bytes) {
                older = Some(p.clone());
                break;
            }
        }
        match older {
            Some(p) => cur = p,
            None => break info.parents.first().cloned(),
        }
    };
    let Some(parent) = parent else {
        return Ok(true);
    };
    let keys = effective(ctx, &parent)?;
    Ok(keys.is_empty() || signed_by_any(ctx, &cur, &keys)?)
}

/// Puts the gates of `ids` back to open in `state` (a read-only view), and
/// returns them as they were, for [`restore`].
pub fn reopen(state: &mut State, goal: &str, ids: &BTreeSet<String>) -> Vec<Todo> {
    let mut saved = Vec::new();
    if ids.is_empty() {
        return saved;
    }
    let Some(gs) = state.goals.get_mut(goal) else {
        return saved;
    };
    for id in ids {
        if let Some(t) = gs.todos.get_mut(id) {
            saved.push(t.clone());
            t.status = TodoStatus::Open;
        }
    }
    saved
}

/// Undoes [`reopen`] (inside a transaction, before anything is written).
pub fn restore(state: &mut State, goal: &str, saved: Vec<Todo>) {
    if let Some(gs) = state.goals.get_mut(goal) {
        for t in saved {
            gs.todos.insert(t.id.clone(), t);
        }
    }
}

/// What `signers list` shows: the policy in effect and the one loopx.yaml
/// holds, when they differ (a change that did not take effect).
#[derive(Debug, serde::Serialize)]
pub struct SignersReport {
    pub effective: Vec<String>,
    pub in_file: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
}

pub fn list(ctx: &Context) -> Result<SignersReport> {
    let (tip, state) = ctx.load()?;
    Ok(SignersReport {
        effective: effective(ctx, &tip)?,
        in_file: state.meta.gate_signers.clone(),
        commit: None,
    })
}

/// A public key from the command line: the key itself, or a `.pub` file.
fn read_key(arg: &str) -> Result<String> {
    let text = match std::fs::read_to_string(arg) {
        Ok(t) => t.lines().next().unwrap_or("").trim().to_owned(),
        Err(_) => arg.trim().to_owned(),
    };
    let mut words = text.split_whitespace();
    let (kind, body) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let known = kind.starts_with("ssh-")
        || kind.starts_with("ecdsa-sha2-")
        || kind.starts_with("sk-ssh-")
        || kind.starts_with("sk-ecdsa-");
    let base64 = !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
    if !known || !base64 {
        return Err(Refusal::invalid_input(format!(
            "`{arg}` is not an ssh public key (`ssh-ed25519 AAAA… [comment]`) or a file holding one"
        ))
        .into());
    }
    Ok(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// `gate signers add KEY` / `remove KEY`: a new policy, built on the one in
/// effect and committed signed by the person's key.
pub fn change(ctx: &Context, add: bool, key: &str) -> Result<SignersReport> {
    ctx.require_person("change gate_signers (who answers gates)")?;
    let (tip, _) = ctx.load()?;
    let mut keys = effective(ctx, &tip)?;
    let word = if add { "add" } else { "remove" };
    if add {
        let new = read_key(key)?;
        if keys.iter().any(|k| key_body(k) == key_body(&new)) {
            return Err(Refusal::invalid_input("that key is already a gate signer").into());
        }
        keys.push(new);
    } else {
        let before = keys.len();
        let target = read_key(key).map(|k| key_body(&k)).ok();
        keys.retain(|k| {
            let comment = k.split_whitespace().nth(2);
            !(Some(key_body(k)) == target || comment == Some(key))
        });
        if keys.len() == before {
            return Err(Refusal::invalid_input(format!("`{key}` is not a gate signer")).into());
        }
    }
    let done = crate::ops::signed::mutate_signed(ctx, |state, _| {
        state.meta.gate_signers = keys.clone();
        let message = crate::store::Message::new(
            "gate signers",
            format!("gate signers {word}: {} key(s)", keys.len()),
        );
        Ok(((), message))
    })?;
    Ok(SignersReport {
        effective: keys,
        in_file: Vec::new(),
        commit: done.commit,
    })
}
