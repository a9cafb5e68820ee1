//! Retention: a goal's runs older than its horizon leave the tip's tree, so
//! what a command reads is what is live, not everything that ever happened.
//!
//! Runs leave in batches: once the oldest run is an eighth of the horizon
//! past it, every run older than the horizon goes, so the tip holds at most
//! a horizon and an eighth of runs and a goal archives about eight times a
//! horizon. They stay in history: the archiving commit's parent holds them,
//! and the goal records it ([`Archived`]). The goal keeps only its latest
//! archives; the goal file of an archive's commit holds the ones before it,
//! so a reader asked about an old day follows that chain back ([`covers`])
//! and reads the days it wants from each.
//!
//! The horizon is never shorter than the goal's quota window: every rule
//! that reads runs looks back no further than that (the quota's rolling
//! window; a turn key's receipt within a turn). Runs leave in order: a
//! goal's archives never go back to an earlier time than its latest one, so
//! every archive along a chain holds runs up to its own `through`.

use std::collections::BTreeMap;

use crate::model::{Archived, GoalState, LastSeen, Run, RunKind, Timestamp};

/// How far past the horizon the oldest run gets before a batch leaves, as
/// a fraction of the horizon.
const SLACK_DIVISOR: i64 = 8;

/// The horizon for `gs` in seconds: `configured` (`None`: the default,
/// the quota window), never shorter than the quota window.
pub fn horizon(gs: &GoalState, configured: Option<i64>) -> i64 {
    let window = i64::from(gs.goal.quota.window_hours) * 3600;
    configured.map_or(window, |c| c.max(window))
}

/// What one archive took out of a goal.
pub struct Archive {
    pub entry: Archived,
    /// The runs that left, for their files to be removed.
    pub removed: Vec<Run>,
}

/// Moves out of `gs` every run dated more than `horizon` seconds before
/// `now`, once the oldest is an eighth of the horizon older still, and
/// records them as archived in `base` (the commit the change is made on,
/// which still holds them). `None` when no batch is due, or when the goal
/// already archived up to a later time than this horizon allows (the
/// horizon grew: runs leave in order). A run written in this same change
/// stays (an import of old records): it leaves with the next archive, like
/// a run a peer wrote late into an archived day.
pub fn archive(gs: &mut GoalState, now: Timestamp, horizon: i64, base: &str) -> Option<Archive> {
    let through = now.plus_seconds(-horizon);
    if gs.goal.archive.iter().any(|a| a.through > through) {
        return None;
    }
    let due = through.plus_seconds(-horizon / SLACK_DIVISOR);
    let mut oldest = None;
    let leaving: Vec<String> = gs
        .runs
        .all_facts()
        .filter(|r| r.at < through && !gs.runs.is_dirty(r.id))
        .inspect(|r| oldest = oldest.min(Some(r.at)).or(Some(r.at)))
        .map(|r| r.id.to_owned())
        .collect();
    if oldest.is_none_or(|o| o >= due) {
        return None;
    }
    let removed: Vec<Run> = leaving.iter().filter_map(|id| gs.runs.remove(id)).collect();
    let last_seq = removed
        .iter()
        .filter_map(|r| r.seq)
        .chain(gs.goal.archive.iter().map(|a| a.last_seq))
        .max()
        .unwrap_or(0);
    let mut agents = last_seen(&gs.goal.archive);
    for run in &removed {
        let Some(agent) = &run.agent else { continue };
        let seen = agents.entry(agent.clone()).or_default();
        match run.kind {
            RunKind::Turn => seen.turn = seen.turn.max(Some(run.at)),
            RunKind::Writeback if Some(run.at) > seen.writeback => {
                seen.writeback = Some(run.at);
                seen.run = Some(run.id.clone());
                seen.todo = run.todo.clone();
            }
            _ => {}
        }
    }
    let entry = Archived {
        through,
        runs: removed.len() as u64,
        last_seq,
        commit: base.to_owned(),
        agents,
    };
    gs.goal.archive = vec![entry.clone()];
    gs.goal.rev = gs.goal.rev.saturating_add(1);
    gs.goal.updated_at = now;
    Some(Archive { entry, removed })
}

/// Whether an archive may hold runs of days from `since` (`yyyy-mm-dd`)
/// on: its runs are dated before `through`, and so are those of every
/// archive before it.
pub fn covers(entry: &Archived, since: &str) -> bool {
    entry.through.day().as_str() >= since
}

/// Each agent's latest turn and writeback in the runs `archives` (a goal's
/// latest; two after clones archived at once) took out of the tip.
pub fn last_seen(archives: &[Archived]) -> BTreeMap<String, LastSeen> {
    let mut out: BTreeMap<String, LastSeen> = BTreeMap::new();
    for a in archives {
        for (agent, seen) in &a.agents {
            out.entry(agent.clone()).or_default().merge(seen);
        }
    }
    out
}
