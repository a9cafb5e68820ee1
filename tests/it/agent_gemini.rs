//! Gemini CLI (`gemini -p`), the real CLI, under git-loopx: see
//! [`crate::agents`].

use std::time::Duration;

use serde_json::json;

use crate::agents::{self, Model};

#[test]
fn gemini_completes_the_goal_as_its_agent_and_stops_at_the_persons_gate() {
    let Some(gemini) = agents::cli("gemini") else {
        return;
    };
    let env = agents::env();
    let repo = env.repo("r");
    let (todos, gate) = agents::goal(&env, &repo);
    agents::install(&env, &repo, "gemini");
    // Gemini CLI empties `core.hooksPath` for its agent's commands, so the
    // commit names its todo itself, as the turn's prompt asks.
    let model = Model::start(
        &env,
        &agents::script_with(&gate, " --trailer 'Loopx-Todo: {3}'", false),
    );
    // The person's own settings: an API key sign-in, no usage statistics.
    let home = env.path("home/.gemini");
    let settings = json!({
        "privacy": { "usageStatisticsEnabled": false },
        "security": { "auth": { "selectedType": "gemini-api-key" } }
    });
    std::fs::write(home.join("settings.json"), settings.to_string()).unwrap();
    // The person lets the agent change files and commit, and run `env`
    // (the scrubbed tries of `agents::scrubbed`), by their own policy;
    // `git loopx` itself is allowed by the policy `hooks install` wrote.
    let policy = r#"[[rule]]
toolName = "run_shell_command"
commandPrefix = ["touch", "git add", "git commit", "env"]
decision = "allow"
priority = 100
"#;
    std::fs::write(home.join("policies/person.toml"), policy).unwrap();

    let mut cmd = agents::command(&env, &gemini, &repo);
    cmd.env("GOOGLE_GEMINI_BASE_URL", model.url())
        .env("GEMINI_API_KEY", "test")
        // The person trusted the folder (Gemini CLI's trust dialog): only
        // then does it read the project's settings and `.env`.
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .args(["-p", "Work on this repository's git-loopx goal."])
        .args(["--output-format", "json"]);
    let run = agents::run(cmd, Duration::from_secs(300));
    assert_eq!(run.code, 0, "{run:?}\n{}", model.requests());
    // A command its policies do not allow fails, headless, without asking.
    let result: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap_or_default();
    assert_eq!(
        result["stats"]["tools"]["totalFail"],
        0,
        "a command was refused by Gemini CLI's policies: {result:#}\n{}",
        model.requests()
    );
    agents::check_governed(&env, &repo, "main", &todos, &gate, &model);
}
