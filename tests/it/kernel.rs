//! The state kernel: init, discovery, refusals, corrupt state, the CLI shell.

use std::path::Path;

use crate::env::TestEnv;

fn snapshot_user_side(env: &TestEnv, repo: &Path) -> (String, Vec<u8>, Vec<u8>, Vec<u8>) {
    (
        env.git(repo, &["rev-parse", "HEAD"]),
        std::fs::read(repo.join(".git/index")).unwrap(),
        std::fs::read(repo.join("README")).unwrap(),
        std::fs::read(repo.join("new.txt")).unwrap(),
    )
}

#[test]
fn init_leaves_head_index_and_worktree_untouched() {
    let env = TestEnv::new();
    let repo = env.repo("r");
    std::fs::write(repo.join("new.txt"), "staged\n").unwrap();
    env.git(&repo, &["add", "new.txt"]);
    std::fs::write(repo.join("new.txt"), "staged\nthen edited\n").unwrap();
    std::fs::write(repo.join("README"), "unstaged edit\n").unwrap();
    let porcelain = env.git(&repo, &["status", "--porcelain"]);
    let before = snapshot_user_side(&env, &repo);

    let out = env
        .loopx(&repo, &["init", "--goal-text", "Ship the parser"])
        .success();
    assert!(
        out.stdout
            .starts_with("Initialised: refs/heads/loopx-state at "),
        "{}",
        out.stdout
    );
    assert_eq!(snapshot_user_side(&env, &repo), before);
    assert_eq!(env.git(&repo, &["status", "--porcelain"]), porcelain);
    assert_eq!(env.git(&repo, &["symbolic-ref", "HEAD"]), "refs/heads/main");

    let commits = env.git(&repo, &["rev-list", "loopx-state"]);
    assert_eq!(commits.lines().count(), 1);
    assert_eq!(
        env.git(&repo, &["rev-list", "--max-parents=0", "loopx-state"]),
        commits
    );
    assert_eq!(
        env.git(&repo, &["ls-tree", "-r", "--name-only", "loopx-state"]),
        "goals/main/goal.yaml\nloopx.yaml"
    );
    assert_eq!(
        env.git(&repo, &["show", "loopx-state:loopx.yaml"]),
        "format: 1\ndefault_goal: main\ncreated_at: '2026-12-02T10:00:00Z'"
    );
    insta::assert_snapshot!(env.git(&repo, &["show", "loopx-state:goals/main/goal.yaml"]), @r"
    id: main
    objective: Ship the parser
    status: active
    quota:
      compute: 1.0
      window_hours: 24
      slot_minutes: 1
    created_at: '2026-12-02T10:00:00Z'
    updated_at: '2026-12-02T10:00:00Z'
    rev: 1
    ");
    insta::assert_snapshot!(env.git(&repo, &["log", "-1", "--format=%B", "loopx-state"]), @r"
    init loopx state with goal main

    Loopx-Op: init
    Loopx-Goal: main
    ");
    assert_eq!(
        env.git(&repo, &["reflog", "--format=%gs", "loopx-state"]),
        "loopx: init loopx state with goal main"
    );

    let again = env
        .loopx(&repo, &["--json", "init", "--goal-text", "Ship the parser"])
        .success();
    assert_eq!(again.json()["action"], "existing");
    assert_eq!(env.git(&repo, &["rev-list", "loopx-state"]), commits);
    assert_eq!(snapshot_user_side(&env, &repo), before);
}

#[test]
fn init_without_goal_text_is_a_usage_error() {
    let env = TestEnv::new();
    let repo = env.repo("r");
    let out = env.loopx(&repo, &["--json", "init"]).failure(2);
    assert_eq!(out.json()["error"]["code"], "invalid_input");
    let out = env.loopx(&repo, &["init", "--goal-text", "  "]).failure(2);
    assert!(
        out.stderr.contains("--objective is empty"),
        "{}",
        out.stderr
    );
    let out = env
        .loopx(&repo, &["init", "--goal-text", "x", "--goal-id", "Bad Id"])
        .failure(2);
    assert!(out.stderr.contains("not a valid goal id"), "{}", out.stderr);
    assert!(env
        .git_cmd(&repo)
        .args(["rev-parse", "--verify", "-q", "loopx-state"])
        .output()
        .unwrap()
        .stdout
        .is_empty());
}

#[test]
fn status_json_has_the_documented_keys() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let json = env.loopx(&repo, &["status", "--json"]).success().json();
    assert_eq!(json["ok"], true);
    for key in ["goal", "todos", "gates", "claims", "quota", "recent_runs"] {
        assert!(
            json.get(key).is_some(),
            "status --json lacks `{key}`: {json}"
        );
    }
    assert_eq!(json["goal"]["objective"], "Ship the parser");
    // Global flags go before or after the subcommand.
    let before = env.loopx(&repo, &["--json", "status"]).success().json();
    assert_eq!(before, json);
}

#[test]
fn linked_worktree_and_subdirectory_share_the_state() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    std::fs::create_dir_all(repo.join("deep/sub")).unwrap();
    env.git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "feature",
            env.path("wt").to_str().unwrap(),
        ],
    );
    let wt = env.path("wt");

    env.loopx(&wt, &["todo", "add", "from the worktree"])
        .success();
    env.loopx(
        &repo.join("deep/sub"),
        &["todo", "add", "from a subdirectory"],
    )
    .success();
    env.loopx(
        &env.path("home"),
        &["-C", repo.to_str().unwrap(), "todo", "add", "via -C"],
    )
    .success();

    for dir in [&repo, &wt, &repo.join("deep/sub")] {
        let json = env.loopx(dir, &["todo", "list", "--json"]).success().json();
        let mut texts: Vec<&str> = json["todos"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["text"].as_str().unwrap())
            .collect();
        texts.sort();
        assert_eq!(
            texts,
            ["from a subdirectory", "from the worktree", "via -C"]
        );
    }
    assert_eq!(env.git(&wt, &["rev-list", "--count", "loopx-state"]), "4");
    assert_eq!(env.git(&wt, &["status", "--porcelain"]), "");
}

