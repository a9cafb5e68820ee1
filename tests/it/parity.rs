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
