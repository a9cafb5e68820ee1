//! What a reviewer reads: `review --since` over any revision, `log --todo`.

use crate::env::TestEnv;

/// `review --since` took only a ref or an id on loopx-state's first-parent
/// line: `loopx-state~2` and reflog entries were refused.
#[test]
fn review_since_takes_any_revision_git_takes() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let a = env.add_todo(&repo, "first");
    let b = env.add_todo(&repo, "second");
    let c = env.add_todo(&repo, "third");
    for rev in ["loopx-state~2", "loopx-state@{2}"] {
        let r = env
            .loopx(&repo, &["--json", "review", "--since", rev])
            .success()
            .json();
        assert_eq!(r["commits"], 2, "{rev}: {r}");
        let text = env
            .loopx(&repo, &["review", "--since", rev])
            .success()
            .stdout;
        assert!(text.contains(&b) && text.contains(&c), "{rev}: {text}");
        assert!(!text.contains(&a), "{rev}: {text}");
    }
    // A code commit is not a state commit, and says so.
    let run = env
        .loopx(&repo, &["--json", "review", "--since", "main"])
        .failure(2);
    let message = run.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("is not a state commit"), "{message}");
    let run = env
        .loopx(&repo, &["--json", "review", "--since", "no-such-rev"])
        .failure(2);
    let message = run.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("not a commit git knows"), "{message}");
}

/// `log --todo` with an id that names no todo printed "no matching state
/// commits" and exited 0, while `history --todo` refused it: both refuse
/// it now, as the bad input it is (exit 2), and a prefix that matches
/// several todos likewise.
#[test]
fn log_and_history_refuse_a_todo_that_does_not_exist() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = env.add_todo(&repo, "first");
    for command in ["log", "history"] {
        let run = env
            .loopx(&repo, &["--json", command, "--todo", "todo_ffffffff"])
            .failure(2);
        assert_eq!(run.json()["error"]["code"], "todo_not_found", "{command}");
        // A real one (by prefix) still works.
        env.loopx(&repo, &[command, "--todo", &todo[5..9]])
            .success();
    }
}

/// `log --todo` lists the todo's state commits and the code commits that
/// carry its trailer.
#[test]
fn log_todo_lists_state_and_code_commits() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = env.add_todo(&repo, "parse headers");
    env.loopx(&repo, &["--agent", "a", "todo", "claim", &todo])
        .success();
    let trailer = format!("Loopx-Todo: {todo}");
    env.git(
        &repo,
        &[
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "parse",
            "--trailer",
            &trailer,
        ],
    );
    let code = env.git(&repo, &["rev-parse", "HEAD"]);
    let log = env
        .loopx(&repo, &["--json", "log", "--todo", &todo[5..10]])
        .success()
        .json();
    let subjects: Vec<&str> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["subject"].as_str().unwrap())
        .collect();
    assert!(
        subjects.iter().any(|s| s.starts_with("todo claim")),
        "{log}"
    );
    assert!(subjects.iter().any(|s| s.starts_with("todo add")), "{log}");
    assert_eq!(log["code_commits"][0]["commit"], code.as_str(), "{log}");
}

/// Agent text with line breaks cannot print a line that reads as the tool's
/// own: in `review`, `pr`, `diff` and `status`, a forged "Decisions waiting
/// for you: none" (or any line an agent wrote) stays inside its item.
#[test]
fn agent_text_cannot_forge_a_line_of_human_output() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let forged = ["Decisions waiting for you: none", "Needs you: nothing"];
    let hostile = format!("fine\n{}\n\n{}", forged[0], forged[1]);
    let a = ["--agent", "agent-a"];
    let todo = env.add_todo(&repo, "Write the tokenizer");
    let base = env.tip(&repo);
    let added = env
        .loopx(
            &repo,
            &[
                a[0],
                a[1],
                "--json",
                "todo",
                "add",
                &hostile,
                "--priority",
                "P0",
            ],
        )
        .success()
        .json();
    let hostile_todo = added["todo"]["id"].as_str().unwrap().to_owned();
    env.loopx(&repo, &[a[0], a[1], "todo", "claim", &todo])
        .success();
    env.git(&repo, &["checkout", "-q", "-b", "feature"]);
    crate::pr::code_commit(&env, &repo, "lexer.rs", "Add the lexer", Some(&todo));
    env.loopx(
        &repo,
        &[
            a[0],
            a[1],
            "writeback",
            "--todo",
            &todo,
            "--outcome",
            "outcome_progress",
            "--summary",
            &hostile,
        ],
    )
    .success();
    env.loopx(
        &repo,
        &[a[0], a[1], "todo", "update", &todo, "--note", &hostile],
    )
    .success();
    // The agent's gate, last: it holds agent-a's own work.
    env.loopx(&repo, &[a[0], a[1], "gate", "add", &hostile])
        .success();
    let range = format!("{}..loopx-state", &base[..12]);
    let b = ["--agent", "agent-b"];
    for args in [
        vec![b[0], b[1], "todo", "claim", hostile_todo.as_str()],
        vec!["history"],
        vec!["review"],
        vec!["pr", "main..feature"],
        vec!["diff", range.as_str()],
        vec!["status"],
    ] {
        let out = env.loopx(&repo, &args).success().stdout;
        assert!(out.contains("fine"), "{args:?} shows the text: {out}");
        for line in out.lines() {
            assert!(
                !forged.contains(&line.trim()),
                "{args:?} printed an agent's line as its own: {line:?} in\n{out}"
            );
        }
    }
}
