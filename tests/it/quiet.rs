//! Quiet turns write nothing (a skip, a claim already held, a renewal within
//! the same minute), and leases change hands only on purpose: a handoff goes
//! to a registered agent, and a person takes a lease back with `--force`.

use std::path::Path;

use crate::env::{Run, TestEnv};
use crate::runtimes::{install_hooks, Runtime, Session, StopAnswer};

const T0: &str = "2026-12-02T10:00:00Z";

/// How many commits `loopx-state` has.
fn commits(env: &TestEnv, repo: &Path) -> u32 {
    env.git(repo, &["rev-list", "--count", "refs/heads/loopx-state"])
        .parse()
        .unwrap()
}

fn agent(env: &TestEnv, repo: &Path, agent: &str, now: &str, args: &[&str]) -> Run {
    let mut all = vec!["--json", "--agent", agent];
    all.extend_from_slice(args);
    env.loopx_at(repo, now, &all)
}

#[test]
fn skip_polls_with_a_turn_key_write_no_commit() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.loopx(&repo, &["goal", "stop"]).success();
    let before = commits(&env, &repo);
    for (now, key) in [
        ("2026-12-02T10:00:00Z", "poll-1"),
        ("2026-12-02T10:05:00Z", "poll-2"),
        ("2026-12-02T10:10:00Z", "poll-3"),
    ] {
        let d = agent(&env, &repo, "agent-a", now, &["should-run", "--turn", key])
            .success()
            .json();
        assert_eq!(d["should_run"], false, "{d}");
        assert!(d.get("turn").is_none(), "a skip records no receipt: {d}");
        assert!(d.get("commit").is_none(), "a skip makes no commit: {d}");
    }
    assert_eq!(
        commits(&env, &repo),
        before,
        "three skip polls wrote commits"
    );
}

#[test]
fn a_turn_that_runs_records_one_receipt_and_a_retry_replays_it() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.add_todo(&repo, "Write the lexer");
    let before = commits(&env, &repo);
    let d = agent(&env, &repo, "agent-a", T0, &["should-run", "--turn", "k-1"])
        .success()
        .json();
    assert_eq!(d["should_run"], true, "{d}");
    assert_eq!(d["turn"]["replayed"], false);
    assert_eq!(commits(&env, &repo), before + 1, "one receipt, one commit");
    // The goal stops meanwhile: a retry of the same key still gives back
    // the recorded decision (the turn already started), and writes nothing.
    env.loopx(&repo, &["goal", "stop"]).success();
    let stopped = commits(&env, &repo);
    let again = agent(
        &env,
        &repo,
        "agent-a",
        "2026-12-02T10:01:00Z",
        &["should-run", "--turn", "k-1"],
    )
    .success()
    .json();
    assert_eq!(again["turn"]["replayed"], true, "{again}");
    assert_eq!(again["should_run"], true);
    assert_eq!(again["turn"]["run"], d["turn"]["run"]);
    assert_eq!(commits(&env, &repo), stopped, "a replay writes nothing");
}

#[test]
fn stop_hooks_that_let_the_session_go_write_no_commit() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.add_todo(&repo, "Write the lexer");
    env.loopx(&repo, &["goal", "stop"]).success();
    env.git(&repo, &["config", "loopx.agent", "agent-a"]);
    install_hooks(&env, &repo, Runtime::ClaudeCode);
    let before = commits(&env, &repo);
    let mut session = Session::new(&env, &repo, Runtime::ClaudeCode, "s1");
    for _ in 0..3 {
        assert!(matches!(session.stop(false), StopAnswer::End));
    }
    assert_eq!(commits(&env, &repo), before, "a stop that skips wrote");
    // Once the goal runs again, the stop that blocks records one receipt.
    env.loopx(&repo, &["goal", "resume"]).success();
    let resumed = commits(&env, &repo);
    assert!(matches!(session.stop(false), StopAnswer::Block(_)));
    assert_eq!(commits(&env, &repo), resumed + 1);
}

#[test]
fn next_claim_while_holding_it_reports_held_without_a_commit() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let id = env.add_todo(&repo, "Write the lexer");
    let before = commits(&env, &repo);
    let first = agent(&env, &repo, "agent-a", T0, &["todo", "next", "--claim"])
        .success()
        .json();
    assert_eq!(first["action"], "acquired");
    let second = agent(
        &env,
        &repo,
        "agent-a",
        "2026-12-02T10:00:30Z",
        &["todo", "next", "--claim"],
    )
    .success()
    .json();
    assert_eq!(second["action"], "held", "{second}");
    assert_eq!(second["todo"]["id"], id.as_str());
    assert_eq!(second["claim"]["epoch"], first["claim"]["epoch"]);
    assert_eq!(second["claim"]["expires_at"], first["claim"]["expires_at"]);
    assert!(second.get("commit").is_none(), "{second}");
    // `todo claim` by the holder says the same, in words too.
    let text = env
        .loopx_at(
            &repo,
            "2026-12-02T10:01:00Z",
            &["--agent", "agent-a", "todo", "claim", &id],
        )
        .success()
        .stdout;
    assert!(text.starts_with(&format!("already held {id}")), "{text}");
    assert_eq!(commits(&env, &repo), before + 1, "one claim, one commit");
    // Past half the lease, claiming again extends it (one commit).
    let late = agent(
        &env,
        &repo,
        "agent-a",
        "2026-12-02T10:30:00Z",
        &["todo", "next", "--claim"],
    )
    .success()
    .json();
    assert_eq!(late["action"], "renewed", "{late}");
    assert_eq!(late["claim"]["expires_at"], "2026-12-02T11:15:00Z");
    assert_eq!(commits(&env, &repo), before + 2);
}

