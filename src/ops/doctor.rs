//! `doctor`: environment and state health, each finding with its fix.

use serde::Serialize;

use crate::session::write::Writer;
use crate::session::Context;
use crate::store::{self, health, transaction, Oid, STATE_REF};
use crate::Result;
use crate::{codec, git_cmd};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Ok,
    Warn,
    Error,
}

#[derive(Debug, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub level: Level,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct DoctorReport {
    pub healthy: bool,
    pub checks: Vec<Check>,
    /// What `--repair` did, one line each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub repaired: Vec<String>,
    /// Writes `--repair` could not recover: the reflog subjects of the
    /// state commits newer than the intact one it went back to.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lost_writes: Vec<String>,
}

fn check(
    name: &'static str,
    level: Level,
    detail: impl Into<String>,
    fix: Option<String>,
) -> Check {
    Check {
        name,
        level,
        detail: detail.into(),
        fix,
    }
}

pub fn doctor(ctx: &Context, fsck: bool, repair: bool) -> Result<DoctorReport> {
    let (mut repaired, mut lost_writes) = (Vec::new(), Vec::new());
    if repair {
        repair_locks(ctx, &mut repaired);
        repair_state(ctx, &mut repaired, &mut lost_writes)?;
    }
    let mut checks = vec![
        check(
            "repository",
            Level::Ok,
            "git repository found, files ref storage",
            None,
        ),
        git_check(),
        worktrees_check(ctx),
    ];
    runtime_checks(ctx, &mut checks);
    lock_checks(ctx, &mut checks);
    checks.push(writable_check(ctx));
    checks.push(state_check(ctx));
    if let Some(c) = answers_check(ctx) {
        checks.push(c);
    }
    checks.push(objects_check(ctx));
    if let Some(c) = leases_check(ctx) {
        checks.push(c);
    }
    notify_checks(ctx, &mut checks);
    checks.push(identity_check(ctx));
    if fsck {
        checks.push(fsck_check(ctx.repo_dir()));
    }
    let healthy = checks.iter().all(|c| c.level != Level::Error);
    Ok(DoctorReport {
        healthy,
        checks,
        repaired,
        lost_writes,
    })
}

/// The git program: found, and new enough for `sync`.
fn git_check() -> Check {
    match git_cmd::version() {
        Some(v) if v >= git_cmd::MIN_VERSION => check(
            "git",
            Level::Ok,
            format!("git {}.{}.{}", v.0, v.1, v.2),
            None,
        ),
        Some(v) => check(
            "git",
            Level::Warn,
            format!(
                "git {}.{}.{} is older than 2.41: `sync` needs `fetch --porcelain`",
                v.0, v.1, v.2
            ),
            Some("install git 2.41 or newer".into()),
        ),
        None => check(
            "git",
            Level::Warn,
            "the git program was not found: local commands work, `sync` will not",
            Some("install git and put it on PATH".into()),
        ),
    }
}

/// Whether loopx-state is checked out in a worktree (a write would move it
/// under a user's feet).
fn worktrees_check(ctx: &Context) -> Check {
    match ctx.store.check_not_checked_out() {
        Ok(()) => check(
            "worktrees",
            Level::Ok,
            "loopx-state is not checked out anywhere",
            None,
        ),
        Err(e) => check("worktrees", Level::Error, e.to_string(), e.hint()),
    }
}

/// Installed runtimes whose agent's shell would have no identity, and the
/// ones their files no longer govern.
fn runtime_checks(ctx: &Context, checks: &mut Vec<Check>) {
    // An installed runtime whose agent's shell would have no identity.
    if ctx.store.workdir().is_some() {
        let all: Vec<_> = crate::model::runtime::Runtime::HOSTS
            .into_iter()
            .map(crate::ops::hooks::Integration::Runtime)
            .collect();
        if let Ok(status) = crate::ops::hooks::status(ctx, &all) {
            for line in status.files {
                for note in line.notes.iter().filter(|n| n.contains("identity")) {
                    checks.push(check(
                        "agent identity",
                        Level::Warn,
                        format!("{}: {note}", line.integration.name()),
                        Some(format!(
                            "git loopx hooks install --{} --agent <id>",
                            line.integration.name()
                        )),
                    ));
                }
            }
        }
    }

    for u in crate::ops::hooks::governance_lost(ctx) {
        checks.push(check(
            "governance",
            Level::Warn,
            format!(
                "{} is not governed: {}: {}",
                u.runtime,
                u.path.display(),
                u.problem
            ),
            Some(u.fix),
        ));
    }
}

