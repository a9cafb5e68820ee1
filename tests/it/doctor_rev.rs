//! `git loopx doctor --rev <commit>`: every problem of one state commit,
//! each with its file, line and field; and every commit git-loopx itself
//! makes passes.

use std::path::Path;

use crate::env::TestEnv;

/// `doctor --rev` as JSON, with its exit status checked.
fn doctor_rev(env: &TestEnv, repo: &Path, rev: &str, code: i32) -> serde_json::Value {
    let run = env.loopx(repo, &["--json", "doctor", "--rev", rev]);
    assert_eq!(
        run.code, code,
        "doctor --rev {rev}\nstdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    run.json()
}

/// The errors of a report as `(path, field, line)`.
fn errors(report: &serde_json::Value) -> Vec<(String, String, u64)> {
    report["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter(|p| p["severity"] == "error")
        .map(|p| {
            (
                p["path"].as_str().unwrap().to_owned(),
                p["field"].as_str().unwrap_or("").to_owned(),
                p["line"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

/// The line of `key:` at the start of a line of `text` (1-based).
fn line_of(text: &str, key: &str) -> u64 {
    let at = text
        .lines()
        .position(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("no `{key}` in\n{text}"));
    at as u64 + 1
}

#[test]
fn a_dangling_unblocks_id_is_named_with_file_line_and_field() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let gate = env
        .loopx(&repo, &["--json", "gate", "add", "Ship it?"])
        .success()
        .json()["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = env.state_path_of(&repo, &gate);
    let text = format!(
        "{}\nunblocks: todo_dead00beef00\n",
        env.state_file(&repo, &path)
    );
    let good = env.tip(&repo);
    let bad = env.commit_state_file(&repo, &path, &text);

    let report = doctor_rev(&env, &repo, &bad, 3);
    assert_eq!(report["error"]["code"], "state_invalid");
    assert_eq!(
        errors(&report),
        vec![(path.clone(), "unblocks".into(), line_of(&text, "unblocks:"))]
    );
    let message = report["problems"][0]["message"].as_str().unwrap();
    assert!(message.contains("todo_dead00beef00"), "{message}");

    // The text form names it as compilers do; the commit before is fine.
    let text_run = env
        .loopx(&repo, &["doctor", "--rev", "loopx-state"])
        .failure(3);
    let expected = format!(
        "{path}:{}:1: error: unblocks: ",
        line_of(&text, "unblocks:")
    );
    assert!(text_run.stdout.contains(&expected), "{}", text_run.stdout);
    assert!(
        text_run.stderr.contains("state_invalid"),
        "{}",
        text_run.stderr
    );
    let ok = env
        .loopx(&repo, &["doctor", "--rev", "loopx-state~1"])
        .success();
    assert!(ok.stdout.starts_with("ok: state commit"), "{}", ok.stdout);
    assert_eq!(
        doctor_rev(&env, &repo, &good, 0)["problems"],
        serde_json::json!([])
    );
}

#[test]
fn a_duplicate_id_in_two_shards_is_named_in_both_files() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let id = env.add_todo(&repo, "Write the parser");
    let path = env.state_path_of(&repo, &id);
    let body = env.state_file(&repo, &path) + "\n";
    let shard = &id["todo_".len().."todo_".len() + 2];
    let other_shard = if shard == "ff" { "00" } else { "ff" };
    let copy = path.replace(
        &format!("/todos/{shard}/"),
        &format!("/todos/{other_shard}/"),
    );
    env.commit_state_file(&repo, &copy, &body);

    let report = doctor_rev(&env, &repo, "loopx-state", 3);
    let errors = errors(&report);
    assert_eq!(errors.len(), 2, "{report:#}");
    // Both errors are about the copy: it is in the wrong shard, and its id
    // is held by the original file too (named in the message).
    assert!(
        errors
            .iter()
            .all(|(p, f, l)| *p == copy && f == "id" && *l == 1),
        "{errors:?}"
    );
    let messages = report["problems"].to_string();
    assert!(
        messages.contains(&format!("belongs in shard `{shard}`")),
        "{messages}"
    );
    assert!(
        messages.contains(&format!("duplicate todo id `{id}`: {path} holds it too")),
        "{messages}"
    );

    // The normal loader refuses the same commit (at its first problem).
    let status = env.loopx(&repo, &["--json", "status"]).failure(3).json();
    assert!(
        status["error"]["message"].as_str().unwrap().contains(&copy),
        "{status}"
    );
}

#[test]
fn a_wrong_field_type_is_named_with_the_parsers_line_and_column() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let id = env.add_todo(&repo, "Write the parser");
    let path = env.state_path_of(&repo, &id);
    let text = env
        .state_file(&repo, &path)
        .replace("rev: 1", "rev: one")
        .replace("priority: P2", "priority: urgent")
        + "\n";
    env.commit_state_file(&repo, &path, &text);

    let report = doctor_rev(&env, &repo, "loopx-state", 3);
    let errors = errors(&report);
    assert_eq!(
        errors.len(),
        1,
        "the parser stops at the file's first error: {report:#}"
    );
    let (p, field, line) = &errors[0];
    assert_eq!(p, &path);
    assert!(field == "priority" || field == "rev", "{report:#}");
    assert_eq!(*line, line_of(&text, &format!("{field}:")), "{report:#}");
    assert!(
        report["problems"][0]["column"].as_u64().is_some(),
        "{report:#}"
    );
}

#[test]
fn problems_in_several_files_are_all_reported_and_outside_files_only_warn() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let a = env.add_todo(&repo, "A");
    let b = env.add_todo(&repo, "B");
    let (pa, pb) = (env.state_path_of(&repo, &a), env.state_path_of(&repo, &b));
    let ta = env.state_file(&repo, &pa) + "\nresume_when: todo_done:todo_000000000000\n";
    let tb = env.state_file(&repo, &pb) + "\nsuccessors:\n  - " + &a + "\n  - todo_111111111111\n";
    env.commit_state_file(&repo, &pa, &ta);
    env.commit_state_file(&repo, &pb, &tb);
    env.commit_state_file(&repo, "README.md", "notes by a person\n");

    let report = doctor_rev(&env, &repo, "loopx-state", 3);
    let mut expected = vec![
        (
            pa.clone(),
            "resume_when".to_owned(),
            line_of(&ta, "resume_when:"),
        ),
        (
            pb.clone(),
            "successors[1]".to_owned(),
            line_of(&tb, "successors:") + 2,
        ),
    ];
    expected.sort();
    assert_eq!(errors(&report), expected, "{report:#}");
    assert_eq!(report["warnings"], 1);
    assert_eq!(report["problems"][0]["path"], "README.md");
    assert_eq!(report["problems"][0]["severity"], "warning");

    // A README alone is only a warning: the commit passes.
    let env2 = TestEnv::new();
    let repo2 = env2.state_repo("r");
    env2.commit_state_file(&repo2, "README.md", "notes\n");
    let run = env2
        .loopx(&repo2, &["doctor", "--rev", "loopx-state"])
        .success();
    assert!(
        run.stdout
            .contains("warning: not a file of the state layout"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("ok: state commit"), "{}", run.stdout);
}

#[test]
fn a_revision_that_is_not_a_state_commit_is_refused_as_such() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let run = env
        .loopx(&repo, &["--json", "doctor", "--rev", "main"])
        .failure(2)
        .json();
    assert!(
        run["error"]["message"]
            .as_str()
            .unwrap()
            .contains("is not a state commit"),
        "{run}"
    );
    let run = env
        .loopx(&repo, &["--json", "doctor", "--rev", "nope"])
        .failure(2)
        .json();
    assert!(
        run["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a commit git knows"),
        "{run}"
    );
    env.loopx(&repo, &["doctor", "--rev", "loopx-state", "--repair"])
        .failure(2);
}

/// Every commit of `loopx-state` in `repo` passes `doctor --rev` with no
/// problem at all; returns how many were checked.
pub fn every_commit_passes(env: &TestEnv, repo: &Path) -> usize {
    let commits = env.git(repo, &["rev-list", "loopx-state"]);
    let mut n = 0;
    for commit in commits.lines() {
        let report = doctor_rev(env, repo, commit, 0);
        assert_eq!(
            report["problems"],
            serde_json::json!([]),
            "{commit} ({})",
            env.git(repo, &["log", "-1", "--format=%s", commit])
        );
        n += 1;
    }
    n
}

/// A history with every kind of write git-loopx makes, across two clones
/// with a sync merge and a redact: `doctor --rev` accepts every commit.
#[test]
fn every_commit_of_a_rich_history_passes() {
    let env = TestEnv::new();
    let (_remote, dirs) = env.shared_state(&["a", "b"]);
    let (a, b) = (&dirs[0], &dirs[1]);
    let ok = |dir: &Path, args: &[&str]| env.loopx(dir, args).success().json();
    let as_a = |args: &[&str]| {
        let mut all = vec!["--json", "--agent", "agent-a"];
        all.extend_from_slice(args);
        ok(a, &all)
    };
    let as_b = |args: &[&str]| {
        let mut all = vec!["--json", "--agent", "agent-b"];
        all.extend_from_slice(args);
        ok(a, &all)
    };
    as_a(&["agent", "register", "agent-a", "--runtime", "claude-code"]);
    as_b(&["agent", "register", "agent-b", "--runtime", "codex"]);
    let t1 = env.add_todo(a, "Write the tokenizer");
    let t2 = env.add_todo(a, "Write the parser");
    let t3 = ok(
        a,
        &[
            "--json",
            "todo",
            "add",
            "Write the docs",
            "--resume-when",
            &format!("todo_done:{t2}"),
        ],
    )["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    ok(
        a,
        &["--json", "todo", "update", &t3, "--status", "deferred"],
    );

    // Leases: claim, renew, a writeback, a spend and its void, done --next.
    as_a(&["todo", "claim", &t1]);
    as_a(&["todo", "renew", &t1, "--ttl", "2h"]);
    let wb = as_a(&[
        "writeback",
        "--todo",
        &t1,
        "--outcome",
        "outcome_progress",
        "--summary",
        "tokenizer with tests",
        "--artifact",
        "HEAD",
    ]);
    let run = wb["run"]["id"].as_str().unwrap().to_owned();
    let spend = as_a(&["quota", "spend", "--writeback", &run]);
    let spend = spend["spend"]["id"].as_str().unwrap().to_owned();
    as_a(&["quota", "void", &spend, "--note", "charged twice"]);
    as_a(&["quota", "spend", "--writeback", &run]);
    as_a(&[
        "todo",
        "done",
        &t1,
        "--evidence",
        "tests pass",
        "--next",
        "Benchmark the tokenizer",
    ]);

    // Gates: one on a todo, one on an agent; both answered by the person.
    let g1 = ok(a, &["--json", "gate", "add", "License?", "--unblocks", &t2])["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let g2 = ok(
        a,
        &[
            "--json",
            "gate",
            "add",
            "Pause b?",
            "--blocks-agent",
            "agent-b",
        ],
    )["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    ok(
        a,
        &[
            "--json",
            "gate",
            "resolve",
            &g1,
            "--approve",
            "--note",
            "MIT",
        ],
    );
    ok(a, &["--json", "gate", "resolve", &g2, "--reject"]);

    // A handoff, a release, and the parser done (the deferred todo waits on it).
    as_b(&["todo", "claim", &t2]);
    as_b(&[
        "todo",
        "handoff",
        &t2,
        "--to",
        "agent-a",
        "--note",
        "needs the tokenizer author",
    ]);
    as_a(&["todo", "release", &t2]);
    as_a(&["todo", "claim", &t2]);
    as_a(&["todo", "done", &t2, "--evidence", "parser merged"]);

    // Two clones write at once; the second sync merges.
    ok(a, &["--json", "sync"]);
    ok(b, &["--json", "sync"]);
    env.add_todo(a, "From a");
    env.add_todo(b, "From b");
    ok(a, &["--json", "sync"]);
    ok(b, &["--json", "sync"]);
    ok(a, &["--json", "sync"]);
    assert!(
        !env.git(b, &["rev-list", "--merges", "loopx-state"])
            .is_empty(),
        "a sync merge was made"
    );

    // A redact of an unpushed slip.
    env.add_todo(b, "Ask about project-bluebird-internal");
    ok(
        b,
        &[
            "--json",
            "redact",
            "all",
            "--text",
            "project-bluebird-internal",
        ],
    );

    let checked = every_commit_passes(&env, b);
    assert!(checked >= 25, "{checked} commits");
    assert!(!env
        .git(b, &["log", "-p", "loopx-state"])
        .contains("bluebird"));
    every_commit_passes(&env, a);
}
