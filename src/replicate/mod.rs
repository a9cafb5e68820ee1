//! `sync`: fetch → fast-forward or merge → push with a pinned lease (SPEC §5).
//!
//! The remote is the serialization point. A push carries
//! `--force-with-lease=refs/heads/loopx-state:<the remote tip we merged>`, so
//! it lands only if nobody pushed since we fetched; otherwise we fetch, merge
//! and try again, a bounded number of times. Nothing is ever forced.

pub mod shared;

use std::time::Duration;

use serde::Serialize;

use crate::git_cmd::{self, history, Pace, PushStatus, Remote, TransportError};
use crate::model::merge::{self, Conflict, LostClaim};
use crate::model::{leaks, Code, Refusal};
use crate::session::write::Writer;
use crate::session::Context;
use crate::store::{transaction, CasResult, Error as StoreError, Message, Oid, STATE_REF};
use crate::{Error, Result};

/// How many fetch-merge-push rounds a sync tries before giving up.
pub const MAX_ROUNDS: u32 = 12;
const BRANCH: &str = "loopx-state";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncAction {
    UpToDate,
    Adopted,
    Pushed,
    FastForwarded,
    Merged,
}

#[derive(Debug, Serialize)]
pub struct SyncReport {
    pub remote: String,
    pub action: SyncAction,
    pub tip: Oid,
    /// The remote's tip once the sync is done (equal to `tip`).
    pub remote_tip: Oid,
    pub rounds: u32,
    pub conflicts: Vec<Conflict>,
    pub lost_claims: Vec<LostClaim>,
    /// The remote ref this clone publishes its branch on (shared refs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// Peer heads this sync left for the next one: it merges at most
    /// [`shared::MAX_MERGED_HEADS`] (shared refs only).
    #[serde(skip_serializing_if = "is_zero")]
    pub deferred_heads: usize,
    /// Lease refs of ended leases this sync deleted on the remote
    /// ([`shared::lease_ref_grace`]; shared refs only).
    #[serde(skip_serializing_if = "is_zero")]
    pub leases_deleted: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The remote to sync with: `--remote`, else `loopx.remote`, else `origin`.
///
/// One that is named (by the flag, the MCP tool or `loopx.remote`) must be
/// a remote configured in this repository, by name: never a path or a URL
/// (a tool call could push state anywhere), never text git would read as
/// an option (`--receive-pack=…`).
pub fn remote_name(ctx: &Context, remote: Option<&str>) -> Result<String> {
    let named = remote
        .map(str::to_owned)
        .or_else(|| ctx.store.config_string("loopx.remote"));
    let Some(name) = named else {
        return Ok("origin".to_owned());
    };
    let configured = !name.starts_with('-')
        && !name.is_empty()
        && ctx
            .store
            .config_string(&format!("remote.{name}.url"))
            .is_some();
    if !configured {
        return Err(Refusal::invalid_input(format!(
            "`{name}` is not a remote of this repository: name one that `git remote` lists"
        ))
        .with_hint("add it first: `git remote add <name> <url>`")
        .into());
    }
    Ok(name)
}

/// The best common ancestor of `one` and a merge of `others`, as `git
/// merge-base` answers: the store's walk (`gix_store::ancestry`), or git
/// itself for a question that reaches deep into history.
fn merge_base(ctx: &Context, one: &Oid, others: &[&Oid]) -> Result<Option<Oid>> {
    if let Some(base) = ctx.store.merge_base(one, others)? {
        return Ok(base);
    }
    let others: Vec<&str> = others.iter().map(|o| o.0.as_str()).collect();
    git_cmd::merge_base_of(ctx.repo_dir(), &one.0, &others)
        .map(|b| b.map(Oid))
        .map_err(|e| StoreError::Git(e).into())
}

/// Whether `ancestor` is `descendant` or reachable from it.
fn is_ancestor(ctx: &Context, ancestor: &Oid, descendant: &Oid) -> Result<bool> {
    if let Some(known) = ctx.store.is_ancestor(ancestor, descendant)? {
        return Ok(known);
    }
    git_cmd::is_ancestor(ctx.repo_dir(), &ancestor.0, &descendant.0)
        .map_err(|e| StoreError::Git(e).into())
}

/// The commits of `commits` no other of them reaches, each once, in order.
fn independent(ctx: &Context, commits: &[Oid]) -> Result<Vec<Oid>> {
    if let Some(tops) = ctx.store.independent(commits)? {
        return Ok(tops);
    }
    let all: Vec<&str> = commits.iter().map(|o| o.0.as_str()).collect();
    git_cmd::independent(ctx.repo_dir(), &all)
        .map(|tops| tops.into_iter().map(Oid).collect())
        .map_err(|e| StoreError::Git(e).into())
}

fn git_failed(e: impl Into<TransportError>) -> Error {
    match e.into() {
        TransportError::Failed(message) => StoreError::Git(message).into(),
        TransportError::TimedOut {
            step,
            remote,
            after,
        } => Refusal::new(
            Code::GitFailed,
            format!(
                "git {step} {remote} gave no answer within {} and was stopped{}",
                seconds(after),
                if step == "push" {
                    format!("; {remote} may or may not have taken the push, the next sync finds out")
                } else {
                    String::new()
                }
            ),
        )
        .with_hint(format!(
            "check that {remote} is reachable; a slow remote needs a longer limit: `git loopx sync --timeout 10m` or `git config loopx.syncTimeout 10m` (0 turns the limit off)"
        ))
        .into(),
    }
}

fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s}s")
    } else {
        format!("{s:.1}s")
    }
}

