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
