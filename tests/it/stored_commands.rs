//! Issue 45, point 4: a command written into state (a todo's `validate`)
//! runs only for an agent, never as the person. An agent's reminder whose
//! check would leave a marker file is completed by the person's `todo
//! done` without the check running, and every surface shows the command;
//! an agent's own `todo done` still runs it.

use std::path::{Path, PathBuf};

use crate::env::TestEnv;

/// The check an agent writes into a todo: it leaves `marker` behind.
pub(crate) fn marking(marker: &Path) -> String {
    format!("sh -c 'touch {}'", marker.display())
}

/// A repository where agent `a1` added a reminder for the person whose
/// `validate` would create `marker`: (repo, marker, reminder, command).
pub(crate) fn agents_reminder(env: &TestEnv, name: &str) -> (PathBuf, PathBuf, String, String) {
    let repo = env.state_repo(name);
    let marker = env.path(&format!("{name}-marker"));
    let command = marking(&marker);
    let reminder = env
        .loopx(
            &repo,
            &[
                "--json",
                "--agent",
                "a1",
                "todo",
                "add",
                "Rotate the deploy key",
                "--role",
                "user",
                "--class",
                "user_action",
                "--validate",
                &command,
            ],
        )
        .success()
        .json()["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    (repo, marker, reminder, command)
}

#[test]
fn the_persons_todo_done_does_not_run_an_agents_check() {
    let env = TestEnv::new();
    let (repo, marker, reminder, command) = agents_reminder(&env, "json");
    let out = env
        .loopx(
            &repo,
            &["--json", "todo", "done", &reminder, "--evidence", "rotated"],
        )
        .success()
        .json();
    assert!(!marker.exists(), "the agent's check ran as the person");
    assert_eq!(out["todo"]["status"], "done", "{out}");
    assert!(out.get("validation").is_none(), "nothing was run: {out}");
    let not_run = &out["validation_not_run"];
    assert_eq!(not_run["command"], command.as_str(), "{out}");
    assert_eq!(not_run["reason"], "completed by the person");
    assert!(
        not_run["hint"]
            .as_str()
            .unwrap()
            .contains("run it yourself"),
        "{out}"
    );
    // The state says so too: a note on the todo and a line in the commit.
    let show = env
        .loopx(&repo, &["--json", "todo", "show", &reminder])
        .success()
        .json();
    let notes = show["todo"]["notes"].to_string();
    assert!(
        notes.contains("validate not run: completed by the person"),
        "{show}"
    );
    assert_eq!(show["todo"]["validate"], command.as_str());
    let message = env.git(&repo, &["log", "-1", "--format=%B", "loopx-state"]);
    assert!(
        message.contains(&format!(
            "validate not run (completed by the person): {command}"
        )),
        "{message}"
    );

    // In text, the command exactly, and what the person may do.
    let (repo, marker, reminder, command) = agents_reminder(&env, "text");
    let text = env
        .loopx(&repo, &["todo", "done", &reminder, "--evidence", "rotated"])
        .success()
        .stdout;
    assert!(!marker.exists(), "the agent's check ran as the person");
    assert!(
        text.contains(&format!(
            "validate not run (completed by the person): `{command}`"
        )),
        "{text}"
    );
    assert!(text.contains("run it yourself"), "{text}");
}

#[test]
fn the_person_completing_an_agents_todo_does_not_run_its_check_either() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let marker = env.path("marker");
    let command = marking(&marker);
    let todo = env
        .loopx(
            &repo,
            &[
                "--json",
                "--agent",
                "a1",
                "todo",
                "add",
                "Work",
                "--validate",
                &command,
            ],
        )
        .success()
        .json()["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = env
        .loopx(&repo, &["--json", "todo", "done", &todo, "--evidence", "e"])
        .success()
        .json();
    assert!(!marker.exists(), "an agent's check ran as the person");
    assert_eq!(out["validation_not_run"]["command"], command.as_str());
}

#[test]
fn an_agents_own_todo_done_still_runs_its_check() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let marker = env.path("marker");
    let command = marking(&marker);
    let agent = |args: &[&str]| {
        let mut all = vec!["--json", "--agent", "a1"];
        all.extend_from_slice(args);
        env.loopx(&repo, &all).success().json()
    };
    let todo = agent(&["todo", "add", "Work", "--validate", &command])["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    agent(&["todo", "claim", &todo]);
    let out = agent(&["todo", "done", &todo, "--evidence", "e"]);
    assert!(
        marker.exists(),
        "the agent's check did not run for the agent"
    );
    assert_eq!(out["validation"]["command"], command.as_str(), "{out}");
    assert_eq!(out["validation"]["result"], "passed", "{out}");
    assert!(out.get("validation_not_run").is_none(), "{out}");
}

#[test]
fn status_shows_the_check_of_every_open_persons_todo() {
    let env = TestEnv::new();
    let (repo, _, reminder, command) = agents_reminder(&env, "r");
    let gate_check = "sh -c 'echo \"<b>approved</b>\"'";
    let gate = env
        .loopx(
            &repo,
            &[
                "--json",
                "--agent",
                "a1",
                "todo",
                "add",
                "Ship it?",
                "--role",
                "user",
                "--class",
                "user_gate",
                "--validate",
                gate_check,
            ],
        )
        .success()
        .json()["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let status = env.loopx(&repo, &["--json", "status"]).success().json();
    assert_eq!(status["user_actions"][0]["id"], reminder.as_str());
    assert_eq!(
        status["user_actions"][0]["validate"],
        command.as_str(),
        "{status}"
    );
    assert_eq!(status["gates"][0]["id"], gate.as_str());
    assert_eq!(status["gates"][0]["validate"], gate_check, "{status}");

    let text = env.loopx(&repo, &["status"]).success().stdout;
    for check in [command.as_str(), gate_check] {
        assert!(
            text.contains(&format!(
                "check written into state, not run for you: `{check}`"
            )),
            "{text}"
        );
    }
}
