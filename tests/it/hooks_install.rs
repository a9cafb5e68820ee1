//! `hooks install|uninstall|status` and the git hooks, against real
//! repositories and real `git commit` / `git push` (issue 14, Done when 4
//! and 5): installing twice changes no byte, the user's own hooks and
//! settings keep working, uninstall gives the user's files back exactly,
//! `core.hooksPath` and linked worktrees are honoured, a code commit made
//! while holding a claim carries `Loopx-Todo`, and `log --todo` finds it.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use crate::env::{Run, TestEnv};

/// A user's Claude Code settings: another event, another Stop hook, other
/// settings, laid out by hand (one-line arrays, 4-space indent, no final
/// newline), so only a byte-exact restore gives it back.
const USER_SETTINGS: &str = r#"{
    "permissions": { "allow": ["Bash(ls)"] },
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo pre"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "echo user-stop"}]}]
    },
    "model": "opus"
}"#;

/// Every file under `dirs` (recursively) with its bytes and mode.
fn snapshot(dirs: &[PathBuf]) -> BTreeMap<PathBuf, (Vec<u8>, u32)> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, (Vec<u8>, u32)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let meta = std::fs::metadata(&path).unwrap();
            if meta.is_dir() {
                walk(&path, out);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.insert(path, (bytes, meta.permissions().mode() & 0o777));
            }
        }
    }
    let mut out = BTreeMap::new();
    for dir in dirs {
        walk(dir, &mut out);
    }
    out
}

/// `git` in `dir` with `LOOPX_NOW` pinned (so the hook judges leases at the
/// test's time) and, when given, the acting agent.
fn git_as(env: &TestEnv, dir: &Path, agent: Option<&str>, args: &[&str]) -> Run {
    let mut cmd = env.command(Path::new("git"), dir);
    if let Some(agent) = agent {
        cmd.env("LOOPX_AGENT", agent);
    }
    cmd.args(args).output().expect("git runs").into()
}

fn actions(run: &Run) -> Vec<String> {
    run.json()["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["action"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn install_twice_changes_nothing_user_hooks_keep_working_and_uninstall_restores_them() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let remote = env.bare("remote.git");
    env.git(
        &repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    std::fs::create_dir(repo.join(".claude")).unwrap();
    std::fs::write(repo.join(".claude/settings.json"), USER_SETTINGS).unwrap();
    let hooks = repo.join(".git/hooks");
    let marker = env.path("marker");
    for name in ["prepare-commit-msg", "pre-push"] {
        env.write_script(
            &hooks.join(name),
            &format!(
                "#!/bin/sh\necho \"{name} $1\" >> '{}'\nexit 0\n",
                marker.display()
            ),
        );
    }
    let watched = [
        repo.join(".claude"),
        repo.join(".codex"),
        repo.join(".agents"),
        hooks.clone(),
    ];
    let before = snapshot(&watched);

    let all = ["--claude-code", "--codex", "--git", "--mcp-claude-code"];
    let first = env.loopx(&repo, &[&["--json", "hooks", "install"][..], &all].concat());
    // Claude Code: settings.json (the person's, updated), settings.local.json
    // and the /loopx command; Codex: hooks, config and skill; the two git
    // hooks (the person's, updated); .mcp.json.
    assert_eq!(
        actions(&first.success()),
        [
            "updated", "created", "created", "created", "created", "created", "updated", "updated",
            "created"
        ]
    );
    let installed = snapshot(&watched);
    let again = env.loopx(&repo, &[&["--json", "hooks", "install"][..], &all].concat());
    assert_eq!(actions(&again.success()), ["unchanged"; 9]);
    assert_eq!(
        snapshot(&watched),
        installed,
        "a second install changed a byte"
    );

    // Our entries sit beside the user's, which are all still there.
    let settings: serde_json::Value =
        serde_json::from_slice(&std::fs::read(repo.join(".claude/settings.json")).unwrap())
            .unwrap();
    assert_eq!(settings["model"], "opus");
    assert_eq!(settings["permissions"]["allow"][0], "Bash(ls)");
    assert_eq!(
        settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "echo pre"
    );
    let stop: Vec<&str> = settings["hooks"]["Stop"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["hooks"][0]["command"].as_str().unwrap())
        .collect();
    assert_eq!(stop, ["echo user-stop", "git loopx hook claude-code stop"]);
    assert_eq!(
        settings["hooks"]["SessionStart"][0]["hooks"][0]["command"],
        "git loopx hook claude-code session-start"
    );
    let codex: serde_json::Value =
        serde_json::from_slice(&std::fs::read(repo.join(".codex/hooks.json")).unwrap()).unwrap();
    assert_eq!(
        codex["hooks"]["Stop"][0]["hooks"][0]["command"],
        "git loopx hook codex stop"
    );

    // The user's own git hooks still run, beside ours.
    std::fs::write(repo.join("code.txt"), "1\n").unwrap();
    env.git(&repo, &["add", "code.txt"]);
    git_as(&env, &repo, None, &["commit", "-q", "-m", "code"]).success();
    git_as(&env, &repo, None, &["push", "-q", "origin", "main"]).success();
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap(),
        "prepare-commit-msg .git/COMMIT_EDITMSG\npre-push origin\n"
    );

    let status = env
        .loopx(&repo, &[&["--json", "hooks", "status"][..], &all].concat())
        .success()
        .json();
    for f in status["files"].as_array().unwrap() {
        assert_eq!(f["installed"], "yes", "{f}");
        assert_eq!(f["changed_by_hand"], false, "{f}");
    }

    // With none named, uninstall takes out every integration; those never
    // installed say so.
    let removed = env
        .loopx(&repo, &["--json", "hooks", "uninstall"])
        .success();
    let acted: Vec<String> = actions(&removed)
        .into_iter()
        .filter(|a| a != "not_installed")
        .collect();
    assert_eq!(
        acted,
        [
            "restored", "deleted", "deleted", "deleted", "deleted", "deleted", "restored",
            "restored", "deleted"
        ]
    );
    assert!(
        !repo.join(".agents").exists(),
        "the directories we created stay"
    );
    assert_eq!(
        snapshot(&watched),
        before,
        "uninstall did not restore every file"
    );
    assert!(
        !repo.join(".codex").exists(),
        "the directory we created stays"
    );
    assert!(
        !repo.join(".mcp.json").exists(),
        "the file we created stays"
    );
}

#[test]
fn uninstall_after_a_hand_edit_takes_out_only_our_entries() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.loopx(&repo, &["hooks", "install", "--claude-code"])
        .success();
    let path = repo.join(".claude/settings.json");
    let mut settings: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    settings["theme"] = "dark".into();
    std::fs::write(&path, serde_json::to_string_pretty(&settings).unwrap()).unwrap();

    let status = env
        .loopx(&repo, &["--json", "hooks", "status", "--claude-code"])
        .success()
        .json();
    assert_eq!(status["files"][0]["changed_by_hand"], true);
    let text = env
        .loopx(&repo, &["hooks", "status", "--claude-code"])
        .success();
    assert!(
        text.stdout.contains("changed by hand since"),
        "{}",
        text.stdout
    );

    let out = env.loopx(&repo, &["--json", "hooks", "uninstall", "--claude-code"]);
    // settings.json was edited: only our entries go; the files that were
    // ours alone (settings.local.json, the /loopx command) go whole.
    assert_eq!(actions(&out.success()), ["removed", "deleted", "deleted"]);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{\n  \"theme\": \"dark\"\n}"
    );
}

