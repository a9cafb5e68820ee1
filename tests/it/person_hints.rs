//! A person who exported `LOOPX_AGENT` or set `loopx.agent` (issue 46,
//! item 7): a refusal of the person's command says why it was taken as an
//! agent's and how to act as themselves, and a read-only `serve` says why
//! it does not answer, in its first line and on the page.

use crate::env::TestEnv;

fn hint_of(run: crate::env::Run) -> String {
    run.failure(1).json()["error"]["hint"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_person_taken_for_an_agent_is_told_which_setting_did_it() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let gate = env
        .loopx(&repo, &["--json", "gate", "add", "Deploy?"])
        .success()
        .json()["gate"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let exported = env
        .loopx_cmd(&repo)
        .env("LOOPX_AGENT", "a1")
        .args(["--json", "gate", "resolve", &gate, "--approve"])
        .output()
        .unwrap();
    let hint = hint_of(exported.into());
    assert!(hint.contains("unset LOOPX_AGENT"), "{hint}");

    env.git(&repo, &["config", "loopx.agent", "a1"]);
    let configured = env.loopx(&repo, &["--json", "gate", "resolve", &gate, "--approve"]);
    let hint = hint_of(configured);
    assert!(hint.contains("git config --unset loopx.agent"), "{hint}");

    // Inside a runtime, no such advice: the command is the agent's.
    let inside = env
        .loopx_cmd(&repo)
        .env("LOOPX_RUNTIME", "claude-code")
        .args(["--json", "gate", "resolve", &gate, "--approve"])
        .output()
        .unwrap();
    let hint = hint_of(inside.into());
    assert!(!hint.contains("--unset"), "{hint}");
}

#[cfg(feature = "serve")]
#[test]
fn a_read_only_serve_says_why() {
    let env = TestEnv::new();
    let repo = env.state_repo("repo");
    let mut cmd = env.loopx_cmd(&repo);
    cmd.env("LOOPX_AGENT", "a1").args(["serve", "--port", "0"]);
    let serving = crate::serve::Serving::spawn_cmd(cmd);
    assert!(serving.key.is_none());
    let (_, board) = serving.get("/dashboard.json");
    let reason = board["answering"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("unset LOOPX_AGENT"), "{board}");
}