/// Ref lock files left: a writer's now, or a killed one's.
fn lock_checks(ctx: &Context, checks: &mut Vec<Check>) {
    let locks = ctx.store.ref_locks();
    if locks.is_empty() {
        checks.push(check("lock", Level::Ok, "no ref lock files left", None));
    }
    for lock in locks {
        let age = lock.age.as_secs();
        let stale = lock.age >= health::STALE_LOCK_AGE;
        checks.push(check(
            "lock",
            if stale { Level::Error } else { Level::Warn },
            format!("{} exists, {age}s old", lock.path.display()),
            Some(if stale {
                "a killed git or git-loopx left it: `git loopx doctor --repair` removes it when no writer is running".into()
            } else {
                "a writer holds it now; run doctor again if it stays".into()
            }),
        ));
    }
}

/// Whether objects and refs can be created.
fn writable_check(ctx: &Context) -> Check {
    let unwritable = ctx.store.unwritable();
    if unwritable.is_empty() {
        check(
            "writable",
            Level::Ok,
            "objects and refs can be written",
            None,
        )
    } else {
        let dirs: Vec<String> = unwritable
            .iter()
            .map(|u| format!("{} ({})", u.dir.display(), u.error))
            .collect();
        check(
            "writable",
            Level::Error,
            format!("writes will fail: cannot create files in {}", dirs.join(", ")),
            Some("make the repository writable for this user (permissions, a read-only mount, `chattr -i`)".into()),
        )
    }
}

/// The state at the tip: readable, and what it holds.
fn state_check(ctx: &Context) -> Check {
    match transaction::load(&ctx.store) {
        Ok((tip, Some(state))) => {
            let todos: usize = state.goals.values().map(|g| g.todos.len()).sum();
            let runs: usize = state.goals.values().map(|g| g.runs.len()).sum();
            check(
                "state",
                Level::Ok,
                format!(
                    "{STATE_REF} at {} is valid: {} goal(s), {todos} todo(s), {runs} run record(s)",
                    tip.as_ref().map_or("?", |c| c.short()),
                    state.goals.len()
                ),
                None,
            )
        }
        Ok((_, None)) => check(
            "state",
            Level::Warn,
            format!("{STATE_REF} does not exist yet"),
            Some(
                crate::ops::missing::hint(&ctx.store.remote_fetch_refspecs())
                    .unwrap_or_else(|| "run `git loopx init --objective \"…\"`".into()),
            ),
        ),
        Err(e) => check("state", Level::Error, e.to_string(), e.hint()),
    }
}

/// This host's notification record, and what it has not delivered yet.
fn notify_checks(ctx: &Context, checks: &mut Vec<Check>) {
    if let Some((detail, fix)) = crate::ops::notify::record_problem(ctx) {
        checks.push(check("notify", Level::Warn, detail, Some(fix)));
    }
    let undelivered = crate::ops::notify::undelivered(ctx);
    if let Some((key, attempts, error)) = undelivered.first() {
        checks.push(check(
            "notify",
            Level::Warn,
            format!(
                "{} notification(s) not delivered yet, retried with backoff; {key} after {attempts} attempt(s): {}",
                undelivered.len(),
                error.as_deref().unwrap_or("not tried yet")
            ),
            Some("check loopx.notify.command / loopx.notify.webhook; `git loopx watch --once` tries again when due".into()),
        ));
    }
}