/// Checks that the `git` on PATH is new enough for sync. The answer is kept
/// as a host record keyed by the program's path, size and modification
/// time, so a sync or `--sync` claim does not start `git --version` each
/// time; a different or replaced git is asked again.
fn check_git(ctx: &Context) -> Result<()> {
    let key = git_program_key().map(|k| format!("git-ok\0{k}"));
    if let Some(key) = &key {
        if ctx.store.records().get(key).is_some() {
            return Ok(());
        }
    }
    check_git_version()?;
    if let Some(key) = &key {
        ctx.store.records().set(key, b"1");
    }
    Ok(())
}

/// `<path> <size> <mtime>` of the first `git` on PATH.
fn git_program_key() -> Option<String> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find_map(|dir| {
        let file = dir.join("git");
        let meta = std::fs::metadata(&file).ok().filter(|m| m.is_file())?;
        let mtime = meta
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_nanos();
        Some(format!("{} {} {mtime}", file.display(), meta.len()))
    })
}

fn check_git_version() -> Result<()> {
    match git_cmd::version() {
        Some(v) if v >= git_cmd::MIN_VERSION => Ok(()),
        Some(v) => Err(git_failed(format!(
            "git {}.{}.{} is too old for sync: 2.41 or newer is needed (`fetch --porcelain`)",
            v.0, v.1, v.2
        ))),
        None => Err(git_failed(String::from(
            "the git program was not found on PATH",
        ))),
    }
}

/// Refuses to push history in which the scan finds a credential (SPEC §5):
/// every object a push of `tip` to a remote at `expected` would send — each
/// commit's message and each blob its tree adds — not only the tip's state.
/// A credential removed in a later commit is still in the history pushed.
pub fn check_leaks(ctx: &Context, tip: &Oid, expected: Option<&Oid>) -> Result<()> {
    let exclude: Vec<Oid> = expected.cloned().into_iter().collect();
    check_leaks_excluding(ctx, tip, &exclude)
}

