//! A gate holds at every write it covers (issue 45): while a gate is open,
//! an agent's claim, renew, writeback, done, handoff and update of a todo
//! the gate holds are refused with `gate_open` (exit 1), naming the gate and
//! its question, with nothing written — from the command line, through MCP
//! and for `--sync` claims alike; the work `should-run` still offers beside
//! a scoped gate stays possible; and once the person answers, the same
//! writes go through.

use std::path::{Path, PathBuf};

use crate::env::TestEnv;

/// The three shapes of a gate (SPEC §4 rule 5).
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// Names nothing: holds every agent todo of the goal.
    Global,
    /// `--unblocks T`: holds T, for every agent.
    Unblocks,
    /// `--blocks-agent a1`: holds all of a1's work, and nobody else's.
    BlocksAgent,
}

const QUESTION: &str = "May we deploy to production?";

struct Setup {
    repo: PathBuf,
    /// The todo a1 held before the gate opened.
    held: String,
    /// Another open todo nobody holds.
    other: String,
    gate: String,
}

/// A state with agents a1 and a2, a todo a1 claimed (`held`), another
/// (`other`), and then an open gate of `shape` asked by the person.
fn setup(env: &TestEnv, repo: PathBuf, shape: Shape) -> Setup {
    for a in ["a1", "a2"] {
        env.loopx(&repo, &["agent", "register", a]).success();
    }
    let held = env.add_todo(&repo, "Deploy the release");
    let other = env.add_todo(&repo, "Write the changelog");
    env.loopx(&repo, &["--agent", "a1", "todo", "claim", &held])
        .success();
    let mut args = vec!["--json", "gate", "add", QUESTION];
    match shape {
        Shape::Global => {}
        Shape::Unblocks => args.extend(["--unblocks", held.as_str()]),
        Shape::BlocksAgent => args.extend(["--blocks-agent", "a1"]),
    }
    let gate = env.loopx(&repo, &args).success().json()["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    Setup {
        repo,
        held,
        other,
        gate,
    }
}

/// Runs `args` as `agent`, and checks it was refused with `gate_open`
/// naming the gate and its question, and that nothing was written.
#[track_caller]
fn refused(env: &TestEnv, repo: &Path, agent: &str, gate: &str, args: &[&str]) {
    let before = env.tip(repo);
    let mut all = vec!["--json", "--agent", agent];
    all.extend_from_slice(args);
    let out = env.loopx(repo, &all).failure(1).json();
    assert_eq!(out["error"]["code"], "gate_open", "{args:?}: {out}");
    let message = out["error"]["message"].as_str().unwrap();
    assert!(message.contains(gate), "{message}");
    assert!(message.contains(QUESTION), "{message}");
    let hint = out["error"]["hint"].as_str().unwrap();
    assert!(hint.contains("ask the person"), "{hint}");
    assert_eq!(env.tip(repo), before, "{args:?}: a refused write wrote");
}

/// The writes a gate covers, by `agent` on todo `id` (held by a1).
fn covered(id: &str) -> Vec<Vec<&str>> {
    vec![
        vec!["todo", "claim", id],
        vec!["todo", "renew", id],
        vec![
            "writeback",
            "--todo",
            id,
            "--outcome",
            "outcome_progress",
            "--summary",
            "Deployed",
        ],
        vec!["todo", "update", id, "--note", "going ahead"],
        vec!["todo", "handoff", id, "--to", "a2", "--note", "yours"],
        vec!["todo", "done", id, "--evidence", "deployed"],
    ]
}

fn holds_until_answered(shape: Shape) {
    let env = TestEnv::new();
    let s = setup(&env, env.state_repo("repo"), shape);
    for args in covered(&s.held) {
        refused(&env, &s.repo, "a1", &s.gate, &args);
    }
    // The person is told what was tried, newest first.
    let status = env.loopx(&s.repo, &["--json", "status"]).success().json();
    let told = status["refused"].as_array().expect("status lists refusals");
    assert_eq!(told.len(), 5, "{status}");
    assert_eq!(told[0]["code"], "gate_open", "{status}");
    assert_eq!(told[0]["by"], "a1", "{status}");
    assert!(
        told[0]["message"].as_str().unwrap().contains("complete"),
        "{status}"
    );
    let text = env.loopx(&s.repo, &["status"]).success().stdout;
    assert!(text.contains("Refused on this host"), "{text}");
    // What should-run offers beside a scoped gate stays possible.
    let claim_other = ["--json", "todo", "claim", s.other.as_str()];
    match shape {
        Shape::Global => {
            refused(&env, &s.repo, "a1", &s.gate, &claim_other[1..]);
            refused(&env, &s.repo, "a2", &s.gate, &claim_other[1..]);
        }
        Shape::Unblocks => {
            let run = env
                .loopx(&s.repo, &["--json", "--agent", "a2", "should-run"])
                .json();
            assert_eq!(run["selected_todo"]["id"], s.other.as_str(), "{run}");
            env.loopx(&s.repo, &["--agent", "a2", "todo", "claim", &s.other])
                .success();
        }
        Shape::BlocksAgent => {
            refused(&env, &s.repo, "a1", &s.gate, &claim_other[1..]);
            env.loopx(&s.repo, &["--agent", "a2", "todo", "claim", &s.other])
                .success();
        }
    }
    // The person answers: the same writes now go through.
    env.loopx(&s.repo, &["gate", "resolve", &s.gate, "--approve"])
        .success();
    let a1 = |args: &[&str]| {
        let mut all = vec!["--agent", "a1"];
        all.extend_from_slice(args);
        env.loopx(&s.repo, &all).success();
    };
    a1(&["todo", "renew", &s.held]);
    a1(&["todo", "update", &s.held, "--note", "approved, going ahead"]);
    a1(&[
        "writeback",
        "--todo",
        &s.held,
        "--outcome",
        "outcome_progress",
        "--summary",
        "Deployed",
    ]);
    a1(&["todo", "done", &s.held, "--evidence", "deployed"]);
}

