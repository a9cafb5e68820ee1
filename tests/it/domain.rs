//! The control-plane domain end to end: two agents, claims, a gate,
//! writebacks and a handoff, with JSON and YAML snapshots at each step.

use crate::env::{Redactor, Run, TestEnv};

fn id(run: &Run) -> String {
    run.json()["todo"]["id"].as_str().unwrap().to_owned()
}

#[test]
fn two_agents_through_claims_gate_writebacks_and_handoff() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let mut r = Redactor::default();
    let a = |args: &[&str]| {
        let mut all = vec!["--json", "--agent", "agent-a"];
        all.extend_from_slice(args);
        env.loopx(&repo, &all)
    };
    let b = |args: &[&str]| {
        let mut all = vec!["--json", "--agent", "agent-b"];
        all.extend_from_slice(args);
        env.loopx(&repo, &all)
    };

    a(&[
        "agent",
        "register",
        "agent-a",
        "--runtime",
        "codex",
        "--capability",
        "rust",
    ])
    .success();
    b(&["agent", "register", "agent-b", "--runtime", "claude-code"]).success();
    let t1 = id(&a(&[
        "todo",
        "add",
        "Write the tokenizer",
        "--priority",
        "P1",
        "--validate",
        "true",
        "--requires-capability",
        "rust",
    ])
    .success());
    let t2 = id(&a(&[
        "todo",
        "add",
        "Write the parser",
        "--resume-when",
        &format!("todo_done:{}", &t1[..9]),
    ])
    .success());
    let t3 = id(&a(&["todo", "add", "Publish the crate", "--priority", "P3"]).success());
    let gate = env
        .loopx(
            &repo,
            &[
                "--json",
                "gate",
                "add",
                "Publish under the MIT license?",
                "--unblocks",
                &t3,
            ],
        )
        .success();
    let g = gate.json()["gate"]["id"].as_str().unwrap().to_owned();
    // Redact in a stable order: t1, t2, t3, gate.
    for id in [&t1, &t2, &t3, &g] {
        r.redact(id);
    }
    insta::assert_snapshot!(
        "e2e_01_gate",
        r.redact(&env.state_file(&repo, &env.state_path_of(&repo, &g)))
    );

    // agent-a takes the P1 tokenizer (it has the capability).
    let claim = a(&["todo", "next", "--claim"]).success().json();
    assert_eq!(claim["todo"]["id"], t1.as_str());
    assert_eq!(
        (
            claim["claim"]["agent"].as_str(),
            claim["claim"]["epoch"].as_u64()
        ),
        (Some("agent-a"), Some(1))
    );
    insta::assert_snapshot!("e2e_02_claim", r.json(&claim));

    // agent-b has nothing: t1 is held, t2 waits for t1, t3 waits for the gate.
    let nothing = b(&["todo", "next", "--claim"]).failure(1).json();
    insta::assert_snapshot!("e2e_03_nothing_ready", r.json(&nothing));

    // agent-a writes back, then completes with validation.
    let wb = a(&[
        "writeback",
        "--todo",
        &t1,
        "--outcome",
        "outcome_progress",
        "--summary",
        "tokenizer with tests",
        "--artifact",
        "HEAD",
        "--next-action",
        "parser next",
    ])
    .success()
    .json();
    let run_id = wb["run"]["id"].as_str().unwrap().to_owned();
    assert_eq!(wb["accountable"], true);
    insta::assert_snapshot!(
        "e2e_04_writeback_run",
        r.redact(&env.state_file(&repo, &env.state_path_of(&repo, &run_id)))
    );
    let done = a(&["todo", "done", &t1, "--evidence", "tests pass"])
        .success()
        .json();
    assert_eq!(done["validation"]["exit_code"], 0);
    insta::assert_snapshot!(
        "e2e_05_t1_done",
        r.redact(&env.state_file(&repo, &env.state_path_of(&repo, &t1)))
    );

    // agent-b now gets the parser, and hands it to agent-a.
    let claim = b(&["todo", "next", "--claim"]).success().json();
    assert_eq!(claim["todo"]["id"], t2.as_str());
    let handoff = b(&[
        "todo",
        "handoff",
        &t2,
        "--to",
        "agent-a",
        "--note",
        "needs the tokenizer author",
    ])
    .success()
    .json();
    assert_eq!(
        (
            handoff["claim"]["agent"].as_str(),
            handoff["claim"]["epoch"].as_u64()
        ),
        (Some("agent-a"), Some(2))
    );
    let gone = b(&[
        "writeback",
        "--todo",
        &t2,
        "--outcome",
        "outcome_progress",
        "--summary",
        "late",
    ])
    .failure(1)
    .json();
    assert_eq!(
        gone["error"]["code"], "not_claim_holder",
        "b handed it off: it no longer holds it"
    );
    insta::assert_snapshot!(
        "e2e_06_t2_handed_off",
        r.redact(&env.state_file(&repo, &env.state_path_of(&repo, &t2)))
    );

    // The human approves the gate; the crate can be published.
    let resolved = env
        .loopx(
            &repo,
            &[
                "--json",
                "gate",
                "resolve",
                &g[..10],
                "--approve",
                "--note",
                "yes, MIT",
            ],
        )
        .success()
        .json();
    assert_eq!(resolved["gate"]["decision"], "approve");

    // agent-a completes the parser and hands the docs to agent-b in one commit.
    let before = env.tip(&repo);
    let done = a(&[
        "todo",
        "done",
        &t2,
        "--evidence",
        "parser merged",
        "--next",
        "Write the docs",
        "--next-agent",
        "agent-b",
    ])
    .success()
    .json();
    assert_eq!(
        env.git(
            &repo,
            &["rev-list", "--count", &format!("{before}..loopx-state")]
        ),
        "1"
    );
    let succ = done["successor"]["id"].as_str().unwrap().to_owned();
    assert_eq!(done["successor"]["claim"]["agent"], "agent-b");
    assert_eq!(done["todo"]["successors"][0], succ.as_str());
    let next = b(&["todo", "next"]).success().json();
    assert_eq!(
        next["todo"]["id"],
        succ.as_str(),
        "b's own claim comes first"
    );
    let next = a(&["todo", "next"]).success().json();
    assert_eq!(
        next["todo"]["id"],
        t3.as_str(),
        "the gate no longer holds t3 back"
    );

    let status = env.loopx(&repo, &["--json", "status"]).success().json();
    insta::assert_snapshot!("e2e_07_status", r.json(&status));
    let log = env.git(&repo, &["log", "--format=%s", "loopx-state"]);
    insta::assert_snapshot!("e2e_08_log", r.redact(&log));
}

