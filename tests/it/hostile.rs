//! Hostile and unlucky input: writes a reader would refuse, hand-made trees,
//! epochs at their limit, hostile YAML. Each test names what it reproduces.

use std::path::Path;

use crate::env::TestEnv;

/// Every command still reads the state: nothing was bricked.
#[track_caller]
fn assert_readable(env: &TestEnv, repo: &Path) {
    env.loopx(repo, &["status"]).success();
    env.loopx(repo, &["todo", "list"]).success();
}

#[test]
fn notes_that_would_outgrow_the_reader_are_refused_not_written() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let id = env.add_todo(&repo, "a todo that collects notes");
    // One 120 KB note (about the most one argument can carry): refused
    // whole, nothing committed.
    let tip = env.tip(&repo);
    let huge = "n".repeat(120 * 1024);
    let out = env
        .loopx(&repo, &["--json", "todo", "update", &id, "--note", &huge])
        .failure(2)
        .json();
    assert_eq!(out["error"]["code"], "invalid_input");
    assert!(
        out["error"]["message"].as_str().unwrap().contains("bytes"),
        "{out}"
    );
    assert_eq!(env.tip(&repo), tip);
    // Many notes of the largest size: accepted until the todo's notes are
    // full, then refused with a way out.
    let note = "m".repeat(16 * 1024);
    let mut accepted = 0;
    let refused = loop {
        let out = env.loopx(&repo, &["todo", "update", &id, "--note", &note]);
        if out.code != 0 {
            break out;
        }
        accepted += 1;
        assert!(accepted < 100, "notes were never bounded");
    };
    assert_eq!(accepted, 7, "a todo keeps 120 KiB: {}", refused.stderr);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("full of notes"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("--next"), "{}", refused.stderr);
    assert_readable(&env, &repo);
}

#[test]
fn a_write_that_would_pass_the_file_limit_is_refused_before_the_commit() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let id = env.add_todo(&repo, "padded by hand");
    let path = env.git(&repo, &["ls-tree", "-r", "--name-only", "loopx-state"]);
    let path = path.lines().find(|p| p.contains(&id)).unwrap().to_owned();
    let todo = env.git(&repo, &["show", &format!("loopx-state:{path}")]);
    // A hand-made todo just under the reader's limit (an unknown field the
    // tool must keep), then an ordinary edit that would push it over.
    let padded = format!(
        "{todo}\npad: '{}'\n",
        "p".repeat(256 * 1024 - todo.len() - 200)
    );
    let commit = env.commit_state_file(&repo, &path, &padded);
    assert_readable(&env, &repo);
    let out = env
        .loopx(
            &repo,
            &["--json", "todo", "update", &id, "--text", &"x".repeat(1000)],
        )
        .failure(2)
        .json();
    let message = out["error"]["message"].as_str().unwrap();
    assert!(message.contains(&path), "names the file: {message}");
    assert!(message.contains("more than"), "{message}");
    assert_eq!(env.tip(&repo), commit);
    assert_readable(&env, &repo);
}

#[test]
fn a_lease_past_year_9999_is_refused_not_written() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let id = env.add_todo(&repo, "far future");
    let tip = env.tip(&repo);
    let out = env
        .loopx_at(
            &repo,
            "9999-12-31T23:59:59Z",
            &["--json", "--agent", "a", "todo", "claim", &id],
        )
        .failure(2)
        .json();
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("9999-12-31T23:59:59Z"),
        "{out}"
    );
    assert_eq!(env.tip(&repo), tip);
    assert_readable(&env, &repo);
}

fn hand_todo(id: &str, claim: &str) -> String {
    format!(
        "id: {id}\ngoal: main\ntext: hand made\nrole: agent\nclass: advancement_task\n\
         status: open\npriority: P2\ncreated_at: '2026-12-01T00:00:00Z'\n\
         updated_at: '2026-12-01T00:00:00Z'\nrev: 1\n{claim}"
    )
}