fn assert_corrupt_refused(env: &TestEnv, repo: &Path, path: &str, content: &str, needle: &str) {
    let commit = env.commit_state_file(repo, path, content);
    let short = &commit[..10];
    let out = env.loopx(repo, &["status"]).failure(3);
    assert!(
        out.stderr.contains(path),
        "names the file {path}: {}",
        out.stderr
    );
    assert!(
        out.stderr.contains(short),
        "names the commit {short}: {}",
        out.stderr
    );
    assert!(
        out.stderr.contains(needle),
        "says `{needle}`: {}",
        out.stderr
    );
    let json = env.loopx(repo, &["status", "--json"]).failure(3).json();
    assert_eq!(json["error"]["code"], "state_invalid");
    // A write is refused too, and nothing is rewritten.
    env.loopx(repo, &["todo", "add", "more work"]).failure(3);
    env.loopx(repo, &["init", "--goal-text", "again"])
        .failure(3);
    assert_eq!(env.tip(repo), commit);
}

#[test]
fn invalid_yaml_is_refused_naming_file_and_commit() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    assert_corrupt_refused(
        &env,
        &repo,
        "goals/main/goal.yaml",
        "id: main\nobjective: [unclosed\n",
        "goals/main/goal.yaml",
    );
}

#[test]
fn future_format_is_refused_not_rewritten() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    assert_corrupt_refused(
        &env,
        &repo,
        "loopx.yaml",
        "format: 99\ndefault_goal: main\ncreated_at: '2026-12-02T10:00:00Z'\n",
        "format: 99 is newer",
    );
}

#[test]
fn wrong_field_type_is_refused_naming_the_field() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let goal = env.git(&repo, &["show", "loopx-state:goals/main/goal.yaml"]);
    let bad = goal.replace("rev: 1", "rev: one");
    assert_corrupt_refused(&env, &repo, "goals/main/goal.yaml", &bad, "rev");
}

#[test]
fn checked_out_state_branch_is_refused() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            env.path("st").to_str().unwrap(),
            "loopx-state",
        ],
    );
    let tip = env.tip(&repo);
    let json = env
        .loopx(&repo, &["--json", "todo", "add", "x"])
        .failure(3)
        .json();
    assert_eq!(json["error"]["code"], "state_checked_out");
    assert!(
        json["error"]["message"].as_str().unwrap().contains("st"),
        "{json}"
    );
    assert_eq!(env.tip(&repo), tip);
    let doctor = env.loopx(&repo, &["doctor"]).failure(3);
    assert!(
        doctor.stdout.contains("FAIL  worktrees"),
        "{}",
        doctor.stdout
    );
}

