//! Decisions that differed from LoopX 2.1.1 (issue 46, items 13–18): each
//! matched here, or kept on purpose with its line in docs/loopx-compat.md
//! ("Decisions of issue 46") and pinned by a test.

use crate::env::TestEnv;

fn todo_id(run: crate::env::Run) -> String {
    run.success().json()["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Item 17, matched: an agent completes only a todo it holds (or held,
/// when no one took it over since); the person completes any.
#[test]
fn an_agent_completes_only_what_it_claimed() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let t = todo_id(env.loopx(&repo, &["--json", "todo", "add", "Never claimed"]));
    let out = env
        .loopx(
            &repo,
            &[
                "--json",
                "--agent",
                "a1",
                "todo",
                "done",
                &t,
                "--evidence",
                "e",
            ],
        )
        .failure(1)
        .json();
    assert_eq!(out["error"]["code"], "not_claim_holder", "{out}");
    assert!(
        out["error"]["hint"]
            .as_str()
            .unwrap()
            .contains(&format!("git loopx --agent a1 todo claim {t}")),
        "{out}"
    );
    // Another agent's lease, run out: still not a1's to complete.
    env.loopx_at(
        &repo,
        "2026-12-01T00:00:00Z",
        &["--agent", "a2", "todo", "claim", &t, "--ttl", "1m"],
    )
    .success();
    env.loopx_at(
        &repo,
        "2026-12-01T01:00:00Z",
        &["--agent", "a1", "todo", "done", &t, "--evidence", "e"],
    )
    .failure(1);
    // Its own lease, run out and not taken over: it may.
    env.loopx_at(
        &repo,
        "2026-12-01T02:00:00Z",
        &["--agent", "a2", "todo", "done", &t, "--evidence", "e"],
    )
    .success();
    // The person completes a todo nobody claimed.
    let u = todo_id(env.loopx(&repo, &["--json", "todo", "add", "The person's"]));
    env.loopx(&repo, &["todo", "done", &u, "--evidence", "done by hand"])
        .success();
}

/// Item 13, matched where agents are registered: once the state registers
/// agents, an id not among them (a typo) is refused before it writes —
/// it cannot claim, write back, spend or walk past a gate meant for the
/// agent it meant to be. A state with no registry (one person, one
/// agent, the README's tour) takes any id, as before.
#[test]
fn an_unregistered_agent_is_refused_where_agents_are_registered() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let t = todo_id(env.loopx(&repo, &["--json", "todo", "add", "Work"]));
    // No registry: any id.
    env.loopx(&repo, &["--agent", "anyone", "todo", "claim", &t])
        .success();
    env.loopx(&repo, &["--agent", "anyone", "todo", "release", &t])
        .success();
    env.loopx(&repo, &["agent", "register", "agent-a"])
        .success();
    env.loopx(
        &repo,
        &["gate", "add", "Hold agent-a", "--blocks-agent", "agent-a"],
    )
    .success();
    let before = env.tip(&repo);
    for args in [
        vec!["todo", "claim", t.as_str()],
        vec![
            "writeback",
            "--todo",
            t.as_str(),
            "--outcome",
            "outcome_progress",
            "--summary",
            "x",
        ],
        vec!["should-run", "--turn", "k1"],
    ] {
        let mut all = vec!["--json", "--agent", "agnet-a"];
        all.extend(args.iter().copied());
        let out = env.loopx(&repo, &all).failure(2).json();
        let message = out["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("agent `agnet-a` is not registered") && message.contains("agent-a"),
            "{args:?}: {out}"
        );
        assert!(
            out["error"]["hint"]
                .as_str()
                .unwrap()
                .contains("git loopx agent register agnet-a"),
            "{out}"
        );
    }
    assert_eq!(env.tip(&repo), before, "nothing written");
    // The registered one is held by its gate, as it should be.
    let d = env
        .loopx(&repo, &["--json", "--agent", "agent-a", "should-run"])
        .success()
        .json();
    assert_eq!(d["should_run"], false, "{d}");
    // Registering is how a new agent joins.
    env.loopx(
        &repo,
        &["--agent", "agent-b", "agent", "register", "agent-b"],
    )
    .success();
    env.loopx(&repo, &["--agent", "agent-b", "todo", "claim", &t])
        .success();
}

fn should_run(env: &TestEnv, repo: &std::path::Path, agent: &str) -> serde_json::Value {
    env.loopx(repo, &["--json", "--agent", agent, "should-run"])
        .success()
        .json()
}

