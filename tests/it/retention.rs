//! Retention: runs older than the horizon (the quota window, 24 h by
//! default) leave the tip's tree in a write's commit once the oldest is an
//! eighth of the horizon past it; the commit's parent keeps them, and
//! `history --since` reads them back, also across archives two clones made
//! at once; `review` and `pr` find runs archived since the start of what
//! they look at.

use std::path::Path;

use crate::env::TestEnv;

fn writeback(env: &TestEnv, dir: &Path, now: &str, summary: &str) -> serde_json::Value {
    env.loopx_at(
        dir,
        now,
        &[
            "--json",
            "--agent",
            "a",
            "writeback",
            "--outcome",
            "outcome_progress",
            "--summary",
            summary,
        ],
    )
    .success()
    .json()
}

/// The run files in the tip's tree.
fn run_files(env: &TestEnv, dir: &Path) -> Vec<String> {
    env.git(dir, &["ls-tree", "-r", "--name-only", "loopx-state"])
        .lines()
        .filter(|p| p.contains("/runs/"))
        .map(str::to_owned)
        .collect()
}

/// The summaries `history` lists (newest first), with `args` added.
fn history(env: &TestEnv, dir: &Path, now: &str, args: &[&str]) -> Vec<String> {
    let mut all = vec!["--json", "history"];
    all.extend_from_slice(args);
    let out = env.loopx_at(dir, now, &all).success().json();
    out["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["summary"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn days_past_the_horizon_leave_the_tree_in_the_next_write_and_history_finds_them() {
    let env = TestEnv::new();
    let dir = env.state_repo("r");
    for day in ["03", "04", "05"] {
        writeback(&env, &dir, &format!("2026-12-{day}T10:00:00Z"), day);
    }
    // On the 5th at 10:00 with a 24 h horizon, the 3rd's run was 24 h past
    // it (more than an eighth): the 5th's own writeback archived it.
    let files = run_files(&env, &dir);
    assert!(
        files.iter().all(|f| !f.contains("/2026-12-03/")),
        "{files:?}"
    );
    assert!(
        files.iter().any(|f| f.contains("/2026-12-04/")),
        "{files:?}"
    );
    let message = env.git(&dir, &["log", "-1", "--format=%B", "loopx-state"]);
    assert!(
        message.contains("Loopx-Archived: main through 2026-12-04T10:00:00Z: 1 run(s)"),
        "{message}"
    );
    // The archive names the parent, which still holds the day.
    let parent = env.git(&dir, &["rev-parse", "loopx-state~1"]);
    let goal = env.state_file(&dir, "goals/main/goal.yaml");
    assert!(goal.contains(parent.trim()), "{goal}");
    let day = env.git(&dir, &["ls-tree", "-r", "--name-only", "loopx-state~1"]);
    assert!(day.contains("/2026-12-03/"), "{day}");

    let now = "2026-12-05T11:00:00Z";
    assert_eq!(history(&env, &dir, now, &[]), ["05", "04"]);
    assert_eq!(
        history(&env, &dir, now, &["--since", "2026-12-03"]),
        ["05", "04", "03"]
    );
    assert_eq!(
        history(
            &env,
            &dir,
            now,
            &["--since", "2026-12-03", "--until", "2026-12-03"]
        ),
        ["03"]
    );
    assert_eq!(history(&env, &dir, now, &["--since", "30h"]), ["05", "04"]);

    // Two days on, a further archive: the chain leads back to the first.
    let w = writeback(&env, &dir, "2026-12-07T10:00:00Z", "07");
    assert_eq!(w["run"]["seq"], 4, "numbering goes on after archived runs");
    let files = run_files(&env, &dir);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(
        history(
            &env,
            &dir,
            "2026-12-07T11:00:00Z",
            &["--since", "2026-12-02"]
        ),
        ["07", "05", "04", "03"]
    );
    // The reviewer's diff tells the archive, not each run.
    let diff = env
        .loopx(&dir, &["diff", "loopx-state~1..loopx-state"])
        .success()
        .stdout;
    assert!(
        diff.contains("2 run(s) through 2026-12-06T10:00:00Z archived"),
        "{diff}"
    );
    assert!(!diff.contains("removed"), "{diff}");
}

#[test]
fn the_horizon_is_configurable_never_shorter_than_the_quota_window_and_can_be_off() {
    let env = TestEnv::new();
    let dir = env.state_repo("r");
    env.git(&dir, &["config", "loopx.runRetention", "3d"]);
    writeback(&env, &dir, "2026-12-03T10:00:00Z", "01");
    writeback(&env, &dir, "2026-12-06T10:00:00Z", "04");
    assert_eq!(run_files(&env, &dir).len(), 2, "three days kept");
    writeback(&env, &dir, "2026-12-07T10:00:00Z", "07");
    assert_eq!(run_files(&env, &dir).len(), 2, "the 3rd's left");
    // Shorter than the quota window (24 h): the window wins (the 6th's
    // run is 2 h past it, not the 3 h of an eighth).
    env.git(&dir, &["config", "loopx.runRetention", "1h"]);
    writeback(&env, &dir, "2026-12-07T12:00:00Z", "05b");
    assert_eq!(run_files(&env, &dir).len(), 3);
    env.git(&dir, &["config", "loopx.runRetention", "never"]);
    writeback(&env, &dir, "2026-12-22T12:00:00Z", "20");
    assert_eq!(run_files(&env, &dir).len(), 4);
    env.git(&dir, &["config", "loopx.runRetention", "soon"]);
    let tip = env.tip(&dir);
    let out = env
        .loopx_at(
            &dir,
            "2026-12-22T13:00:00Z",
            &[
                "--agent",
                "a",
                "writeback",
                "--outcome",
                "outcome_progress",
                "--summary",
                "x",
            ],
        )
        .failure(2);
    assert!(out.stderr.contains("loopx.runRetention"), "{}", out.stderr);
    assert_eq!(env.tip(&dir), tip, "nothing written");
}

#[test]
fn archives_two_clones_make_at_once_merge_and_history_reads_both() {
    let env = TestEnv::new();
    let (_remote, dirs) = env.shared_state(&["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    // Each clone writes back on the 1st, unseen by the other.
    writeback(&env, a, "2026-12-03T09:00:00Z", "a01");
    writeback(&env, b, "2026-12-03T10:00:00Z", "b01");
    // A day on, each archives its own view of the 1st.
    writeback(&env, a, "2026-12-05T09:00:00Z", "a03");
    writeback(&env, b, "2026-12-05T10:00:00Z", "b03");
    for dir in [a, b, a] {
        env.loopx_at(dir, "2026-12-05T11:00:00Z", &["sync"])
            .success();
    }
    assert_eq!(env.tip(a), env.tip(b), "converged");
    let goal = env.state_file(a, "goals/main/goal.yaml");
    assert_eq!(goal.matches("through: '2026-12-04T").count(), 2, "{goal}");
    let files = run_files(&env, a);
    assert!(
        files.iter().all(|f| !f.contains("/2026-12-03/")),
        "{files:?}"
    );
    let mut found = history(&env, a, "2026-12-05T12:00:00Z", &["--since", "2026-12-03"]);
    found.sort();
    assert_eq!(found, ["a01", "a03", "b01", "b03"]);
}

/// A review of a range in which runs were both written and archived still
/// lists them as delivered, and a pull request still finds the todo behind
/// a commit through an archived writeback's artifact.
#[test]
fn review_and_pr_find_runs_archived_since() {
    let env = TestEnv::new();
    let dir = env.state_repo("r");
    let todo = env.add_todo(&dir, "Write the lexer");
    env.git(&dir, &["checkout", "-q", "-b", "feature"]);
    // Committed on the 4th where it was made, the 3rd in UTC, when the
    // writeback that names it was filed.
    std::fs::write(dir.join("lexer.txt"), "lexer\n").unwrap();
    env.git(&dir, &["add", "lexer.txt"]);
    let committed = env
        .git_cmd(&dir)
        .args(["commit", "-q", "-m", "Lexer"])
        .env("GIT_COMMITTER_DATE", "2026-12-04T01:00:00+05:00")
        .status()
        .unwrap();
    assert!(committed.success());
    let commit = env.git(&dir, &["rev-parse", "HEAD"]);
    let start = env.tip(&dir);
    let at = "2026-12-03T21:00:00Z";
    let args = [
        "--agent",
        "a",
        "writeback",
        "--todo",
        &todo,
        "--outcome",
        "outcome_progress",
        "--summary",
        "03",
        "--artifact",
        &commit,
    ];
    env.loopx_at(&dir, at, &args).success();
    for day in ["04", "05"] {
        writeback(&env, &dir, &format!("2026-12-{day}T10:00:00Z"), day);
    }
    assert!(run_files(&env, &dir)
        .iter()
        .all(|f| !f.contains("/2026-12-03/")));

    let review = env
        .loopx(&dir, &["--json", "review", "--since", &start])
        .success()
        .json();
    let delivered: Vec<&str> = review["delivered"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["summary"].as_str().unwrap())
        .collect();
    assert_eq!(delivered, ["03", "04", "05"], "{review}");

    let pr = env
        .loopx(&dir, &["--json", "pr", "main..feature"])
        .success()
        .json();
    assert_eq!(pr["todos"][0]["todo"]["id"], todo.as_str(), "{pr}");
    assert_eq!(pr["todos"][0]["writebacks"][0]["summary"], "03", "{pr}");
}

/// Issue 46, item 12: `log` and `history` say when `--max-count` (20 and
/// 50 by default) left some out, and how to see them.
#[test]
fn log_and_history_say_what_their_limit_left_out() {
    let env = TestEnv::new();
    let dir = env.state_repo("r");
    for i in 0..55 {
        writeback(&env, &dir, "2026-12-05T10:00:00Z", &format!("w{i}"));
    }
    let now = "2026-12-05T11:00:00Z";
    let log = env.loopx_at(&dir, now, &["log"]).success().stdout;
    assert_eq!(
        log.lines().filter(|l| !l.starts_with('…')).count(),
        20,
        "{log}"
    );
    assert!(
        log.contains("… older ones left out; `-n 40` shows more"),
        "{log}"
    );
    let json = env.loopx_at(&dir, now, &["--json", "log"]).success().json();
    assert_eq!(json["more"], true);
    let all = env
        .loopx_at(&dir, now, &["log", "-n", "100"])
        .success()
        .stdout;
    assert!(!all.contains("left out"), "{all}");

    let history = env.loopx_at(&dir, now, &["history"]).success().stdout;
    assert!(
        history.contains("… and 5 more; `-n 55` shows them"),
        "{history}"
    );
    let json = env
        .loopx_at(&dir, now, &["--json", "history"])
        .success()
        .json();
    assert_eq!(json["more"], 5);
    let all = env
        .loopx_at(&dir, now, &["history", "-n", "55"])
        .success()
        .stdout;
    assert!(!all.contains("more;"), "{all}");
}