#[test]
fn core_hooks_path_is_honoured_relative_to_the_worktree() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.git(&repo, &["config", "core.hooksPath", "githooks/active"]);
    env.loopx(&repo, &["hooks", "install"]).success();
    let hook = repo.join("githooks/active/prepare-commit-msg");
    let text = std::fs::read_to_string(&hook).unwrap();
    assert!(
        text.starts_with("#!/bin/sh\n# >>> git-loopx >>>\n"),
        "{text}"
    );
    assert!(text.ends_with("# <<< git-loopx <<<\n"), "{text}");
    assert_eq!(
        std::fs::metadata(&hook).unwrap().permissions().mode() & 0o777,
        0o755
    );
    assert!(!repo.join(".git/hooks/prepare-commit-msg").exists());

    // git runs it from there: the commit gets its trailer.
    let todo = env.add_todo(&repo, "parse headers");
    env.loopx(&repo, &["--agent", "agent-a", "todo", "claim", &todo])
        .success();
    std::fs::write(repo.join("code.txt"), "1\n").unwrap();
    env.git(&repo, &["add", "code.txt"]);
    git_as(
        &env,
        &repo,
        Some("agent-a"),
        &["commit", "-q", "-m", "headers"],
    )
    .success();
    assert_eq!(
        env.git(
            &repo,
            &["log", "-1", "--format=%(trailers:key=Loopx-Todo,valueonly)"]
        ),
        todo
    );

    env.loopx(&repo, &["hooks", "uninstall"]).success();
    assert!(
        !repo.join("githooks").exists(),
        "the directories we made stay"
    );
}

