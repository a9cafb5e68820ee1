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

use crate::model::{Archived, GoalState, Run, Timestamp};

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
    let entry = Archived {
        through,
        runs: removed.len() as u64,
        last_seq,
        commit: base.to_owned(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Goal, RunKind};

    const DAY: i64 = 86_400;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).unwrap()
    }

    fn run(id: &str, when: &str, seq: u64) -> Run {
        let mut run: Run = serde_json::from_value(serde_json::json!({
            "id": id, "kind": "writeback", "goal": "g", "at": when,
        }))
        .unwrap();
        run.seq = Some(seq);
        run
    }

    fn goal(runs: &[Run]) -> GoalState {
        let mut gs = GoalState::new(Goal::new("g", "o", at("2026-01-01T00:00:00Z")));
        for r in runs {
            gs.runs.insert(r.id.clone(), r.clone());
        }
        gs.runs.clean(); // as loaded
        gs
    }

    #[test]
    fn runs_past_the_horizon_leave_once_the_oldest_is_an_eighth_past_it() {
        let mut gs = goal(&[
            run("run_000000000001", "2026-01-01T10:00:00Z", 1),
            run("run_000000000002", "2026-01-02T23:59:59Z", 2),
            run("run_000000000003", "2026-01-03T06:00:00Z", 3),
        ]);
        // The oldest is 24 h past a day's horizon at 01-03T10:00, but not
        // yet 3 h (an eighth) past it at 01-02T12:00.
        assert!(archive(&mut gs, at("2026-01-02T12:00:00Z"), DAY, "c0ffee").is_none());
        // At 01-04T06:00 everything before 01-03T06:00 leaves; that run stays.
        let a = archive(&mut gs, at("2026-01-04T06:00:00Z"), DAY, "c0ffee").unwrap();
        assert_eq!(a.entry.through, at("2026-01-03T06:00:00Z"));
        assert_eq!((a.entry.runs, a.entry.last_seq), (2, 2));
        assert_eq!(gs.runs.keys().collect::<Vec<_>>(), ["run_000000000003"]);
        assert_eq!(gs.goal.archive, vec![a.entry.clone()]);
        // Numbering goes on after what left.
        gs.runs.remove("run_000000000003");
        assert_eq!(gs.next_run_seq(), 3);
        assert!(archive(&mut gs, at("2026-01-04T06:00:00Z"), DAY, "c0ffee").is_none());
        assert_eq!(a.removed[0].kind, RunKind::Writeback);
    }

    #[test]
    fn a_run_written_in_the_same_change_stays() {
        let mut gs = goal(&[]);
        let old = run("run_000000000001", "2026-01-01T10:00:00Z", 1);
        gs.runs.insert(old.id.clone(), old);
        assert!(archive(&mut gs, at("2026-01-04T06:00:00Z"), DAY, "c0ffee").is_none());
        assert_eq!(gs.runs.len(), 1);
    }

    #[test]
    fn runs_never_leave_out_of_order() {
        let mut gs = goal(&[run("run_000000000001", "2026-01-01T10:00:00Z", 1)]);
        gs.goal.archive = vec![Archived {
            through: at("2026-01-05T00:00:00Z"),
            runs: 1,
            last_seq: 0,
            commit: "c0ffee".into(),
        }];
        // A horizon that grew (a week now) would archive through 01-02 only.
        assert!(archive(&mut gs, at("2026-01-10T00:00:00Z"), 7 * DAY, "beef").is_none());
        assert_eq!(gs.runs.len(), 1);
    }

    #[test]
    fn the_horizon_is_never_shorter_than_the_quota_window() {
        let mut gs = goal(&[]);
        gs.goal.quota.window_hours = 72;
        assert_eq!(horizon(&gs, None), 3 * DAY);
        assert_eq!(horizon(&gs, Some(DAY)), 3 * DAY);
        assert_eq!(horizon(&gs, Some(10 * DAY)), 10 * DAY);
    }
}