#[test]
fn expired_lease_taken_over_fences_the_old_holder() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let t = id(&env
        .loopx(&repo, &["--json", "todo", "add", "contested"])
        .success());
    let t0 = "2026-12-02T10:00:00Z";
    let t11 = "2026-12-02T10:11:00Z";
    let a = env
        .loopx_at(
            &repo,
            t0,
            &[
                "--json", "--agent", "agent-a", "todo", "claim", &t, "--ttl", "10m",
            ],
        )
        .success()
        .json();
    assert_eq!(a["claim"]["expires_at"], "2026-12-02T10:10:00Z");
    // Still live at +5 min: B is refused, naming the holder and the expiry.
    let refused = env
        .loopx_at(
            &repo,
            "2026-12-02T10:05:00Z",
            &["--json", "--agent", "agent-b", "todo", "claim", &t],
        )
        .failure(1)
        .json();
    assert_eq!(refused["error"]["code"], "claim_conflict");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("agent-a") && message.contains("2026-12-02T10:10:00Z"),
        "{message}"
    );
    // At +11 min the lease has expired: B takes it with epoch 2.
    let b = env
        .loopx_at(
            &repo,
            t11,
            &["--json", "--agent", "agent-b", "todo", "claim", &t],
        )
        .success()
        .json();
    assert_eq!(b["claim"]["epoch"], 2);
    let tip = env.tip(&repo);
    let wb = env
        .loopx_at(
            &repo,
            t11,
            &[
                "--json",
                "--agent",
                "agent-a",
                "writeback",
                "--todo",
                &t,
                "--outcome",
                "outcome_progress",
                "--summary",
                "late",
            ],
        )
        .failure(1)
        .json();
    assert_eq!(wb["error"]["code"], "stale_epoch");
    let done = env
        .loopx_at(
            &repo,
            t11,
            &[
                "--json",
                "--agent",
                "agent-a",
                "todo",
                "done",
                &t,
                "--evidence",
                "mine",
            ],
        )
        .failure(1)
        .json();
    assert_eq!(done["error"]["code"], "stale_epoch");
    assert_eq!(env.tip(&repo), tip, "the stale holder wrote nothing");
    let show = env
        .loopx_at(&repo, t11, &["--json", "todo", "show", &t])
        .success()
        .json();
    assert_eq!(show["todo"]["claim"]["agent"], "agent-b");
    assert_eq!(show["todo"]["claim"]["epoch"], 2);
    assert_eq!(show["todo"]["status"], "open");
    // Passing --epoch explicitly fences the same way from another host.
    let other = env
        .loopx_at(
            &repo,
            t11,
            &[
                "--json", "--agent", "agent-b", "todo", "renew", &t, "--epoch", "1",
            ],
        )
        .failure(1)
        .json();
    assert_eq!(other["error"]["code"], "stale_epoch");
    // The same agent re-claiming is idempotent, same epoch: before half the
    // lease has run it is `held` and writes nothing.
    let again = env
        .loopx_at(
            &repo,
            "2026-12-02T10:20:00Z",
            &["--json", "--agent", "agent-b", "todo", "claim", &t],
        )
        .success()
        .json();
    assert_eq!(
        (again["action"].as_str(), again["claim"]["epoch"].as_u64()),
        (Some("held"), Some(2))
    );
    // Release keeps the epoch; the next holder gets 3.
    env.loopx_at(
        &repo,
        "2026-12-02T10:21:00Z",
        &["--agent", "agent-b", "todo", "release", &t],
    )
    .success();
    let show = env
        .loopx(&repo, &["--json", "todo", "show", &t])
        .success()
        .json();
    assert_eq!(show["todo"]["last_epoch"], 2);
    let c = env
        .loopx_at(
            &repo,
            "2026-12-02T10:22:00Z",
            &["--json", "--agent", "agent-c", "todo", "claim", &t],
        )
        .success()
        .json();
    assert_eq!(c["claim"]["epoch"], 3);
}