#[test]
fn an_epoch_at_its_maximum_is_refused_never_wrapped() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let id = "todo_ab0000000001";
    let path = format!("goals/main/todos/ab/{id}.yaml");
    let claim = "claim:\n  agent: old\n  epoch: 18446744073709551615\n  \
                 acquired_at: '2026-12-01T00:00:00Z'\n  expires_at: '2026-12-01T01:00:00Z'\n";
    let commit = env.commit_state_file(&repo, &path, &hand_todo(id, claim));
    for args in [
        &["--json", "--agent", "a", "todo", "claim", id][..],
        &["--json", "--agent", "a", "todo", "next", "--claim"][..],
    ] {
        let out = env.loopx(&repo, args).failure(1).json();
        assert_eq!(out["error"]["code"], "stale_epoch", "{out}");
        assert!(
            out["error"]["message"]
                .as_str()
                .unwrap()
                .contains("largest epoch"),
            "{out}"
        );
    }
    assert_eq!(env.tip(&repo), commit);
}

#[test]
fn a_symlink_or_submodule_at_a_todo_path_is_refused_not_skipped() {
    for (mode, what) in [("120000", "symbolic link"), ("160000", "submodule")] {
        let env = TestEnv::new();
        let repo = env.state_repo("r");
        let path = "goals/main/todos/ab/todo_ab0000000002.yaml";
        let object = if mode == "160000" {
            env.git(&repo, &["rev-parse", "HEAD"])
        } else {
            let target = env.path("target");
            std::fs::write(&target, hand_todo("todo_ab0000000002", "")).unwrap();
            env.git(&repo, &["hash-object", "-w", target.to_str().unwrap()])
        };
        let commit = env.commit_state_entry(&repo, mode, path, &object);
        let out = env.loopx(&repo, &["status"]).failure(3);
        assert!(out.stderr.contains(path), "{mode}: {}", out.stderr);
        assert!(out.stderr.contains(what), "{mode}: {}", out.stderr);
        assert!(out.stderr.contains(&commit[..10]), "{mode}: {}", out.stderr);
        env.loopx(&repo, &["todo", "add", "more"]).failure(3);
        assert_eq!(env.tip(&repo), commit);
    }
}

#[test]
fn hostile_nesting_is_refused_quickly_naming_the_file() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let path = "goals/main/todos/ab/todo_ab0000000003.yaml";
    let hostile = hand_todo(
        "todo_ab0000000003",
        &format!("x: {}\n", "[".repeat(200_000)),
    );
    let commit = env.commit_state_file(&repo, path, &hostile);
    for _ in 0..3 {
        // A hang detector, not a timing test: refused in milliseconds,
        // where a parse of this file once took about 45 s.
        let limit = std::time::Duration::from_secs(10);
        let out = env.loopx_within(&repo, &["status"], limit).failure(3);
        assert!(out.stderr.contains(path), "{}", out.stderr);
        assert!(out.stderr.contains("unclosed"), "{}", out.stderr);
        assert!(out.stderr.contains(&commit[..10]), "{}", out.stderr);
    }
}

#[test]
fn control_sequences_in_state_text_never_reach_the_terminal() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let hostile = "clear\u{1b}[2J\u{1b}]0;owned\u{7} then\rover \u{202e}txt";
    let id = env.add_todo(&repo, hostile);
    env.loopx(&repo, &["--agent", "a", "todo", "claim", &id])
        .success();
    env.loopx(
        &repo,
        &[
            "--agent",
            "a",
            "writeback",
            "--todo",
            &id,
            "--outcome",
            "outcome_progress",
            "--summary",
            hostile,
        ],
    )
    .success();
    for args in [
        &["status"][..],
        &["todo", "list"][..],
        &["todo", "show", &id][..],
        &["log"][..],
        &["history"][..],
        &["review"][..],
    ] {
        let out = env.loopx(&repo, args).success();
        for bad in ['\u{1b}', '\u{7}', '\r', '\u{202e}'] {
            assert!(
                !out.stdout.contains(bad) && !out.stderr.contains(bad),
                "{args:?} printed {bad:?} raw:\n{}",
                out.stdout
            );
        }
        assert!(out.stdout.contains("clear"), "{args:?}: {}", out.stdout);
    }
    // Errors carry state text too.
    let out = env
        .loopx(&repo, &["--agent", "b", "todo", "claim", &id])
        .failure(1);
    assert!(!out.stderr.contains('\u{1b}'), "{}", out.stderr);
    // JSON keeps the exact text, escaped by JSON itself.
    let json = env.loopx(&repo, &["--json", "todo", "show", &id]).success();
    assert!(!json.stdout.contains('\u{1b}'));
    assert_eq!(json.json()["todo"]["text"], hostile);
}

