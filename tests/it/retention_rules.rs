//! Retention (`model::retention`) on states built in memory: which runs leave
//! the tip, and when.

use loopx::model::retention::*;
use loopx::model::*;
use loopx::model::{Goal, RunKind};

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
        agents: Default::default(),
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