/// [`check_leaks`] of the history of `tip` that none of `on_remote` has.
pub fn check_leaks_excluding(ctx: &Context, tip: &Oid, on_remote: &[Oid]) -> Result<()> {
    let dir = ctx.repo_dir().to_owned();
    let exclude: Vec<&str> = on_remote.iter().map(|o| o.0.as_str()).collect();
    let objects = history::objects_between(&dir, &tip.0, &exclude).map_err(git_failed)?;
    let ids: Vec<String> = objects.iter().map(|(id, _)| id.clone()).collect();
    let paths: std::collections::HashMap<String, String> = objects.into_iter().collect();
    for object in history::read_objects(&dir, &ids).map_err(git_failed)? {
        let text = match object.kind.as_str() {
            "blob" => &object.data[..],
            "commit" => message_of(&object.data),
            _ => continue,
        };
        let Some(leak) = leaks::scan_bytes(text)
            .into_iter()
            .find(|l| !ctx.policy().allows(l.kind))
        else {
            continue;
        };
        let short = |id: &str| id[..id.len().min(10)].to_owned();
        let (place, hint) = if object.kind == "commit" {
            (
                format!("the message of commit {}", short(&object.id)),
                "git loopx redact all --all-leaks".to_owned(),
            )
        } else {
            let path = paths.get(&object.id).cloned().unwrap_or_default();
            let by = history::commit_adding(&dir, &object.id, &tip.0, &exclude)
                .map(|c| format!(" (written by commit {})", short(&c)))
                .unwrap_or_default();
            (format!("{path}{by}"), redact_command(&path))
        };
        return Err(Refusal::new(
            Code::LeakDetected,
            format!(
                "{place} holds what looks like a credential ({}), in history not yet on the remote; nothing was pushed",
                leak.describe()
            ),
        )
        .with_hint(format!(
            "remove it from the unpushed history with `{hint}`, then sync again; rotate the credential if it was ever shared"
        ))
        .into());
    }
    Ok(())
}

/// The message of a raw commit object (after its headers).
fn message_of(commit: &[u8]) -> &[u8] {
    commit
        .windows(2)
        .position(|w| w == b"\n\n")
        .map_or(&[][..], |at| &commit[at + 2..])
}

/// The `redact` command that rewrites the entity stored at `path`.
fn redact_command(path: &str) -> String {
    let id = path
        .rsplit('/')
        .next()
        .and_then(|f| f.strip_suffix(".yaml"))
        .unwrap_or("");
    let scope = if path.contains("/todos/") {
        "todo"
    } else if path.contains("/runs/") {
        "run"
    } else {
        return "git loopx redact all --all-leaks".into();
    };
    format!("git loopx redact {scope} {id} --all-leaks")
}

pub(crate) fn remote_ref(remote: &str) -> String {
    format!("refs/remotes/{remote}/{BRANCH}")
}

/// How many times a fetch that failed is tried again before sync gives up.
pub(crate) const FETCH_RETRIES: u32 = 4;

/// Fetches and returns the remote's tip (`None`: the remote has no state).
///
/// A failed fetch is tried again a few times after a short wait: in a clone
/// shared by several agents it can lose a race it cannot see — on the
/// remote-tracking ref's lock with a git the user runs, or on a pack our own
/// background repack is rolling up. A fetch that timed out is not retried.
pub fn fetch(ctx: &Context, remote: &Remote) -> Result<Option<Oid>> {
    let mut jitter = transaction::Jitter::new();
    let mut attempt = 1;
    let fetched = loop {
        match git_cmd::fetch_branch(ctx.repo_dir(), remote, BRANCH) {
            Err(TransportError::Failed(message)) if attempt <= FETCH_RETRIES => {
                tracing::debug!("fetch from {remote} failed (attempt {attempt}): {message}");
                std::thread::sleep(Duration::from_millis(50 << attempt) + jitter.backoff(attempt));
                attempt += 1;
            }
            other => break other.map_err(git_failed)?,
        }
    };
    if fetched {
        Ok(ctx.store.try_find_ref(&remote_ref(&remote.name))?)
    } else {
        Ok(None)
    }
}

