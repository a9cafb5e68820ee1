//! Back after a week (issue 46, "Done when" 1): seven days of work over
//! three goals with the default horizon (24 h), so every day but the last
//! has left the tip's tree; `report`, `status`, the dashboard and the first
//! `review` are checked against figures worked out by hand below.
//!
//! Each day d (December 1–7), in each goal g: the person adds a todo at
//! 09:00; g's agent takes a turn (`should-run --turn`), claims it, writes
//! back at 10:00 (for the turn) and 11:00, spends d slots (main), 1 (docs) or 2 (ops) at
//! 11:30 and marks it done at 12:00. On December 2 a second agent,
//! `agent-old`, does one turn and one writeback on main and is not seen
//! again. On December 4 at 20:00 ops' allowance drops from 1,440 to 100
//! slots a day: each day's window counts the allowance it ended under, so
//! December 4 and after allow 100. The clock then reads December 8, 00:00.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::env::{Run, TestEnv};
use crate::report::goal;

pub const GOALS: [&str; 3] = ["main", "docs", "ops"];
pub const NOW: &str = "2026-12-08T00:00:00Z";

fn at(day: u32, hh: u32, mm: u32) -> String {
    format!("2026-12-{day:02}T{hh:02}:{mm:02}:00Z")
}

/// A command at `now`, its commit dated `now` (as on a real clock).
pub fn at_time(env: &TestEnv, repo: &Path, now: &str, args: &[&str]) -> Run {
    env.loopx_cmd(repo)
        .env_remove("GIT_COMMITTER_DATE")
        .env_remove("GIT_AUTHOR_DATE")
        .env("LOOPX_NOW", now)
        .args(args)
        .output()
        .expect("git-loopx runs")
        .into()
}

fn slots(goal: &str, day: u32) -> u32 {
    match goal {
        "main" => day,
        "docs" => 1,
        _ => 2,
    }
}

/// The week, in a repository of its own.
pub fn week(env: &TestEnv) -> PathBuf {
    let repo = env.repo("week");
    let l = |now: &str, args: &[&str]| at_time(env, &repo, now, args).success();
    let start = at(1, 0, 0);
    l(&start, &["init", "--goal-text", "Ship the parser"]);
    l(
        &start,
        &["goal", "add", "docs", "--objective", "Write the docs"],
    );
    l(&start, &["goal", "add", "ops", "--objective", "Run it"]);
    for agent in ["agent-main", "agent-docs", "agent-ops", "agent-old"] {
        l(&start, &["agent", "register", agent]);
    }
    for day in 1..=7 {
        for (i, goal) in GOALS.into_iter().enumerate() {
            let agent = format!("agent-{goal}");
            let m = i as u32;
            let text = format!("{goal} day {day}");
            let added = l(
                &at(day, 9, m),
                &["--json", "--goal", goal, "todo", "add", &text],
            );
            let todo = added.json()["todo"]["id"].as_str().unwrap().to_owned();
            let key = format!("{goal}-{day}");
            let g = |hh: u32, mm: u32, args: &[&str]| {
                let mut all = vec!["--goal", goal, "--agent", &agent];
                all.extend_from_slice(args);
                l(&at(day, hh, mm), &all)
            };
            g(9, 5 + m, &["should-run", "--turn", &key]);
            g(9, 10 + m, &["todo", "claim", &todo, "--ttl", "4h"]);
            for hh in [10, 11] {
                let summary = format!("{goal} day {day} at {hh}");
                let mut args = vec![
                    "writeback",
                    "--todo",
                    &todo,
                    "--outcome",
                    "outcome_progress",
                    "--summary",
                    &summary,
                ];
                // The turn's first writeback answers its receipt.
                if hh == 10 {
                    args.extend(["--turn", &key]);
                }
                g(hh, m, &args);
            }
            let n = slots(goal, day).to_string();
            g(11, 30 + m, &["quota", "spend", "--slots", &n]);
            g(
                12,
                m,
                &["todo", "done", &todo, "--evidence", "cargo test: passed"],
            );
        }
        if day == 2 {
            let old = |hh: u32, args: &[&str]| {
                let mut all = vec!["--agent", "agent-old"];
                all.extend_from_slice(args);
                l(&at(2, hh, 30), &all)
            };
            let todo = l(&at(2, 13, 0), &["--json", "todo", "add", "Old work"]).json()["todo"]
                ["id"]
                .as_str()
                .unwrap()
                .to_owned();
            old(13, &["should-run", "--turn", "old-2"]);
            old(14, &["todo", "claim", &todo, "--ttl", "1h"]);
            old(
                14,
                &[
                    "writeback",
                    "--todo",
                    &todo,
                    "--turn",
                    "old-2",
                    "--outcome",
                    "outcome_progress",
                    "--summary",
                    "old work",
                ],
            );
            old(14, &["todo", "release", &todo]);
        }
        if day == 4 {
            l(
                &at(4, 20, 0),
                &["--goal", "ops", "goal", "set", "--allowed-slots", "100"],
            );
        }
    }
    repo
}

