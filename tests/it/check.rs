//! `git loopx check [--path P…]`, and `--allow-secret-pattern` on writes,
//! `check` and `sync`.

use crate::env::TestEnv;

const TOKEN: &str = "ghp_R8x2Kq9LmN4pVt7Zw3Yc6Hj1Bs5Df0Ga8Ue2";
const AWS_ID: &str = "AKIAIOSFODNN7EXAMPLE";

/// Puts `TOKEN` into the todo's text by hand (as a peer without the
/// write-time scan would), returning the todo's path on the branch.
fn smuggle_into_todo(env: &TestEnv, dir: &std::path::Path, id: &str) -> String {
    let path = env.state_path_of(dir, id);
    let yaml = env.state_file(dir, &path);
    let bad = yaml.replace("text: clean", &format!("text: deploy with {TOKEN}"));
    assert_ne!(bad, yaml);
    env.commit_state_file(dir, &path, &bad);
    path
}

/// The 1-based line of `path` on the state branch that holds `needle`.
fn line_of(env: &TestEnv, dir: &std::path::Path, path: &str, needle: &str) -> usize {
    env.state_file(dir, path)
        .lines()
        .position(|l| l.contains(needle))
        .expect("the needle is in the file")
        + 1
}

#[test]
fn a_clean_state_and_clean_paths_pass() {
    let env = TestEnv::new();
    let dir = env.state_repo("r");
    env.add_todo(&dir, "write the password reset flow; rotate the token");
    std::fs::create_dir_all(dir.join("docs/deep")).unwrap();
    std::fs::write(dir.join("docs/deep/a.md"), "token: <YOUR_TOKEN>\n").unwrap();
    std::fs::write(dir.join("docs/b.bin"), b"\x00\x01ghp_binary").unwrap();
    let run = env.loopx(&dir, &["check", "--path", "docs"]).success();
    assert!(run.stdout.contains("no credential found"), "{}", run.stdout);
    let json = env
        .loopx(
            &dir,
            &["--json", "check", "--path", "docs", "--path", "README"],
        )
        .success()
        .json();
    assert_eq!(json["ok"], true);
    assert_eq!(json["hits"], serde_json::json!([]));
    assert_eq!(json["state_scanned"], true);
    assert_eq!(json["skipped"], 1, "the binary file: {json}");
    assert_eq!(json["skipped_files"][0]["reason"], "binary");
    // The state's files (meta, goal, todo, ...) and the two text files.
    let scanned = json["scanned_files"].as_u64().unwrap();
    assert!(scanned >= 4, "{json}");
}

#[test]
fn a_hit_in_the_state_is_reported_with_its_file_and_line_and_fails() {
    let env = TestEnv::new();
    let dir = env.state_repo("r");
    let id = env.add_todo(&dir, "clean");
    let path = smuggle_into_todo(&env, &dir, &id);
    let line = line_of(&env, &dir, &path, TOKEN);
    let run = env.loopx(&dir, &["check"]).failure(1);
    assert!(
        run.stdout
            .contains(&format!("{path}:{line}: github_token: ghp_R8…")),
        "{}",
        run.stdout
    );
    assert!(run.stderr.contains("leak_detected"), "{}", run.stderr);
    assert!(!run.stdout.contains(TOKEN) && !run.stderr.contains(TOKEN));
    let json = env.loopx(&dir, &["--json", "check"]).failure(1).json();
    assert_eq!(json["ok"], false);
    assert_eq!(json["error"]["code"], "leak_detected");
    let hits = json["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{json}");
    assert_eq!(hits[0]["source"], "state");
    assert_eq!(hits[0]["file"], path.as_str());
    assert_eq!(hits[0]["line"], line);
    assert_eq!(hits[0]["rule"], "github_token");
    assert!(!json.to_string().contains(TOKEN));
    // Allowed: listed as such, and the check passes.
    let json = env
        .loopx(
            &dir,
            &["--json", "--allow-secret-pattern", "github_token", "check"],
        )
        .success()
        .json();
    assert_eq!(json["hits"], serde_json::json!([]));
    assert_eq!(json["allowed"][0]["rule"], "github_token");
}