#[test]
fn renewals_within_a_minute_make_at_most_one_commit() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let id = env.add_todo(&repo, "Write the lexer");
    agent(&env, &repo, "agent-a", T0, &["todo", "claim", &id]).success();
    let before = commits(&env, &repo);
    for now in ["2026-12-02T10:00:20Z", "2026-12-02T10:00:40Z"] {
        let r = agent(&env, &repo, "agent-a", now, &["todo", "renew", &id])
            .success()
            .json();
        assert_eq!(r["action"], "held", "{r}");
        assert_eq!(r["renewed"], false, "{r}");
        assert_eq!(r["todo"]["claim"]["expires_at"], "2026-12-02T10:45:00Z");
    }
    assert!(commits(&env, &repo) <= before + 1, "a commit per renewal");
    // A renewal is still refused to anyone but the holder.
    let refused = agent(&env, &repo, "agent-b", T0, &["todo", "renew", &id])
        .failure(1)
        .json();
    assert_eq!(refused["error"]["code"], "not_claim_holder", "{refused}");
    // Once half the lease has run, a renewal extends it.
    let r = agent(
        &env,
        &repo,
        "agent-a",
        "2026-12-02T10:23:00Z",
        &["todo", "renew", &id],
    )
    .success()
    .json();
    assert_eq!(
        (r["action"].as_str(), r["renewed"].as_bool()),
        (Some("renewed"), Some(true))
    );
    assert_eq!(r["todo"]["claim"]["expires_at"], "2026-12-02T11:08:00Z");
    assert!(r["commit"].is_string(), "{r}");
}

#[test]
fn a_handoff_to_an_unregistered_agent_is_refused_with_the_roster() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    for a in ["agent-a", "agent-b"] {
        env.loopx(&repo, &["agent", "register", a]).success();
    }
    let id = env.add_todo(&repo, "Write the lexer");
    agent(&env, &repo, "agent-a", T0, &["todo", "claim", &id]).success();
    let before = commits(&env, &repo);
    let refused = agent(
        &env,
        &repo,
        "agent-a",
        T0,
        &["todo", "handoff", &id, "--to", "agent-c", "--note", "yours"],
    )
    .failure(2)
    .json();
    assert_eq!(refused["error"]["code"], "invalid_input", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("agent-c"), "{message}");
    let hint = refused["error"]["hint"].as_str().unwrap();
    assert!(hint.contains("agent-a, agent-b"), "{hint}");
    assert_eq!(commits(&env, &repo), before, "a refused handoff wrote");
    // To a registered agent it goes through.
    let r = agent(
        &env,
        &repo,
        "agent-a",
        T0,
        &["todo", "handoff", &id, "--to", "agent-b", "--note", "yours"],
    )
    .success()
    .json();
    assert_eq!(r["claim"]["agent"], "agent-b");
}

#[test]
fn with_no_agent_registered_a_handoff_still_goes_through() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let id = env.add_todo(&repo, "Write the lexer");
    agent(&env, &repo, "agent-a", T0, &["todo", "claim", &id]).success();
    let r = agent(
        &env,
        &repo,
        "agent-a",
        T0,
        &["todo", "handoff", &id, "--to", "agent-b", "--note", "yours"],
    )
    .success()
    .json();
    assert_eq!(r["claim"]["agent"], "agent-b");
}

#[test]
fn a_person_takes_a_lease_back_with_release_force() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let id = env.add_todo(&repo, "Write the lexer");
    let claim = agent(&env, &repo, "agent-a", T0, &["todo", "claim", &id])
        .success()
        .json();
    let epoch = claim["claim"]["epoch"].as_u64().unwrap();
    // Without --force a person is told how.
    let refused = env
        .loopx(&repo, &["--json", "todo", "release", &id])
        .failure(2)
        .json();
    assert!(
        refused["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("--force"),
        "{refused}"
    );
    // Another agent may not force it.
    let refused = agent(
        &env,
        &repo,
        "agent-b",
        T0,
        &["todo", "release", &id, "--force"],
    )
    .failure(1)
    .json();
    assert_eq!(refused["error"]["code"], "not_claim_holder", "{refused}");
    // A person may.
    let r = env
        .loopx(&repo, &["--json", "todo", "release", &id, "--force"])
        .success()
        .json();
    assert!(r["todo"].get("claim").is_none(), "{r}");
    assert!(r["todo"]["last_epoch"].as_u64().unwrap() > epoch, "{r}");
    let note = r["todo"]["notes"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let text = note["text"].as_str().unwrap();
    assert!(
        text.contains("agent-a") && text.contains("Test Committer <committer@example.com>"),
        "{note}"
    );
    let message = env.git(&repo, &["log", "-1", "--format=%B", "loopx-state"]);
    assert!(
        message.contains("force")
            && message.contains("agent-a")
            && message.contains("Test Committer <committer@example.com>"),
        "{message}"
    );
    // The old holder's later writes are fenced off.
    let stale = agent(
        &env,
        &repo,
        "agent-a",
        T0,
        &["todo", "update", &id, "--note", "still on it"],
    )
    .failure(1)
    .json();
    assert_eq!(stale["error"]["code"], "stale_epoch", "{stale}");
    let stale = agent(
        &env,
        &repo,
        "agent-a",
        T0,
        &["todo", "renew", &id, "--epoch", &epoch.to_string()],
    )
    .failure(1)
    .json();
    assert_eq!(stale["error"]["code"], "stale_epoch", "{stale}");
    // And the next claim gets a higher epoch still.
    let next = agent(&env, &repo, "agent-b", T0, &["todo", "claim", &id])
        .success()
        .json();
    assert!(
        next["claim"]["epoch"].as_u64().unwrap() > epoch + 1,
        "{next}"
    );
}