#[test]
fn outside_a_repository_exits_3() {
    let env = TestEnv::new();
    let json = env
        .loopx(&env.path("home"), &["--json", "status"])
        .failure(3)
        .json();
    assert_eq!(json["error"]["code"], "not_a_repo");
    assert!(json["error"]["hint"].as_str().unwrap().contains("-C"));
}

#[test]
fn missing_state_exits_3_with_the_fix() {
    let env = TestEnv::new();
    let repo = env.repo("r");
    let out = env.loopx(&repo, &["status"]).failure(3);
    assert!(
        out.stderr.contains("error[state_missing]"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("git loopx init"), "{}", out.stderr);
}

#[test]
fn reftable_repositories_are_refused() {
    let env = TestEnv::new();
    let dir = env.path("rt");
    std::fs::create_dir_all(&dir).unwrap();
    env.git(&dir, &["init", "-q", "--ref-format=reftable"]);
    let json = env
        .loopx(&dir, &["--json", "init", "--goal-text", "x"])
        .failure(3)
        .json();
    assert_eq!(json["error"]["code"], "unsupported_ref_storage");
}

/// Issue 47, item 1: a ref lock older than any live writer holds one is a
/// dead writer's. The next writer, holding the host's writer lock (so no
/// git-loopx writer of this host is inside its ref update), removes it and
/// writes. Without the writer lock (`LOOPX_WRITER_LOCK=0`) it cannot know:
/// the lock is kept and the write refused with its age.
#[test]
fn a_dead_writers_ref_lock_is_removed_by_the_next_writer_only() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let lock = repo.join(".git/refs/heads/loopx-state.lock");
    let dead_lock = || {
        std::fs::write(&lock, "").unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
        std::fs::File::options()
            .write(true)
            .open(&lock)
            .unwrap()
            .set_modified(old)
            .unwrap();
    };
    dead_lock();
    let json = env
        .loopx_cmd(&repo)
        .env("LOOPX_WRITER_LOCK", "0")
        .args(["--json", "todo", "add", "x"])
        .output()
        .unwrap();
    let run: crate::env::Run = json.into();
    let json = run.failure(3).json();
    assert_eq!(json["error"]["code"], "state_locked");
    let message = json["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("loopx-state.lock") && message.contains("60"),
        "{message}"
    );
    assert!(lock.exists(), "without the writer lock, the lock is kept");

    env.loopx(&repo, &["--json", "todo", "add", "y"]).success();
    assert!(!lock.exists(), "the dead writer's lock is gone");
    let fresh = repo.join(".git/packed-refs.lock");
    std::fs::write(&fresh, "").unwrap();
    env.loopx(&repo, &["--json", "todo", "add", "z"]).success();
    assert!(fresh.exists(), "a fresh lock may be a live git's: kept");
}

#[test]
fn log_lists_state_commits_with_filters() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let a = env
        .loopx(
            &repo,
            &["--agent", "agent-a", "--json", "todo", "add", "first"],
        )
        .success()
        .json();
    env.loopx(&repo, &["--agent", "agent-b", "todo", "add", "second"])
        .success();
    let id = a["todo"]["id"].as_str().unwrap();
    let log = env.loopx(&repo, &["log", "--json"]).success().json();
    let subjects: Vec<&str> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["subject"].as_str().unwrap())
        .collect();
    assert_eq!(subjects.len(), 3);
    assert!(subjects[2].starts_with("init"));
    let by_todo = env
        .loopx(&repo, &["log", "--json", "--todo", &id[..9]])
        .success()
        .json();
    assert_eq!(by_todo["entries"].as_array().unwrap().len(), 1);
    let by_agent = env
        .loopx(&repo, &["log", "--json", "--by", "agent-b"])
        .success()
        .json();
    assert_eq!(by_agent["entries"][0]["agent"], "agent-b");
    let one = env.loopx(&repo, &["log", "-n", "1"]).success();
    let lines: Vec<&str> = one.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", one.stdout);
    assert!(
        lines[1].starts_with("… older ones left out"),
        "{}",
        one.stdout
    );
}

#[test]
fn doctor_reports_a_healthy_repository() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let out = env.loopx(&repo, &["doctor", "--fsck"]).success();
    assert!(out.stdout.contains("ok    state"), "{}", out.stdout);
    assert!(out.stdout.contains("ok    fsck"), "{}", out.stdout);
    let json = env.loopx(&repo, &["doctor", "--json"]).success().json();
    assert_eq!(json["healthy"], true);
}