/// Item 14, matched: work is taken by priority, a ready deferred
/// successor included, and the reason says so; at the same priority an
/// open todo comes first.
#[test]
fn a_ready_successor_at_a_higher_priority_goes_before_open_work() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let a = todo_id(env.loopx(&repo, &["--json", "todo", "add", "First"]));
    let b = todo_id(env.loopx(
        &repo,
        &[
            "--json",
            "todo",
            "add",
            "Successor",
            "--priority",
            "P0",
            "--resume-when",
            &format!("todo_done:{a}"),
        ],
    ));
    env.loopx(&repo, &["todo", "update", &b, "--status", "deferred"])
        .success();
    let open = todo_id(env.loopx(&repo, &["--json", "todo", "add", "Open P2"]));
    env.loopx(&repo, &["--agent", "a1", "todo", "claim", &a])
        .success();
    env.loopx(
        &repo,
        &[
            "--agent",
            "a1",
            "todo",
            "done",
            &a,
            "--evidence",
            "e",
            "--no-follow-up",
        ],
    )
    .success();
    let d = should_run(&env, &repo, "a1");
    assert_eq!(d["selected_todo"]["id"], b, "{d}");
    let reason = d["reason"].as_str().unwrap();
    assert!(
        reason.contains(&b) && reason.contains(&open) && reason.contains("priority"),
        "{reason}"
    );
    let next = env
        .loopx(&repo, &["--json", "--agent", "a1", "todo", "next"])
        .success()
        .json();
    assert_eq!(next["todo"]["id"], b, "{next}");
}

/// Item 15, matched: a `blocker` is never selected as work, and one added
/// without a priority is P0, as LoopX stores it.
#[test]
fn a_blocker_is_never_selected_and_is_p0_by_default() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let blocker = todo_id(env.loopx(
        &repo,
        &[
            "--json",
            "todo",
            "add",
            "The CI runner is down",
            "--class",
            "blocker",
        ],
    ));
    let shown = env
        .loopx(&repo, &["--json", "todo", "show", &blocker])
        .success()
        .json();
    assert_eq!(shown["todo"]["priority"], "P0");
    let d = should_run(&env, &repo, "a1");
    assert!(
        d["selected_todo"].is_null(),
        "a lone blocker is not work: {d}"
    );
    let work = todo_id(env.loopx(
        &repo,
        &["--json", "todo", "add", "Work", "--priority", "P1"],
    ));
    let d = should_run(&env, &repo, "a1");
    assert_eq!(d["selected_todo"]["id"], work, "{d}");
    // status names it, as what blocks.
    let status = env.loopx(&repo, &["--json", "status"]).success().json();
    let blocked: Vec<&str> = status["blocked"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(blocked, [blocker.as_str()], "{status}");
}

/// Item 18, matched: `status` and `review` name each blocked todo and why
/// (its latest note).
#[test]
fn status_and_review_name_blocked_todos_and_why() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let t = todo_id(env.loopx(&repo, &["--json", "todo", "add", "Publish the crate"]));
    env.loopx(
        &repo,
        &[
            "todo",
            "update",
            &t,
            "--status",
            "blocked",
            "--note",
            "the registry token expired",
        ],
    )
    .success();
    let status = env.loopx(&repo, &["--json", "status"]).success().json();
    assert_eq!(status["blocked"][0]["id"], t, "{status}");
    assert_eq!(status["blocked"][0]["why"], "the registry token expired");
    let text = env.loopx(&repo, &["status"]).success().stdout;
    assert!(
        text.contains(&format!(
            "{t} Publish the crate: the registry token expired"
        )),
        "{text}"
    );
    let review = env.loopx(&repo, &["--json", "review"]).success().json();
    assert_eq!(
        review["blocked"][0]["why"], "the registry token expired",
        "{review}"
    );
    let text = env.loopx(&repo, &["review"]).success().stdout;
    assert!(text.contains("the registry token expired"), "{text}");
}

/// Item 18, matched: a skip names each cause of waiting — here a todo
/// that excludes the agent — not a list of causes it may be.
#[test]
fn a_wait_names_its_cause() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    env.loopx(
        &repo,
        &["todo", "add", "Not for a1", "--exclude-agent", "a1"],
    )
    .success();
    let d = should_run(&env, &repo, "a1");
    assert_eq!(d["effective_action"], "blocked_wait", "{d}");
    let reason = d["reason"].as_str().unwrap();
    assert_eq!(
        reason, "nothing is ready: of the todos, 1 exclude this agent",
        "{d}"
    );
}