#[test]
fn a_linked_worktree_uses_the_common_hooks_and_its_own_settings() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let linked = env.path("linked");
    env.git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "side",
            linked.to_str().unwrap(),
        ],
    );
    env.loopx(&linked, &["hooks", "install", "--git", "--claude-code"])
        .success();
    assert!(repo.join(".git/hooks/prepare-commit-msg").exists());
    assert!(linked.join(".claude/settings.json").exists());
    assert!(!repo.join(".claude").exists());

    let todo = env.add_todo(&repo, "parse headers");
    env.loopx(&linked, &["--agent", "agent-a", "todo", "claim", &todo])
        .success();
    std::fs::write(linked.join("code.txt"), "1\n").unwrap();
    env.git(&linked, &["add", "code.txt"]);
    git_as(
        &env,
        &linked,
        Some("agent-a"),
        &["commit", "-q", "-m", "headers"],
    )
    .success();
    let log = env
        .loopx(&repo, &["--json", "log", "--todo", &todo])
        .success()
        .json();
    assert_eq!(
        log["code_commits"][0]["found_on"],
        serde_json::json!(["side"])
    );
    assert_eq!(log["code_commits"][0]["subject"], "headers");

    env.loopx(&linked, &["hooks", "uninstall"]).success();
    assert!(!repo.join(".git/hooks/prepare-commit-msg").exists());
    assert!(!linked.join(".claude").exists());
}

#[test]
fn a_code_commit_made_while_holding_one_claim_carries_the_trailer_once() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.loopx(&repo, &["hooks", "install"]).success();
    let todo = env.add_todo(&repo, "parse headers");
    let other = env.add_todo(&repo, "parse bodies");
    let commit = |agent: Option<&str>, file: &str, message: &str| {
        std::fs::write(repo.join(file), message).unwrap();
        env.git(&repo, &["add", file]);
        let run = git_as(&env, &repo, agent, &["commit", "-q", "-m", message]).success();
        let trailers = env.git(
            &repo,
            &[
                "log",
                "-1",
                "--format=%(trailers:key=Loopx-Todo,valueonly,separator=%x2C)",
            ],
        );
        (trailers, run.stderr)
    };

    // No claim, and a person (no agent): no trailer, and nothing said.
    assert_eq!(
        commit(Some("agent-a"), "a", "before the claim"),
        (String::new(), String::new())
    );
    env.loopx(&repo, &["--agent", "agent-a", "todo", "claim", &todo])
        .success();
    assert_eq!(
        commit(None, "b", "by a person"),
        (String::new(), String::new())
    );

    // The agent's code commit names its todo, in git's trailer format.
    let (trailer, stderr) = commit(Some("agent-a"), "c", "headers: parse");
    assert_eq!(trailer, todo);
    assert!(
        stderr.contains(&format!("added Loopx-Todo: {todo}")),
        "{stderr}"
    );
    let body = env.git(&repo, &["log", "-1", "--format=%B"]);
    assert_eq!(body, format!("headers: parse\n\nLoopx-Todo: {todo}"));
    let code = env.git(&repo, &["rev-parse", "HEAD"]);

    // A message that already names a todo gets no second trailer.
    let (trailer, _) = commit(
        Some("agent-a"),
        "d",
        &format!("by hand\n\nLoopx-Todo: {other}"),
    );
    assert_eq!(trailer, other);

    // A merge commit gets none.
    env.git(&repo, &["checkout", "-q", "-b", "side", "HEAD~1"]);
    commit(None, "e", "side work");
    env.git(&repo, &["checkout", "-q", "main"]);
    git_as(
        &env,
        &repo,
        Some("agent-a"),
        &["merge", "-q", "--no-ff", "-m", "merge side", "side"],
    )
    .success();
    assert_eq!(
        env.git(
            &repo,
            &["log", "-1", "--format=%(trailers:key=Loopx-Todo,valueonly)"]
        ),
        ""
    );

    // With two claims it cannot tell which: no trailer, and it says why.
    env.loopx(&repo, &["--agent", "agent-a", "todo", "claim", &other])
        .success();
    let (trailer, stderr) = commit(Some("agent-a"), "f", "both");
    assert_eq!(trailer, "");
    assert!(stderr.contains("holds 2 claims"), "{stderr}");

    // `log --todo <prefix>` lists the code commit, and where it is.
    let prefix = &todo["todo_".len().."todo_".len() + 6];
    let log = env.loopx(&repo, &["log", "--todo", prefix]).success();
    assert!(
        log.stdout.contains(&format!("{} ", &code[..12]))
            && log.stdout.contains("headers: parse (on main, side)"),
        "{}",
        log.stdout
    );
    let json = env
        .loopx(&repo, &["--json", "log", "--todo", &todo[..11]])
        .success()
        .json();
    let listed: Vec<&str> = json["code_commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["commit"].as_str().unwrap())
        .collect();
    assert_eq!(listed, [code.as_str()]);
}

