//! Pi (`pi -p`), the real CLI, under git-loopx: see [`crate::agents`].

use std::time::Duration;

use serde_json::json;

use crate::agents::{self, Model};

#[test]
fn pi_completes_the_goal_as_its_agent_and_stops_at_the_persons_gate() {
    let Some(pi) = agents::cli("pi") else {
        return;
    };
    let env = agents::env();
    let repo = env.repo("r");
    let (todos, gate) = agents::goal(&env, &repo);
    agents::install(&env, &repo, "pi");
    let model = Model::start(&env, &agents::script(&gate));
    // The person's provider: the scripted model, as an OpenAI-compatible
    // chat completions endpoint.
    let agent_dir = env.path("home/.pi/agent");
    std::fs::create_dir_all(&agent_dir).unwrap();
    let models = json!({
        "providers": {
            "scripted": {
                "baseUrl": format!("{}/v1", model.url()),
                "api": "openai-completions",
                "apiKey": "test",
                "compat": { "supportsDeveloperRole": false, "supportsReasoningEffort": false },
                "models": [{
                    "id": "scripted-model",
                    "name": "Scripted model",
                    "reasoning": false,
                    "contextWindow": 100000,
                    "maxTokens": 4096
                }]
            }
        }
    });
    std::fs::write(agent_dir.join("models.json"), models.to_string()).unwrap();

    let mut cmd = agents::command(&env, &pi, &repo);
    cmd.env("PI_CODING_AGENT_DIR", &agent_dir)
        .env("PI_OFFLINE", "1")
        .env("PI_SKIP_VERSION_CHECK", "1")
        .env("PI_TELEMETRY", "0")
        .args(["-p", "--no-session", "--model", "scripted/scripted-model"])
        .arg("Work on this repository's git-loopx goal.");
    let run = agents::run(cmd, Duration::from_secs(300));
    assert_eq!(run.code, 0, "{run:?}\n{}", model.requests());
    agents::check_governed(&env, &repo, "main", &todos, &gate, &model);
}
