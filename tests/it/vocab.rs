//! One vocabulary (issue 16, point 6): a gate has one JSON shape in
//! `status`, `should-run`, `gate list` and `prompt --json`; `todo list`
//! marks gates; `status` counts each todo once; usage errors and refusals
//! share one envelope; enum errors list the values plainly.

use std::path::Path;

use serde_json::Value;

use crate::env::TestEnv;

const GATE_KEYS: [&str; 8] = [
    "id",
    "question",
    "scope",
    "unblocks",
    "asked_at",
    "resolved_by",
    "resolved_at",
    "decision",
];

fn json(env: &TestEnv, repo: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    env.loopx(repo, &all).success().json()
}

#[test]
fn a_gate_has_one_shape_in_every_command() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let work = env.add_todo(&repo, "Write the parser");
    let gate = json(
        &env,
        &repo,
        &["gate", "add", "Ship it?", "--unblocks", &work],
    )["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let agent_gate = json(
        &env,
        &repo,
        &["gate", "add", "Which key?", "--blocks-agent", "a1"],
    )["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let status = json(&env, &repo, &["status"])["gates"].clone();
    let should_run = json(&env, &repo, &["--agent", "a1", "should-run"])["gates"].clone();
    let list = json(&env, &repo, &["gate", "list"])["gates"].clone();
    let prompt = json(&env, &repo, &["--agent", "a1", "prompt"]);
    let in_prompt = prompt["gates"].clone();
    let in_decision = prompt["decision"]["gates"].clone();
    for (name, gates) in [
        ("status", &status),
        ("should-run", &should_run),
        ("gate list", &list),
        ("prompt", &in_prompt),
        ("prompt decision", &in_decision),
    ] {
        let gates = gates.as_array().unwrap_or_else(|| panic!("{name}"));
        assert_eq!(gates.len(), 2, "{name}: {gates:?}");
        for g in gates {
            let keys: Vec<&str> = g.as_object().unwrap().keys().map(String::as_str).collect();
            for k in GATE_KEYS {
                assert!(keys.contains(&k), "{name} lacks {k}: {g}");
            }
            let extra: Vec<&&str> = keys
                .iter()
                .filter(|k| !GATE_KEYS.contains(k) && **k != "blocks_agent")
                .collect();
            assert!(extra.is_empty(), "{name} has {extra:?}: {g}");
        }
        let by_id = |id: &str| gates.iter().find(|g| g["id"] == id).unwrap().clone();
        let g = by_id(&gate);
        assert_eq!(g["question"], "Ship it?", "{name}");
        assert_eq!(g["scope"], "todo", "{name}");
        assert_eq!(g["unblocks"], work.as_str(), "{name}");
        assert!(g.get("blocks_agent").is_none(), "{name}: {g}");
        assert_eq!(g["decision"], Value::Null, "{name}");
        let a = by_id(&agent_gate);
        assert_eq!(a["scope"], "agent", "{name}");
        assert_eq!(a["blocks_agent"], "a1", "{name}");
    }
    // The same gate is the same object everywhere.
    assert_eq!(status, list);
    assert_eq!(should_run, in_prompt);

    // An answered gate keeps the shape, now with who decided.
    env.loopx(&repo, &["gate", "resolve", &gate, "--approve"])
        .success();
    let all = json(&env, &repo, &["gate", "list", "--all"]);
    let g = all["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == gate.as_str())
        .unwrap();
    assert_eq!(g["decision"], "approve", "{all}");
    assert!(g["resolved_by"].is_string(), "{all}");
    assert!(g["resolved_at"].is_string(), "{all}");
}

#[test]
fn todo_list_marks_gates() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.add_todo(&repo, "Write the parser");
    env.loopx(&repo, &["gate", "add", "Ship it?"]).success();
    let list = env.loopx(&repo, &["todo", "list"]).success().stdout;
    let gate_line = list.lines().find(|l| l.contains("Ship it?")).unwrap();
    assert!(gate_line.contains("[gate] Ship it?"), "{list}");
    let work_line = list.lines().find(|l| l.contains("Write")).unwrap();
    assert!(!work_line.contains("[gate]"), "{list}");
}