#[test]
fn a_file_that_is_not_json_is_refused_and_nothing_is_written() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    std::fs::create_dir(repo.join(".claude")).unwrap();
    std::fs::write(repo.join(".claude/settings.json"), "{\"hooks\": {\n").unwrap();
    let watched = [repo.join(".claude"), repo.join(".git/hooks")];
    let before = snapshot(&watched);
    let out = env
        .loopx(&repo, &["hooks", "install", "--git", "--claude-code"])
        .failure(2);
    assert!(
        out.stderr
            .contains(".claude/settings.json is not valid JSON"),
        "{}",
        out.stderr
    );
    std::fs::write(repo.join(".claude/settings.json"), "{\"hooks\": []}").unwrap();
    let out = env
        .loopx(&repo, &["--json", "hooks", "install", "--claude-code"])
        .failure(2)
        .json();
    assert!(
        out["error"]["message"]
            .as_str()
            .unwrap()
            .ends_with(".claude/settings.json: `hooks` is an array, expected an object of events"),
        "{out}"
    );
    std::fs::write(repo.join(".claude/settings.json"), "{\"hooks\": {\n").unwrap();
    assert_eq!(
        snapshot(&watched),
        before,
        "a refused install wrote something"
    );
    assert!(
        !repo.join(".git/loopx/installed").exists(),
        "a refused install kept a record"
    );
}

#[test]
fn pre_push_syncs_only_when_asked_and_blocks_only_when_strict() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let remote = env.bare("remote.git");
    env.git(
        &repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    env.loopx(&repo, &["hooks", "install"]).success();
    let remote_state = || {
        env.git_ok(
            &remote,
            &["rev-parse", "--verify", "-q", "refs/heads/loopx-state"],
        )
    };

    git_as(&env, &repo, None, &["push", "-q", "origin", "main"]).success();
    assert!(!remote_state(), "pre-push synced while off");

    env.git(&repo, &["config", "loopx.prePushSync", "true"]);
    env.git(&repo, &["commit", "-q", "--allow-empty", "-m", "more"]);
    let push = git_as(&env, &repo, None, &["push", "-q", "origin", "main"]).success();
    assert!(
        push.stderr.contains("synced loopx-state with origin"),
        "{}",
        push.stderr
    );
    assert_eq!(
        env.git(&remote, &["rev-parse", "refs/heads/loopx-state"]),
        env.tip(&repo)
    );

    // Another state (another root) on the remote: sync is refused. The push
    // goes on with a warning, unless the user asked for strictness.
    let other = env.repo("other");
    env.loopx(&other, &["init", "--goal-text", "Another goal"])
        .success();
    env.git(
        &other,
        &["push", "-q", "-f", remote.to_str().unwrap(), "loopx-state"],
    );
    env.git(&repo, &["commit", "-q", "--allow-empty", "-m", "again"]);
    let push = git_as(&env, &repo, None, &["push", "-q", "origin", "main"]).success();
    assert!(push.stderr.contains("pushing anyway"), "{}", push.stderr);
    env.git(&repo, &["config", "loopx.prePushStrict", "true"]);
    env.git(&repo, &["commit", "-q", "--allow-empty", "-m", "strict"]);
    let push = git_as(&env, &repo, None, &["push", "-q", "origin", "main"]);
    assert_ne!(push.code, 0, "a strict pre-push let the push through");
    assert!(
        push.stderr.contains("before the push failed"),
        "{}",
        push.stderr
    );
    assert_ne!(
        env.git(&remote, &["rev-parse", "main"]),
        env.git(&repo, &["rev-parse", "main"])
    );
}

#[test]
fn only_an_agent_named_on_the_command_line_is_baked_in_and_never_into_git_hooks() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let mut cmd = env.loopx_cmd(&repo);
    cmd.env("LOOPX_AGENT", "from-env")
        .args(["hooks", "install", "--claude-code"]);
    assert!(cmd.output().unwrap().status.success());
    let text = std::fs::read_to_string(repo.join(".claude/settings.json")).unwrap();
    assert!(!text.contains("--agent"), "{text}");

    env.loopx(
        &repo,
        &[
            "--json",
            "hooks",
            "install",
            "--claude-code",
            "--git",
            "--agent",
            "agent-b",
        ],
    )
    .success();
    let commands = hook_commands(&env, &repo);
    assert_eq!(
        commands,
        [
            "SessionStart: git loopx hook claude-code session-start --agent agent-b",
            "Stop: git loopx hook claude-code stop --agent agent-b",
            // One hooks directory serves every worktree and the person's
            // own commits: the git hooks act for whoever is named at commit
            // time, never for an agent baked in.
            "git loopx hook git prepare-commit-msg \"$@\" </dev/null || :",
            "git loopx hook git pre-push \"$@\" </dev/null || exit $?",
        ]
    );
    // While agent-b holds a claim, a person's commit names no todo; the
    // agent's own commit (LOOPX_AGENT at commit time) does.
    let todo = env.add_todo(&repo, "parse headers");
    env.loopx(&repo, &["--agent", "agent-b", "todo", "claim", &todo])
        .success();
    let trailer = || {
        env.git(
            &repo,
            &["log", "-1", "--format=%(trailers:key=Loopx-Todo,valueonly)"],
        )
    };
    std::fs::write(repo.join("code.txt"), "0\n").unwrap();
    env.git(&repo, &["add", "code.txt"]);
    git_as(&env, &repo, None, &["commit", "-q", "-m", "by a person"]).success();
    assert_eq!(trailer(), "");
    std::fs::write(repo.join("code.txt"), "1\n").unwrap();
    env.git(&repo, &["add", "code.txt"]);
    git_as(
        &env,
        &repo,
        Some("agent-b"),
        &["commit", "-q", "-m", "headers"],
    )
    .success();
    assert_eq!(trailer(), todo);

    // An empty message (the editor opens next) gets no trailer, so leaving
    // it empty still aborts the commit.
    std::fs::write(repo.join("code.txt"), "2\n").unwrap();
    let mut commit = env.command(Path::new("git"), &repo);
    commit
        .env("GIT_EDITOR", "true")
        .env("LOOPX_AGENT", "agent-b")
        .args(["commit", "-a"]);
    let out: Run = commit.output().unwrap().into();
    assert_ne!(out.code, 0, "an empty message made a commit");
    assert!(
        out.stderr.contains("the message is empty"),
        "{}",
        out.stderr
    );
}