/// The git identity state commits are made with.
fn identity_check(ctx: &Context) -> Check {
    match ctx.store.config_string("user.name") {
        Some(_) => check(
            "identity",
            Level::Ok,
            "state commits use your git identity",
            None,
        ),
        None => check(
            "identity",
            Level::Warn,
            "user.name is not set: state commits are signed `git-loopx <git-loopx@localhost>`",
            Some("git config user.name \"…\" && git config user.email \"…\"".into()),
        ),
    }
}

/// `--fsck`: git's own check of the repository.
fn fsck_check(repo_dir: &std::path::Path) -> Check {
    match git_cmd::fsck(repo_dir) {
        Ok(Ok(())) => check("fsck", Level::Ok, "git fsck found no problems", None),
        Ok(Err(report)) => check("fsck", Level::Error, report, Some("see `git fsck`".into())),
        Err(e) => check(
            "fsck",
            Level::Warn,
            format!("could not run git fsck: {e}"),
            None,
        ),
    }
}

/// Under `gate_signers`: every answer counts, or the ones that do not
/// (`an answer not made by you was ignored: …`). Nothing without a policy.
fn answers_check(ctx: &Context) -> Option<Check> {
    let (tip, state) = ctx.load().ok()?;
    let keys = crate::ops::signers::effective(ctx, &tip).ok()?;
    if keys.is_empty() {
        return None;
    }
    let ignored = crate::ops::signers::ignored_answers_all(ctx, &tip, &state).ok()?;
    if ignored.is_empty() {
        return Some(check(
            "gate answers",
            Level::Ok,
            format!(
                "gate_signers: {} key(s); every answer to a gate is signed by one",
                keys.len()
            ),
            None,
        ));
    }
    let lines: Vec<String> = ignored
        .iter()
        .map(|a| format!("{} {:?}: {}", a.gate, a.question, a.sentence()))
        .collect();
    Some(check(
        "gate answers",
        Level::Warn,
        lines.join("; "),
        Some(format!(
            "the gate waits for you: `git loopx gate resolve {} --approve|--reject`, signed; `git loopx log` shows who wrote the commit",
            ignored[0].gate
        )),
    ))
}

/// The tip's objects, read from git rather than the parsed-state cache:
/// the commit, its trees and blobs exist and decode, and so does every
/// object of its history (what a push would send).
/// Lease refs of ended leases the remote still has past their grace, as
/// last fetched: nothing when there are none (or no remote to ask about).
fn leases_check(ctx: &Context) -> Option<Check> {
    use crate::replicate;
    if !replicate::shared::enabled(ctx) {
        return None;
    }
    let remote = replicate::remote_name(ctx, None).ok()?;
    match replicate::shared::lingering_leases(ctx, &remote) {
        Ok(0) => None,
        Ok(n) => Some(check(
            "leases",
            Level::Warn,
            format!(
                "{n} lease ref{} of ended leases linger on {remote} (as last fetched): each costs every claim and sync a little",
                if n == 1 { "" } else { "s" }
            ),
            Some(format!("git loopx sync --prune-leases --remote {remote}")),
        )),
        Err(e) => Some(check("leases", Level::Warn, e.to_string(), None)),
    }
}

fn objects_check(ctx: &Context) -> Check {
    let tip = match ctx.store.tip() {
        Ok(Some(tip)) => tip,
        Ok(None) => return check("objects", Level::Ok, "no state commit to check", None),
        Err(e) => return check("objects", Level::Error, e.to_string(), e.hint()),
    };
    // What a bare `git prune` took from recent writes goes back first
    // (`Repository::restore_pruned`): only what is lost for good is reported.
    ctx.store.restore_pruned();
    match intact(ctx, &tip) {
        Ok(()) => check(
            "objects",
            Level::Ok,
            format!(
                "every object of {STATE_REF} at {} is present and decodes",
                tip.short()
            ),
            None,
        ),
        Err((detail, hint)) => check("objects", Level::Error, detail, hint),
    }
}

