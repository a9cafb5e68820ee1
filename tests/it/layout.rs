//! Issue 18, part 3: run records are sharded by id under their day
//! (`goals/<goal>/runs/<day>/<xx>/<id>.yaml`); a run anywhere else under
//! `runs/` (directly under its day, say) is not in the layout, and the
//! state holding it is refused, naming the file and the commit.

use std::path::Path;

use crate::env::TestEnv;

/// A writeback on todo `todo` as agent-a; the new run's id.
fn writeback(env: &TestEnv, repo: &Path, todo: &str, summary: &str) -> String {
    let args = [
        "--json",
        "--agent",
        "agent-a",
        "writeback",
        "--todo",
        todo,
        "--outcome",
        "outcome_progress",
        "--summary",
        summary,
    ];
    env.loopx(repo, &args).success().json()["run"]["id"]
        .as_str()
        .expect("writeback answers with run.id")
        .to_owned()
}

/// Where run `id` of goal `main` made today is stored, and the same
/// without the shard (`runs/<day>/<id>.yaml`), which is not in the layout.
fn paths(id: &str) -> (String, String) {
    let day = &crate::env::NOW[..10];
    (
        format!("goals/main/runs/{day}/{}/{id}.yaml", &id[4..6]),
        format!("goals/main/runs/{day}/{id}.yaml"),
    )
}

/// Moves the file at `from` to `to` on loopx-state in one commit made with
/// git plumbing.
fn move_state_file(env: &TestEnv, repo: &Path, from: &str, to: &str) -> String {
    let index = env.path("move.index");
    let _ = std::fs::remove_file(&index);
    let with_index = |args: &[&str]| {
        let out = env
            .git_cmd(repo)
            .env("GIT_INDEX_FILE", &index)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let blob = env.git(repo, &["rev-parse", &format!("loopx-state:{from}")]);
    with_index(&["read-tree", "loopx-state"]);
    with_index(&["update-index", "--force-remove", from]);
    with_index(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("100644,{blob},{to}"),
    ]);
    let tree = with_index(&["write-tree"]);
    let commit = env.git(
        repo,
        &[
            "commit-tree",
            &tree,
            "-p",
            "loopx-state",
            "-m",
            "a file moved by hand",
        ],
    );
    env.git(repo, &["update-ref", "refs/heads/loopx-state", &commit]);
    commit
}

#[test]
fn a_writeback_lands_in_its_days_shard() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let goal = env
        .loopx(&repo, &["--json", "goal", "show"])
        .success()
        .json()["goal"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let todo = env.add_todo(&repo, "work");
    let run = writeback(&env, &repo, &todo, "did it");
    let (sharded, _) = paths(&run);
    assert_eq!(
        env.state_path_of(&repo, &run),
        sharded.replace("goals/main/", &format!("goals/{goal}/"))
    );
}

#[test]
fn a_run_without_its_shard_is_refused_naming_the_file_and_commit() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = env.add_todo(&repo, "work");
    let run = writeback(&env, &repo, &todo, "did it");
    let (sharded, flat) = paths(&run);
    let commit = move_state_file(&env, &repo, &sharded, &flat);
    // Read cold (the cache has never seen this commit), then as a write,
    // which commits nothing.
    let out = env.loopx(&repo, &["--json", "status"]).failure(3).json();
    assert_eq!(out["error"]["code"], "state_invalid", "{out}");
    let message = out["error"]["message"].as_str().unwrap();
    assert!(message.contains(&flat), "{message}");
    assert!(
        message.contains("unexpected file in the state layout"),
        "{message}"
    );
    assert!(message.contains(&commit[..7]), "{message}");
    let out = env
        .loopx(
            &repo,
            &["--json", "--agent", "agent-a", "todo", "claim", &todo],
        )
        .failure(3)
        .json();
    assert_eq!(out["error"]["code"], "state_invalid", "{out}");
    assert_eq!(env.tip(&repo), commit);
    let out = env.loopx(&repo, &["doctor", "--rev", &commit]).failure(3);
    assert!(out.stdout.contains(&flat), "{}", out.stdout);
}
