//! `redact`: remove a credential from the *unpushed* history of loopx-state.
//!
//! The unpushed commits are those reachable from the local tip and from no
//! `refs/remotes/*/loopx-state`. Each is rewritten, oldest first: the files
//! in scope (one todo's or run's file, or every file those commits changed)
//! get every secret replaced by [`leaks::REDACTED`], every commit message
//! too, parents are mapped to their rewritten commits, and authors, dates
//! and trailers are kept. The ref then moves with a compare-and-swap from the
//! tip that was read, so a write that landed meanwhile is never dropped (the
//! command fails and can be run again).
//!
//! A secret that is anywhere in history already on a remote is refused: a
//! rewrite cannot take it back, it must be rotated.
//!
//! Afterwards the replaced commits are unreachable: their reflog entries on
//! loopx-state are expired, so `git gc` can prune them. Until it does, they
//! stay in the local object store (and the host-local parsed-state cache
//! under `.git/loopx/cache/` may still hold their text); neither leaves the
//! machine, since a push sends only reachable objects.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use crate::git_cmd::history;
use crate::model::{leaks, Code, Refusal};
use crate::session::Context;
use crate::store::{
    transaction, Checked, Error as StoreError, FileChange, Message, Oid, REVIEWED_REF, STATE_REF,
};
use crate::{Error, Result};

/// Which files of the unpushed history to rewrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// One todo's file.
    Todo,
    /// One run's file.
    Run,
    /// Every file the unpushed commits changed.
    All,
}

/// What to remove.
pub enum Secrets {
    /// These exact strings.
    Text(Vec<String>),
    /// Whatever the credential scan finds in scope.
    AllLeaks,
}

/// One commit replaced.
#[derive(Debug, Serialize)]
pub struct Rewrite {
    pub old: Oid,
    pub new: Oid,
}

#[derive(Debug, Serialize)]
pub struct RedactReport {
    pub scope: Scope,
    /// How many distinct secrets were removed.
    pub secrets: usize,
    /// The tip before and after.
    pub tip_before: Oid,
    pub tip: Oid,
    /// Commits replaced, oldest first.
    pub rewritten: Vec<Rewrite>,
    /// Files whose content changed in at least one commit.
    pub files: Vec<String>,
    /// Commit messages that changed.
    pub messages: usize,
}

fn git_failed(message: String) -> Error {
    StoreError::Git(message).into()
}

/// The files of the todo or run `id` (a unique prefix) among `paths`: one
/// entity, at one path or, where commits of the history moved it (a run
/// rewritten under another day), at several.
fn entity_paths(scope: Scope, id: &str, paths: &[String]) -> Result<Vec<String>> {
    let dir = if scope == Scope::Todo {
        "/todos/"
    } else {
        "/runs/"
    };
    let mut found: Vec<&String> = paths
        .iter()
        .filter(|p| p.contains(dir))
        .filter(|p| p.rsplit('/').next().is_some_and(|f| f.starts_with(id)))
        .collect();
    found.dedup();
    let file = |p: &str| p.rsplit('/').next().map(str::to_owned);
    if found.windows(2).any(|w| file(w[0]) != file(w[1])) {
        return Err(
            Refusal::new(Code::AmbiguousId, format!("{id} names more than one file"))
                .with_hint("give more characters of the id")
                .into(),
        );
    }
    Ok(found.into_iter().cloned().collect())
}

