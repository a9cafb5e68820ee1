//! The dashboard's page beyond what it shows: whose work its chart counts.

use serde_json::Value;

use crate::env::TestEnv;
use crate::serve::Serving;

fn id_of(run: crate::env::Run, key: &str) -> String {
    run.success().json()[key]["id"].as_str().unwrap().to_owned()
}

#[test]
fn a_persons_gate_answer_is_not_counted_as_an_agents_work() {
    let env = TestEnv::new();
    let dir = env.state_repo("repo");
    let todo = env.add_todo(&dir, "Write the lexer");
    let gate = id_of(
        env.loopx(
            &dir,
            &["--json", "gate", "add", "Ship it?", "--unblocks", &todo],
        ),
        "gate",
    );
    env.loopx(
        &dir,
        &["gate", "resolve", &gate, "--approve", "--note", "yes"],
    )
    .success();
    let agent = ["--agent", "agent-a"];
    env.loopx(&dir, &[&agent[..], &["todo", "claim", &todo]].concat())
        .success();
    env.loopx(
        &dir,
        &[
            &agent[..],
            &[
                "writeback",
                "--todo",
                &todo,
                "--outcome",
                "outcome_progress",
                "--summary",
                "Numbers",
            ],
        ]
        .concat(),
    )
    .success();
    let serving = Serving::start(&env, &dir, &[]);
    let (status, board) = serving.get("/dashboard.json");
    assert_eq!(status, 200, "{board}");
    let series: Vec<(String, u64, u64)> = board["activity"]["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let sum = |key: &str| {
                s[key]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(Value::as_u64)
                    .sum()
            };
            (
                s["agent"].as_str().unwrap().to_owned(),
                sum("writebacks"),
                sum("done"),
            )
        })
        .collect();
    assert_eq!(
        series,
        [("agent-a".to_owned(), 1, 0)],
        "the gate's answer is the person's, not work of an agent"
    );
}
