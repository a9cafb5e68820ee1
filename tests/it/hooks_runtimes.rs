//! `hooks install|uninstall|status` for every runtime: the identity,
//! permission and sandbox entries come and go with the hooks; installing
//! twice writes nothing; uninstalling gives back every byte of the
//! person's own files. And Cursor, whose CLI cannot be installed here,
//! through its documented hooks protocol.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::env::{run_with_stdin, TestEnv};

/// Every file under `dirs` (not `.git`), with its bytes.
fn files(dirs: &[PathBuf]) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    for d in dirs {
        walk(d, &mut out);
    }
    out
}

/// The person's own settings, in every file a runtime's install touches.
fn persons_files(repo: &Path, home: &Path) {
    let put = |path: PathBuf, text: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    put(
        repo.join(".claude/settings.json"),
        "{\n    \"model\": \"opus\",\n    \"permissions\": { \"allow\": [\"Bash(ls)\"] }\n}\n",
    );
    put(
        repo.join(".claude/settings.local.json"),
        "{\"env\":{\"MY_VAR\":\"1\"}}",
    );
    put(
        repo.join(".codex/config.toml"),
        "# mine\nmodel = \"o5\"\n\n[shell_environment_policy]\ninherit = \"core\"\n",
    );
    put(repo.join("opencode.json"), "{\n  \"theme\": \"dark\"\n}\n");
    put(
        repo.join(".gemini/settings.json"),
        "{\"general\": {\"vimMode\": true}}\n",
    );
    put(repo.join(".gemini/.env"), "GEMINI_MODEL=flash\n");
    put(
        repo.join(".cursor/hooks.json"),
        "{\n  \"version\": 1,\n  \"hooks\": {\n    \"afterFileEdit\": [\n      { \"command\": \"./fmt.sh\" }\n    ]\n  }\n}\n",
    );
    put(home.join(".gemini/settings.json"), "{}\n");
}

const ALL: [&str; 6] = [
    "--claude-code",
    "--codex",
    "--opencode",
    "--pi",
    "--gemini",
    "--cursor",
];

#[test]
fn every_runtime_installs_once_and_uninstalls_to_the_persons_bytes() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    let home = env.path("home");
    persons_files(&repo, &home);
    let watched = [repo.clone(), home.clone()];
    let before = files(&watched);

    let install = |agent: &str| {
        let mut args = vec!["--json", "hooks", "install", "--agent", agent];
        args.extend(ALL);
        env.loopx(&repo, &args).success().json()
    };
    let first = install("agent-a");
    let installed = files(&watched);
    assert_ne!(installed, before);
    let again = install("agent-a");
    for f in again["files"].as_array().unwrap() {
        assert_eq!(f["action"], "unchanged", "{f}");
    }
    assert_eq!(
        files(&watched),
        installed,
        "a second install changed a byte"
    );
    let written: Vec<&str> = first["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();

    // Identity, permissions and the sandbox's writable git directory.
    let json = |p: &str| -> Value {
        serde_json::from_slice(&std::fs::read(repo.join(p)).unwrap()).unwrap()
    };
    let claude = json(".claude/settings.json");
    assert_eq!(claude["model"], "opus");
    let allow: Vec<&str> = claude["permissions"]["allow"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(allow, ["Bash(ls)", "Bash(git loopx:*)", "mcp__loopx"]);
    let local = json(".claude/settings.local.json");
    assert_eq!(local["env"]["MY_VAR"], "1");
    assert_eq!(local["env"]["LOOPX_AGENT"], "agent-a");
    assert_eq!(local["env"]["LOOPX_RUNTIME"], "claude-code");
    let codex = std::fs::read_to_string(repo.join(".codex/config.toml")).unwrap();
    assert!(codex.starts_with("# mine\nmodel = \"o5\""), "{codex}");
    assert!(codex.contains("LOOPX_AGENT = \"agent-a\""), "{codex}");
    let common = std::fs::canonicalize(repo.join(".git")).unwrap();
    assert!(
        codex.contains(&format!("writable_roots = [\"{}\"]", common.display())),
        "{codex}"
    );
    let opencode = json("opencode.json");
    assert_eq!(opencode["theme"], "dark");
    assert_eq!(opencode["permission"]["bash"]["git loopx *"], "allow");
    let plugin = std::fs::read_to_string(repo.join(".opencode/plugin/loopx.js")).unwrap();
    assert!(plugin.contains("const AGENT = \"agent-a\";"));
    let pi = std::fs::read_to_string(repo.join(".pi/extensions/loopx.ts")).unwrap();
    assert!(pi.contains("const AGENT = \"agent-a\";"));
    let gemini = json(".gemini/settings.json");
    assert_eq!(gemini["general"]["vimMode"], true);
    assert_eq!(
        gemini["hooks"]["AfterAgent"][0]["hooks"][0]["command"],
        "git loopx hook gemini stop --agent agent-a"
    );
    let dotenv = std::fs::read_to_string(repo.join(".gemini/.env")).unwrap();
    assert!(dotenv.starts_with("GEMINI_MODEL=flash\n"), "{dotenv}");
    assert!(dotenv.contains("LOOPX_AGENT=agent-a\n"), "{dotenv}");
    assert!(home.join(".gemini/policies/loopx.toml").exists());
    let cursor = json(".cursor/hooks.json");
    assert_eq!(cursor["hooks"]["afterFileEdit"][0]["command"], "./fmt.sh");
    assert_eq!(
        cursor["hooks"]["stop"][0]["command"],
        "git loopx hook cursor stop --agent agent-a"
    );
    for command in [".claude/commands/loopx.md", ".agents/skills/loopx/SKILL.md"] {
        assert!(repo.join(command).exists(), "{command}: {written:?}");
    }

    // `hooks status` says each is installed, and names no missing identity.
    let status = env
        .loopx(&repo, &[&["--json", "hooks", "status"][..], &ALL].concat())
        .success()
        .json();
    for f in status["files"].as_array().unwrap() {
        assert_eq!(f["installed"], "yes", "{f}");
        let notes = f["notes"].to_string();
        assert!(
            !notes.contains("no identity") || f["integration"] == "cursor",
            "{f}"
        );
    }

    // Another agent: the identity moves with it, nothing piles up.
    install("agent-b");
    let local = json(".claude/settings.local.json");
    assert_eq!(local["env"]["LOOPX_AGENT"], "agent-b");

    let out = env
        .loopx(
            &repo,
            &[&["--json", "hooks", "uninstall"][..], &ALL].concat(),
        )
        .success()
        .json();
    for f in out["files"].as_array().unwrap() {
        assert!(
            ["restored", "deleted"].contains(&f["action"].as_str().unwrap()),
            "{f}"
        );
    }
    assert_eq!(files(&watched), before, "uninstall left a byte changed");
}

#[test]
fn an_install_without_an_agent_is_flagged_by_hooks_status_and_doctor() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.loopx(&repo, &["hooks", "install", "--claude-code", "--opencode"])
        .success();
    let status = env
        .loopx(&repo, &["hooks", "status", "--claude-code", "--opencode"])
        .success()
        .stdout;
    assert_eq!(
        status.matches("the agent's shell has no identity").count(),
        2,
        "{status}"
    );
    let doctor = env.loopx(&repo, &["doctor"]).stdout;
    assert!(doctor.contains("no identity"), "{doctor}");
    // With an agent in git config, every shell finds it.
    env.git(&repo, &["config", "loopx.agent", "agent-a"]);
    let status = env
        .loopx(&repo, &["hooks", "status", "--claude-code"])
        .success()
        .stdout;
    assert!(!status.contains("no identity"), "{status}");
}

