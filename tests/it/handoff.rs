//! `todo handoff` with a packet: flags, a Markdown file or stdin; what is
//! stored, what the receiver's prompt says, `todo show`, `review`, `diff`,
//! and a sync merge.

use std::path::Path;

use crate::env::{run_with_stdin, TestEnv};

/// A repository with agents `a` and `b` registered and a todo claimed by `a`.
fn claimed_by_a(env: &TestEnv, repo: &Path) -> String {
    for agent in ["a", "b"] {
        env.loopx(repo, &["agent", "register", agent]).success();
    }
    let todo = env.add_todo(repo, "parse the headers");
    env.loopx(repo, &["--agent", "a", "todo", "claim", &todo])
        .success();
    todo
}

fn show(env: &TestEnv, repo: &Path, todo: &str) -> serde_json::Value {
    env.loopx(repo, &["--json", "todo", "show", todo])
        .success()
        .json()["todo"]
        .clone()
}

const PACKET: &str = "# Handoff: header parser\n\
\n\
## Summary\n\
The tokenizer is done; folded headers are not.\n\
\n\
## Approaches tried\n\
- one big regex: backtracks forever on long lines\n\
- nom: would add a dependency\n\
\n\
## Next steps\n\
1. unfold continuation lines first\n\
2. then split on the first colon\n\
\n\
## Open questions\n\
- keep the original casing of names?\n\
\n\
## Files\n\
- `src/headers.rs` the tokenizer\n\
- docs/headers.md\n";

#[test]
fn flags_packet_is_stored_on_the_todo() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = claimed_by_a(&env, &repo);
    let abs = repo.join("src/lib.rs");
    let out = env
        .loopx(
            &repo,
            &[
                "--agent",
                "a",
                "todo",
                "handoff",
                &todo,
                "--to",
                "b",
                "--note",
                "over to you",
                "--summary",
                "tokenizer done",
                "--tried",
                "regex: too slow",
                "--tried",
                "a hand parser",
                "--next-step",
                "unfold lines",
                "--next-step",
                "split names",
                "--question",
                "casing?",
                "--file",
                "./src/a/../headers.rs",
                "--file",
                abs.to_str().unwrap(),
            ],
        )
        .success()
        .stdout;
    assert!(out.contains("with a packet"), "{out}");
    let t = show(&env, &repo, &todo);
    let h = &t["handoff"];
    assert_eq!(h["from"], "a");
    assert_eq!(h["to"], "b");
    assert_eq!(h["epoch"], 2);
    assert_eq!(h["work_summary"], "tokenizer done");
    assert_eq!(h["approaches_tried"][0]["approach"], "regex");
    assert_eq!(h["approaches_tried"][0]["reason"], "too slow");
    assert_eq!(h["approaches_tried"][1]["approach"], "a hand parser");
    assert!(h["approaches_tried"][1].get("reason").is_none(), "{h}");
    assert_eq!(
        h["next_steps"],
        serde_json::json!(["unfold lines", "split names"])
    );
    assert_eq!(h["open_questions"], serde_json::json!(["casing?"]));
    assert_eq!(
        h["files"],
        serde_json::json!(["src/headers.rs", "src/lib.rs"])
    );
    // The note still goes to the notes.
    let notes = t["notes"].as_array().unwrap();
    assert_eq!(notes.last().unwrap()["text"], "handoff to b: over to you");
    // `todo show` as text is the todo's file, packet included.
    let text = env.loopx(&repo, &["todo", "show", &todo]).success().stdout;
    assert!(
        text.contains("handoff:") && text.contains("work_summary: tokenizer done"),
        "{text}"
    );
    assert!(text.contains("- src/headers.rs"), "{text}");
}

