//! Gate scope (SPEC §4 rule 5): a gate with no scope — made by `gate add`
//! without flags, or by `todo add --role user --class user_gate` — stops all
//! agent work in its goal, and `should-run`, `todo next`, the prompt,
//! `status` and `gate list` all say so. A gate that names what it holds
//! (`--unblocks`, `--blocks-agent`) holds only that.

use std::path::Path;

use crate::env::TestEnv;

fn should_run(env: &TestEnv, repo: &Path) -> serde_json::Value {
    env.loopx(repo, &["--json", "--agent", "agent-a", "should-run"])
        .success()
        .json()
}

fn user_gate_todo(env: &TestEnv, repo: &Path, text: &str) -> String {
    env.loopx(
        repo,
        &[
            "--json",
            "todo",
            "add",
            text,
            "--role",
            "user",
            "--class",
            "user_gate",
        ],
    )
    .success()
    .json()["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Regression: a gate made with `todo add --role user --class user_gate` was
/// shown as `[global]` by `status` while `should-run` ignored it and said run.
#[test]
fn a_user_gate_made_by_todo_add_is_a_gate_everywhere() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let work = env.add_todo(&repo, "Write the tokenizer");
    let gate = user_gate_todo(&env, &repo, "Publish under MIT?");

    let d = should_run(&env, &repo);
    assert_eq!(d["should_run"], false, "{d}");
    assert_eq!(d["state"], "operator_gate", "{d}");
    assert_eq!(d["notify_user"], true, "{d}");
    assert_eq!(d["gates"][0]["id"], gate.as_str(), "{d}");
    assert_eq!(d["gates"][0]["scope"], "global", "{d}");

    env.loopx(&repo, &["--agent", "agent-a", "todo", "next"])
        .failure(1);

    let prompt = env
        .loopx(&repo, &["--agent", "agent-a", "prompt"])
        .success()
        .stdout;
    assert!(prompt.contains("Do not work this turn"), "{prompt}");
    assert!(prompt.contains(&gate), "{prompt}");
    assert!(!prompt.contains(&work), "{prompt}");

    let status = env.loopx(&repo, &["--json", "status"]).success().json();
    assert_eq!(status["gates"][0]["id"], gate.as_str(), "{status}");
    assert_eq!(status["gates"][0]["scope"], "global", "{status}");
    assert_eq!(
        status["next"].as_array().map(Vec::len),
        Some(0),
        "no todo is next while a global gate is open: {status}"
    );
    let list = env.loopx(&repo, &["gate", "list"]).success().stdout;
    assert!(list.contains(&format!("{gate}  [global]")), "{list}");

    // Answered, the gate releases the work.
    env.loopx(&repo, &["gate", "resolve", &gate, "--approve"])
        .success();
    let d = should_run(&env, &repo);
    assert_eq!(d["effective_action"], "normal_run", "{d}");
    assert_eq!(d["selected_todo"]["id"], work.as_str(), "{d}");
}

#[test]
fn a_global_gate_stops_all_agent_work_but_a_scoped_one_holds_only_its_todo() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let first = env.add_todo(&repo, "Write the tokenizer");
    let second = env.add_todo(&repo, "Publish the crate");

    // --unblocks: holds only the todo it names; other work goes on.
    let held = env
        .loopx(
            &repo,
            &["--json", "gate", "add", "MIT?", "--unblocks", &second],
        )
        .success()
        .json()["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let d = should_run(&env, &repo);
    assert_eq!(d["effective_action"], "safe_bypass_user_gate_fallback");
    assert_eq!(d["selected_todo"]["id"], first.as_str());
    assert_eq!(d["gates"][0]["scope"], "todo", "{d}");
    let status = env.loopx(&repo, &["--json", "status"]).success().json();
    assert_eq!(status["gates"][0]["scope"], "todo", "{status}");
    let text = env.loopx(&repo, &["status"]).success().stdout;
    assert!(text.contains(&format!("[holds {second}]")), "{text}");
    let list = env.loopx(&repo, &["gate", "list"]).success().stdout;
    assert!(
        list.contains(&format!("{held}  [holds {second}]")),
        "{list}"
    );

    // A gate with no scope: nothing runs, not even this agent's own claim.
    env.loopx(&repo, &["--agent", "agent-a", "todo", "claim", &first])
        .success();
    env.loopx(&repo, &["gate", "add", "Stop everything?"])
        .success();
    let d = should_run(&env, &repo);
    assert_eq!(d["state"], "operator_gate", "{d}");
    assert_eq!(d["gates"].as_array().map(Vec::len), Some(2), "{d}");
}

/// The prompt names only hooks git-loopx ships, each with how to install it;
/// the generic prompt (a shell loop, `git loopx run`) names none.
#[test]
fn the_prompt_names_only_hooks_that_exist() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = env.add_todo(&repo, "Write the tokenizer");
    env.loopx(&repo, &["--agent", "agent-a", "todo", "claim", &todo])
        .success();
    // agent-b: its gate is open and the only todo is agent-a's.
    env.loopx(&repo, &["gate", "add", "MIT?", "--blocks-agent", "agent-b"])
        .success();
    let prompt = |runtime: &str| {
        let run = env
            .loopx(
                &repo,
                &["--agent", "agent-a", "prompt", "--runtime", runtime],
            )
            .success()
            .stdout;
        let skip = env
            .loopx(
                &repo,
                &["--agent", "agent-b", "prompt", "--runtime", runtime],
            )
            .success()
            .stdout;
        assert!(skip.contains("Do not work this turn"), "{skip}");
        run + &skip
    };
    let generic = prompt("generic");
    assert!(!generic.to_lowercase().contains("hook"), "{generic}");
    for (runtime, install) in [
        ("claude-code", "hooks install --claude-code"),
        ("codex", "hooks install --codex"),
        ("opencode", "hooks install --opencode"),
        ("gemini", "hooks install --gemini"),
    ] {
        let text = prompt(runtime);
        assert_eq!(text.matches(install).count(), 2, "{text}");
        assert!(!text.contains("notify hook"), "{text}");
    }
}

/// `gate add --global --unblocks X` was accepted and `--global` silently
/// dropped (the gate held only X): an explicit flag is refused rather than
/// ignored, and nothing is written.
#[test]
fn global_and_unblocks_together_are_refused_not_ignored() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let todo = env.add_todo(&repo, "Publish the crate");
    let tip = env.tip(&repo);
    let run = env
        .loopx(
            &repo,
            &["gate", "add", "Publish?", "--global", "--unblocks", &todo],
        )
        .failure(2);
    assert!(run.stderr.contains("--global"), "{}", run.stderr);
    assert!(run.stderr.contains("--unblocks"), "{}", run.stderr);
    assert_eq!(env.tip(&repo), tip, "nothing written");
}
