//! Every kind of turn over MCP alone, with rmcp's client: a planning turn,
//! a work turn, a replanning turn, a monitor's poll and the goal's end,
//! each driven by the tools the served prompt `turn` names, and never by a
//! command line (an MCP-only client may have no shell).

use std::collections::BTreeSet;
use std::path::Path;

use rmcp::model::GetPromptRequestParams;
use serde_json::{json, Value};

use crate::env::TestEnv;
use crate::mcp_rmcp::{call, connect_at, Client};

/// The prompt `turn` as served for `turn`, after checking that it names
/// no command line of ours and only tools the server has; the tools it
/// names (each as "the `NAME` tool").
async fn served_prompt(client: &Client, turn: &str) -> (String, BTreeSet<String>) {
    let arguments = json!({"runtime": "generic", "turn": turn});
    let params =
        GetPromptRequestParams::new("turn").with_arguments(arguments.as_object().unwrap().clone());
    let prompt = client.get_prompt(params).await.expect("prompts/get");
    let prompt = serde_json::to_value(&prompt).unwrap();
    let text = prompt["messages"][0]["content"]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!text.contains("git loopx"), "a command line in:\n{text}");
    let tools: BTreeSet<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    let named: BTreeSet<String> = text
        .match_indices("` tool")
        .filter_map(|(end, _)| text[..end].rsplit_once('`').map(|(_, n)| n.to_owned()))
        .collect();
    assert!(named.is_subset(&tools), "{named:?} not all in {tools:?}");
    (text, named)
}