/// Whether `commit`'s objects and history are all there and its state
/// decodes; else what is wrong, and the hint.
fn intact(ctx: &Context, commit: &Oid) -> std::result::Result<(), (String, Option<String>)> {
    let fail = |e: crate::Error| (e.to_string(), e.hint());
    let snapshot = ctx.store.read(commit).map_err(|e| fail(e.into()))?;
    let files = snapshot
        .files
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()));
    codec::decode_state(files).map_err(|source| {
        fail(
            store::Error::Corrupt {
                commit: commit.clone(),
                source,
            }
            .into(),
        )
    })?;
    let dir = ctx.store.common_dir();
    match git_cmd::objects_complete(dir, &commit.0) {
        Ok(Ok(())) | Err(_) => Ok(()),
        Ok(Err(report)) => Err((
            format!(
                "the history of {STATE_REF} at {} is incomplete: {report}",
                commit.short()
            ),
            Some(REPAIR_HINT.into()),
        )),
    }
}

const REPAIR_HINT: &str =
    "`git loopx doctor --repair` moves loopx-state back to its newest intact commit";

/// Removes ref locks left by killed writers, unless a live writer holds
/// the writer lock.
fn repair_locks(ctx: &Context, repaired: &mut Vec<String>) {
    match ctx.store.remove_stale_locks() {
        Ok(Some(removed)) => repaired.extend(
            removed
                .into_iter()
                .map(|l| format!("removed {} ({}s old)", l.path.display(), l.age.as_secs())),
        ),
        Ok(None) => repaired.push(
            "left the ref locks alone: a running git-loopx writer holds .git/loopx/writer.lock"
                .into(),
        ),
        Err(e) => repaired.push(format!("could not remove a stale lock: {e}")),
    }
}

/// When every object of the tip is there but a reader refuses a file (an
/// edit made with git's plumbing, say): a new commit on top of the tip
/// with the tree of its newest first-parent ancestor that reads, so the
/// refused change stays in the first-parent history for whoever made it.
fn repair_refused_file(ctx: &Context, tip: &Oid, repaired: &mut Vec<String>) -> Result<()> {
    let why = match intact(ctx, tip) {
        Err((detail, _)) => detail,
        Ok(()) => return Ok(()),
    };
    let log = ctx.store.first_parent_log(tip, 256)?;
    let Some(at) = log.iter().position(|c| intact(ctx, &c.id).is_ok()) else {
        repaired.push(format!(
            "no readable state commit among the 256 before {}: nothing moved",
            tip.short()
        ));
        return Ok(());
    };
    let good = log[at].id.clone();
    if let Err(e) = ctx.person_moves(crate::session::PersonRef::Rollback) {
        repaired.push(format!(
            "left {STATE_REF} at {} (a file a reader refuses): {e}; the person runs `git loopx doctor --repair`",
            tip.short()
        ));
        return Ok(());
    }
    let changes: Vec<store::FileChange> = ctx
        .store
        .changed_files(tip, &good)?
        .into_iter()
        .map(|(path, bytes)| match bytes {
            Some(bytes) => store::FileChange::Upsert { path, bytes },
            None => store::FileChange::Remove { path },
        })
        .collect();
    let undone: Vec<String> = log[..at]
        .iter()
        .map(|c| {
            let subject = c.message.lines().next().unwrap_or("").trim();
            let subject = if subject.is_empty() {
                "(no subject)"
            } else {
                subject
            };
            let secrets: Vec<String> = crate::model::leaks::scan(subject)
                .into_iter()
                .map(|l| l.secret)
                .collect();
            format!(
                "{} {}",
                c.id.short(),
                crate::model::leaks::redact(subject, &secrets)
            )
        })
        .collect();
    let mut message = store::Message::new(
        "repair",
        format!("repair: back to the state of {}, {} refused", good.short(), tip.short()),
    )
    .line(format!("{STATE_REF} was at {tip}, which a reader refuses: {why}."))
    .line(format!(
        "This commit restores the tree of {good} on top of it; the refused change stays in history (`git show {}`).",
        tip.short()
    ))
    .line("Undone:");
    for line in &undone {
        message = message.line(format!("- {line}"));
    }
    let writer = Writer::new(ctx);
    let draft = writer.draft_merge(vec![tip.clone()], changes, &message, None)?;
    let restored = draft.restore(&ctx.store, tip, ctx.now)?;
    if let Some(new) = &restored {
        writer.landed(new);
    }
    match restored {
        Some(new) => repaired.push(format!(
            "moved {STATE_REF} from {} (a file a reader refuses) to {}, a new commit on top of it with the tree of {}; undone: {}",
            tip.short(),
            new.short(),
            good.short(),
            undone.join("; ")
        )),
        None => repaired.push(format!(
            "{STATE_REF} moved meanwhile: nothing done, run doctor again"
        )),
    }
    Ok(())
}