/// Pushes the local tip `tip` if the remote is still at `expected`.
///
/// Never publishes a state that a reader would refuse (a hand-made commit
/// can hold one): every clone would inherit the breakage.
pub fn push(ctx: &Context, remote: &Remote, tip: &Oid, expected: Option<&Oid>) -> Result<bool> {
    transaction::state_at(&ctx.store, tip)?;
    check_leaks(ctx, tip, expected)?;
    let status = git_cmd::push_with_lease(
        ctx.repo_dir(),
        remote,
        &tip.0,
        BRANCH,
        expected.map(|o| o.0.as_str()),
    )
    .map_err(git_failed)?;
    match status {
        PushStatus::Updated | PushStatus::UpToDate => Ok(true),
        // The remote's own policy (a hook, branch protection, permissions):
        // another round would be refused the same way. (A remote that lost
        // a race for its own ref lock says "failed to update ref": retried.)
        PushStatus::Rejected(why) if refused_by_policy(&why) => Err(Refusal::new(
            Code::PushRejected,
            format!("{remote} refused the push of {BRANCH}: {why}"),
        )
        .with_hint(
            "nothing was published; the remote's policy (a hook, branch protection or permissions) refused it: ask its owner, then sync again",
        )
        .into()),
        // The lease did not hold (someone pushed first): fetch, merge, retry.
        PushStatus::Rejected(why) => {
            tracing::debug!("push to {remote} rejected: {why}");
            Ok(false)
        }
    }
}

/// Whether a push's rejection is the remote's policy, not a race: a hook
/// that declined it, or a branch the remote protects or denies.
fn refused_by_policy(why: &str) -> bool {
    why.starts_with("[remote rejected]")
        && [
            "hook declined",
            "denied",
            "deny",
            "protected",
            "not allowed",
        ]
        .iter()
        .any(|word| why.contains(word))
}

/// A merge commit made, and what the merge had to decide.
struct MergeCommit {
    commit: Oid,
    conflicts: Vec<Conflict>,
    lost_claims: Vec<LostClaim>,
}

/// One merge of divergent tips into a two-parent commit on the local branch.
/// Tips that share no history are refused unless `allow_unrelated`.
fn merge_commit(
    ctx: &Context,
    remote: &Remote,
    local: &Oid,
    theirs: &Oid,
    allow_unrelated: bool,
) -> Result<Option<MergeCommit>> {
    let base = merge_base(ctx, local, &[theirs])?;
    if base.is_none() && !allow_unrelated {
        return Err(unrelated(remote, local, theirs));
    }
    let base_state = match &base {
        Some(b) => Some(transaction::state_at(&ctx.store, b)?),
        None => None,
    };
    let ours = transaction::state_at(&ctx.store, local)?;
    let remote_state = transaction::state_at(&ctx.store, theirs)?;
    let mut merged = merge::merge(base_state.as_ref(), &ours, &remote_state).map_err(|e| {
        Refusal::new(
            Code::StateInvalid,
            format!("cannot merge {} with {remote}: {e}", local.short()),
        )
    })?;
    shed_notes(&mut merged.state);
    let changes = transaction::changes(Some(&ours), &merged.state);
    let mut message = Message::new(
        "sync merge",
        format!(
            "sync: merge {remote} {} into {}",
            theirs.short(),
            local.short()
        ),
    );
    for c in &merged.conflicts {
        message = message.line(format!(
            "conflict {} {}: kept {} over {} ({})",
            c.entity, c.field, c.kept, c.lost, c.rule
        ));
    }
    for l in &merged.lost_claims {
        message = message.line(format!(
            "claim on {} lost to the remote: {} over {}",
            l.todo, l.remote, l.local
        ));
    }
    // Checked as any write (a merge adds no credential either side held),
    // and cached like one: the next command starts from it instead of
    // parsing the merge's whole tree.
    let merge::Merged {
        state,
        conflicts,
        lost_claims,
    } = merged;
    let writer = Writer::new(ctx);
    let parents = vec![local.clone(), theirs.clone()];
    let draft = writer.draft_merge(parents, changes, &message, Some(state))?;
    match draft.compare_and_swap(&ctx.store, ctx.now)? {
        CasResult::Committed(oid) => {
            writer.landed(&oid);
            Ok(Some(MergeCommit {
                commit: oid,
                conflicts,
                lost_claims,
            }))
        }
        CasResult::Unchanged => unreachable!("a merge commit always has two parents"),
        CasResult::Retry => Ok(None),
    }
}