/// Calls each tool in turn; every call must succeed. Their answers.
async fn steps(client: &Client, calls: Vec<(&'static str, Value)>) -> Vec<Value> {
    let mut answers = Vec::new();
    for (tool, arguments) in calls {
        let answer = call(client, tool, arguments).await;
        assert_eq!(answer["is_error"], false, "{answer}");
        answers.push(answer["structured"].clone());
    }
    answers
}

#[track_caller]
fn names(named: &BTreeSet<String>, expected: &[&str]) {
    let expected: BTreeSet<String> = expected.iter().map(|s| s.to_string()).collect();
    assert!(named.is_superset(&expected), "{named:?} lacks {expected:?}");
}

fn show(env: &TestEnv, repo: &Path, todo: &str) -> Value {
    env.loopx(repo, &["--json", "todo", "show", todo])
        .success()
        .json()["todo"]
        .clone()
}

#[tokio::test]
async fn every_kind_of_turn_runs_on_the_tools_its_served_prompt_names() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    env.loopx(&repo, &["agent", "register", "agent-a"])
        .success();
    let client = connect_at(&env, &repo, "agent-a", &env.now).await;

    // Planning: the goal has no todo.
    let (text, named) = served_prompt(&client, "plan").await;
    assert!(text.contains("## This turn: plan"), "{text}");
    names(&named, &["add_todo", "complete_goal", "writeback", "spend"]);
    let done = steps(
        &client,
        vec![
            ("should_run", json!({"turn": "plan"})),
            (
                "add_todo",
                json!({"text": "Write the tokenizer", "priority": "P1"}),
            ),
            ("add_todo", json!({"text": "Write the parser"})),
            (
                "writeback",
                json!({"turn": "plan", "outcome": "outcome_progress", "summary": "planned two todos"}),
            ),
            ("spend", json!({"turn": "plan"})),
        ],
    )
    .await;
    assert_eq!(done[0]["effective_action"], "plan_required");
    let tokenizer = done[1]["todo"]["id"].as_str().unwrap().to_owned();
    let parser = done[2]["todo"]["id"].as_str().unwrap().to_owned();

    // Work: claim, write back, complete, spend.
    let (text, named) = served_prompt(&client, "work").await;
    assert!(
        text.contains(&format!("## This turn: {tokenizer}")),
        "{text}"
    );
    names(&named, &["claim", "writeback", "complete_todo", "spend"]);
    let done = steps(
        &client,
        vec![
            ("should_run", json!({"turn": "work"})),
            ("claim", json!({"todo": tokenizer})),
            (
                "writeback",
                json!({"todo": tokenizer, "turn": "work", "outcome": "outcome_progress", "summary": "wrote it"}),
            ),
            (
                "complete_todo",
                json!({"todo": tokenizer, "evidence": "tests pass"}),
            ),
            ("spend", json!({"turn": "work"})),
        ],
    )
    .await;
    assert_eq!(done[0]["selected_todo"]["id"], tokenizer.as_str());

    // Replanning: the person blocked the only open todo.
    env.loopx(
        &repo,
        &[
            "todo",
            "update",
            &parser,
            "--status",
            "blocked",
            "--note",
            "waits on the grammar",
        ],
    )
    .success();
    let (text, named) = served_prompt(&client, "replan").await;
    assert!(text.contains("## This turn: replan"), "{text}");
    names(
        &named,
        &["update_todo", "add_todo", "add_gate", "writeback"],
    );
    let monitor = json!({
        "text": "Watch CI",
        "class": "continuous_monitor",
        "every": "1m",
        "until": "10m",
    });
    let done = steps(
        &client,
        vec![
            ("should_run", json!({"turn": "replan"})),
            (
                "update_todo",
                json!({"todo": parser, "status": "deferred", "note": "the parser moves to its own goal"}),
            ),
            ("add_todo", monitor),
            (
                "writeback",
                json!({"turn": "replan", "outcome": "outcome_progress", "summary": "parked the parser"}),
            ),
            ("spend", json!({"turn": "replan"})),
        ],
    )
    .await;
    assert_eq!(done[0]["effective_action"], "replan_required");
    let monitor = done[2]["todo"]["id"].as_str().unwrap().to_owned();
    client.cancel().await.unwrap();

    // The monitor's poll, five minutes on: a quiet poll spends nothing.
    let at = "2026-12-02T10:05:00Z";
    let client = connect_at(&env, &repo, "agent-a", at).await;
    let (text, named) = served_prompt(&client, "poll").await;
    assert!(text.contains(&format!("## This turn: {monitor}")), "{text}");
    names(&named, &["claim", "poll_monitor", "writeback"]);
    steps(
        &client,
        vec![
            ("should_run", json!({"turn": "poll"})),
            ("claim", json!({"todo": monitor})),
            (
                "poll_monitor",
                json!({"todo": monitor, "quiet": true, "note": "CI is green"}),
            ),
            (
                "writeback",
                json!({"todo": monitor, "turn": "poll", "outcome": "surface_only", "summary": "CI is green"}),
            ),
        ],
    )
    .await;
    client.cancel().await.unwrap();

    // The monitor has ended and nothing is open: the goal's end.
    let at = "2026-12-02T10:20:00Z";
    let client = connect_at(&env, &repo, "agent-a", at).await;
    let (text, named) = served_prompt(&client, "end").await;
    assert!(text.contains("## This turn: plan"), "{text}");
    names(&named, &["complete_goal"]);
    let done = steps(
        &client,
        vec![
            ("should_run", json!({"turn": "end"})),
            (
                "complete_goal",
                json!({"note": "the tokenizer is delivered"}),
            ),
            ("should_run", json!({})),
        ],
    )
    .await;
    client.cancel().await.unwrap();
    assert_eq!(done[0]["effective_action"], "plan_required");
    assert_eq!(done[2]["effective_action"], "terminal_no_followup");

    // What the state says now.
    assert_eq!(show(&env, &repo, &tokenizer)["status"], "done");
    let parser = show(&env, &repo, &parser);
    assert_eq!(parser["status"], "deferred");
    assert_eq!(parser["notes"][1]["agent"], "agent-a", "{parser}");
    let monitor = show(&env, &repo, &monitor)["monitor"].clone();
    assert_eq!(monitor["next_due_at"], "2026-12-02T10:06:00Z", "{monitor}");
    assert_eq!(monitor["polls"][0]["note"], "CI is green", "{monitor}");
    let goal = env
        .loopx(&repo, &["--json", "goal", "show"])
        .success()
        .json();
    assert_eq!(goal["goal"]["status"], "done");
    assert_eq!(goal["goal"]["done_by"], "agent-a");
    let quota = env
        .loopx(&repo, &["--json", "quota", "show"])
        .success()
        .json();
    assert_eq!(
        quota["quota"]["spent_slots"], 3,
        "the quiet poll spent nothing"
    );
}
