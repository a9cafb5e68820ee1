//! `sync`: fetch → fast-forward or merge → push with a pinned lease (SPEC §5).
//!
//! The remote is the serialization point. A push carries
//! `--force-with-lease=refs/heads/loopx-state:<the remote tip we merged>`, so
//! it lands only if nobody pushed since we fetched; otherwise we fetch, merge
//! and try again, a bounded number of times. Nothing is ever forced.

use std::path::PathBuf;

use serde::Serialize;

use crate::git_cmd::{self, PushStatus};
use crate::model::merge::{self, Conflict, LostClaim};
use crate::model::{leaks, Code, Refusal, State};
use crate::ops::Context;
use crate::store::{
    cache, transaction, CasResult, Error as StoreError, Message, Oid, Store, STATE_REF,
};
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
}

/// The remote to sync with: `--remote`, else `loopx.remote`, else `origin`.
pub fn remote_name(ctx: &Context, remote: Option<&str>) -> String {
    remote
        .map(str::to_owned)
        .or_else(|| ctx.store.config_string("loopx.remote"))
        .unwrap_or_else(|| "origin".to_owned())
}

fn git_dir(ctx: &Context) -> PathBuf {
    ctx.store
        .workdir()
        .unwrap_or(ctx.store.common_dir())
        .to_owned()
}

fn git_failed(message: String) -> Error {
    StoreError::Git(message).into()
}

fn check_git() -> Result<()> {
    match git_cmd::version() {
        Some(v) if v >= git_cmd::MIN_VERSION => Ok(()),
        Some(v) => Err(git_failed(format!(
            "git {}.{}.{} is too old for sync: 2.41 or newer is needed (`fetch --porcelain`)",
            v.0, v.1, v.2
        ))),
        None => Err(git_failed("the git program was not found on PATH".into())),
    }
}

/// Refuses to publish state in which the scan finds a credential.
pub fn check_leaks(state: &State) -> Result<()> {
    for (path, bytes) in crate::codec::encode_state(state) {
        let text = String::from_utf8_lossy(&bytes);
        if let Some(leak) = leaks::scan(&text).into_iter().next() {
            return Err(Refusal::new(
                Code::LeakDetected,
                format!("{path} holds what looks like a credential ({}: {})", leak.kind, leak.excerpt),
            )
            .with_hint("remove it with a new writeback or todo update, then sync again; nothing was pushed")
            .into());
        }
    }
    Ok(())
}

fn remote_ref(remote: &str) -> String {
    format!("refs/remotes/{remote}/{BRANCH}")
}

/// Fetches and returns the remote's tip (`None`: the remote has no state).
pub fn fetch(ctx: &Context, remote: &str) -> Result<Option<Oid>> {
    if git_cmd::fetch_branch(&git_dir(ctx), remote, BRANCH).map_err(git_failed)? {
        Ok(ctx.store.try_find_ref(&remote_ref(remote))?)
    } else {
        Ok(None)
    }
}

/// Pushes the local tip `tip` if the remote is still at `expected`.
pub fn push(ctx: &Context, remote: &str, tip: &Oid, expected: Option<&Oid>) -> Result<bool> {
    let state = transaction::state_at(&ctx.store, tip)?;
    check_leaks(&state)?;
    let status = git_cmd::push_with_lease(
        &git_dir(ctx),
        remote,
        BRANCH,
        expected.map(|o| o.0.as_str()),
    )
    .map_err(git_failed)?;
    match status {
        PushStatus::Updated | PushStatus::UpToDate => Ok(true),
        PushStatus::Rejected(why) => {
            tracing::debug!("push to {remote} rejected: {why}");
            Ok(false)
        }
    }
}

/// A merge commit made, and what the merge had to decide.
struct MergeCommit {
    commit: Oid,
    conflicts: Vec<Conflict>,
    lost_claims: Vec<LostClaim>,
}

/// One merge of divergent tips into a two-parent commit on the local branch.
fn merge_commit(
    ctx: &Context,
    remote: &str,
    local: &Oid,
    theirs: &Oid,
) -> Result<Option<MergeCommit>> {
    let dir = git_dir(ctx);
    let base = git_cmd::merge_base(&dir, &local.0, &theirs.0).map_err(git_failed)?;
    let base_state = match &base {
        Some(b) => Some(transaction::state_at(&ctx.store, &Oid(b.clone()))?),
        None => None,
    };
    let ours = transaction::state_at(&ctx.store, local)?;
    let remote_state = transaction::state_at(&ctx.store, theirs)?;
    let merged = merge::merge(base_state.as_ref(), &ours, &remote_state).map_err(|e| {
        Refusal::new(
            Code::StateInvalid,
            format!("cannot merge {} with {remote}: {e}", local.short()),
        )
    })?;
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
    match ctx
        .store
        .commit(Some(local), Some(theirs), &changes, &message, ctx.now)?
    {
        CasResult::Committed(oid) => {
            // Cached like any write, and kept in memory: the push's leak
            // check reads this state next (it used to parse the merge
            // commit's whole tree again).
            let merge::Merged {
                mut state,
                conflicts,
                lost_claims,
            } = merged;
            cache::remember_delta(&ctx.store, &oid, Some(local), &state, &changes);
            state.clean();
            ctx.store.memo_put(oid.clone(), state);
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

/// `sync [--remote R]`.
pub fn sync(ctx: &Context, remote: Option<&str>) -> Result<SyncReport> {
    check_git()?;
    ctx.store.check_not_checked_out()?;
    let remote = remote_name(ctx, remote);
    let mut conflicts = Vec::new();
    let mut lost_claims = Vec::new();
    let mut merged_any = false;
    let dir = git_dir(ctx);
    let mut jitter = transaction::Jitter::new();
    for round in 1..=MAX_ROUNDS {
        let theirs = fetch(ctx, &remote)?;
        let local = ctx.store.tip()?;
        let report =
            |action, tip: Oid, conflicts: Vec<Conflict>, lost_claims: Vec<LostClaim>| SyncReport {
                remote: remote.clone(),
                action,
                remote_tip: tip.clone(),
                tip,
                rounds: round,
                conflicts,
                lost_claims,
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
                if git_cmd::is_ancestor(&dir, &l.0, &r.0).map_err(git_failed)? {
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
                let tip = if git_cmd::is_ancestor(&dir, &r.0, &l.0).map_err(git_failed)? {
                    l
                } else {
                    match merge_commit(ctx, &remote, &l, &r)? {
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
