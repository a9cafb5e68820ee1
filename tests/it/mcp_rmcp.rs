//! `git loopx mcp` driven by rmcp's own client side (the official Rust
//! SDK, the same crate as the server, compiled with its `client` feature
//! for the tests only): the whole governed turn and the refusals of
//! `mcp.rs`, with nothing to install, so the server's protocol is tested
//! wherever `cargo test` runs. `mcp.rs` does the same, and more, with the
//! Python SDK, a client nobody here wrote. Here too: each tool's arguments
//! against its command's clap definition (`ops::args`).

use std::path::Path;

use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{json, Value};

use crate::env::{Redactor, TestEnv};
use crate::mcp::{setup, state_log, steady, TOOLS};

pub type Client = RunningService<RoleClient, ()>;

/// Starts `git loopx mcp` in `repo` as `agent` (the test's hermetic
/// environment) and connects rmcp's client to it: the `initialize`
/// handshake is done when this returns.
async fn connect(env: &TestEnv, repo: &Path, agent: &str) -> Client {
    connect_at(env, repo, agent, &env.now).await
}

/// [`connect`], with the server's clock at `now`.
pub async fn connect_at(env: &TestEnv, repo: &Path, agent: &str, now: &str) -> Client {
    let mut server = env.under_runtime_cmd(repo);
    server
        .arg("mcp")
        .env("LOOPX_AGENT", agent)
        .env("LOOPX_NOW", now);
    let transport = TokioChildProcess::new(tokio::process::Command::from(server))
        .expect("git loopx mcp starts");
    ().serve(transport).await.expect("initialize")
}