/// `redact <scope> [ID] (--text S… | --all-leaks)`.
pub fn redact(
    ctx: &Context,
    scope: Scope,
    id: Option<&str>,
    what: &Secrets,
) -> Result<RedactReport> {
    // An agent (or any command inside an agent runtime) removes only what
    // the credential scanner flags: other text — a gate's question, the
    // person's note — is the person's to redact.
    if ctx.gate_actor().is_some() {
        if let Secrets::Text(texts) = what {
            if texts
                .iter()
                .any(|t| !t.is_empty() && leaks::scan_bytes(t.as_bytes()).is_empty())
            {
                ctx.person_moves(crate::session::PersonRef::History)?;
            }
        }
    }
    let dir = ctx.repo_dir().to_owned();
    let tip = ctx.store.tip()?.ok_or(StoreError::Missing)?;
    let scoped = Scoped::read(ctx, &dir, &tip, scope, id)?;
    let secrets = secrets(&dir, what, &scoped, &tip)?;
    check_unpushed(&dir, &scoped, &secrets)?;
    let done = rewrite(ctx, &dir, &scoped, &secrets)?;
    let new_tip = Oid(done
        .commit_map
        .get(&tip.0)
        .cloned()
        .unwrap_or_else(|| tip.0.clone()));
    if new_tip != tip {
        move_refs(ctx, &dir, &tip, &new_tip, &done)?;
    }
    Ok(RedactReport {
        scope,
        secrets: secrets.len(),
        tip_before: tip,
        tip: new_tip,
        rewritten: done.rewritten,
        files: done.files.into_iter().collect(),
        messages: done.messages,
    })
}

/// What a redaction reaches: the state commits not on any remote yet, the
/// remote refs that say so, the files in scope and the raw commits.
struct Scoped {
    unpushed: Vec<String>,
    remotes: Vec<String>,
    paths: Vec<String>,
    commits: Vec<history::Object>,
}

impl Scoped {
    fn read(
        ctx: &Context,
        dir: &std::path::Path,
        tip: &Oid,
        scope: Scope,
        id: Option<&str>,
    ) -> Result<Scoped> {
        let remotes: Vec<String> = ctx
            .store
            .remote_state_refs()?
            .into_iter()
            .map(|(r, _)| format!("refs/remotes/{r}/loopx-state"))
            .collect();
        let exclude: Vec<&str> = remotes.iter().map(String::as_str).collect();
        let unpushed = history::commits_between(dir, &tip.0, &exclude).map_err(git_failed)?;
        let changed = history::changed_paths(dir, &unpushed).map_err(git_failed)?;
        let paths: Vec<String> = match (scope, id) {
            (Scope::All, _) => changed,
            (_, None) => return Err(Error::invalid_input("redact todo|run needs the ID")),
            (_, Some(id)) => {
                let at_tip = history::blobs_at(dir, &tip.0, &[]).map_err(git_failed)?;
                let mut all: Vec<String> = at_tip.into_iter().map(|(_, p)| p).collect();
                all.extend(changed);
                all.sort();
                let found = entity_paths(scope, id, &all)?;
                if found.is_empty() {
                    return Err(Refusal::new(
                        Code::TodoNotFound,
                        format!("no file for {id} at the tip or in unpushed history"),
                    )
                    .into());
                }
                found
            }
        };
        let commits = history::read_objects(dir, &unpushed).map_err(git_failed)?;
        Ok(Scoped {
            unpushed,
            remotes,
            paths,
            commits,
        })
    }

    /// The remote refs, as `history` excludes them.
    fn exclude(&self) -> Vec<&str> {
        self.remotes.iter().map(String::as_str).collect()
    }
}

/// The texts to remove: those given, or every credential the scanner
/// finds in the files in scope and the commits' messages. Refused when
/// there is none.
fn secrets(
    dir: &std::path::Path,
    what: &Secrets,
    scoped: &Scoped,
    tip: &Oid,
) -> Result<Vec<String>> {
    let Scoped {
        unpushed,
        paths,
        commits,
        ..
    } = scoped;
    let mut secrets: BTreeSet<String> = BTreeSet::new();
    match what {
        Secrets::Text(texts) => secrets.extend(texts.iter().filter(|t| !t.is_empty()).cloned()),
        Secrets::AllLeaks => {
            let mut blobs: BTreeSet<String> = BTreeSet::new();
            for commit in unpushed.iter().chain(std::iter::once(&tip.0)) {
                if paths.is_empty() {
                    break;
                }
                let found = history::blobs_at(dir, commit, paths).map_err(git_failed)?;
                blobs.extend(found.into_iter().map(|(b, _)| b));
            }
            let blobs: Vec<String> = blobs.into_iter().collect();
            for object in history::read_objects(dir, &blobs).map_err(git_failed)? {
                secrets.extend(
                    leaks::scan_bytes(&object.data)
                        .into_iter()
                        .map(|l| l.secret),
                );
            }
            for commit in commits.iter() {
                let (_, message) = split_commit(&commit.data);
                secrets.extend(leaks::scan_bytes(message).into_iter().map(|l| l.secret));
            }
        }
    }
    let secrets: Vec<String> = secrets.into_iter().collect();
    if secrets.is_empty() {
        return Err(Refusal::new(
            Code::InvalidInput,
            "no credential found to redact in the unpushed history in scope",
        )
        .with_hint("name it with --text, or widen the scope with `redact all`")
        .into());
    }
    Ok(secrets)
}

