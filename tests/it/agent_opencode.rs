//! OpenCode (`opencode run`), the real CLI, under git-loopx: see
//! [`crate::agents`].

use std::time::Duration;

use serde_json::{json, Value};

use crate::agents::{self, Model};

#[test]
fn opencode_completes_the_goal_as_its_agent_and_stops_at_the_persons_gate() {
    let Some(opencode) = agents::cli("opencode") else {
        return;
    };
    let env = agents::env();
    let repo = env.repo("r");
    let (todos, gate) = agents::goal(&env, &repo);
    agents::install(&env, &repo, "opencode");
    let model = Model::start(&env, &agents::script_with(&gate, "", false));
    // The person adds their provider (the scripted model, OpenAI-compatible)
    // to the `opencode.json` that `hooks install` wrote, which allows
    // `git loopx`.
    let config_path = repo.join("opencode.json");
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_path).unwrap()).unwrap();
    assert_eq!(
        config["permission"]["bash"]["git loopx *"], "allow",
        "{config:#}"
    );
    let config_map = config.as_object_mut().unwrap();
    for (key, value) in [
        ("model", json!("scripted/scripted-model")),
        ("small_model", json!("scripted/scripted-model")),
        ("autoupdate", json!(false)),
        ("snapshot", json!(false)),
        ("share", json!("disabled")),
        (
            "provider",
            json!({
                "scripted": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Scripted",
                    "options": { "baseURL": format!("{}/v1", model.url()), "apiKey": "test" },
                    "models": { "scripted-model": {
                        "name": "Scripted model",
                        "tool_call": true,
                        "limit": { "context": 100000, "output": 4096 }
                    } }
                }
            }),
        ),
    ] {
        config_map.insert(key.to_owned(), value);
    }
    // The person wants to be asked about any other command (OpenCode allows
    // all by default; headless, asking is refusing, which ends the run), but
    // lets the agent change files and commit, and run `env` (the scrubbed
    // tries of `agents::scrubbed`). The last matching rule wins,
    // so the catch-all goes first.
    let installed = config["permission"]["bash"].as_object().unwrap().clone();
    let mut bash = serde_json::Map::new();
    bash.insert("*".to_owned(), json!("ask"));
    bash.extend(installed);
    for allowed in ["touch *", "git add *", "git commit *", "env *"] {
        bash.insert(allowed.to_owned(), json!("allow"));
    }
    config["permission"]["bash"] = Value::Object(bash);
    std::fs::write(&config_path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    // OpenCode installs its plugin package into each config directory at
    // start, retrying for a minute offline, unless it finds it there.
    for dir in [repo.join(".opencode"), env.path("home/.config/opencode")] {
        std::fs::create_dir_all(dir.join("node_modules")).unwrap();
        let lock = json!({
            "lockfileVersion": 3,
            "packages": { "": { "dependencies": { "@opencode-ai/plugin": "*" } } }
        });
        std::fs::write(dir.join("package-lock.json"), lock.to_string()).unwrap();
    }

    let mut cmd = agents::command(&env, &opencode, &repo);
    for switch in [
        "OPENCODE_DISABLE_MODELS_FETCH",
        "OPENCODE_DISABLE_AUTOUPDATE",
        "OPENCODE_DISABLE_SHARE",
        "OPENCODE_DISABLE_LSP_DOWNLOAD",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS",
    ] {
        cmd.env(switch, "1");
    }
    cmd.args(["run", "--format", "json"])
        .arg("Work on this repository's git-loopx goal.");
    let run = agents::run(cmd, Duration::from_secs(300));
    assert_eq!(run.code, 0, "{run:?}\n{}", model.requests());
    agents::check_governed(&env, &repo, "main", &todos, &gate, &model);
}
