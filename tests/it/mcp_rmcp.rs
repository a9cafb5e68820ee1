//! `git loopx mcp` driven by rmcp's own client side (the official Rust
//! SDK, the same crate as the server, compiled with its `client` feature
//! for the tests only): the whole governed turn and the refusals of
//! `mcp.rs`, with nothing to install, so the server's protocol is tested
//! wherever `cargo test` runs. `mcp.rs` does the same, and more, with the
//! Python SDK, a client nobody here wrote.

use std::path::Path;

use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{json, Value};

use crate::env::{Redactor, TestEnv};
use crate::mcp::{setup, state_log, steady, TOOLS};

type Client = RunningService<RoleClient, ()>;

/// Starts `git loopx mcp` in `repo` as `agent` (the test's hermetic
/// environment) and connects rmcp's client to it: the `initialize`
/// handshake is done when this returns.
async fn connect(env: &TestEnv, repo: &Path, agent: &str) -> Client {
    let mut server = env.loopx_cmd(repo);
    server.arg("mcp").env("LOOPX_AGENT", agent);
    let transport = TokioChildProcess::new(tokio::process::Command::from(server))
        .expect("git loopx mcp starts");
    ().serve(transport).await.expect("initialize")
}

/// One tool call, as `tests/mcp/client.py` reports it: whether it is a tool
/// error, its structured content and its text content (parsed as JSON).
async fn call(client: &Client, tool: &'static str, arguments: Value) -> Value {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object: {arguments}");
    };
    let mut params = CallToolRequestParams::new(tool);
    params.arguments = Some(arguments);
    let result = client
        .call_tool(params)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    let result = serde_json::to_value(&result).unwrap();
    let text = result["content"][0]["text"]
        .as_str()
        .map(|t| serde_json::from_str(t).unwrap_or_else(|_| json!(t)));
    json!({
        "tool": tool,
        "is_error": result["isError"] == true,
        "structured": result["structuredContent"],
        "text": text,
    })
}

/// The text of resource `uri`, parsed as JSON.
async fn read(client: &Client, uri: &str) -> Value {
    let contents = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap_or_else(|e| panic!("{uri}: {e}"));
    let contents = serde_json::to_value(&contents).unwrap();
    serde_json::from_str(contents["contents"][0]["text"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn rmcp_client_runs_a_governed_turn_as_the_cli_does() {
    let env = TestEnv::new();
    let (by_mcp, _) = setup(&env, "by-mcp", &["agent-a"]);
    let (by_cli, cli_todo) = setup(&env, "by-cli", &["agent-a"]);
    let client = connect(&env, &by_mcp, "agent-a").await;

    let info = client.peer_info().expect("the server introduced itself");
    let name = info.server_info.as_ref().map(|i| i.name.as_str());
    assert_eq!(name, Some("git-loopx"));
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
    names.sort_unstable();
    assert_eq!(names, TOOLS);
    for tool in &tools {
        let schema = Value::Object((*tool.input_schema).clone());
        assert_eq!(schema["additionalProperties"], false, "{}", tool.name);
        assert!(
            schema["properties"].get("agent").is_none(),
            "{}: no tool takes the agent",
            tool.name
        );
    }

    let mut steps = vec![call(&client, "should_run", json!({"turn": "t-1"})).await];
    steps.push(call(&client, "next_todo", json!({"claim": true})).await);
    let todo = steps[1]["structured"]["todo"]["id"].clone();
    let wrote = json!({
        "todo": todo,
        "outcome": "outcome_progress",
        "summary": "Wrote the tokenizer",
        "turn": "t-1",
    });
    steps.push(call(&client, "writeback", wrote).await);
    let done = json!({"todo": todo, "evidence": "tests pass"});
    steps.push(call(&client, "complete_todo", done).await);
    steps.push(call(&client, "spend", json!({"turn": "t-1"})).await);
    let status = read(&client, "loopx://status").await;
    let goal = read(&client, "loopx://goal/main").await;
    client.cancel().await.unwrap();

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
    for (step, cli) in steps.iter().zip(&cli_steps) {
        assert_eq!(step["is_error"], false, "{step}");
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
    let cli = |args: &[&str]| env.loopx(&by_mcp, args).success().json();
    assert_eq!(status, cli(&["--json", "status"]));
    assert_eq!(goal, cli(&["--json", "goal", "show"]));
}

#[tokio::test]
async fn rmcp_client_gets_refusals_as_tool_errors_and_bad_arguments_write_nothing() {
    let env = TestEnv::new();
    let (repo, todo) = setup(&env, "repo", &["agent-a", "agent-b"]);
    env.loopx(&repo, &["--agent", "agent-b", "todo", "claim", &todo])
        .success();
    let tip = env.tip(&repo);
    let client = connect(&env, &repo, "agent-a").await;
    let conflict = call(&client, "claim", json!({"todo": todo})).await;
    let cases = [
        (
            json!({"todo": 7}),
            "invalid type: integer `7`, expected a string",
        ),
        (
            json!({"todo": todo, "agent": "agent-b"}),
            "unknown field `agent`",
        ),
    ];
    let mut refused = Vec::new();
    for (arguments, says) in cases {
        refused.push((call(&client, "claim", arguments).await, says));
    }
    client.cancel().await.unwrap();

    assert_eq!(conflict["is_error"], true, "{conflict}");
    let cli = env
        .loopx(
            &repo,
            &["--json", "--agent", "agent-a", "todo", "claim", &todo],
        )
        .failure(1)
        .json();
    assert_eq!(conflict["structured"], cli, "the CLI's error envelope");
    for (answer, says) in refused {
        assert_eq!(answer["is_error"], true, "{answer}");
        let error = &answer["structured"]["error"];
        assert_eq!(error["code"], "invalid_input", "{answer}");
        assert!(
            error["message"].as_str().unwrap().contains(says),
            "{answer}"
        );
    }
    assert_eq!(env.tip(&repo), tip, "nothing was written");
}