/// When the tip's objects are gone: a new commit on top of the newest
/// intact state commit of the reflog, with its tree.
fn repair_state(
    ctx: &Context,
    repaired: &mut Vec<String>,
    lost_writes: &mut Vec<String>,
) -> Result<()> {
    let Some(tip) = ctx.store.tip()? else {
        return Ok(());
    };
    if intact(ctx, &tip).is_ok() {
        return Ok(());
    }
    if ctx.store.missing_object(&tip).is_none() {
        return repair_refused_file(ctx, &tip, repaired);
    }
    let reflog = ctx.store.state_reflog();
    let Some(at) = reflog.iter().rposition(|m| intact(ctx, &m.new).is_ok()) else {
        repaired.push(format!(
            "no intact state commit in the reflog of {STATE_REF}: nothing moved"
        ));
        return Ok(());
    };
    let good = reflog[at].new.clone();
    if let Err(e) = ctx.person_moves(crate::session::PersonRef::Rollback) {
        repaired.push(format!(
            "left {STATE_REF} at {} (objects missing): {e}; the person runs `git loopx doctor --repair`",
            tip.short()
        ));
        return Ok(());
    }
    let lost: Vec<String> = reflog[at + 1..]
        .iter()
        .map(|m| {
            // Listed in the repair's message, which is scanned like any
            // write: a credential a lost write let through is not repeated.
            let subject = m.message.strip_prefix("loopx: ").unwrap_or(&m.message);
            let subject = match subject.trim() {
                "" => "(a move of the ref with no message)",
                s => s,
            };
            let secrets: Vec<String> = crate::model::leaks::scan(subject)
                .into_iter()
                .map(|l| l.secret)
                .collect();
            crate::model::leaks::redact(subject, &secrets)
        })
        .collect();
    let mut message = store::Message::new(
        "repair",
        format!("repair: back to {}, {} lost objects", good.short(), tip.short()),
    )
    .line(format!(
        "{STATE_REF} was at {tip}, whose objects are missing (a `git gc --prune=now` beside a writer?)."
    ))
    .line(format!("This commit restores the tree of {good}."));
    if !lost.is_empty() {
        message = message.line("Writes not recovered:");
        for subject in &lost {
            message = message.line(format!("- {subject}"));
        }
    }
    let writer = Writer::new(ctx);
    let draft = writer.draft_merge(vec![good.clone()], Vec::new(), &message, None)?;
    let restored = draft.restore(&ctx.store, &tip, ctx.now)?;
    if let Some(new) = &restored {
        writer.landed(new);
    }
    match restored {
        Some(new) => {
            repaired.push(format!(
                "moved {STATE_REF} from {} (objects missing) to {}, a new commit with the tree of {}",
                tip.short(),
                new.short(),
                good.short()
            ));
            *lost_writes = lost;
            // The repair commit's message keeps the lost subjects; reflog
            // entries naming missing commits would only fail `git fsck`.
            let dir = ctx.repo_dir();
            match crate::git_cmd::drop_broken_reflog_entries(dir, STATE_REF) {
                Ok(Ok(())) => repaired.push(format!(
                    "dropped the entries of {STATE_REF}'s reflog that named missing commits"
                )),
                Ok(Err(e)) => repaired.push(format!("could not clean {STATE_REF}'s reflog: {e}")),
                Err(e) => repaired.push(format!("could not run git reflog expire: {e}")),
            }
        }
        None => repaired.push(format!(
            "{STATE_REF} moved meanwhile: nothing done, run doctor again"
        )),
    }
    Ok(())
}
