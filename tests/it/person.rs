//! The person is established beyond environment variables (issue 45): a
//! command an agent runs — under `git loopx run`, or from the shell of a
//! runtime that has `git loopx mcp` as its server, a runtime git-loopx does
//! not name — is not the person's, even when it scrubs its environment
//! (`env -i`), clears its identity (`LOOPX_AGENT=`, `git -c loopx.agent=`).
//! Its ancestors' environment, and the processes git-loopx governs, say so.

use std::path::{Path, PathBuf};

use crate::env::TestEnv;

/// A repository with agent a1, an open todo T1 the agent works on, a gate
/// holding T2, and the goal's end reserved for the person: (repo, gate).
fn setup(env: &TestEnv) -> (PathBuf, String) {
    let repo = env.state_repo("repo");
    // A scrubbed environment loses the test's identity: the repository
    // keeps one, so a write that got through would not fail for want of it.
    env.git(&repo, &["config", "user.name", "Someone"]);
    env.git(&repo, &["config", "user.email", "someone@example.com"]);
    env.loopx(&repo, &["agent", "register", "a1"]).success();
    env.add_todo(&repo, "Write the parser");
    let held = env.add_todo(&repo, "Deploy");
    let gate = env
        .loopx(
            &repo,
            &[
                "--json",
                "gate",
                "add",
                "May we deploy to production?",
                "--unblocks",
                &held,
            ],
        )
        .success()
        .json()["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    env.loopx(&repo, &["goal", "set", "--person-only", "done"])
        .success();
    (repo, gate)
}

/// The person's commands an agent's shell might try, each as `sh` runs it.
fn attempts(gate: &str) -> Vec<String> {
    vec![
        format!("git loopx gate resolve {gate} --approve"),
        format!("LOOPX_AGENT= git loopx gate resolve {gate} --approve"),
        format!("env -i PATH=\"$PATH\" git loopx gate resolve {gate} --approve"),
        format!("env -u LOOPX_AGENT git -c loopx.agent= loopx gate resolve {gate} --approve"),
        "env -i PATH=\"$PATH\" git loopx goal done".to_owned(),
    ]
}

#[track_caller]
fn still_open(env: &TestEnv, repo: &Path, gate: &str) {
    let show = env
        .loopx(repo, &["--json", "todo", "show", gate])
        .success()
        .json();
    assert_eq!(show["todo"]["status"], "open", "{show}");
    let goal = env
        .loopx(repo, &["--json", "goal", "show"])
        .success()
        .json();
    assert_ne!(goal["goal"]["status"], "done", "{goal}");
}

#[test]
fn an_agent_under_run_cannot_act_as_the_person_even_scrubbed() {
    let env = TestEnv::new();
    let (repo, gate) = setup(&env);
    let log = env.path("attempts.log");
    let mut script = String::new();
    for a in attempts(&gate) {
        script.push_str(&format!(
            "{a} >/dev/null 2>>'{log}'; echo \"exit $?: {}\" >> '{log}'\n",
            a.replace('"', "'"),
            log = log.display()
        ));
    }
    let agent = env.path("agent.sh");
    env.write_script(&agent, &format!("#!/bin/sh\n{script}"));
    env.loopx(
        &repo,
        &[
            "--agent",
            "a1",
            "run",
            "--cmd",
            agent.to_str().unwrap(),
            "--max-turns",
            "1",
        ],
    );
    let text = std::fs::read_to_string(&log).expect("the agent ran");
    let exits: Vec<&str> = text.lines().filter(|l| l.starts_with("exit ")).collect();
    assert_eq!(exits.len(), attempts(&gate).len(), "{text}");
    for line in &exits {
        assert!(
            line.starts_with("exit 1:"),
            "an attempt was not refused: {line}\n{text}"
        );
    }
    assert!(
        text.contains("governed by git-loopx") || text.contains("LOOPX_RUNTIME"),
        "{text}"
    );
    still_open(&env, &repo, &gate);
    // Each try is recorded for the person.
    let status = env.loopx(&repo, &["--json", "status"]).success().json();
    let told = status["refused"].as_array().expect("status lists refusals");
    let at_the_gate = told.iter().filter(|t| t["code"] == "gate_reserved").count();
    assert_eq!(at_the_gate, 4, "each try at the gate is recorded: {status}");
    assert!(
        told.iter().any(|t| t["code"] == "person_only"),
        "goal done, reserved, is recorded too: {status}"
    );
    assert!(
        told.iter()
            .any(|t| t["by"].as_str().unwrap().contains("inside")),
        "{status}"
    );
    // The person, from their own shell, answers.
    env.loopx(&repo, &["gate", "resolve", &gate, "--approve"])
        .success();
}

/// A runtime git-loopx does not name, with `git loopx mcp` as its MCP
/// server: its own shell tool (here, the client's subprocesses while the
/// session is open) is not the person, with or without an environment.
#[cfg(feature = "mcp")]
#[test]
fn the_shell_of_a_runtime_served_by_mcp_is_not_the_person() {
    let env = TestEnv::new();
    if let Some(why) = crate::mcp::sdk_missing(&env) {
        crate::require::skip("LOOPX_REQUIRE_MCP_SDK", &why);
        return;
    }
    let (repo, gate) = setup(&env);
    let commands: Vec<Vec<String>> = attempts(&gate)
        .into_iter()
        .map(|a| vec!["sh".to_owned(), "-c".to_owned(), a])
        .collect();
    let script = serde_json::to_string(&commands).unwrap();
    let out = crate::mcp::client(&env, "shell", &repo, "a1", &[&script]);
    assert_eq!(out["should_run"]["is_error"], false, "{out}");
    for c in out["commands"].as_array().unwrap() {
        assert_eq!(c["code"], 1, "an attempt was not refused: {c}");
        let stderr = c["stderr"].as_str().unwrap();
        assert!(
            stderr.contains("error[person_only]") || stderr.contains("error[gate_reserved]"),
            "{c}"
        );
    }
    still_open(&env, &repo, &gate);
    // Once the session is over, the person's own commands are theirs.
    env.loopx(&repo, &["gate", "resolve", &gate, "--approve"])
        .success();
}