fn agent<'a>(agents: &'a Value, id: &str) -> &'a Value {
    agents
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == id)
        .unwrap_or_else(|| panic!("agent {id} in {agents}"))
}

#[test]
fn a_week_away_reads_true_on_every_surface() {
    let env = TestEnv::new();
    let repo = week(&env);
    // The archive did its work: only the last day's runs are in the tip.
    let tree = env.git(&repo, &["ls-tree", "-r", "--name-only", "loopx-state"]);
    let days: std::collections::BTreeSet<&str> = tree
        .lines()
        .filter(|p| p.contains("/runs/"))
        .filter_map(|p| p.split('/').nth(3))
        .collect();
    assert!(
        days.iter().all(|d| *d >= "2026-12-06"),
        "runs in the tip: {days:?}"
    );

    // report: per goal, the range's writebacks, done todos and slots, and
    // the allowance of each day of it.
    for (since, from_day, allowance_ops) in [("7d", 1, 3 * 1440 + 4 * 100), ("4d", 4, 4 * 100)] {
        let r = env
            .loopx_at(&repo, NOW, &["--json", "report", "--since", since])
            .success()
            .json();
        let days = 8 - from_day;
        for g in GOALS {
            let part = goal(&r, g);
            let old = u64::from(g == "main" && from_day <= 2);
            let delivered = part["review"]["delivered"].as_array().unwrap().len() as u64;
            assert_eq!(delivered, 2 * days + old, "{g} --since {since}");
            assert_eq!(
                part["review"]["completed"].as_array().unwrap().len() as u64,
                days,
                "{g} --since {since}"
            );
            let spent: u32 = (from_day as u32..=7).map(|d| slots(g, d)).sum();
            assert_eq!(part["quota"]["spent"], spent, "{g} --since {since}");
            let allowance = if g == "ops" {
                allowance_ops
            } else {
                1440 * days
            };
            assert_eq!(part["quota"]["allowance"], allowance, "{g} --since {since}");
        }
        let text = env
            .loopx_at(&repo, NOW, &["report", "--since", since])
            .success()
            .stdout;
        let main_spent: u32 = (from_day as u32..=7).sum();
        assert!(
            text.contains(&format!("spent {main_spent} slot(s)")),
            "--since {since}: {text}"
        );
    }

    // status: each agent's last turn and writeback, archived or not.
    let status = env
        .loopx_at(&repo, NOW, &["--json", "status"])
        .success()
        .json();
    let old = agent(&status["agents"], "agent-old");
    assert_eq!(old["last_turn"], at(2, 13, 30), "{old}");
    assert_eq!(old["last_writeback"], at(2, 14, 30), "{old}");
    let main = agent(&status["agents"], "agent-main");
    assert_eq!(main["last_turn"], at(7, 9, 5), "{main}");
    assert_eq!(main["last_writeback"], at(7, 11, 0), "{main}");
    let text = env.loopx_at(&repo, NOW, &["status"]).success().stdout;
    assert!(
        text.contains(
            "agent-old: last turn 2026-12-02T13:30:00Z, last writeback 2026-12-02T14:30:00Z"
        ),
        "{text}"
    );

    // The dashboard's agents: seen when they were last seen.
    #[cfg(feature = "serve")]
    {
        let mut cmd = env.loopx_cmd(&repo);
        cmd.env("LOOPX_NOW", NOW).args(["serve", "--port", "0"]);
        let serving = crate::serve::Serving::spawn_cmd(cmd);
        let (code, page) = serving.get("/dashboard.json");
        assert_eq!(code, 200);
        let old = agent(&page["agents"], "agent-old");
        assert_eq!(old["last_turn"], at(2, 13, 30), "{old}");
        assert_eq!(old["last_writeback"]["at"], at(2, 14, 30), "{old}");
        assert_eq!(old["last_seen"], at(2, 14, 30), "{old}");
        let docs = agent(&page["agents"], "agent-docs");
        assert_eq!(docs["last_turn"], at(7, 9, 6), "{docs}");
        assert_eq!(docs["last_writeback"]["at"], at(7, 11, 1), "{docs}");
    }

    // The first review (nothing acknowledged): every writeback of the goal.
    let review = env
        .loopx_at(&repo, NOW, &["--json", "review"])
        .success()
        .json();
    let delivered = review["delivered"].as_array().unwrap();
    assert_eq!(delivered.len(), 15, "7 days × 2 and agent-old's");
    assert_eq!(delivered[0]["summary"], "main day 1 at 10");
    assert_eq!(delivered[14]["summary"], "main day 7 at 11");
    assert_eq!(review["completed"].as_array().unwrap().len(), 7);
}
