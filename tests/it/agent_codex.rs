//! Codex (`codex exec`), the real CLI in its default `workspace-write`
//! sandbox, under git-loopx, from the main worktree and from a linked one:
//! see [`crate::agents`].

use std::path::Path;
use std::time::Duration;

use crate::agents::{self, Model};
use crate::env::TestEnv;

/// `$CODEX_HOME/config.toml`: the scripted provider, and the project
/// trusted (what the person's first `codex` run in it records).
fn codex_home(env: &TestEnv, model: &Model, project: &Path) -> std::path::PathBuf {
    let home = env.path("home/.codex");
    std::fs::create_dir_all(&home).unwrap();
    let config = format!(
        r#"model = "scripted"
model_provider = "scripted"
# Keep the caller's PATH (a login shell resets it).
allow_login_shell = false

[analytics]
enabled = false

[features]
plugins = false

[model_providers.scripted]
name = "scripted"
base_url = "{}/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[projects."{}"]
trust_level = "trusted"
"#,
        model.url(),
        project.display()
    );
    std::fs::write(home.join("config.toml"), config).unwrap();
    home
}

fn governed(linked: bool) {
    let Some(codex) = agents::cli("codex") else {
        return;
    };
    let env = agents::env();
    let main = env.repo("r");
    let (todos, gate) = agents::goal(&env, &main);
    let work = if linked {
        let wt = env.path("wt");
        env.git(
            &main,
            &["worktree", "add", "-q", "-b", "agent", wt.to_str().unwrap()],
        );
        wt
    } else {
        main.clone()
    };
    // Control: without what `hooks install` writes, the sandbox keeps the
    // git directory read-only (so the run below proves the install's
    // writable roots, not a lax sandbox).
    let control = Model::start_in(
        &env,
        "control",
        &serde_json::json!({
            "turns": [{"match": "Control (run)", "steps": ["git commit --allow-empty -q -m control"], "final": "done"}],
            "default_final": "done"
        }),
    );
    let home = codex_home(&env, &control, &main);
    let mut cmd = agents::command(&env, &codex, &work);
    cmd.env("CODEX_HOME", &home)
        .env("SCRIPTED_API_KEY", "test")
        .args(["exec", "--json", "-s", "workspace-write", "Control run"]);
    let run = agents::run(cmd, Duration::from_secs(120));
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        control.requests().contains("Read-only file system"),
        "the sandbox let a git write through without the install:\n{}",
        control.requests()
    );

    agents::install(&env, &work, "codex");
    let model = Model::start(&env, &agents::script(&gate));
    // Codex keys trust on the repository's root, also from a linked
    // worktree.
    let home = codex_home(&env, &model, &main);

    let mut cmd = agents::command(&env, &codex, &work);
    cmd.env("CODEX_HOME", &home)
        .env("SCRIPTED_API_KEY", "test")
        .args(["exec", "--json", "-s", "workspace-write"])
        // Codex asks the person to trust each hook once (its TUI records
        // a hash); headless, this flag stands for that answer.
        .arg("--dangerously-bypass-hook-trust")
        .arg("Work on this repository's git-loopx goal.");
    let run = agents::run(cmd, Duration::from_secs(300));
    assert_eq!(run.code, 0, "{run:?}\n{}", model.requests());
    assert!(
        !model.requests().contains("Read-only file system"),
        "a git write failed in the sandbox:\n{}",
        model.requests()
    );
    // The code commits are on the worktree's branch.
    let branch = if linked { "agent" } else { "main" };
    agents::check_governed(&env, &main, branch, &todos, &gate, &model);
}

#[test]
fn codex_completes_the_goal_in_its_workspace_write_sandbox() {
    governed(false);
}

#[test]
fn codex_completes_the_goal_from_a_linked_worktree_in_its_sandbox() {
    governed(true);
}

/// The files in `.git/loopx/governed/`: one per process a hook program ran
/// under (`ops::governed`).
fn governed_records(repo: &Path) -> usize {
    std::fs::read_dir(repo.join(".git/loopx/governed"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Issue 45: Codex skips hooks the person has not trusted in its `/hooks`
/// view without a word. `status` says so, and `hooks status --json` gives
/// each hook's `trusted_hash` as Codex computes it: written into
/// `$CODEX_HOME/config.toml` (as the TUI's "Trust all" writes it), the
/// real `codex exec` — without the flag that bypasses trust — runs them.
#[test]
fn codex_skips_untrusted_hooks_and_the_person_is_told() {
    let Some(codex) = agents::cli("codex") else {
        return;
    };
    let env = agents::env();
    let repo = env.repo("r");
    env.loopx(&repo, &["init", "--goal-text", "Nothing to do yet"])
        .success();
    agents::install(&env, &repo, "codex");
    let model = Model::start(
        &env,
        &serde_json::json!({"turns": [], "default_final": "Nothing to do."}),
    );
    let real = std::fs::canonicalize(&repo).unwrap();
    let home = codex_home(&env, &model, &real);
    let exec = |what: &str| {
        let mut cmd = agents::command(&env, &codex, &repo);
        cmd.env("CODEX_HOME", &home)
            .env("SCRIPTED_API_KEY", "test")
            .args(["exec", "--json", "-s", "workspace-write", what]);
        let run = agents::run(cmd, Duration::from_secs(180));
        assert_eq!(run.code, 0, "{run:?}\n{}", model.requests());
    };

    // Untrusted: the person is told, and Codex indeed runs no hook.
    let status = env.loopx(&repo, &["--json", "status"]).success().json();
    let lost = &status["governance_lost"][0];
    assert_eq!(lost["runtime"], "codex", "{status}");
    assert!(
        lost["problem"].as_str().unwrap().contains("/hooks view"),
        "{status}"
    );
    exec("Untrusted run");
    assert_eq!(governed_records(&repo), 0, "an untrusted hook ran");

    // Trusted as the TUI records it, with the hashes git-loopx computed.
    let hooks = env
        .loopx(&repo, &["--json", "hooks", "status", "--codex"])
        .success()
        .json();
    let file = hooks["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with(".codex/hooks.json"))
        .expect("the hooks file")
        .clone();
    let mut config = std::fs::read_to_string(home.join("config.toml")).unwrap();
    for h in file["codex_hooks"].as_array().unwrap() {
        assert_eq!(h["trust"], "not_trusted", "{h}");
        config.push_str(&format!(
            "\n[hooks.state.{}]\ntrusted_hash = {}\n",
            h["key"], h["hash"]
        ));
    }
    assert_eq!(file["codex_hooks"].as_array().unwrap().len(), 2, "{file}");
    std::fs::write(home.join("config.toml"), config).unwrap();
    exec("Trusted run");
    assert!(
        governed_records(&repo) > 0,
        "Codex did not run the hooks trusted by git-loopx's hashes"
    );
    let status = env.loopx(&repo, &["--json", "status"]).success().json();
    assert!(status.get("governance_lost").is_none(), "{status}");
}