/// The refusal of a remote state that shares no history with the local one.
fn unrelated(remote: &Remote, local: &Oid, theirs: &Oid) -> Error {
    Refusal::new(
        Code::UnrelatedHistories,
        format!(
            "the loopx-state of {remote} ({}) shares no history with the local loopx-state ({}): \
         it was made by another `init`, or replaced by a force-push; nothing was merged or pushed",
            theirs.short(),
            local.short()
        ),
    )
    .with_hint(format!(
    "compare them (`git log --oneline {} {}`); if {remote} is the wrong remote, pass --remote; \
     to combine both states anyway, run `git loopx sync --allow-unrelated`",
    local.short(),
    theirs.short()
        ))
    .into()
}

/// Syncs in one clone take turns on an OS file lock (`.git/loopx/sync.lock`,
/// released by the kernel if its holder dies): concurrent fetches into the
/// same remote-tracking ref would fail each other ("cannot lock ref").
/// Blocks until the lock is free; `None` when the lock cannot be had at all
/// (an unwritable `.git`), and then syncs run without it, as before.
pub fn sync_turn(ctx: &Context) -> Option<std::fs::File> {
    let dir = ctx.store.local_dir();
    std::fs::create_dir_all(&dir).ok()?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("sync.lock"))
        .ok()?;
    if file.try_lock().is_err() {
        tracing::debug!("waiting for another sync in this clone");
        file.lock().ok()?;
    }
    Some(file)
}

/// What every sync checks before it talks to the remote, and the remote as
/// this command reaches it: its name (`remote_name`), the limit on each
/// network step (`timeout`, else `loopx.syncTimeout`, else
/// [`git_cmd::DEFAULT_NETWORK_TIMEOUT`]; zero: none) and this clone's pace
/// (`loopx.maxRemoteOpsPerSecond`). Every network step is given it: none
/// of it is left behind for the next command of a long-lived process.
pub fn prepare(ctx: &Context, remote: Option<&str>, timeout: Option<Duration>) -> Result<Remote> {
    check_git(ctx)?;
    ctx.store.check_not_checked_out()?;
    let timeout = match timeout {
        Some(t) => t,
        None => match ctx.store.config_string("loopx.syncTimeout") {
            Some(text) => crate::model::parse_duration(&text)
                .and_then(|s| u64::try_from(s).ok())
                .map(Duration::from_secs)
                .ok_or_else(|| {
                    Refusal::invalid_input(format!(
                        "git config loopx.syncTimeout is `{text}`, not a duration like 90s, 10m or 0"
                    ))
                })?,
            None => git_cmd::DEFAULT_NETWORK_TIMEOUT,
        },
    };
    let pace = match ctx.store.config_string("loopx.maxRemoteOpsPerSecond") {
        Some(text) => text
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|r| r.is_finite() && *r >= 0.0)
            .ok_or_else(|| {
                Refusal::invalid_input(format!(
                    "git config loopx.maxRemoteOpsPerSecond is `{text}`, not a number of operations a second like 5 or 0.5 (0: no limit)"
                ))
            })?,
        None => 0.0,
    };
    let pace = (pace > 0.0).then(|| {
        let _ = std::fs::create_dir_all(ctx.store.local_dir());
        Pace {
            file: ctx.store.local_dir().join("remote-pace"),
            per_second: pace,
        }
    });
    Ok(Remote {
        name: remote_name(ctx, remote)?,
        timeout: (!timeout.is_zero()).then_some(timeout),
        pace,
    })
}

/// A sync by a caller that holds [`sync_turn`] and ran [`prepare`]: through
/// shared refs ([`shared`]), or through `loopx-state` alone when
/// `loopx.shareRefs` is false.
pub fn sync_locked(ctx: &Context, remote: &Remote, allow_unrelated: bool) -> Result<SyncReport> {
    sync_with(ctx, remote, allow_unrelated, false)
}

/// [`sync_locked`]; `prune_leases`: delete every lease ref that may go
/// (shared refs only).
pub fn sync_with(
    ctx: &Context,
    remote: &Remote,
    allow_unrelated: bool,
    prune_leases: bool,
) -> Result<SyncReport> {
    // A push sends history: what a bare `git prune` took from it goes back
    // first (`Repository::heal_after_prune`).
    ctx.store.heal_after_prune();
    if shared::enabled(ctx) {
        shared::sync_locked(ctx, remote, allow_unrelated, prune_leases)
    } else {
        sync_branch(ctx, remote, allow_unrelated)
    }
}

