//! Governance lost is something the person is told (issue 45): a runtime
//! `hooks install` set up from this clone whose files no longer hold
//! git-loopx's entries (deleted, emptied, or a file wholly ours edited)
//! is named in `status`, `doctor` and the dashboard, with the command that
//! governs it again; a change that keeps the entries (OpenCode adding its
//! `$schema`) is not.

use std::path::Path;

use serde_json::Value;

use crate::env::TestEnv;

fn lost(env: &TestEnv, repo: &Path) -> Vec<Value> {
    let status = env.loopx(repo, &["--json", "status"]).success().json();
    status["governance_lost"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn installed(env: &TestEnv) -> std::path::PathBuf {
    let repo = env.state_repo("repo");
    for runtime in ["--claude-code", "--opencode", "--pi"] {
        env.loopx(&repo, &["hooks", "install", runtime, "--agent", "a1"])
            .success();
    }
    repo
}

#[test]
fn a_runtime_whose_hook_files_changed_or_went_is_named_until_installed_again() {
    let env = TestEnv::new();
    let repo = installed(&env);
    assert!(lost(&env, &repo).is_empty());

    // OpenCode's own first run adds "$schema": its entries stay, it is
    // still governed.
    let config = repo.join("opencode.json");
    let text = std::fs::read_to_string(&config).unwrap();
    let with_schema = text.replacen(
        '{',
        "{\n  \"$schema\": \"https://opencode.ai/config.json\",",
        1,
    );
    std::fs::write(&config, with_schema).unwrap();
    assert!(lost(&env, &repo).is_empty(), "{:?}", lost(&env, &repo));

    // An agent empties Claude Code's settings, deletes OpenCode's plugin
    // and edits Pi's extension.
    std::fs::write(repo.join(".claude/settings.json"), "{}\n").unwrap();
    std::fs::remove_file(repo.join(".opencode/plugin/loopx.js")).unwrap();
    let ext = repo.join(".pi/extensions/loopx.ts");
    let edited = format!(
        "{}\n// the Stop handler does nothing now\n",
        std::fs::read_to_string(&ext).unwrap()
    );
    std::fs::write(&ext, edited).unwrap();

    let found = lost(&env, &repo);
    let problem = |runtime: &str, file: &str| -> String {
        found
            .iter()
            .find(|u| u["runtime"] == runtime && u["path"].as_str().unwrap().ends_with(file))
            .unwrap_or_else(|| panic!("{runtime} {file} not named: {found:?}"))["problem"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        problem("claude-code", ".claude/settings.json"),
        "git-loopx's entries are gone from it"
    );
    assert_eq!(
        problem("opencode", ".opencode/plugin/loopx.js"),
        "the file is gone"
    );
    assert_eq!(
        problem("pi", ".pi/extensions/loopx.ts"),
        "changed since git-loopx wrote it"
    );
    assert_eq!(found.len(), 3, "{found:?}");
    assert_eq!(
        found[0]["fix"],
        "git loopx hooks install --claude-code --agent <id>"
    );

    let text = env.loopx(&repo, &["status"]).success().stdout;
    assert!(text.contains("Not governed"), "{text}");
    assert!(text.contains("the file is gone"), "{text}");
    let doctor = env.loopx(&repo, &["--json", "doctor"]).success().json();
    let warned: Vec<&Value> = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] == "governance")
        .collect();
    assert_eq!(warned.len(), 3, "{doctor}");
    assert!(warned.iter().all(|c| c["level"] == "warn"), "{doctor}");

    // An agent's try at the person's authority, for the page to show too.
    env.loopx(&repo, &["--agent", "a1", "review", "--ack"])
        .failure(1);
    #[cfg(feature = "serve")]
    dashboard_says(&env, &repo);

    // Installed again, each is governed again.
    for runtime in ["--claude-code", "--opencode", "--pi"] {
        env.loopx(&repo, &["hooks", "install", runtime, "--agent", "a1"])
            .success();
    }
    assert!(lost(&env, &repo).is_empty(), "{:?}", lost(&env, &repo));
}

#[cfg(feature = "serve")]
fn dashboard_says(env: &TestEnv, repo: &Path) {
    let serving = crate::serve::Serving::start(env, repo, &[]);
    let (_, board) = serving.get("/dashboard.json");
    assert_eq!(
        board["governance_lost"].as_array().map(Vec::len),
        Some(3),
        "{board}"
    );
    if let Some(browser) = crate::serve::browser() {
        let key = serving.key.clone().unwrap_or_default();
        browser.goto(&format!("{}/?key={key}", serving.url));
        let drawn = format!(
            "document.body.dataset.drawn === {}",
            serde_json::json!(env.tip(repo))
        );
        browser
            .wait_for(&drawn, std::time::Duration::from_secs(20))
            .expect("the page draws");
        let shown = crate::serve::text_of(&browser, "#needs [data-test=governance-lost]");
        assert!(shown.contains("is not governed"), "{shown}");
        let refused = crate::serve::text_of(&browser, "#needs [data-test=refused]");
        assert!(
            refused.contains("a1") && refused.contains("person_only"),
            "{refused}"
        );
    }
    assert_eq!(board["refused"][0]["by"], "a1", "{board}");
}