#[test]
fn status_counts_each_todo_once() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let ready = env.add_todo(&repo, "ready");
    let running = env.add_todo(&repo, "running");
    let held = env.add_todo(&repo, "held");
    let blocked = env.add_todo(&repo, "blocked");
    let deferred = env.add_todo(&repo, "deferred");
    let done = env.add_todo(&repo, "done");
    env.loopx(&repo, &["--agent", "a1", "todo", "claim", &running])
        .success();
    env.loopx(&repo, &["gate", "add", "Ship?", "--unblocks", &held])
        .success();
    env.loopx(&repo, &["todo", "update", &blocked, "--status", "blocked"])
        .success();
    env.loopx(
        &repo,
        &["todo", "update", &deferred, "--status", "deferred"],
    )
    .success();
    env.loopx(&repo, &["todo", "done", &done, "--evidence", "shipped"])
        .success();
    env.loopx(
        &repo,
        &[
            "todo",
            "add",
            "Rotate the key",
            "--role",
            "user",
            "--class",
            "user_action",
        ],
    )
    .success();
    let _ = ready;

    let status = json(&env, &repo, &["status"]);
    let c = &status["counts"];
    let n = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("{k}: {c}"));
    assert_eq!(
        [
            n("ready"),
            n("running"),
            n("held_by_gate"),
            n("waiting"),
            n("for_user"),
            n("deferred"),
            n("done")
        ],
        [1, 1, 1, 1, 2, 1, 1],
        "{c}"
    );
    let all = json(&env, &repo, &["todo", "list", "--all"]);
    let total: u64 = c
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(
        total as usize,
        all["todos"].as_array().unwrap().len(),
        "{c}"
    );
    let text = env.loopx(&repo, &["status"]).success().stdout;
    assert!(
        text.contains(
            "Todos: 1 ready, 1 running, 1 held by a gate, 1 waiting, 2 for you, 1 deferred, 1 done"
        ),
        "{text}"
    );
}

#[test]
fn usage_errors_and_refusals_share_one_envelope() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let usage = env
        .loopx(&repo, &["--json", "todo", "add"])
        .failure(2)
        .json();
    let refusal = env
        .loopx(&repo, &["--json", "--agent", "a1", "todo", "next"])
        .failure(1)
        .json();
    let keys =
        |v: &Value| -> Vec<String> { v["error"].as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        keys(&usage),
        ["code", "message", "hint", "detail"],
        "{usage}"
    );
    assert_eq!(keys(&refusal), keys(&usage), "{refusal}");
    assert!(usage["error"]["detail"].is_string(), "{usage}");
    assert_eq!(refusal["error"]["detail"], Value::Null, "{refusal}");
    assert_eq!(usage["ok"], false);
    assert_eq!(refusal["ok"], false);
}

#[test]
fn enum_errors_list_the_values_plainly() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let cases: [(&[&str], &str); 6] = [
        (
            &["todo", "add", "x", "--priority", "P7"],
            "`P7` is not one of P0, P1, P2, P3, P4",
        ),
        (
            &["todo", "add", "x", "--class", "chore"],
            "`chore` is not one of advancement_task, continuous_monitor, blocker, user_gate, user_action",
        ),
        (
            &["todo", "add", "x", "--role", "boss"],
            "`boss` is not one of agent, user",
        ),
        (
            &["todo", "list", "--status", "closed"],
            "`closed` is not one of open, blocked, deferred, done",
        ),
        (
            &["writeback", "--todo", "x", "--outcome", "great", "--summary", "s"],
            "`great` is not one of surface_only, outcome_gap, outcome_progress, primary_goal_outcome",
        ),
        (&["prompt", "--runtime", "vim"], "`vim` is not one of "),
    ];
    for (args, want) in cases {
        let run = env.loopx(&repo, args).failure(2);
        assert!(run.stderr.contains(want), "{args:?}: {}", run.stderr);
        let mut json = vec!["--json"];
        json.extend_from_slice(args);
        let out = env.loopx(&repo, &json).failure(2).json();
        let message = out["error"]["message"].as_str().unwrap();
        assert!(message.contains(want), "{args:?}: {message}");
        let listed = message.split(" is not one of ").nth(1).unwrap();
        assert!(!listed.contains('`'), "{args:?}: {message}");
    }
}