/// The single-branch protocol: every peer pushes `loopx-state` itself.
fn sync_branch(ctx: &Context, remote: &Remote, allow_unrelated: bool) -> Result<SyncReport> {
    let remote = remote.to_owned();
    let mut conflicts = Vec::new();
    let mut lost_claims = Vec::new();
    let mut merged_any = false;
    let mut jitter = transaction::Jitter::new();
    for round in 1..=MAX_ROUNDS {
        let theirs = fetch(ctx, &remote)?;
        let local = ctx.store.tip()?;
        let report =
            |action, tip: Oid, conflicts: Vec<Conflict>, lost_claims: Vec<LostClaim>| SyncReport {
                remote: remote.name.clone(),
                action,
                remote_tip: tip.clone(),
                tip,
                rounds: round,
                conflicts,
                lost_claims,
                peer: None,
                deferred_heads: 0,
                leases_deleted: 0,
            };
        match (local, theirs) {
            (None, None) => return Err(StoreError::Missing.into()),
            (None, Some(r)) => {
                if ctx.store.create_ref(
                    STATE_REF,
                    &r,
                    &format!("loopx: sync adopt {remote}"),
                    ctx.now,
                )? {
                    return Ok(report(SyncAction::Adopted, r, conflicts, lost_claims));
                }
            }
            (Some(l), None) => {
                if push(ctx, &remote, &l, None)? {
                    return Ok(report(SyncAction::Pushed, l, conflicts, lost_claims));
                }
            }
            (Some(l), Some(r)) if l == r => {
                let action = if merged_any {
                    SyncAction::Merged
                } else {
                    SyncAction::UpToDate
                };
                return Ok(report(action, l, conflicts, lost_claims));
            }
            (Some(l), Some(r)) => {
                if is_ancestor(ctx, &l, &r)? {
                    if ctx.store.move_ref(
                        STATE_REF,
                        Some(&l),
                        &r,
                        &format!("loopx: sync fast-forward to {remote}"),
                        ctx.now,
                    )? {
                        let action = if merged_any {
                            SyncAction::Merged
                        } else {
                            SyncAction::FastForwarded
                        };
                        return Ok(report(action, r, conflicts, lost_claims));
                    }
                    continue;
                }
                let tip = if is_ancestor(ctx, &r, &l)? {
                    l
                } else {
                    match merge_commit(ctx, &remote, &l, &r, allow_unrelated)? {
                        Some(m) => {
                            merged_any = true;
                            conflicts.extend(m.conflicts);
                            lost_claims.extend(m.lost_claims);
                            m.commit
                        }
                        None => continue,
                    }
                };
                if push(ctx, &remote, &tip, Some(&r))? {
                    let action = if merged_any {
                        SyncAction::Merged
                    } else {
                        SyncAction::Pushed
                    };
                    return Ok(report(action, tip, conflicts, lost_claims));
                }
            }
        }
        std::thread::sleep(jitter.backoff(round + 2));
    }
    Err(Refusal::new(
        Code::PushRejected,
        format!("{remote} kept moving: gave up after {MAX_ROUNDS} fetch-merge-push rounds"),
    )
    .with_hint("run `git loopx sync` again")
    .into())
}

/// Moves the oldest notes of a todo out of its file into run records when
/// the merge's union of notes made the file too large for a reader
/// ([`crate::model::limits::shed_notes`]).
pub(crate) fn shed_notes(state: &mut crate::model::State) {
    for gs in state.goals.values_mut() {
        crate::model::limits::shed_notes(gs, |t| crate::codec::encode(t).len());
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_declined_push_is_policy_and_a_lost_ref_race_is_not() {
        for why in [
            "[remote rejected] (pre-receive hook declined)",
            "[remote rejected] (deny updating a hidden ref)",
            "[remote rejected] (protected branch hook declined)",
        ] {
            assert!(super::refused_by_policy(why), "{why}");
        }
        for why in [
            "[remote rejected] (failed to update ref)",
            "[rejected] (stale info)",
            "[rejected] (fetch first)",
        ] {
            assert!(!super::refused_by_policy(why), "{why}");
        }
    }
}