#[test]
fn markdown_packet_from_a_file_and_from_stdin() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = claimed_by_a(&env, &repo);
    let file = env.path("packet.md");
    std::fs::write(&file, PACKET).unwrap();
    // From a file, with a flag adding a next step; no --note: the summary's
    // first line is the note.
    env.loopx(
        &repo,
        &[
            "--agent",
            "a",
            "todo",
            "handoff",
            &todo,
            "--to",
            "b",
            "--packet",
            file.to_str().unwrap(),
            "--next-step",
            "write the tests",
        ],
    )
    .success();
    let t = show(&env, &repo, &todo);
    let h = &t["handoff"];
    assert_eq!(
        h["work_summary"],
        "The tokenizer is done; folded headers are not."
    );
    assert_eq!(h["approaches_tried"][0]["approach"], "one big regex");
    assert_eq!(
        h["approaches_tried"][0]["reason"],
        "backtracks forever on long lines"
    );
    assert_eq!(
        h["next_steps"],
        serde_json::json!([
            "unfold continuation lines first",
            "then split on the first colon",
            "write the tests"
        ])
    );
    assert_eq!(h["open_questions"][0], "keep the original casing of names?");
    assert_eq!(
        h["files"],
        serde_json::json!(["src/headers.rs", "docs/headers.md"])
    );
    assert_eq!(
        t["notes"].as_array().unwrap().last().unwrap()["text"],
        "handoff to b: The tokenizer is done; folded headers are not."
    );

    // From stdin, back to a: the new packet replaces the old one.
    let mut cmd = env.loopx_cmd(&repo);
    cmd.args([
        "--agent", "b", "todo", "handoff", &todo, "--to", "a", "--packet", "-",
    ]);
    run_with_stdin(
        &mut cmd,
        b"## Work done\nUnfolding works.\n\n## Questions\n- is CRLF legal?\n",
    )
    .success();
    let h = show(&env, &repo, &todo)["handoff"].clone();
    assert_eq!(h["from"], "b");
    assert_eq!(h["to"], "a");
    assert_eq!(h["work_summary"], "Unfolding works.");
    assert_eq!(h["open_questions"], serde_json::json!(["is CRLF legal?"]));
    assert!(
        h.get("next_steps").is_none() && h.get("files").is_none(),
        "{h}"
    );
}

#[test]
fn bad_packets_and_paths_are_refused_and_nothing_is_written() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = claimed_by_a(&env, &repo);
    let tip = env.tip(&repo);
    let file = env.path("bad.md");
    std::fs::write(&file, "## Summary\nok\n\n## Risks\n- the parser\n").unwrap();
    let handoff = |extra: &[&str]| {
        let mut args = vec![
            "--json", "--agent", "a", "todo", "handoff", &todo, "--to", "b",
        ];
        args.extend_from_slice(extra);
        env.loopx(&repo, &args).failure(2).json()["error"].clone()
    };
    let e = handoff(&["--packet", file.to_str().unwrap()]);
    assert_eq!(e["code"], "invalid_input");
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains("line 4") && message.contains("## Risks"),
        "{e}"
    );
    for path in ["/etc/passwd", "../outside.rs", "src/../../x"] {
        let e = handoff(&["--note", "n", "--file", path]);
        assert_eq!(e["code"], "invalid_input", "{path}");
        assert!(e["message"].as_str().unwrap().contains(path), "{path}: {e}");
    }
    let e = handoff(&["--packet", env.path("missing.md").to_str().unwrap()]);
    assert!(
        e["message"].as_str().unwrap().contains("cannot read"),
        "{e}"
    );
    // Neither a note nor a summary: nothing to tell the next agent.
    let e = handoff(&["--question", "why?"]);
    assert!(e["message"].as_str().unwrap().contains("--note"), "{e}");
    assert_eq!(env.tip(&repo), tip, "a refused handoff writes nothing");
    // The lease is still a's.
    assert_eq!(show(&env, &repo, &todo)["claim"]["agent"], "a");
}

#[test]
fn a_handoff_to_an_unregistered_agent_is_still_refused() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = claimed_by_a(&env, &repo);
    let e = env
        .loopx(
            &repo,
            &[
                "--json",
                "--agent",
                "a",
                "todo",
                "handoff",
                &todo,
                "--to",
                "zed",
                "--summary",
                "s",
            ],
        )
        .failure(2)
        .json();
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not a registered agent"),
        "{e}"
    );
    assert!(show(&env, &repo, &todo).get("handoff").is_none());
}