#[test]
fn a_global_gate_holds_every_write_until_the_person_answers() {
    holds_until_answered(Shape::Global);
}

#[test]
fn an_unblocks_gate_holds_its_todo_and_leaves_the_rest() {
    holds_until_answered(Shape::Unblocks);
}

#[test]
fn a_blocks_agent_gate_holds_that_agents_work_only() {
    holds_until_answered(Shape::BlocksAgent);
}

#[test]
fn a_gate_holds_a_handoff_until_answered() {
    let env = TestEnv::new();
    let s = setup(&env, env.state_repo("repo"), Shape::Unblocks);
    refused(
        &env,
        &s.repo,
        "a1",
        &s.gate,
        &["todo", "handoff", &s.held, "--to", "a2", "--note", "yours"],
    );
    env.loopx(&s.repo, &["gate", "resolve", &s.gate, "--approve"])
        .success();
    env.loopx(
        &s.repo,
        &[
            "--agent", "a1", "todo", "handoff", &s.held, "--to", "a2", "--note", "yours",
        ],
    )
    .success();
}

/// `todo claim --sync`, through shared lease refs (the default) and
/// through the state branch alone (`loopx.shareRefs=false`).
#[test]
fn a_gate_holds_sync_claims() {
    for shared in [true, false] {
        let env = TestEnv::new();
        let (_remote, clones) = env.shared_state(&["a"]);
        let repo = clones[0].clone();
        if !shared {
            env.git(&repo, &["config", "loopx.shareRefs", "false"]);
        }
        env.loopx(&repo, &["agent", "register", "a1"]).success();
        let todo = env.add_todo(&repo, "Deploy the release");
        let gate = env
            .loopx(&repo, &["--json", "gate", "add", QUESTION])
            .success()
            .json()["gate"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        env.loopx(&repo, &["sync"]).success();
        refused(
            &env,
            &repo,
            "a1",
            &gate,
            &["todo", "claim", &todo, "--sync"],
        );
        // `todo next` finds nothing the gate leaves, as should-run does.
        let before = env.tip(&repo);
        let out = env
            .loopx(
                &repo,
                &[
                    "--json", "--agent", "a1", "todo", "next", "--claim", "--sync",
                ],
            )
            .failure(1)
            .json();
        assert_eq!(out["error"]["code"], "nothing_ready", "{out}");
        assert_eq!(env.tip(&repo), before);
        env.loopx(&repo, &["gate", "resolve", &gate, "--approve"])
            .success();
        env.loopx(&repo, &["sync"]).success();
        env.loopx(&repo, &["--agent", "a1", "todo", "claim", &todo, "--sync"])
            .success();
    }
}

/// An unsigned resolution does not count under `gate_signers`: the gate
/// still holds the writes (as should-run says), until the person's signed
/// answer.
#[test]
fn a_gate_whose_resolution_does_not_count_still_holds() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let s = setup(&env, repo, Shape::Unblocks);
    let key = crate::gates::signing_key(&env, &s.repo, "person");
    env.loopx(&s.repo, &["gate", "signers", "add", key.to_str().unwrap()])
        .success();
    crate::gates::hand_resolve(&env, &s.repo, &s.gate);
    refused(
        &env,
        &s.repo,
        "a1",
        &s.gate,
        &["todo", "done", &s.held, "--evidence", "deployed"],
    );
    env.loopx(&s.repo, &["gate", "resolve", &s.gate, "--approve"])
        .success();
    env.loopx(
        &s.repo,
        &[
            "--agent",
            "a1",
            "todo",
            "done",
            &s.held,
            "--evidence",
            "deployed",
        ],
    )
    .success();
}

/// The MCP tools of the same meaning are held the same way.
#[cfg(feature = "mcp")]
#[test]
fn a_gate_holds_the_mcp_tools() {
    let env = TestEnv::new();
    if let Some(why) = crate::mcp::sdk_missing(&env) {
        crate::require::skip("LOOPX_REQUIRE_MCP_SDK", &why);
        return;
    }
    let s = setup(&env, env.state_repo("repo"), Shape::Global);
    let before = env.tip(&s.repo);
    let script = serde_json::json!([
        ["claim", {"todo": s.held}],
        ["claim", {"todo": s.other}],
        ["writeback", {"todo": s.held, "outcome": "outcome_progress", "summary": "Deployed"}],
        ["complete_todo", {"todo": s.held, "evidence": "deployed"}],
        ["handoff", {"todo": s.held, "to": "a2", "note": "yours"}],
    ])
    .to_string();
    let out = crate::mcp::client(&env, "calls", &s.repo, "a1", &[&script]);
    for call in out["calls"].as_array().unwrap() {
        assert_eq!(call["is_error"], true, "{call}");
        let text = call["text"].to_string();
        assert!(text.contains("gate_open"), "{call}");
        assert!(text.contains(&s.gate), "{call}");
    }
    assert_eq!(env.tip(&s.repo), before, "a refused tool call wrote");
    env.loopx(&s.repo, &["gate", "resolve", &s.gate, "--approve"])
        .success();
    let script = serde_json::json!([
        ["complete_todo", {"todo": s.held, "evidence": "deployed"}],
    ])
    .to_string();
    let out = crate::mcp::client(&env, "calls", &s.repo, "a1", &[&script]);
    assert_eq!(out["calls"][0]["is_error"], false, "{out}");
}