#[test]
fn help_works_without_a_repository() {
    let env = TestEnv::new();
    let home = env.path("home");
    let out = env.loopx(&home, &["-h"]).success();
    assert!(out.stdout.contains("Usage: git loopx"), "{}", out.stdout);
    for cmd in ["init", "status", "log", "doctor", "todo"] {
        assert!(out.stdout.contains(cmd), "help lists {cmd}");
    }
    let out = env.loopx(&home, &["help", "init"]).success();
    assert!(out.stdout.contains("--objective"), "{}", out.stdout);
    // LoopX's spelling, --goal-text, still works but is not advertised.
    assert!(!out.stdout.contains("--goal-text"), "{}", out.stdout);
    env.loopx(&home, &["--version"]).success();
    let out = env.loopx(&home, &["--json", "frobnicate"]).failure(2);
    assert_eq!(out.json()["error"]["code"], "invalid_input");
}

#[test]
fn an_invalid_loopx_now_is_a_usage_error() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let out = env
        .loopx_cmd(&repo)
        .env("LOOPX_NOW", "tomorrow")
        .arg("status")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn files_outside_the_layout_survive_writes() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.commit_state_file(&repo, "README.md", "notes for reviewers\n");
    env.loopx(&repo, &["todo", "add", "x"]).success();
    assert_eq!(
        env.git(&repo, &["show", "loopx-state:README.md"]),
        "notes for reviewers"
    );
}

#[test]
fn the_parsed_state_cache_is_host_local_and_disposable() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.loopx(&repo, &["todo", "add", "cached"]).success();
    let cache = repo.join(".git/loopx/cache");
    let entries: Vec<_> = std::fs::read_dir(&cache).unwrap().flatten().collect();
    assert!(
        !entries.is_empty(),
        "writes leave the new state in the cache"
    );
    // A damaged cache is ignored, never trusted.
    for e in &entries {
        std::fs::write(e.path(), "{ not json").unwrap();
    }
    let json = env
        .loopx(&repo, &["--json", "todo", "list"])
        .success()
        .json();
    assert_eq!(json["todos"][0]["text"], "cached");
    // Deleting it loses nothing.
    std::fs::remove_dir_all(&cache).unwrap();
    env.loopx(&repo, &["todo", "add", "again"]).success();
    let json = env
        .loopx(&repo, &["--json", "todo", "list"])
        .success()
        .json();
    assert_eq!(json["todos"].as_array().unwrap().len(), 2);
    let files = env.git(&repo, &["ls-tree", "-r", "--name-only", "loopx-state"]);
    assert!(
        !files.contains("cache") && !files.contains("leases"),
        "{files}"
    );
}

#[test]
fn cached_state_equals_the_state_read_from_git() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let a = ["--agent", "agent-a"];
    let t = env
        .loopx(&repo, &["--json", "todo", "add", "one"])
        .success()
        .json()["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    env.loopx(&repo, &["todo", "add", "two", "--priority", "P0"])
        .success();
    env.loopx(&repo, &[&a[..], &["todo", "claim", &t]].concat())
        .success();
    env.loopx(
        &repo,
        &[
            &a[..],
            &[
                "writeback",
                "--todo",
                &t,
                "--outcome",
                "outcome_progress",
                "--summary",
                "s",
            ],
        ]
        .concat(),
    )
    .success();
    env.loopx(
        &repo,
        &[
            &a[..],
            &["todo", "done", &t, "--evidence", "e", "--next", "three"],
        ]
        .concat(),
    )
    .success();
    env.loopx(&repo, &["gate", "add", "ok?"]).success();
    let views = |env: &TestEnv| {
        ["status", "history"]
            .map(|cmd| env.loopx(&repo, &["--json", cmd]).success().stdout)
            .join("")
            + &env
                .loopx(&repo, &["--json", "todo", "list", "--all"])
                .success()
                .stdout
    };
    let cached = views(&env);
    let journal = std::fs::read(repo.join(".git/loopx/cache/journal")).unwrap();
    assert!(
        journal.windows(6).any(|w| w == b"delta-"),
        "the writes' deltas are in the cache's journal"
    );
    std::fs::remove_dir_all(repo.join(".git/loopx/cache")).unwrap();
    assert_eq!(
        views(&env),
        cached,
        "the delta cache reproduces the state in git exactly"
    );
}