/// Cursor's agent CLI cannot be installed here: its hooks are driven by
/// hand with the stdin its documentation gives (`conversation_id`,
/// `workspace_roots`, no `cwd`), from the commands `hooks install` wrote.
#[test]
fn cursor_hooks_hand_over_turns_and_let_the_agent_stop_at_a_gate() {
    let env = TestEnv::new();
    let repo = env.state_repo("r");
    env.loopx(&repo, &["agent", "register", "agent-a"])
        .success();
    let todo = env.add_todo(&repo, "parse headers");
    env.loopx(
        &repo,
        &["hooks", "install", "--cursor", "--agent", "agent-a"],
    )
    .success();
    let config: Value =
        serde_json::from_slice(&std::fs::read(repo.join(".cursor/hooks.json")).unwrap()).unwrap();
    assert_eq!(config["version"], 1);
    let run = |event: &str, input: Value| {
        let command = config["hooks"][event][0]["command"].as_str().unwrap();
        let mut sh = env.command(Path::new("/bin/sh"), &env.path(""));
        sh.args(["-c", command]);
        run_with_stdin(&mut sh, input.to_string().as_bytes())
    };
    let base = |event: &str| {
        serde_json::json!({
            "conversation_id": "conv-1", "generation_id": "gen-1", "model": "m",
            "hook_event_name": event, "cursor_version": "2.0",
            "workspace_roots": [repo.display().to_string()],
        })
    };
    let start = run("sessionStart", base("sessionStart"));
    let answer: Value = serde_json::from_str(start.stdout.trim()).unwrap();
    let context = answer["additional_context"].as_str().unwrap();
    assert!(context.contains(&todo), "{context}");
    assert!(
        context.contains("git loopx --agent agent-a todo claim"),
        "{context}"
    );

    let mut stop = base("stop");
    stop["status"] = "completed".into();
    stop["loop_count"] = 0.into();
    let answer: Value = serde_json::from_str(run("stop", stop.clone()).stdout.trim()).unwrap();
    assert!(
        answer["followup_message"].as_str().unwrap().contains(&todo),
        "{answer}"
    );

    // With only a person's gate left, the agent may stop.
    env.loopx(&repo, &["--agent", "agent-a", "todo", "claim", &todo])
        .success();
    env.loopx(
        &repo,
        &[
            "--agent",
            "agent-a",
            "todo",
            "done",
            &todo,
            "--evidence",
            "ok",
        ],
    )
    .success();
    env.loopx(&repo, &["gate", "add", "Ship it?"]).success();
    let last = run("stop", stop);
    assert_eq!(last.stdout.trim(), "", "{last:?}");
    assert!(last.stderr.contains("operator_gate"), "{}", last.stderr);
}
