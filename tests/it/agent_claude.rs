//! Claude Code (`claude -p`), the real CLI, under git-loopx: see
//! [`crate::agents`].

use std::time::Duration;

use serde_json::json;

use crate::agents::{self, Model};

#[test]
fn claude_code_completes_the_goal_as_its_agent_and_stops_at_the_persons_gate() {
    let Some(claude) = agents::cli("claude") else {
        return;
    };
    let env = agents::env();
    let repo = env.repo("r");
    let (todos, gate) = agents::goal(&env, &repo);
    agents::install(&env, &repo, "claude-code");
    let model = Model::start(&env, &agents::script_with(&gate, "", false));
    // The person trusted the folder once (Claude Code's trust dialog):
    // only then does it honour the project's permissions.
    let trust =
        json!({ "projects": { repo.display().to_string(): { "hasTrustDialogAccepted": true } } });
    std::fs::write(env.path("home/.claude.json"), trust.to_string()).unwrap();

    let mut cmd = agents::command(&env, &claude, &repo);
    cmd.env("ANTHROPIC_BASE_URL", model.url())
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .args(["-p", "Work on this repository's git-loopx goal."])
        .args(["--output-format", "json"])
        // The person lets the agent change files and commit, and run
        // `env` (the scrubbed tries of `agents::scrubbed`); `git loopx`
        // itself is allowed by what `hooks install` wrote.
        .args([
            "--allowedTools",
            "Bash(touch:*) Bash(git add:*) Bash(git commit:*) Bash(env:*)",
        ]);
    let run = agents::run(cmd, Duration::from_secs(300));
    assert_eq!(run.code, 0, "{run:?}\n{}", model.requests());
    let result: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap_or_default();
    assert_eq!(
        result["permission_denials"].as_array().map(Vec::len),
        Some(0),
        "a git loopx call waited on the person: {result:#}"
    );
    agents::check_governed(&env, &repo, "main", &todos, &gate, &model);
}