/// A global `--goal` on the command line, before or after the subcommand,
/// is baked in as `--agent` is: into the runtimes' hook commands, their
/// shells, their plugins and the MCP server's entry, never into the git
/// hooks; `LOOPX_GOAL` alone is not. The installed Stop hook then hands
/// the session that goal's turn, whose commands name the goal.
#[test]
fn a_goal_named_on_the_command_line_is_baked_in_as_the_agent_is() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.loopx(
        &repo,
        &["goal", "add", "docs", "--objective", "Write the docs"],
    )
    .success();
    let read = |file: &str| std::fs::read_to_string(repo.join(file)).unwrap();
    let mut cmd = env.loopx_cmd(&repo);
    cmd.env("LOOPX_GOAL", "docs")
        .args(["hooks", "install", "--claude-code"]);
    assert!(cmd.output().unwrap().status.success());
    assert!(!read(".claude/settings.json").contains("--goal"));
    assert!(!read(".claude/settings.local.json").contains("LOOPX_GOAL"));

    let install = [
        "--goal",
        "docs",
        "hooks",
        "install",
        "--agent",
        "agent-b",
        "--claude-code",
        "--opencode",
        "--mcp-claude-code",
        "--git",
    ];
    env.loopx(&repo, &install).success();
    let commands: Vec<String> = hook_commands(&env, &repo)
        .into_iter()
        .filter(|c| c.contains("git loopx hook c") || c.contains("mcp"))
        .collect();
    assert_eq!(
        commands,
        [
            "SessionStart: git loopx hook claude-code session-start --agent agent-b --goal docs",
            "Stop: git loopx hook claude-code stop --agent agent-b --goal docs",
            "git loopx mcp --agent agent-b --goal docs",
        ]
    );
    let local: serde_json::Value =
        serde_json::from_str(&read(".claude/settings.local.json")).unwrap();
    assert_eq!(local["env"]["LOOPX_GOAL"], "docs", "{local}");
    assert!(read(".opencode/plugin/loopx.js").contains(r#"const GOAL = "docs";"#));
    assert!(!read(".git/hooks/prepare-commit-msg").contains("docs"));

    // The Stop hook as Claude Code runs it: docs' turn, its commands on docs.
    let todo = env
        .loopx(
            &repo,
            &[
                "--goal",
                "docs",
                "--json",
                "todo",
                "add",
                "Document the parser",
            ],
        )
        .success()
        .json()["todo"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let stop = "git loopx hook claude-code stop --agent agent-b --goal docs";
    let payload = r#"{"session_id": "s", "hook_event_name": "Stop"}"#;
    let mut hook = env.command(Path::new("sh"), &repo);
    hook.args(["-c", stop]);
    let run = crate::env::run_with_stdin(&mut hook, payload.as_bytes());
    assert!(run.stdout.contains("Goal `docs`"), "{}", run.stdout);
    assert!(
        run.stdout.contains(&format!(
            "git loopx --agent agent-b --goal docs todo claim {todo}"
        )),
        "{}",
        run.stdout
    );
}

#[test]
fn loopx_trouble_never_fails_a_commit_or_a_push() {
    // (A failed sync letting the push through is in
    // `pre_push_syncs_only_when_asked_and_blocks_only_when_strict`.)
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let remote = env.bare("remote.git");
    env.git(
        &repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    env.loopx(&repo, &["hooks", "install"]).success();
    env.git(&repo, &["config", "loopx.prePushSync", "true"]);
    env.commit_state_file(&repo, "loopx.yaml", "format: [unclosed\n");

    std::fs::write(repo.join("code.txt"), "1\n").unwrap();
    env.git(&repo, &["add", "code.txt"]);
    let out = git_as(
        &env,
        &repo,
        Some("agent-a"),
        &["commit", "-q", "-m", "code"],
    )
    .success();
    assert!(
        out.stderr.contains("cannot read loopx state"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("loopx.yaml"),
        "names the file: {}",
        out.stderr
    );

    // An agent id the hook cannot use does not stop them either.
    let out = git_as(
        &env,
        &repo,
        Some("Not An Id"),
        &["commit", "-q", "--allow-empty", "-m", "x"],
    )
    .success();
    assert!(
        out.stderr.contains("no Loopx-Todo trailer added"),
        "{}",
        out.stderr
    );
    let out = git_as(
        &env,
        &repo,
        Some("Not An Id"),
        &["push", "-q", "origin", "main"],
    )
    .success();
    assert!(
        out.stderr.contains("no loopx sync before the push"),
        "{}",
        out.stderr
    );
    assert_eq!(
        env.git(&remote, &["rev-parse", "main"]),
        env.git(&repo, &["rev-parse", "main"])
    );
}

#[test]
fn a_bare_repository_gets_the_git_hooks_only() {
    let env = TestEnv::new();
    let bare = env.bare("b.git");
    let out = env
        .loopx(&bare, &["--json", "hooks", "install"])
        .success()
        .json();
    assert_eq!(out["files"].as_array().unwrap().len(), 2);
    assert!(bare.join("hooks/pre-push").exists());
    let status = env
        .loopx(&bare, &["--json", "hooks", "status"])
        .success()
        .json();
    assert_eq!(status["files"].as_array().unwrap().len(), 2);
    let refused = env
        .loopx(&bare, &["hooks", "install", "--claude-code"])
        .failure(2);
    assert!(refused.stderr.contains("no worktree"), "{}", refused.stderr);
}

/// Every command `hooks status` reports installed, file by file.
fn hook_commands(env: &TestEnv, repo: &Path) -> Vec<String> {
    let status = env
        .loopx(repo, &["--json", "hooks", "status"])
        .success()
        .json();
    status["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["commands"].as_array().into_iter().flatten())
        .map(|c| c.as_str().unwrap().to_owned())
        .collect()
}

/// Issue 47, item 11: OpenCode adds `"$schema"` to `opencode.json` on its
/// first run and writes the file back in its own layout. That is not a
/// change by hand: `hooks status` says so only when something else changed.
#[test]
fn opencode_adding_its_schema_is_not_a_change_by_hand() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.loopx(&repo, &["hooks", "install", "--opencode"])
        .success();
    let path = repo.join("opencode.json");
    let ours: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut theirs = serde_json::Map::new();
    theirs.insert("$schema".into(), "https://opencode.ai/config.json".into());
    theirs.extend(ours.as_object().unwrap().clone());
    std::fs::write(&path, serde_json::to_string(&theirs).unwrap()).unwrap();
    let changed = |env: &TestEnv| {
        let status = env
            .loopx(&repo, &["--json", "hooks", "status", "--opencode"])
            .success()
            .json();
        let file = status["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"].as_str().unwrap().ends_with("opencode.json"))
            .cloned()
            .unwrap();
        file["changed_by_hand"].clone()
    };
    assert_eq!(changed(&env), false);

    theirs.insert("theme".into(), "dark".into());
    std::fs::write(&path, serde_json::to_string(&theirs).unwrap()).unwrap();
    assert_eq!(changed(&env), true);
}

/// Issue 47, item 11: Gemini CLI hides git config from its shell
/// (`GIT_CONFIG_GLOBAL=/dev/null`), so an identity set only in the person's
/// global config is gone there and the agent's commits fail "Author
/// identity unknown". `hooks install --gemini` writes that identity into
/// `.gemini/.env` (which Gemini CLI's shell inherits) as `GIT_AUTHOR_*`
/// and `GIT_COMMITTER_*`; with no identity at all it says so.
#[test]
fn gemini_gets_the_persons_git_identity_its_shell_would_hide() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let global = env.path("person.gitconfig");
    std::fs::write(
        &global,
        "[user]\n\tname = Pat Q. Person\n\temail = pat@example.com\n",
    )
    .unwrap();
    let out = env
        .loopx_cmd(&repo)
        .env("GIT_CONFIG_GLOBAL", &global)
        .args(["--json", "hooks", "install", "--gemini"])
        .output()
        .unwrap();
    crate::env::Run::from(out).success();
    let dotenv = std::fs::read_to_string(repo.join(".gemini/.env")).unwrap();
    let vars: Vec<(String, String)> = dotenv
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.trim_matches('"').to_owned()))
        .collect();
    for (key, value) in [
        ("GIT_AUTHOR_NAME", "Pat Q. Person"),
        ("GIT_AUTHOR_EMAIL", "pat@example.com"),
        ("GIT_COMMITTER_NAME", "Pat Q. Person"),
        ("GIT_COMMITTER_EMAIL", "pat@example.com"),
    ] {
        assert!(
            vars.iter().any(|(k, v)| k == key && v == value),
            "{key} in {dotenv}"
        );
    }

    // A commit as Gemini CLI's shell makes it: no git config, no identity
    // in the environment but what the env file gives (without it, git fails
    // "Author identity unknown" where it cannot guess one).
    std::fs::write(repo.join("work.txt"), "w\n").unwrap();
    env.git(&repo, &["add", "work.txt"]);
    let commit = |with: &[(String, String)]| {
        let mut cmd = env.git_cmd(&repo);
        for key in [
            "GIT_AUTHOR_NAME",
            "GIT_AUTHOR_EMAIL",
            "GIT_COMMITTER_NAME",
            "GIT_COMMITTER_EMAIL",
        ] {
            cmd.env_remove(key);
        }
        cmd.env("GIT_CONFIG_GLOBAL", "/dev/null")
            .envs(with.iter().map(|(k, v)| (k, v)))
            .args(["commit", "-q", "-m", "agent work"])
            .output()
            .unwrap()
    };
    let with = commit(&vars);
    assert!(
        with.status.success(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    let author = env.git(&repo, &["log", "-1", "--format=%an <%ae>"]);
    assert_eq!(author.trim(), "Pat Q. Person <pat@example.com>");

    // No identity anywhere: the install says what will fail.
    let bare_repo = env.state_repo("s");
    let report = env
        .loopx(&bare_repo, &["--json", "hooks", "install", "--gemini"])
        .success()
        .stdout;
    assert!(report.contains("Author identity unknown"), "{report}");
}

/// A commented OpenCode configuration (JSONC, which OpenCode reads in both
/// `opencode.json` and `opencode.jsonc`): a line comment, a block comment,
/// a comment on a key's line and trailing commas.
const COMMENTED_OPENCODE: &str = r#"{
  // the theme we all use
  "theme": "dark",
  /* ask before
     every edit */
  "permission": {
    "edit": "ask", // never allow
  },
}
"#;

/// The status line of the file whose path ends with `name`.
fn status_of(env: &TestEnv, repo: &Path, runtime: &str, name: &str) -> serde_json::Value {
    let status = env
        .loopx(repo, &["--json", "hooks", "status", runtime])
        .success()
        .json();
    status["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with(name))
        .cloned()
        .unwrap_or_else(|| panic!("no {name} in {status}"))
}

/// Issue 47, item 11: OpenCode's docs name `opencode.jsonc`, and OpenCode
/// reads comments in either name. Install edits the user's file keeping its
/// comments (no second `opencode.json` beside an `opencode.jsonc`), status
/// counts neither the comments nor the `$schema` OpenCode adds as a change
/// by hand, and uninstall gives back the user's bytes.
#[test]
fn opencode_jsonc_with_comments_is_edited_in_place_keeping_them() {
    for (name, other) in [
        ("opencode.jsonc", "opencode.json"),
        ("opencode.json", "opencode.jsonc"),
    ] {
        let env = TestEnv::new();
        let repo = env.state_repo("r");
        let path = repo.join(name);
        std::fs::write(&path, COMMENTED_OPENCODE).unwrap();
        let run = env
            .loopx(&repo, &["--json", "hooks", "install", "--opencode"])
            .success();
        assert_eq!(actions(&run), ["created", "created", "updated"], "{name}");
        assert!(!repo.join(other).exists(), "{other} written beside {name}");
        let text = std::fs::read_to_string(&path).unwrap();
        for kept in [
            "  // the theme we all use\n  \"theme\": \"dark\",\n",
            "  /* ask before\n     every edit */\n",
            "    \"edit\": \"ask\", // never allow\n",
        ] {
            assert!(text.contains(kept), "{name} lost {kept:?}:\n{text}");
        }
        assert!(
            text.contains("\"git loopx *\": \"allow\",")
                && text.contains("\"git loopx\": \"allow\","),
            "{name}:\n{text}"
        );
        let line = status_of(&env, &repo, "--opencode", name);
        assert_eq!(line["installed"], "yes", "{line}");
        assert_eq!(line["changed_by_hand"], false, "{line}");

        let again = env
            .loopx(&repo, &["--json", "hooks", "install", "--opencode"])
            .success();
        assert_eq!(actions(&again), ["unchanged"; 3], "{name}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);

        // OpenCode adds its `$schema` on its first run, keeping the comments.
        let with_schema = text.replacen(
            "{\n",
            "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n",
            1,
        );
        std::fs::write(&path, &with_schema).unwrap();
        let line = status_of(&env, &repo, "--opencode", name);
        assert_eq!(line["changed_by_hand"], false, "{line}");
        // A comment changed by hand is a change by hand.
        std::fs::write(&path, with_schema.replace("never allow", "never")).unwrap();
        let line = status_of(&env, &repo, "--opencode", name);
        assert_eq!(line["changed_by_hand"], true, "{line}");
        std::fs::write(&path, &text).unwrap();

        let removed = env
            .loopx(&repo, &["--json", "hooks", "uninstall", "--opencode"])
            .success();
        assert_eq!(
            actions(&removed),
            ["deleted", "deleted", "restored"],
            "{name}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), COMMENTED_OPENCODE);
        assert!(!repo.join(other).exists());
    }
}

/// Issue 47, item 11: OpenCode reads both files when both are there,
/// `opencode.jsonc` first and `opencode.json` merged over it. Install edits
/// `opencode.jsonc`, leaves `opencode.json` alone and says that a rule there
/// wins over ours.
#[test]
fn beside_an_opencode_json_the_jsonc_file_is_edited_and_install_says_so() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    std::fs::write(repo.join("opencode.jsonc"), COMMENTED_OPENCODE).unwrap();
    let json = "{\"model\": \"x/y\"}";
    std::fs::write(repo.join("opencode.json"), json).unwrap();
    let run = env
        .loopx(&repo, &["--json", "hooks", "install", "--opencode"])
        .success()
        .json();
    let file = run["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("opencode.jsonc"))
        .cloned()
        .unwrap();
    assert_eq!(file["action"], "updated", "{run}");
    assert!(
        file["notes"][0]
            .as_str()
            .unwrap()
            .contains("opencode.json is here too"),
        "{file}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("opencode.json")).unwrap(),
        json
    );
    assert!(std::fs::read_to_string(repo.join("opencode.jsonc"))
        .unwrap()
        .contains("\"git loopx *\": \"allow\""));
}

/// Issue 47, item 11: Gemini CLI reads comments in `.gemini/settings.json`.
#[test]
fn a_commented_gemini_settings_is_edited_keeping_its_comments() {
    let user = r#"{
  // Gemini's own settings
  "general": { "vimMode": true }, /* mine */
  "hooks": {
    "AfterAgent": [
      // a hook of mine
      {"matcher": "*", "hooks": [{"type": "command", "command": "echo after"}]},
    ],
  },
}
"#;
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let path = repo.join(".gemini/settings.json");
    std::fs::create_dir(repo.join(".gemini")).unwrap();
    std::fs::write(&path, user).unwrap();
    env.loopx(&repo, &["hooks", "install", "--gemini"])
        .success();
    let text = std::fs::read_to_string(&path).unwrap();
    for kept in [
        "  // Gemini's own settings\n",
        "\"general\": { \"vimMode\": true }, /* mine */\n",
        "      // a hook of mine\n      {\"matcher\": \"*\", \"hooks\": [{\"type\": \"command\", \"command\": \"echo after\"}]},\n",
    ] {
        assert!(text.contains(kept), "lost {kept:?}:\n{text}");
    }
    assert!(
        text.contains("git loopx hook gemini stop")
            && text.contains("git loopx hook gemini session-start"),
        "{text}"
    );
    let line = status_of(&env, &repo, "--gemini", "settings.json");
    assert_eq!(line["installed"], "yes", "{line}");
    assert_eq!(line["changed_by_hand"], false, "{line}");

    let removed = env
        .loopx(&repo, &["--json", "hooks", "uninstall", "--gemini"])
        .success()
        .json();
    let settings = removed["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("settings.json"))
        .cloned()
        .unwrap();
    assert_eq!(settings["action"], "restored", "{removed}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), user);

    // Changed by hand since: only our entries go, the comments and the
    // change stay.
    env.loopx(&repo, &["hooks", "install", "--gemini"])
        .success();
    let edited = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"vimMode\": true", "\"vimMode\": false");
    std::fs::write(&path, &edited).unwrap();
    let line = status_of(&env, &repo, "--gemini", "settings.json");
    assert_eq!(line["changed_by_hand"], true, "{line}");
    env.loopx(&repo, &["hooks", "uninstall", "--gemini"])
        .success();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        user.replace("\"vimMode\": true", "\"vimMode\": false")
    );
}

/// Issue 47, item 11: a file that is not JSONC either is refused with its
/// path, as a file that is not JSON is, and nothing is written.
#[test]
fn a_broken_jsonc_file_is_refused_with_its_path_and_nothing_is_written() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let broken = "{\n  // unfinished\n  \"theme\": \"dark\",,\n}\n";
    std::fs::create_dir(repo.join(".gemini")).unwrap();
    for (file, runtime) in [
        ("opencode.json", "--opencode"),
        ("opencode.jsonc", "--opencode"),
        (".gemini/settings.json", "--gemini"),
    ] {
        std::fs::write(repo.join(file), broken).unwrap();
        let before = snapshot(std::slice::from_ref(&repo));
        let out = env.loopx(&repo, &["hooks", "install", runtime]).failure(2);
        assert!(
            out.stderr.contains(&format!(
                "{file} is not valid JSON, with comments or without"
            )),
            "{}",
            out.stderr
        );
        assert_eq!(
            snapshot(std::slice::from_ref(&repo)),
            before,
            "a refused install wrote"
        );
        assert!(
            !repo.join(".git/loopx/installed").exists(),
            "a refused install kept a record"
        );
        std::fs::remove_file(repo.join(file)).unwrap();
    }
}
