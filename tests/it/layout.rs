//! Issue 18, part 3: run records are sharded by id under their day
//! (`goals/<goal>/runs/<day>/<xx>/<id>.yaml`), and a state written before
//! the shard level (`runs/<day>/<id>.yaml`) still reads, takes new
//! writebacks and syncs; a run in both layouts is refused as a duplicate.

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

/// The sharded and the unsharded path of run `id` of goal `main` today.
fn paths(id: &str) -> (String, String) {
    let day = &crate::env::NOW[..10];
    (
        format!("goals/main/runs/{day}/{}/{id}.yaml", &id[4..6]),
        format!("goals/main/runs/{day}/{id}.yaml"),
    )
}

/// Moves the file at `from` to `to` on loopx-state in one commit made with
/// git plumbing, as a version before the shard level would have stored it.
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
            "older layout",
        ],
    );
    env.git(repo, &["update-ref", "refs/heads/loopx-state", &commit]);
    commit
}

fn files(env: &TestEnv, repo: &Path) -> Vec<String> {
    env.git(repo, &["ls-tree", "-r", "--name-only", "loopx-state"])
        .lines()
        .map(str::to_owned)
        .collect()
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
fn a_state_in_the_unsharded_layout_reads_and_takes_new_writebacks() {
    let env = TestEnv::new();
    let remote = env.bare("remote.git");
    let repo = env.state_repo("r");
    env.git(
        &repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    let todo = env.add_todo(&repo, "work");
    let old = writeback(&env, &repo, &todo, "written by an older version");
    let (old_sharded, old_flat) = paths(&old);
    move_state_file(&env, &repo, &old_sharded, &old_flat);
    // Read cold (the cache has never seen this commit), then again with no
    // cache at all.
    for _ in 0..2 {
        let history = env.loopx(&repo, &["--json", "history"]).success().json();
        assert_eq!(history["runs"][0]["id"], old.as_str(), "{history}");
        let status = env.loopx(&repo, &["--json", "status"]).success().json();
        assert_eq!(status["recent_runs"][0]["id"], old.as_str(), "{status}");
        std::fs::remove_dir_all(repo.join(".git/loopx/cache")).unwrap();
    }

    // A new writeback is sharded; the old run stays where it is, once.
    let new = writeback(&env, &repo, &todo, "written by this version");
    let (new_sharded, _) = paths(&new);
    let listed = files(&env, &repo);
    assert!(listed.contains(&new_sharded), "{listed:?}");
    assert!(listed.contains(&old_flat), "{listed:?}");
    assert!(!listed.contains(&old_sharded), "{listed:?}");
    let history = env.loopx(&repo, &["--json", "history"]).success().json();
    assert_eq!(history["runs"].as_array().unwrap().len(), 2, "{history}");

    // log, diff (of the new writeback, and across the hand-made commit), doctor.
    let log = env.loopx(&repo, &["log", "-n", "5"]).success().stdout;
    assert!(log.contains("written by this version"), "{log}");
    let diff = env.loopx(&repo, &["diff"]).success().stdout;
    assert!(diff.contains("written by this version"), "{diff}");
    let patch = env
        .loopx(&repo, &["diff", "loopx-state~3..loopx-state", "--patch"])
        .success()
        .stdout;
    assert!(patch.contains(&new_sharded), "{patch}");
    assert!(patch.contains(&old_flat), "{patch}");
    let tip = env.tip(&repo);
    env.loopx(&repo, &["doctor", "--rev", &tip]).success();

    // A clone syncs it, writes, and the merge back keeps each run once.
    env.loopx(&repo, &["sync"]).success();
    let other = env.clone_of(&remote, "other");
    env.loopx(&other, &["sync"]).success();
    let theirs = writeback(&env, &other, &todo, "written on the clone");
    env.loopx(&other, &["sync"]).success();
    let ours = writeback(&env, &repo, &todo, "written here meanwhile");
    let synced = env.loopx(&repo, &["--json", "sync"]).success().json();
    assert_eq!(synced["action"], "merged", "{synced}");
    let listed = files(&env, &repo);
    for id in [&old, &new, &theirs, &ours] {
        let found = listed
            .iter()
            .filter(|p| p.ends_with(&format!("/{id}.yaml")));
        assert_eq!(found.count(), 1, "{id} in {listed:?}");
    }
    let history = env.loopx(&repo, &["--json", "history"]).success().json();
    assert_eq!(history["runs"].as_array().unwrap().len(), 4, "{history}");
    env.fsck(&repo, &[]);
}

#[test]
fn a_run_in_both_layouts_is_refused_naming_the_file_and_commit() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = env.add_todo(&repo, "work");
    let run = writeback(&env, &repo, &todo, "did it");
    let (sharded, flat) = paths(&run);
    let bytes = env.state_file(&repo, &sharded);
    let commit = env.commit_state_file(&repo, &flat, &format!("{bytes}\n"));
    let out = env.loopx(&repo, &["--json", "status"]).failure(3).json();
    assert_eq!(out["error"]["code"], "state_invalid", "{out}");
    let message = out["error"]["message"].as_str().unwrap();
    assert!(message.contains(&flat), "{message}");
    assert!(message.contains(&sharded), "{message}");
    assert!(message.contains("duplicate run id"), "{message}");
    assert!(message.contains(&commit[..7]), "{message}");
    let out = env.loopx(&repo, &["doctor", "--rev", &commit]).failure(3);
    assert!(out.stdout.contains(&flat), "{}", out.stdout);
}