/// Refuses a redaction that cannot take the text back: it is in history a
/// remote has, or nothing is unpushed.
fn check_unpushed(dir: &std::path::Path, scoped: &Scoped, secrets: &[String]) -> Result<()> {
    let exclude = scoped.exclude();
    for secret in secrets {
        if history::history_contains(dir, &exclude, secret).map_err(git_failed)? {
            return Err(Refusal::new(
                Code::LeakDetected,
                "the credential is in history already pushed to a remote: rewriting local history cannot take it back; nothing was rewritten",
            )
            .with_hint("rotate the credential (revoke it and issue a new one), then remove it from the state with a new write")
            .into());
        }
    }
    if scoped.unpushed.is_empty() {
        return Err(Refusal::new(Code::InvalidInput, "nothing unpushed to rewrite").into());
    }
    Ok(())
}

/// What a rewrite made: old commit → new, the files and messages changed.
struct Rewritten {
    commit_map: HashMap<String, String>,
    files: BTreeSet<String>,
    messages: usize,
    rewritten: Vec<Rewrite>,
}

/// Writes every unpushed commit again with `secrets` removed from its files
/// in scope and its message, on the rewritten parents.
fn rewrite(
    ctx: &Context,
    dir: &std::path::Path,
    scoped: &Scoped,
    secrets: &[String],
) -> Result<Rewritten> {
    let Scoped { paths, commits, .. } = scoped;
    let index = ctx.store.local_dir().join("redact.index");
    let mut commit_map: HashMap<String, String> = HashMap::new();
    let mut blob_map: HashMap<String, Option<(String, Vec<u8>)>> = HashMap::new();
    let mut files: BTreeSet<String> = BTreeSet::new();
    let mut messages = 0;
    let mut rewritten = Vec::new();
    for commit in commits.iter() {
        let mut updates = Vec::new();
        if !paths.is_empty() {
            let here = history::blobs_at(dir, &commit.id, paths).map_err(git_failed)?;
            let unseen: Vec<String> = here
                .iter()
                .filter(|(b, _)| !blob_map.contains_key(b))
                .map(|(b, _)| b.clone())
                .collect();
            for object in history::read_objects(dir, &unseen).map_err(git_failed)? {
                let text = String::from_utf8_lossy(&object.data);
                let clean = leaks::redact(&text, secrets);
                let new = if clean == text {
                    None
                } else {
                    let id =
                        history::write_object(dir, "blob", clean.as_bytes()).map_err(git_failed)?;
                    Some((id, clean.into_bytes()))
                };
                blob_map.insert(object.id, new);
            }
            let mut changes = Vec::new();
            for (blob, path) in here {
                if let Some(Some((new, bytes))) = blob_map.get(&blob) {
                    updates.push((path.clone(), new.clone()));
                    changes.push(FileChange::Upsert {
                        path: path.clone(),
                        bytes: bytes.clone(),
                    });
                    files.insert(path);
                }
            }
            // The rewritten files pass the checks of any write: they read
            // back, and hold no credential the commit did not hold.
            let what = Message::new("redact", format!("redact {}", commit.id));
            Checked::new(
                &ctx.store,
                ctx.policy(),
                &[&Oid(commit.id.clone())],
                changes,
                &what,
            )?;
        }
        let (headers, message) = split_commit(&commit.data);
        let message = String::from_utf8_lossy(message);
        let clean_message = leaks::redact(&message, secrets);
        if clean_message != message {
            messages += 1;
        }
        let tree = if updates.is_empty() {
            None
        } else {
            Some(history::tree_with(dir, &index, &commit.id, &updates).map_err(git_failed)?)
        };
        let raw = commit_text(headers, tree.as_deref(), &commit_map, &clean_message);
        let original = String::from_utf8_lossy(&commit.data);
        let new = if raw == original {
            commit.id.clone()
        } else {
            let new = history::write_object(dir, "commit", raw.as_bytes()).map_err(git_failed)?;
            rewritten.push(Rewrite {
                old: Oid(commit.id.clone()),
                new: Oid(new.clone()),
            });
            new
        };
        commit_map.insert(commit.id.clone(), new);
    }
    Ok(Rewritten {
        commit_map,
        files,
        messages,
        rewritten,
    })
}