#[test]
fn a_hit_in_a_named_path_has_its_line_and_the_state_is_optional() {
    let env = TestEnv::new();
    let dir = env.repo("plain");
    let notes = dir.join("notes");
    std::fs::create_dir_all(notes.join(".git")).unwrap();
    std::fs::write(notes.join(".git/config"), format!("{AWS_ID}\n")).unwrap();
    std::fs::write(
        notes.join("deploy.md"),
        format!(
            "# Deploy\n\nfirst the key\nexport KEY={AWS_ID}\nthen\npassword=Xy7#kP2!mQ9zLr4v\n"
        ),
    )
    .unwrap();
    // Neither state nor path: the usual error.
    let json = env.loopx(&dir, &["--json", "check"]).failure(3).json();
    assert_eq!(json["error"]["code"], "state_missing");
    let run = env.loopx(&dir, &["check", "--path", "notes"]).failure(1);
    assert!(
        run.stdout
            .contains("notes/deploy.md:4: aws_access_key: AKIAIO…"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("notes/deploy.md:6: assigned_secret: password=…"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("no state"), "{}", run.stdout);
    assert!(!run.stdout.contains(".git/config"), "skips .git");
    assert!(!run.stdout.contains("Xy7#kP2") && !run.stdout.contains(AWS_ID));
    let json = env
        .loopx(&dir, &["--json", "check", "--path", "notes/deploy.md"])
        .failure(1)
        .json();
    assert_eq!(json["state_scanned"], false);
    assert_eq!(json["hits"][0]["source"], "path");
    assert_eq!(json["hits"][0]["file"], "notes/deploy.md");
    assert_eq!(json["hits"][0]["line"], 4);
    // A path that does not exist is a usage error.
    let json = env
        .loopx(&dir, &["--json", "check", "--path", "nope"])
        .failure(2)
        .json();
    assert_eq!(json["error"]["code"], "invalid_input");
}

#[test]
fn writes_holding_a_credential_are_refused_and_pass_when_the_rule_is_allowed() {
    let env = TestEnv::new();
    let dir = env.state_repo("r");
    let id = env.add_todo(&dir, "clean");
    let before = env.tip(&dir);
    let note = format!("use {TOKEN}");
    let summary = format!("deployed with key {AWS_ID}");
    let refused: [Vec<&str>; 3] = [
        vec!["todo", "add", &note],
        vec!["todo", "update", &id, "--note", &note],
        vec![
            "--agent",
            "a",
            "writeback",
            "--todo",
            &id,
            "--outcome",
            "outcome_progress",
            "--summary",
            &summary,
        ],
    ];
    for args in &refused {
        let mut all = vec!["--json"];
        all.extend(args);
        let json = env.loopx(&dir, &all).failure(1).json();
        assert_eq!(json["error"]["code"], "leak_detected", "{args:?}");
        let message = json["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("github_token") || message.contains("aws_access_key"),
            "names the rule: {message}"
        );
        assert!(message.contains(".yaml:"), "names file and line: {message}");
        assert!(!json.to_string().contains(TOKEN) && !json.to_string().contains(AWS_ID));
        assert_eq!(env.tip(&dir), before, "{args:?}: nothing was committed");
    }
    // Allowed: each write lands, and its commit names the allowance.
    for (args, rule) in refused
        .iter()
        .zip(["github_token", "github_token", "aws_access_key"])
    {
        let mut all = vec!["--allow-secret-pattern", rule];
        all.extend(args);
        env.loopx(&dir, &all).success();
        let message = env.git(&dir, &["log", "-1", "--format=%B", "loopx-state"]);
        assert!(
            message.contains(&format!("Loopx-Allowed-Secret-Pattern: {rule}")),
            "{message}"
        );
    }
    // Allowing another rule does not let this one through.
    let json = env
        .loopx(
            &dir,
            &[
                "--json",
                "--allow-secret-pattern",
                "jwt",
                "todo",
                "add",
                &format!("x {AWS_ID}"),
            ],
        )
        .failure(1)
        .json();
    assert_eq!(json["error"]["code"], "leak_detected");
    // A write that holds nothing the scanner matches gets no trailer.
    env.loopx(
        &dir,
        &["--allow-secret-pattern", "jwt", "todo", "add", "plain"],
    )
    .success();
    let message = env.git(&dir, &["log", "-1", "--format=%B", "loopx-state"]);
    assert!(
        !message.contains("Loopx-Allowed-Secret-Pattern"),
        "{message}"
    );
}

#[test]
fn an_unknown_rule_is_a_usage_error_listing_the_rules() {
    let env = TestEnv::new();
    let dir = env.state_repo("r");
    let run = env
        .loopx(&dir, &["--allow-secret-pattern", "github", "check"])
        .failure(2);
    assert!(
        run.stderr.contains("github_token") && run.stderr.contains("assigned_secret"),
        "{}",
        run.stderr
    );
    let json = env
        .loopx(&dir, &["--json", "--allow-secret-pattern", "nope", "check"])
        .failure(2)
        .json();
    assert_eq!(json["error"]["code"], "invalid_input");
}

#[test]
fn sync_pushes_a_hit_of_an_allowed_rule() {
    let env = TestEnv::new();
    let (_remote, dirs) = env.shared_state(&["a"]);
    let dir = &dirs[0];
    let id = env.add_todo(dir, "clean");
    smuggle_into_todo(&env, dir, &id);
    let json = env.loopx(dir, &["--json", "sync"]).failure(1).json();
    assert_eq!(json["error"]["code"], "leak_detected");
    env.loopx(dir, &["--allow-secret-pattern", "github_token", "sync"])
        .success();
}