#[test]
fn failed_validation_refuses_completion_and_is_recorded() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let t = id(&env
        .loopx(
            &repo,
            &["--json", "todo", "add", "x", "--validate", "sh -c 'exit 3'"],
        )
        .success());
    env.loopx(&repo, &["--agent", "agent-a", "todo", "claim", &t])
        .success();
    let out = env
        .loopx(
            &repo,
            &[
                "--json",
                "--agent",
                "agent-a",
                "todo",
                "done",
                &t,
                "--evidence",
                "e",
            ],
        )
        .failure(1)
        .json();
    assert_eq!(out["error"]["code"], "validation_failed");
    let show = env
        .loopx(&repo, &["--json", "todo", "show", &t])
        .success()
        .json();
    assert_eq!(show["todo"]["status"], "open");
    let history = env
        .loopx(&repo, &["--json", "history", "--kind", "writeback"])
        .success()
        .json();
    assert_eq!(history["runs"][0]["validation"]["exit_code"], 3);
    assert_eq!(history["runs"][0]["outcome"], "outcome_gap");
    // No shell: a `;` would be an argument, not a command separator, so a
    // validate that relies on one is refused when it is added; quoted, it is
    // an argument.
    env.loopx(
        &repo,
        &["--json", "todo", "add", "y", "--validate", "true ; false"],
    )
    .failure(2);
    let t2 = id(&env
        .loopx(
            &repo,
            &["--json", "todo", "add", "y", "--validate", "true ';' false"],
        )
        .success());
    env.loopx(&repo, &["--agent", "agent-a", "todo", "claim", &t2])
        .success();
    env.loopx(
        &repo,
        &["--agent", "agent-a", "todo", "done", &t2, "--evidence", "e"],
    )
    .success();
    // A validator that hangs is killed at the timeout.
    let t3 = id(&env
        .loopx(
            &repo,
            &["--json", "todo", "add", "z", "--validate", "sleep 30"],
        )
        .success());
    env.loopx(&repo, &["--agent", "agent-a", "todo", "claim", &t3])
        .success();
    let out = env
        .loopx(
            &repo,
            &[
                "--json",
                "--agent",
                "agent-a",
                "todo",
                "done",
                &t3,
                "--evidence",
                "e",
                "--validate-timeout",
                "1s",
            ],
        )
        .failure(1)
        .json();
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .contains("timed out after 1s"),
        "{out}"
    );
}