/// A commit's raw text on its new tree and rewritten parents, with the
/// message given and no signature (one over the old content would not
/// verify).
fn commit_text(
    headers: &[u8],
    tree: Option<&str>,
    commit_map: &HashMap<String, String>,
    message: &str,
) -> String {
    let mut raw = String::new();
    let mut in_signature = false;
    for line in String::from_utf8_lossy(headers).lines() {
        if in_signature && line.starts_with(' ') {
            continue;
        }
        in_signature = false;
        if let (true, Some(tree)) = (line.starts_with("tree "), tree) {
            raw.push_str(&format!("tree {tree}\n"));
        } else if let Some(parent) = line.strip_prefix("parent ") {
            let parent = commit_map.get(parent).map_or(parent, String::as_str);
            raw.push_str(&format!("parent {parent}\n"));
        } else if line.starts_with("gpgsig") {
            // A signature over the old content would not verify.
            in_signature = true;
        } else {
            raw.push_str(line);
            raw.push('\n');
        }
    }
    raw.push('\n');
    raw.push_str(message);
    raw
}

/// Moves loopx-state (and `refs/loopx/reviewed`, when it points into the
/// rewritten history) to the rewritten commits, once the new tip reads back.
fn move_refs(
    ctx: &Context,
    dir: &std::path::Path,
    tip: &Oid,
    new_tip: &Oid,
    done: &Rewritten,
) -> Result<()> {
    let Rewritten {
        commit_map,
        rewritten,
        ..
    } = done;
    // The rewritten state must read back before the ref moves.
    transaction::state_at(&ctx.store, new_tip)?;
    let subject = format!("loopx: redact {} commits", rewritten.len());
    if !ctx
        .store
        .move_ref(STATE_REF, Some(tip), new_tip, &subject, ctx.now)?
    {
        return Err(Refusal::new(
            Code::StateLocked,
            "loopx-state moved while redacting; nothing was changed",
        )
        .with_hint("run the same `git loopx redact` again")
        .into());
    }
    if let Some(reviewed) = ctx.store.try_find_ref(REVIEWED_REF)? {
        if let Some(new) = commit_map.get(&reviewed.0).filter(|n| **n != reviewed.0) {
            ctx.store.move_ref(
                REVIEWED_REF,
                Some(&reviewed),
                &Oid(new.clone()),
                &subject,
                ctx.now,
            )?;
        }
    }
    // The journal of written objects holds what history held: the
    // objects redacted away must not be written back.
    ctx.store.forget_written();
    if let Err(e) = history::expire_unreachable_reflog(dir, STATE_REF) {
        tracing::debug!("reflog expire after redact: {e}");
    }
    Ok(())
}

/// A raw commit's headers and message.
fn split_commit(data: &[u8]) -> (&[u8], &[u8]) {
    match data.windows(2).position(|w| w == b"\n\n") {
        Some(at) => (&data[..at + 1], &data[at + 2..]),
        None => (data, &[]),
    }
}