#[test]
fn a_sha256_repository_is_named_as_such() {
    let env = TestEnv::new();
    let repo = env.path("sha256");
    std::fs::create_dir(&repo).unwrap();
    env.git(&repo, &["init", "-q", "--object-format=sha256"]);
    let out = env.loopx(&repo, &["init", "--goal-text", "x"]).failure(3);
    assert!(out.stderr.contains("sha256"), "{}", out.stderr);
    assert!(
        !out.stderr.contains("not a git repository"),
        "{}",
        out.stderr
    );
    let json = env.loopx(&repo, &["--json", "status"]).failure(3).json();
    assert_eq!(json["error"]["code"], "unsupported_object_format");
}

#[test]
fn an_empty_agent_flag_is_a_usage_error() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let id = env.add_todo(&repo, "work");
    let tip = env.tip(&repo);
    for args in [
        &["--agent", "", "todo", "claim", &id][..],
        &["todo", "claim", &id, "--agent="][..],
    ] {
        let out = env.loopx(&repo, args).failure(2);
        assert!(out.stderr.contains("--agent"), "{}", out.stderr);
    }
    let json = env
        .loopx(&repo, &["--json", "--agent", "", "todo", "claim", &id])
        .failure(2)
        .json();
    assert_eq!(json["error"]["code"], "invalid_input");
    assert!(json["error"]["message"]
        .as_str()
        .unwrap()
        .contains("--agent"));
    assert_eq!(env.tip(&repo), tip);
    // An empty LOOPX_AGENT is unset, as shells clear variables.
    let unset = env
        .loopx_cmd(&repo)
        .env("LOOPX_AGENT", "")
        .args(["todo", "list"])
        .output()
        .unwrap();
    assert!(unset.status.success(), "{unset:?}");
}

#[test]
fn help_and_version_answer_in_json_under_json() {
    let env = TestEnv::new();
    let dir = env.path("home");
    let version = env.loopx(&dir, &["--json", "--version"]).success().json();
    assert_eq!(version["ok"], true);
    assert_eq!(version["version"], env!("CARGO_PKG_VERSION"));
    for args in [&["--json", "--help"][..], &["todo", "--help", "--json"][..]] {
        let help = env.loopx(&dir, args).success().json();
        assert_eq!(help["ok"], true);
        assert!(help["help"].as_str().unwrap().contains("Usage: git loopx"));
    }
}

/// Found while testing the pre-push hook: `sync` published a state whose
/// `loopx.yaml` no reader accepts, to a remote that had none, and so passed
/// the breakage on to every clone.
#[test]
fn sync_never_publishes_a_state_no_reader_accepts() {
    let env = TestEnv::new();
    let remote = env.bare("remote.git");
    let repo = env.state_repo("repo");
    let url = remote.to_str().unwrap();
    env.git(&repo, &["remote", "add", "origin", url]);
    env.loopx(&repo, &["sync"]).success();
    let published = env.git(&remote, &["rev-parse", "loopx-state"]);
    let commit = env.commit_state_file(&repo, "loopx.yaml", "format: [unclosed\n");

    let run = env.loopx(&repo, &["--json", "sync"]).failure(3);
    assert_eq!(
        run.json()["error"]["code"],
        "state_invalid",
        "{}",
        run.stdout
    );
    let message = run.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("loopx.yaml"), "{message}");
    assert!(message.contains(&commit[..7]), "{message}");
    assert_eq!(env.git(&remote, &["rev-parse", "loopx-state"]), published);

    // Nor to a remote that has no state yet.
    let empty = env.bare("empty.git");
    env.git(&repo, &["remote", "add", "empty", empty.to_str().unwrap()]);
    env.loopx(&repo, &["sync", "--remote", "empty"]).failure(3);
    assert!(!env.git_ok(&empty, &["rev-parse", "--verify", "-q", "loopx-state"]));
}
