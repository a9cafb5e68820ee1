//! `git loopx mcp` driven by an MCP client nobody here wrote: the official
//! Python SDK (`mcp`, from PyPI), through `tests/mcp/client.py`, which
//! starts the server as the SDK's stdio client does: with the `initialize`
//! handshake (2025-11-25), and as its default client negotiates (2026-07-28,
//! `subscriptions/listen`). A test prints why and returns when
//! `python3 -c 'import mcp'` fails, unless `LOOPX_REQUIRE_MCP_SDK=1`, where
//! it fails: `.ci/run` installs the SDK and sets it, so in CI they run.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::env::{Redactor, TestEnv};

pub const TOOLS: [&str; 16] = [
    "add_gate",
    "add_todo",
    "claim",
    "complete_goal",
    "complete_todo",
    "diff",
    "handoff",
    "next_todo",
    "poll_monitor",
    "release",
    "renew",
    "should_run",
    "spend",
    "status",
    "update_todo",
    "writeback",
];

fn python() -> &'static Path {
    Path::new("python3")
}

/// Why the Python SDK cannot be used here, if it cannot.
pub fn sdk_missing(env: &TestEnv) -> Option<String> {
    match env
        .command(python(), env.root.path())
        .args(["-c", "import mcp"])
        .output()
    {
        Err(e) => Some(format!("python3 does not run: {e}")),
        Ok(out) if !out.status.success() => Some(
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("import mcp failed")
                .to_owned(),
        ),
        Ok(_) => None,
    }
}

/// Returns from the test, saying why, when the SDK is not importable
/// (fails instead under `LOOPX_REQUIRE_MCP_SDK=1`).
macro_rules! need_sdk {
    ($env:expr) => {
        if let Some(why) = sdk_missing(&$env) {
            crate::require::skip(
                "LOOPX_REQUIRE_MCP_SDK",
                &format!(
                    "the MCP Python SDK cannot be imported ({why}); \
                     `python3 -m pip install mcp` installs it (.ci/run does, pinned)"
                ),
            );
            return;
        }
    };
}

fn client_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py")
}