/// One tool call, as `tests/mcp/client.py` reports it: whether it is a tool
/// error, its structured content and its text content (parsed as JSON).
pub async fn call(client: &Client, tool: &'static str, arguments: Value) -> Value {
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

/// Each tool and the command whose arguments it takes (`ops::args`).
const COMMANDS: [(&str, &[&str]); 16] = [
    ("add_gate", &["gate", "add"]),
    ("add_todo", &["todo", "add"]),
    ("claim", &["todo", "claim"]),
    ("complete_goal", &["goal", "done"]),
    ("complete_todo", &["todo", "done"]),
    ("diff", &["diff"]),
    ("handoff", &["todo", "handoff"]),
    ("next_todo", &["todo", "next"]),
    ("poll_monitor", &["todo", "poll"]),
    ("release", &["todo", "release"]),
    ("renew", &["todo", "renew"]),
    ("should_run", &["should-run"]),
    ("spend", &["quota", "spend"]),
    ("status", &["status"]),
    ("update_todo", &["todo", "update"]),
    ("writeback", &["writeback"]),
];

/// `git loopx <path>` as clap has it, flags and all.
fn subcommand(path: &[&str]) -> clap::Command {
    use clap::CommandFactory as _;
    let mut cmd = loopx::cli::Cli::command();
    cmd.build();
    path.iter().fold(cmd, |cmd, name| {
        cmd.find_subcommand(name)
            .unwrap_or_else(|| panic!("no subcommand {name} in {path:?}"))
            .clone()
    })
}

/// The one-definition promise, where it can break: every field a tool
/// advertises is the flag (or positional) of the same id of its command,
/// of the same kind (a list is a repeatable flag, a boolean a switch,
/// required as the flag is), named as the flag (a list may be its plural);
/// and a field the command does not take over MCP (`--force`, `--global`,
/// `--markdown`), or takes only globally (`--agent`), or not at all, is
/// refused before anything runs.
#[tokio::test]
async fn every_tool_argument_is_a_flag_of_its_command_and_no_other_field_is_taken() {
    let env = TestEnv::new();
    let (repo, _) = setup(&env, "repo", &["agent-a"]);
    let tip = env.tip(&repo);
    let client = connect(&env, &repo, "agent-a").await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = COMMANDS.iter().map(|(tool, _)| *tool).collect();
    assert_eq!(names, TOOLS, "a command for every tool");

    let mut refusals = Vec::new();
    for (tool, path) in COMMANDS {
        let schema = &tools.iter().find(|t| t.name == tool).unwrap().input_schema;
        let command = subcommand(path);
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let properties = schema.get("properties").and_then(Value::as_object);
        for (field, property) in properties.into_iter().flatten() {
            let at = format!("{tool}.{field} (git loopx {})", path.join(" "));
            let arg = command
                .get_arguments()
                .find(|a| a.get_id() == field.as_str())
                .unwrap_or_else(|| panic!("{at}: the command has no such argument"));
            let kind = property["type"].as_str();
            let list = matches!(arg.get_action(), clap::ArgAction::Append);
            let switch = matches!(arg.get_action(), clap::ArgAction::SetTrue);
            assert_eq!(
                kind == Some("array"),
                list,
                "{at}: a list is a repeatable flag"
            );
            assert_eq!(
                kind == Some("boolean"),
                switch,
                "{at}: a boolean is a switch"
            );
            assert_eq!(
                required.contains(&field.as_str()),
                arg.is_required_set(),
                "{at}: required as the flag is"
            );
            if let Some(long) = arg.get_long() {
                let name = field.replace('_', "-");
                let plural = match long.strip_suffix('y') {
                    Some(stem) => format!("{stem}ies"),
                    None => format!("{long}s"),
                };
                assert!(
                    name == long || list && name == plural,
                    "{at}: named as the flag --{long}"
                );
            }
        }
        let taken = |id: &str| properties.is_some_and(|p| p.contains_key(id));
        let mut untaken: Vec<(String, Value)> = command
            .get_arguments()
            .filter(|a| !a.is_global_set() && a.get_id() != "help" && !taken(a.get_id().as_str()))
            .map(|a| {
                let switch = matches!(a.get_action(), clap::ArgAction::SetTrue);
                let value = if switch { json!(true) } else { json!("x") };
                (a.get_id().to_string(), value)
            })
            .collect();
        untaken.push(("agent".to_owned(), json!("agent-b")));
        untaken.push(("no_such_flag".to_owned(), json!(1)));
        for (field, value) in untaken {
            let arguments = Value::Object([(field.clone(), value)].into_iter().collect());
            let answer = call(&client, tool, arguments).await;
            refusals.push((tool, field, answer));
        }
    }
    client.cancel().await.unwrap();

    for (tool, field, answer) in &refusals {
        let message = answer["structured"]["error"]["message"].as_str();
        let says = format!("{tool}: bad arguments: unknown field `{field}`");
        assert!(
            message.is_some_and(|m| m.starts_with(&says)),
            "{tool} takes `{field}`: {answer}"
        );
    }
    let cli_only: Vec<String> = refusals
        .iter()
        .filter(|(_, field, _)| field != "agent" && field != "no_such_flag")
        .map(|(tool, field, _)| format!("{tool}.{field}"))
        .collect();
    // `status --all-repos` reads the person's list of every repository: an
    // agent's server answers for its own repository only.
    assert_eq!(
        cli_only,
        [
            "add_gate.global",
            "diff.markdown",
            "release.force",
            "status.all_repos",
        ]
        .map(String::from),
        "what only the command line takes"
    );
    assert_eq!(env.tip(&repo), tip, "nothing was written");
}

/// The rules between flags are clap's, for both front ends, and so is the
/// parsing of a value: a tool call that breaks one is refused before it
/// runs, in the CLI's words.
#[tokio::test]
async fn a_tool_call_breaking_a_flag_rule_is_refused_as_the_command_line_is() {
    let env = TestEnv::new();
    let (repo, todo) = setup(&env, "repo", &["agent-a"]);
    let tip = env.tip(&repo);
    let client = connect(&env, &repo, "agent-a").await;
    let cases: [(&str, Value, Vec<&str>); 6] = [
        (
            "claim",
            json!({"todo": todo, "remote": "origin"}),
            vec!["todo", "claim", &todo, "--remote", "origin"],
        ),
        (
            "next_todo",
            json!({"sync": true}),
            vec!["todo", "next", "--sync"],
        ),
        (
            "complete_todo",
            json!({"todo": todo, "evidence": "e", "next": "n", "no_follow_up": true}),
            vec![
                "todo",
                "done",
                &todo,
                "--evidence",
                "e",
                "--next",
                "n",
                "--no-follow-up",
            ],
        ),
        (
            "writeback",
            json!({"outcome": "outcome_gap", "summary": "s", "exit_code": -1}),
            vec![
                "writeback",
                "--outcome",
                "outcome_gap",
                "--summary",
                "s",
                "--exit-code",
                "-1",
            ],
        ),
        (
            "spend",
            json!({"turn": "t-1", "writeback": "run_1"}),
            vec!["quota", "spend", "--turn", "t-1", "--writeback", "run_1"],
        ),
        (
            "claim",
            json!({"todo": todo, "ttl": "soon"}),
            vec!["todo", "claim", &todo, "--ttl", "soon"],
        ),
    ];
    let mut answers = Vec::new();
    for (tool, arguments, _) in &cases {
        answers.push(call(&client, tool, arguments.clone()).await);
    }
    client.cancel().await.unwrap();

    for ((tool, _, words), answer) in cases.iter().zip(&answers) {
        let mut args = vec!["--json", "--agent", "agent-a"];
        args.extend(words);
        let cli = env.loopx(&repo, &args).failure(2).json();
        let said = cli["error"]["message"].as_str().unwrap();
        let error = &answer["structured"]["error"];
        assert_eq!(error["code"], "invalid_input", "{answer}");
        let message = error["message"].as_str().unwrap();
        let message = message.strip_prefix(&format!("{tool}: bad arguments: "));
        // The CLI's `--json` message is the first line of clap's error;
        // for a value, clap names the flag before the parser's words.
        assert!(
            message.is_some_and(|m| m.starts_with(said.trim_end_matches(':')) || said.ends_with(m)),
            "{tool} says what the CLI says ({said}): {answer}"
        );
    }
    assert_eq!(env.tip(&repo), tip, "nothing was written");
}

/// The `claim` tool's `remote` is a configured remote named, as `--remote`
/// is (`sync::only_a_configured_remote_by_name_is_synced_with`): a path, a
/// URL or an option is a tool error before git runs, and nothing is pushed
/// anywhere or written here.
#[tokio::test]
async fn a_tool_call_names_only_a_configured_remote() {
    let env = TestEnv::new();
    let (_remote, dirs) = env.shared_state(&["a"]);
    let a = &dirs[0];
    let todo = env.add_todo(a, "claimed elsewhere");
    let other = env.bare("unrelated.git");
    let marker = env.path("pwned");
    let option = format!("--receive-pack=touch {}", marker.display());
    let tip = env.tip(a);
    let client = connect(&env, a, "agent-a").await;
    let mut answers = Vec::new();
    for remote in [
        other.to_str().unwrap(),
        "file:///nowhere",
        option.as_str(),
        "-q",
    ] {
        let arguments = json!({"todo": todo, "sync": true, "remote": remote});
        answers.push((remote.to_owned(), call(&client, "claim", arguments).await));
    }
    client.cancel().await.unwrap();
    for (remote, answer) in answers {
        assert_eq!(answer["is_error"], true, "{remote}: {answer}");
        let error = &answer["structured"]["error"];
        assert_eq!(error["code"], "invalid_input", "{remote}: {answer}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("is not a remote of this repository"),
            "{remote}: {answer}"
        );
    }
    assert!(!marker.exists(), "no option reached git");
    assert_eq!(
        env.git(&other, &["for-each-ref", "--format=%(refname)"]),
        "",
        "nothing was pushed to a repository given by path"
    );
    assert_eq!(env.tip(a), tip, "nothing was written");
}
