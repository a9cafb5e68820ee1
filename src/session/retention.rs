//! Retention as the commands see it (the rule is
//! [`crate::model::retention`]): a write archives the runs that fell past
//! the horizon, in its own commit, when a batch is due, and `history
//! --since` follows the archives back to read old days.
//!
//! The horizon is `git config loopx.runRetention` (a duration such as `7d`,
//! or `never`); unset, it is each goal's quota window. It is never shorter
//! than the quota window.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::retention::{self, covers};
use crate::model::{Goal, Refusal, Run, State};
use crate::session::Context;
use crate::store::{self, Oid};
use crate::{codec, Result};

pub const CONFIG: &str = "loopx.runRetention";

/// How long runs stay in the tip's tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// Each goal's quota window.
    Default,
    /// At least this many seconds (and the quota window).
    Seconds(i64),
    /// Runs never leave.
    Never,
}

/// The setting from git config; a value that is not a duration is refused.
pub fn setting(ctx: &Context) -> Result<Setting> {
    let Some(text) = ctx.store.config_string(CONFIG) else {
        return Ok(Setting::Default);
    };
    if matches!(text.trim(), "never" | "off") {
        return Ok(Setting::Never);
    }
    crate::model::parse_duration(&text)
        .filter(|s| *s > 0)
        .map(Setting::Seconds)
        .ok_or_else(|| {
            Refusal::invalid_input(format!(
                "git config {CONFIG} is `{text}`, not a duration like 7d, nor `never`"
            ))
            .into()
        })
}

/// Archives, in every goal of `state`, the runs past the horizon (see
/// [`retention::archive`]): their files join `write`'s removals and the
/// commit message says what left.
pub fn archive_due<R>(
    ctx: &Context,
    setting: Setting,
    state: &mut State,
    base: &Oid,
    write: &mut store::Write<R>,
) {
    let configured = match setting {
        Setting::Never => return,
        Setting::Default => None,
        Setting::Seconds(s) => Some(s),
    };
    for (gid, gs) in state.goals.iter_mut() {
        let horizon = retention::horizon(gs, configured);
        let Some(archive) = retention::archive(gs, ctx.now, horizon, &base.0) else {
            continue;
        };
        write
            .removed
            .extend(archive.removed.iter().map(codec::run_path));
        write.message = write.message.take().map(|m| {
            m.trailer(
                "Loopx-Archived",
                format!(
                    "{gid} through {}: {} run(s)",
                    archive.entry.through, archive.entry.runs
                ),
            )
        });
    }
}

/// The archived runs of `goal` on the days from `since` to `until`
/// (`yyyy-mm-dd`, inclusive), read from the commits its archives name,
/// following each back to the archives before it. Each run once.
pub fn archived_runs(
    ctx: &Context,
    goal: &Goal,
    since: &str,
    until: Option<&str>,
) -> Result<Vec<Run>> {
    let runs_dir = format!("goals/{}/runs", goal.id);
    let goal_file = codec::goal_path(&goal.id);
    let mut queue: Vec<_> = goal.archive.clone();
    let mut seen = BTreeSet::new();
    let mut found: BTreeMap<String, Run> = BTreeMap::new();
    while let Some(entry) = queue.pop() {
        if !covers(&entry, since) || !seen.insert(entry.commit.clone()) {
            continue;
        }
        let commit = Oid(entry.commit.clone());
        let through = entry.through.day();
        let keep =
            |day: &str| day >= since && day <= through.as_str() && until.is_none_or(|u| day <= u);
        for (path, bytes) in ctx.store.read_dir(&commit, &runs_dir, &keep)? {
            let run: Run =
                codec::decode(&path, &bytes).map_err(|source| store::Error::Corrupt {
                    commit: commit.clone(),
                    source,
                })?;
            found.entry(run.id.clone()).or_insert(run);
        }
        if let Some(bytes) = ctx.store.read_file(&commit, &goal_file)? {
            let before: Goal =
                codec::decode(&goal_file, &bytes).map_err(|source| store::Error::Corrupt {
                    commit: commit.clone(),
                    source,
                })?;
            queue.extend(before.archive);
        }
    }
    Ok(found.into_values().collect())
}

/// The runs of `goal` (as it is at the tip, holding `live`) that archives
/// made after `old` (the goal as it was) took out of the tip: read from the
/// commit each such archive names, following the chain back to the
/// archives `old` already had. Runs `old` held are left out, so what
/// comes back was written, and archived, since.
pub fn archived_since(
    ctx: &Context,
    goal: &Goal,
    live: &BTreeSet<&str>,
    old: Option<&crate::model::GoalState>,
) -> Result<Vec<Run>> {
    let known: BTreeSet<&str> = old
        .map(|g| g.goal.archive.iter().map(|a| a.commit.as_str()).collect())
        .unwrap_or_default();
    let mut queue: Vec<String> = goal.archive.iter().map(|a| a.commit.clone()).collect();
    let mut seen = BTreeSet::new();
    let mut found: BTreeMap<String, Run> = BTreeMap::new();
    while let Some(commit) = queue.pop() {
        if known.contains(commit.as_str()) || !seen.insert(commit.clone()) {
            continue;
        }
        let state = crate::store::transaction::state_at(&ctx.store, &Oid(commit))?;
        let Some(gs) = state.goals.get(&goal.id) else {
            continue;
        };
        for (id, run) in gs.runs.iter() {
            let held = old.is_some_and(|o| o.runs.contains_key(id));
            if !live.contains(id) && !held {
                found.entry(id.to_owned()).or_insert_with(|| run.clone());
            }
        }
        queue.extend(gs.goal.archive.iter().map(|a| a.commit.clone()));
    }
    let mut runs: Vec<Run> = found.into_values().collect();
    runs.sort_by(|a, b| (a.at, &a.id).cmp(&(b.at, &b.id)));
    Ok(runs)
}

/// Every run of `gs` (a goal as the tip holds it) dated after `since`
/// (`None`: every run there ever was): the tip's, and the archived ones of
/// those days read along the chain of archives, each once, oldest first. A
/// reader asking about a stretch pays for the days it asks about.
pub fn runs_since(
    ctx: &Context,
    gs: &crate::model::GoalState,
    since: Option<crate::model::Timestamp>,
) -> Result<Vec<Run>> {
    let day = since.map_or_else(|| "0000-00-00".to_owned(), |t| t.day());
    let mut by: BTreeMap<String, Run> = archived_runs(ctx, &gs.goal, &day, None)?
        .into_iter()
        .map(|r| (r.id.clone(), r))
        .collect();
    for (id, run) in gs.runs.iter() {
        by.insert(id.to_owned(), run.clone());
    }
    let mut runs: Vec<Run> = by
        .into_values()
        .filter(|r| since.is_none_or(|s| r.at > s))
        .collect();
    runs.sort_by(|a, b| (a.at, &a.id).cmp(&(b.at, &b.id)));
    Ok(runs)
}