#[test]
fn the_receiver_prompt_carries_the_packet_until_it_writes_back() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = claimed_by_a(&env, &repo);
    let file = env.path("packet.md");
    std::fs::write(&file, PACKET).unwrap();
    env.loopx(
        &repo,
        &[
            "--agent",
            "a",
            "todo",
            "handoff",
            &todo,
            "--to",
            "b",
            "--note",
            "yours",
            "--packet",
            file.to_str().unwrap(),
        ],
    )
    .success();
    let prompt = |agent: &str| {
        env.loopx(&repo, &["--json", "--agent", agent, "prompt"])
            .success()
            .json()
    };
    let p = prompt("b");
    let text = p["prompt"].as_str().unwrap();
    assert_eq!(p["todo"]["id"], todo.as_str(), "{p}");
    assert!(text.contains("## Handoff from a (epoch 2"), "{text}");
    assert!(text.contains("The tokenizer is done"), "{text}");
    assert!(
        text.contains("- one big regex: backtracks forever on long lines"),
        "{text}"
    );
    assert!(
        text.contains("1. unfold continuation lines first"),
        "{text}"
    );
    assert!(
        text.contains("- keep the original casing of names?"),
        "{text}"
    );
    assert!(text.contains("- src/headers.rs"), "{text}");
    assert_eq!(
        p["handoff"]["work_summary"],
        "The tokenizer is done; folded headers are not."
    );
    // The Stop hook's reason is the same prompt.
    let stop = r#"{"hook_event_name":"Stop","session_id":"s","stop_hook_active":false}"#;
    let mut cmd = env.loopx_cmd(&repo);
    cmd.args(["hook", "claude-code", "stop", "--agent", "b"]);
    let hook = run_with_stdin(&mut cmd, stop.as_bytes());
    assert!(
        hook.stdout.contains("backtracks forever"),
        "{}",
        hook.stdout
    );
    // The sender's prompt does not carry it.
    let text = prompt("a")["prompt"].as_str().unwrap().to_owned();
    assert!(!text.contains("backtracks forever"), "{text}");
    // Once b writes back on the todo, its prompt no longer repeats it.
    env.loopx(
        &repo,
        &[
            "--agent",
            "b",
            "writeback",
            "--todo",
            &todo,
            "--outcome",
            "outcome_progress",
            "--summary",
            "unfolded",
        ],
    )
    .success();
    let p = prompt("b");
    assert_eq!(p["todo"]["id"], todo.as_str(), "{p}");
    assert!(p.get("handoff").is_none(), "{p}");
    assert!(
        !p["prompt"].as_str().unwrap().contains("backtracks forever"),
        "{p}"
    );
}

#[test]
fn review_and_diff_show_the_packet() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = claimed_by_a(&env, &repo);
    env.loopx(&repo, &["review", "--ack"]).success();
    env.loopx(
        &repo,
        &[
            "--agent",
            "a",
            "todo",
            "handoff",
            &todo,
            "--to",
            "b",
            "--note",
            "yours",
            "--summary",
            "tokenizer done",
            "--tried",
            "regex: too slow",
            "--file",
            "src/headers.rs",
        ],
    )
    .success();
    let text = env.loopx(&repo, &["review"]).success().stdout;
    assert!(text.contains("a → b"), "{text}");
    assert!(
        text.contains("Work done so far:") && text.contains("tokenizer done"),
        "{text}"
    );
    assert!(text.contains("- regex: too slow"), "{text}");
    let md = env.loopx(&repo, &["review", "--markdown"]).success().stdout;
    assert!(
        md.contains("tokenizer done") && md.contains("headers"),
        "{md}"
    );
    let json = env.loopx(&repo, &["--json", "review"]).success().json();
    assert_eq!(
        json["handoffs"][0]["packet"]["work_summary"], "tokenizer done",
        "{json}"
    );
    let diff = env.loopx(&repo, &["diff"]).success().stdout;
    assert!(
        diff.contains("[packet: summary \"tokenizer done\", 1 approach tried, 1 file]"),
        "{diff}"
    );
    assert!(
        !diff.contains("work_summary"),
        "the packet is told once, readably: {diff}"
    );
}

#[test]
fn a_sync_merge_keeps_the_packet_beside_the_other_side_s_edit() {
    let env = TestEnv::new();
    let (_remote, dirs) = env.shared_state(&["x", "y"]);
    let (x, y) = (&dirs[0], &dirs[1]);
    let todo = claimed_by_a(&env, x);
    env.loopx(x, &["sync"]).success();
    env.loopx(y, &["sync"]).success();
    // x hands off with a packet; meanwhile a, on y (the same lease, epoch
    // 1), raises the priority and adds a note.
    env.loopx(
        x,
        &[
            "--agent",
            "a",
            "todo",
            "handoff",
            &todo,
            "--to",
            "b",
            "--summary",
            "tokenizer done",
            "--next-step",
            "unfold",
        ],
    )
    .success();
    env.loopx(
        y,
        &[
            "--agent",
            "a",
            "todo",
            "update",
            &todo,
            "--priority",
            "P0",
            "--note",
            "urgent now",
            "--epoch",
            "1",
        ],
    )
    .success();
    env.loopx(x, &["sync"]).success();
    env.loopx(y, &["sync"]).success();
    for d in [x, y] {
        env.loopx(d, &["sync"]).success();
        let t = show(&env, d, &todo);
        assert_eq!(t["handoff"]["work_summary"], "tokenizer done", "{t}");
        assert_eq!(t["handoff"]["next_steps"][0], "unfold", "{t}");
        assert_eq!(t["priority"], "P0", "{t}");
        assert_eq!(t["claim"]["agent"], "b", "{t}");
        let notes: Vec<&str> = t["notes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["text"].as_str().unwrap())
            .collect();
        assert!(notes.contains(&"urgent now"), "{notes:?}");
    }
}