/// Runs one scenario of the client against `repo` as `agent`; its JSON.
#[track_caller]
pub fn client(env: &TestEnv, scenario: &str, repo: &Path, agent: &str, args: &[&str]) -> Value {
    let out = env
        .command(python(), repo)
        .arg(client_script())
        .arg(scenario)
        .arg(repo)
        .args(args)
        .env("LOOPX_AGENT", agent)
        .env("LOOPX_MCP_BIN", env!("CARGO_BIN_EXE_git-loopx"))
        .output()
        .expect("python3 runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "client.py {scenario} failed:\n{stderr}"
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "client.py {scenario} printed no JSON ({e}):\n{}\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// A repository with state, `agents` registered, and one todo whose
/// `validate` passes; the todo's id.
pub fn setup(env: &TestEnv, name: &str, agents: &[&str]) -> (PathBuf, String) {
    let repo = env.state_repo(name);
    for agent in agents {
        env.loopx(&repo, &["agent", "register", agent]).success();
    }
    let run = env
        .loopx(
            &repo,
            &[
                "--json",
                "--agent",
                agents[0],
                "todo",
                "add",
                "Write the tokenizer",
                "--validate",
                "true",
            ],
        )
        .success();
    let todo = run.json()["todo"]["id"].as_str().unwrap().to_owned();
    (repo, todo)
}

/// The state branch's commits, oldest first: subject, body and trailers.
pub fn state_log(env: &TestEnv, repo: &Path) -> String {
    env.git(
        repo,
        &["log", "--reverse", "--format=%B%x00", "loopx-state"],
    )
}

/// A `--json` answer without what differs between two runs of the same
/// thing (how long `validate` took).
pub fn steady(mut value: Value) -> Value {
    if let Some(validation) = value.get_mut("validation").and_then(Value::as_object_mut) {
        validation.remove("seconds");
    }
    value
}

#[test]
fn a_governed_turn_over_mcp_answers_and_commits_as_the_cli_does() {
    let env = TestEnv::new();
    need_sdk!(env);
    let (by_mcp, _) = setup(&env, "by-mcp", &["agent-a"]);
    let (by_cli, cli_todo) = setup(&env, "by-cli", &["agent-a"]);

    let mcp = client(&env, "turn", &by_mcp, "agent-a", &[]);
    assert_eq!(mcp["server"], "git-loopx");
    assert_eq!(mcp["tools"], serde_json::json!(TOOLS));
    for (name, schema) in mcp["schemas"].as_object().unwrap() {
        assert_eq!(schema["additionalProperties"], false, "{name}: {schema}");
        assert!(
            schema["properties"].get("agent").is_none(),
            "{name}: {schema}"
        );
    }

    // The same turn on the command line, in the other repository.
    let a = ["--json", "--agent", "agent-a"];
    let cli_steps: Vec<Value> = [
        vec!["should-run", "--turn", "t-1"],
        vec!["todo", "next", "--claim"],
        vec![
            "writeback",
            "--todo",
            &cli_todo,
            "--outcome",
            "outcome_progress",
            "--summary",
            "Wrote the tokenizer",
            "--turn",
            "t-1",
        ],
        vec!["todo", "done", &cli_todo, "--evidence", "tests pass"],
        vec!["quota", "spend", "--turn", "t-1"],
    ]
    .iter()
    .map(|args| {
        let all: Vec<&str> = a.iter().copied().chain(args.iter().copied()).collect();
        env.loopx(&by_cli, &all).success().json()
    })
    .collect();

    let (mut rm, mut rc) = (Redactor::default(), Redactor::default());
    let steps = mcp["steps"].as_array().unwrap();
    assert_eq!(steps.len(), cli_steps.len());
    for (step, cli) in steps.iter().zip(&cli_steps) {
        assert_eq!(step["is_error"], false, "{step}");
        // The structured content and the text content are the same object.
        assert_eq!(step["structured"], step["text"], "{step}");
        assert_eq!(
            rm.json(&steady(step["structured"].clone())),
            rc.json(&steady(cli.clone())),
            "{} answers as the CLI does",
            step["tool"]
        );
    }
    assert_eq!(
        rm.redact(&state_log(&env, &by_mcp)),
        rc.redact(&state_log(&env, &by_cli)),
        "the state branch has the commits the CLI makes"
    );
    let ops: Vec<String> = state_log(&env, &by_mcp)
        .lines()
        .filter_map(|l| l.strip_prefix("Loopx-Op: ").map(str::to_owned))
        .collect();
    assert_eq!(
        ops[3..],
        [
            "turn",
            "todo next --claim",
            "writeback",
            "todo done",
            "quota spend"
        ]
    );

    // Resources and the prompt are what the CLI prints.
    assert_eq!(
        mcp["resources"],
        serde_json::json!(["loopx://goal/main", "loopx://status"])
    );
    let cli = |args: &[&str]| env.loopx(&by_mcp, args).success();
    assert_eq!(mcp["status"], cli(&["--json", "status"]).json());
    assert_eq!(mcp["goal"], cli(&["--json", "goal", "show"]).json());
    assert_eq!(
        mcp["prompts"],
        serde_json::json!({"turn": ["runtime", "turn"]})
    );
    // The prompt is the CLI's turn, with tools where the CLI has commands.
    let prompt = mcp["prompt"].as_str().unwrap();
    let printed = cli(&["--agent", "agent-a", "prompt", "--runtime", "claude-code"]).stdout;
    let head = |text: &str| text.lines().take(5).collect::<Vec<_>>().join("\n");
    let tail = |text: &str| text.trim_end().rsplit('\n').next().unwrap().to_owned();
    assert_eq!(head(prompt), head(&printed));
    assert_eq!(tail(prompt), tail(&printed));
    assert!(!prompt.contains("git loopx"), "{prompt}");
    assert!(prompt.contains("the `complete_goal` tool"), "{prompt}");
}

#[test]
fn a_claim_on_a_held_todo_is_a_tool_error_and_bad_arguments_write_nothing() {
    let env = TestEnv::new();
    need_sdk!(env);
    let (repo, todo) = setup(&env, "repo", &["agent-a", "agent-b"]);
    env.loopx(&repo, &["--agent", "agent-b", "todo", "claim", &todo])
        .success();
    let failing = env
        .loopx(
            &repo,
            &[
                "--json",
                "--agent",
                "agent-a",
                "todo",
                "add",
                "Fails",
                "--validate",
                "false",
            ],
        )
        .success()
        .json()["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = env.tip(&repo);

    let out = client(&env, "refusal", &repo, "agent-a", &[&todo, &failing]);
    let conflict = &out["conflict"];
    assert_eq!(conflict["is_error"], true, "{conflict}");
    assert_eq!(conflict["structured"]["error"]["code"], "claim_conflict");
    let cli = env
        .loopx(
            &repo,
            &["--json", "--agent", "agent-a", "todo", "claim", &todo],
        )
        .failure(1)
        .json();
    assert_eq!(conflict["structured"], cli, "the CLI's error envelope");

    // A failed validate refuses completion: a tool error carrying the
    // report, and the failure recorded in one commit (as `todo done` does).
    let failed = &out["validation"];
    assert_eq!(failed["is_error"], true, "{failed}");
    assert_eq!(failed["structured"]["error"]["code"], "validation_failed");
    assert_eq!(failed["structured"]["validation"]["exit_code"], 1);
    assert_eq!(failed["structured"]["todo"]["status"], "open");
    let tip = env.tip(&repo);
    assert_eq!(
        env.git(&repo, &["rev-list", "--count", &format!("{before}..{tip}")]),
        "2",
        "the claim, then only the failed validation was recorded"
    );
    assert_eq!(out["claimed"]["is_error"], false, "{}", out["claimed"]);

    // The schema's refusals are tool errors too (the protocol asks for
    // input validation errors as tool results, so a model can correct
    // them), in the same envelope, before anything runs.
    for (case, says) in [
        ("wrong_type", "invalid type: integer `7`, expected a string"),
        ("unknown_field", "unknown field `agent`"),
        ("missing_field", "missing field `outcome`"),
        ("bad_enum", "unknown variant `great`"),
    ] {
        let answer = &out[case];
        assert_eq!(answer["is_error"], true, "{case}: {answer}");
        let error = &answer["structured"]["error"];
        assert_eq!(error["code"], "invalid_input", "{case}: {answer}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains("bad arguments"), "{case}: {message}");
        assert!(message.contains(says), "{case}: {message}");
        assert_eq!(answer["structured"], answer["text"], "{case}");
    }
    assert_eq!(env.tip(&repo), tip, "nothing was written");
}

#[test]
fn two_servers_racing_next_todo_give_the_todo_to_one_agent() {
    let env = TestEnv::new();
    need_sdk!(env);
    for round in 0..3 {
        let (repo, todo) = setup(&env, &format!("race-{round}"), &["agent-a", "agent-b"]);
        let out = client(&env, "race", &repo, "agent-a", &["agent-a", "agent-b"]);
        let won: Vec<&str> = ["agent-a", "agent-b"]
            .into_iter()
            .filter(|agent| out[agent]["is_error"] == false)
            .collect();
        assert_eq!(won.len(), 1, "exactly one winner: {out}");
        let (winner, loser) = match won[0] {
            "agent-a" => ("agent-a", "agent-b"),
            _ => ("agent-b", "agent-a"),
        };
        assert_eq!(out[winner]["structured"]["claim"]["agent"], winner);
        assert_eq!(out[winner]["structured"]["todo"]["id"], todo.as_str());
        let code = &out[loser]["structured"]["error"]["code"];
        assert!(
            code == "nothing_ready" || code == "claim_conflict",
            "the loser is refused: {out}"
        );
        let shown = env.loopx(&repo, &["--json", "todo", "show", &todo]).json();
        assert_eq!(shown["todo"]["claim"]["agent"], winner);
        let claims = state_log(&env, &repo)
            .matches("Loopx-Op: todo next --claim")
            .count();
        assert_eq!(claims, 1, "one claim commit");
    }
}

/// The watcher polls every 250 ms, so a notification comes well under a
/// second on an idle machine (about 0.2 s). The bound, 20 s, is there so
/// that a loaded machine does not fail the test: what it holds is that one
/// comes, and only for what moved.
#[test]
fn a_cli_writeback_notifies_a_subscribed_client() {
    let env = TestEnv::new();
    need_sdk!(env);
    let (repo, todo) = setup(&env, "repo", &["agent-a"]);
    let out = client(&env, "notify", &repo, "agent-a", &[&todo]);
    assert_eq!(
        out["before"],
        serde_json::json!([]),
        "no move, no notification"
    );
    assert_eq!(out["cli_exit"], 0, "{}", out["cli_stderr"]);
    let seconds = out["seconds"]
        .as_f64()
        .unwrap_or_else(|| panic!("no notification: {out}"));
    eprintln!("notified after {seconds:.2}s");
    assert!(seconds < 20.0, "notified after {seconds:.2}s");
    assert!(out["updated"]
        .as_array()
        .unwrap()
        .iter()
        .all(|uri| uri == "loopx://status"));
    assert_eq!(out["list_changed"], 0, "no goal came or went");
}

#[test]
fn the_2026_revision_serves_tools_and_a_listen_stream_sees_a_cli_writeback() {
    let env = TestEnv::new();
    need_sdk!(env);
    let (repo, todo) = setup(&env, "repo", &["agent-a"]);
    // The SDK's default client negotiates the newest revision it can.
    let out = client(&env, "listen", &repo, "agent-a", &[&todo]);
    assert_eq!(out["protocol"], "2026-07-28", "{out}");
    assert_eq!(out["should_run"]["is_error"], false, "{out}");
    assert_eq!(out["should_run"]["structured"]["agent"], "agent-a");
    assert_eq!(
        out["honored"],
        serde_json::json!({"resourcesListChanged": true, "resourceSubscriptions": ["loopx://status"]})
    );
    assert_eq!(out["cli_exit"], 0, "{}", out["cli_stderr"]);
    assert_eq!(
        out["events"],
        serde_json::json!([{"type": "ResourceUpdated", "uri": "loopx://status"}])
    );
    let seconds = out["seconds"].as_f64().unwrap();
    eprintln!("notified after {seconds:.2}s");
    assert!(seconds < 20.0, "notified after {seconds:.2}s");
}

#[test]
fn the_server_refuses_to_start_without_an_agent_and_keeps_stdout_clean() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let run = env
        .loopx_cmd(&repo)
        .arg("mcp")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("git-loopx runs");
    assert_eq!(run.status.code(), Some(2));
    assert!(run.stdout.is_empty(), "stdout is the protocol's");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("needs an agent"), "{stderr}");
}

#[test]
fn hooks_install_registers_the_server_in_mcp_json_and_uninstall_restores_the_file() {
    let env = TestEnv::new();
    let (repo, _) = setup(&env, "repo", &["agent-a", "agent-b"]);
    let file = repo.join(".mcp.json");
    let users = "{\n    \"mcpServers\": {\n        \"docs\": {\"command\": \"docs-mcp\", \"args\": []}\n    }\n}\n";
    std::fs::write(&file, users).unwrap();
    let install = [
        "--agent",
        "agent-a",
        "hooks",
        "install",
        "--mcp-claude-code",
    ];
    let run = env.loopx(&repo, &install).success();
    assert!(
        run.stdout.contains("mcp-claude-code: updated"),
        "{}",
        run.stdout
    );
    let written = std::fs::read_to_string(&file).unwrap();
    let value: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(value["mcpServers"]["docs"]["command"], "docs-mcp");
    assert_eq!(
        value["mcpServers"]["loopx"],
        serde_json::json!({"command": "git", "args": ["loopx", "mcp", "--agent", "agent-a"]})
    );
    let again = env.loopx(&repo, &install).success();
    assert!(
        again.stdout.contains("mcp-claude-code: unchanged"),
        "{}",
        again.stdout
    );
    let status = env
        .loopx(&repo, &["--json", "hooks", "status", "--mcp-claude-code"])
        .success()
        .json();
    assert_eq!(status["files"][0]["installed"], "yes", "{status}");
    assert_eq!(
        status["files"][0]["commands"][0],
        "git loopx mcp --agent agent-a"
    );

    if sdk_missing(&env).is_none() {
        // The entry starts a working server, as the agent it names (not
        // the one in the environment).
        let out = client(&env, "registered", &repo, "agent-b", &[]);
        assert_eq!(out["should_run"]["is_error"], false, "{out}");
        assert_eq!(out["should_run"]["structured"]["agent"], "agent-a", "{out}");
    }

    let run = env
        .loopx(&repo, &["hooks", "uninstall", "--mcp-claude-code"])
        .success();
    assert!(
        run.stdout.contains("mcp-claude-code: restored"),
        "{}",
        run.stdout
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), users);
}