#[test]
fn bad_input_is_refused_precisely_and_commits_nothing() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let t1 = id(&env
        .loopx(&repo, &["--json", "todo", "add", "one"])
        .success());
    // Find two todos sharing a first hex digit, for an ambiguous prefix.
    let mut ids = vec![t1];
    let ambiguous = loop {
        let t = id(&env
            .loopx(
                &repo,
                &["--json", "todo", "add", &format!("more {}", ids.len())],
            )
            .success());
        if let Some(other) = ids.iter().find(|o| o.as_bytes()[5] == t.as_bytes()[5]) {
            break (other.clone(), t);
        }
        ids.push(t);
    };
    let tip = env.tip(&repo);
    let cases: Vec<(Vec<String>, i32, &str, &str)> = vec![
        (
            vec!["todo".into(), "add".into(), "   ".into()],
            2,
            "invalid_input",
            "todo text is empty",
        ),
        (
            vec!["todo".into(), "show".into(), "todo_XYZ".into()],
            2,
            "invalid_input",
            "not a todo id",
        ),
        (
            vec![
                "todo".into(),
                "claim".into(),
                "todo_ffffffffffff".into(),
                "--agent".into(),
                "a".into(),
            ],
            2,
            "todo_not_found",
            "no todo matches",
        ),
        (
            vec![
                "todo".into(),
                "add".into(),
                "x".into(),
                "--class".into(),
                "epic".into(),
            ],
            2,
            "invalid_input",
            "epic",
        ),
        (
            vec![
                "todo".into(),
                "add".into(),
                "x".into(),
                "--role".into(),
                "user".into(),
            ],
            2,
            "invalid_input",
            "explicit class",
        ),
        (
            vec![
                "todo".into(),
                "add".into(),
                "x".into(),
                "--class".into(),
                "user_gate".into(),
            ],
            2,
            "invalid_input",
            "not a class of agent todos",
        ),
        (
            vec![
                "todo".into(),
                "claim".into(),
                ids[0].clone(),
                "--agent".into(),
                "a".into(),
                "--ttl".into(),
                "25h".into(),
            ],
            2,
            "invalid_input",
            "24h maximum",
        ),
        (
            vec![
                "todo".into(),
                "claim".into(),
                ambiguous.0[5..6].to_owned(),
                "--agent".into(),
                "a".into(),
            ],
            2,
            "ambiguous_id",
            "matches",
        ),
        (
            vec![
                "--agent".into(),
                "Bad Agent".into(),
                "todo".into(),
                "list".into(),
            ],
            2,
            "invalid_input",
            "not a valid agent id",
        ),
        (
            vec!["todo".into(), "claim".into(), ids[0].clone()],
            2,
            "invalid_input",
            "needs an agent",
        ),
        (
            vec!["gate".into(), "add".into(), "".into()],
            2,
            "invalid_input",
            "question is empty",
        ),
        (
            vec![
                "todo".into(),
                "add".into(),
                "x".into(),
                "--resume-when".into(),
                "tomorrow".into(),
            ],
            2,
            "invalid_input",
            "todo_done:",
        ),
    ];
    for (args, code, error, needle) in cases {
        let mut all: Vec<&str> = vec!["--json"];
        all.extend(args.iter().map(String::as_str));
        let out = env.loopx(&repo, &all);
        assert_eq!(out.code, code, "{args:?}: {}{}", out.stdout, out.stderr);
        let json = out.json();
        assert_eq!(json["ok"], false, "{args:?}");
        assert_eq!(json["error"]["code"], error, "{args:?}: {json}");
        let text = format!("{} {}", json["error"]["message"], json["error"]["detail"]);
        assert!(text.contains(needle), "{args:?}: `{needle}` not in {text}");
        assert_eq!(env.tip(&repo), tip, "{args:?} committed something");
    }
}
