//! Fake Claude Code and Codex sessions governed by the installed hooks.
//!
//! A [`Session`] speaks the runtime's hook protocol as its documentation
//! states it: it reads the hook entries from `.claude/settings.json` or
//! `.codex/hooks.json`, runs each `command` with `sh -c` in the repository
//! with the event's JSON on stdin, and reads the answer from the exit
//! status and stdout exactly as the runtime does. Its "model" runs the
//! `git loopx` commands the prompt lists, with a real code commit.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::env::{run_with_stdin, Run, TestEnv};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    ClaudeCode,
    Codex,
}

/// Installs the runtime's hooks in `dir` with `git loopx hooks install
/// --claude-code|--codex`, the way a user does.
pub fn install_hooks(env: &TestEnv, dir: &Path, runtime: Runtime) {
    let flag = match runtime {
        Runtime::ClaudeCode => "--claude-code",
        Runtime::Codex => "--codex",
    };
    env.loopx(dir, &["hooks", "install", flag]).success();
}

/// How a runtime reads a Stop hook's answer.
#[derive(Debug, PartialEq, Eq)]
pub enum StopAnswer {
    /// Keep going; the reason is the next prompt.
    Block(String),
    /// Let the session end.
    End,
}

pub struct Session<'a> {
    pub env: &'a TestEnv,
    pub repo: PathBuf,
    pub runtime: Runtime,
    pub id: String,
    /// Extra environment of the runtime (and so of its hooks and tools).
    pub vars: Vec<(String, String)>,
    /// Every Stop hook run, in order.
    pub stops: Vec<Run>,
    turns: u32,
}

impl<'a> Session<'a> {
    pub fn new(env: &'a TestEnv, repo: &Path, runtime: Runtime, id: &str) -> Self {
        Session {
            env,
            repo: repo.to_owned(),
            runtime,
            id: id.to_owned(),
            vars: Vec::new(),
            stops: Vec::new(),
            turns: 0,
        }
    }

    fn settings(&self) -> Value {
        let path = match self.runtime {
            Runtime::ClaudeCode => self.repo.join(".claude/settings.json"),
            Runtime::Codex => self.repo.join(".codex/hooks.json"),
        };
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// The commands of every hook entry for `event`.
    fn commands(&self, event: &str) -> Vec<String> {
        let settings = self.settings();
        let mut out = Vec::new();
        for group in settings["hooks"][event].as_array().into_iter().flatten() {
            for hook in group["hooks"].as_array().into_iter().flatten() {
                if hook["type"] == "command" {
                    out.push(hook["command"].as_str().unwrap().to_owned());
                }
            }
        }
        out
    }

    /// A shell in the repository with the runtime's environment.
    fn sh(&self, script: &str) -> std::process::Command {
        let mut cmd = self.env.command(Path::new("sh"), &self.repo);
        cmd.arg("-c").arg(script);
        if self.runtime == Runtime::ClaudeCode {
            cmd.env("CLAUDE_PROJECT_DIR", &self.repo);
        }
        for (k, v) in &self.vars {
            cmd.env(k, v);
        }
        cmd
    }

    /// Runs every hook of `event` with `input` on stdin.
    fn run_hooks(&self, event: &str, input: &Value) -> Vec<Run> {
        let commands = self.commands(event);
        assert!(!commands.is_empty(), "no {event} hook installed");
        commands
            .into_iter()
            .map(|command| run_with_stdin(&mut self.sh(&command), input.to_string().as_bytes()))
            .collect()
    }

    fn base_input(&self, event: &str) -> Value {
        let mut input = json!({
            "session_id": self.id,
            "transcript_path": self.env.path("transcript.jsonl"),
            "cwd": self.repo,
            "hook_event_name": event,
            "permission_mode": "default",
        });
        if self.runtime == Runtime::Codex {
            input["model"] = json!("gpt-test");
        }
        input
    }

    /// SessionStart: the context the hooks add (the first prompt).
    pub fn start(&mut self) -> String {
        let mut input = self.base_input("SessionStart");
        input["source"] = json!("startup");
        let mut context = String::new();
        for hook in self.run_hooks("SessionStart", &input) {
            // Both runtimes: exit 0 adds JSON `additionalContext` (or plain
            // stdout); any other status adds nothing.
            if hook.code != 0 {
                continue;
            }
            let text = hook.stdout.trim();
            match serde_json::from_str::<Value>(text) {
                Ok(v) if v.is_object() => {
                    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
                    if let Some(c) = v["hookSpecificOutput"]["additionalContext"].as_str() {
                        context.push_str(c);
                    }
                }
                _ => context.push_str(text),
            }
        }
        context
    }

    /// Stop: what the runtime does after the hooks ran.
    pub fn stop(&mut self, stop_hook_active: bool) -> StopAnswer {
        let mut input = self.base_input("Stop");
        input["stop_hook_active"] = json!(stop_hook_active);
        input["last_assistant_message"] = json!("Turn finished.");
        if self.runtime == Runtime::Codex {
            input["turn_id"] = json!(format!("turn-{}", self.turns));
        }
        let mut answer = StopAnswer::End;
        for hook in self.run_hooks("Stop", &input) {
            let run = &hook;
            let blocked = match run.code {
                // Exit 2 blocks, with stderr as the reason (both runtimes).
                2 => Some(run.stderr.trim().to_owned()).filter(|r| !r.is_empty()),
                0 if run.stdout.trim().is_empty() => None,
                0 => match serde_json::from_str::<Value>(run.stdout.trim()) {
                    Ok(v) if v["continue"] == false => None,
                    Ok(v) if v["decision"] == "block" => {
                        let reason = v["reason"].as_str().unwrap_or("").trim().to_owned();
                        // Codex treats a block without a reason as a failed hook.
                        Some(reason).filter(|r| !r.is_empty())
                    }
                    // Claude Code takes other stdout as a log line; Codex as
                    // invalid output of a failed hook: neither blocks.
                    _ => None,
                },
                // Any other status is a non-blocking error.
                _ => None,
            };
            if let Some(reason) = blocked {
                answer = StopAnswer::Block(reason);
            }
            self.stops.push(hook);
        }
        answer
    }

    /// Codex's legacy `notify` program, as `notify = ["git", "loopx",
    /// "hook", "codex", "notify"]` in config.toml runs it.
    pub fn notify(&self) -> Run {
        let payload = json!({
            "type": "agent-turn-complete",
            "thread-id": self.id,
            "turn-id": format!("turn-{}", self.turns),
            "cwd": self.repo,
            "input-messages": ["work"],
            "last-assistant-message": "Turn finished.",
        });
        let mut cmd = self.sh("git loopx hook codex notify \"$1\"");
        cmd.arg("notify").arg(payload.to_string());
        Run::from(cmd.output().unwrap())
    }

    /// The model's turn: runs the `git loopx` commands of the prompt's
    /// "Commands" section in order, with a real code commit as the work.
    /// Returns the commands it ran.
    pub fn work(&mut self, prompt: &str) -> Vec<String> {
        self.turns += 1;
        let mut ran = Vec::new();
        let Some(section) = prompt.split("## Commands, in order").nth(1) else {
            return ran;
        };
        let section = section.split("\n## ").next().unwrap();
        for line in section.lines() {
            let Some(command) = line.split('`').nth(1) else {
                continue;
            };
            if !command.starts_with("git loopx ") {
                continue;
            }
            let mut command = command.replace(" [--next \"<follow-up>\" | --no-follow-up]", "");
            if command.contains("<commit>") {
                let file = format!("work-{}.txt", self.turns);
                std::fs::write(self.repo.join(&file), "done\n").unwrap();
                self.env.git(&self.repo, &["add", &file]);
                self.env
                    .git(&self.repo, &["commit", "-q", "-m", &format!("work {file}")]);
                let sha = self.env.git(&self.repo, &["rev-parse", "HEAD"]);
                command = command.replace("<commit>", &sha);
            }
            let command = command
                .replace("<what changed>", "added a file")
                .replace("<proof>", "the file is committed");
            assert!(!command.contains('<'), "unfilled placeholder: {command}");
            let run = Run::from(self.sh(&command).output().unwrap());
            assert_eq!(run.code, 0, "`{command}` failed:\n{}", run.stderr);
            ran.push(command);
        }
        ran
    }

    /// Runs the session until it ends: SessionStart, then turns while the
    /// Stop hook blocks, at most `max_turns`. Returns the turns worked.
    pub fn run(&mut self, max_turns: u32) -> u32 {
        let mut prompt = self.start();
        let mut active = false;
        for turn in 1..=max_turns {
            self.work(&prompt);
            if self.runtime == Runtime::Codex {
                let n = self.notify();
                assert_eq!((n.code, n.stdout.as_str()), (0, ""), "{}", n.stderr);
            }
            match self.stop(active) {
                StopAnswer::Block(next) => {
                    prompt = next;
                    active = true;
                }
                StopAnswer::End => return turn,
            }
        }
        panic!("the session did not end within {max_turns} turns");
    }
}

/// A goal of 5 agent todos, and a sixth held by a gate that unblocks it:
/// the agent's other work goes on while the gate is open (a gate that
/// blocks the agent itself would hold all of its work, as in LoopX).
fn goal_with_gate(env: &TestEnv, agent: &str) -> (PathBuf, Vec<String>) {
    let repo = env.state_repo("r");
    env.loopx(&repo, &["goal", "set", "--allowed-slots", "20"])
        .success();
    env.loopx(&repo, &["agent", "register", agent]).success();
    let todos: Vec<String> = (1..=5)
        .map(|i| env.add_todo(&repo, &format!("step {i}")))
        .collect();
    let held = env.add_todo(&repo, "deploy to production");
    env.loopx(
        &repo,
        &["gate", "add", "Ship it to production?", "--unblocks", &held],
    )
    .success();
    (repo, todos)
}

fn drive_to_the_gate(runtime: Runtime) {
    let env = TestEnv::new();
    let agent = "agent-a";
    let (repo, todos) = goal_with_gate(&env, agent);
    install_hooks(&env, &repo, runtime);
    let mut session = Session::new(&env, &repo, runtime, "5f0c2a9e-session/1");
    match runtime {
        Runtime::ClaudeCode => {
            env.git(&repo, &["config", "loopx.agent", agent]);
        }
        Runtime::Codex => session.vars.push(("LOOPX_AGENT".into(), agent.into())),
    }

    let turns = session.run(12);
    assert_eq!(turns, 5, "one turn per todo, then the session ends");

    // The five agent todos are done; the gate and the todo it holds are open.
    let list = env
        .loopx(&repo, &["--json", "todo", "list"])
        .success()
        .json();
    for todo in list["todos"].as_array().unwrap() {
        let id = todo["id"].as_str().unwrap();
        if todos.iter().any(|t| t == id) {
            assert_eq!(todo["status"], "done", "{todo}");
        } else if todo["class"] == "advancement_task" {
            assert_eq!(todo["status"], "open", "{todo}");
        } else {
            assert_eq!(
                (todo["class"].as_str(), todo["status"].as_str()),
                (Some("user_gate"), Some("open"))
            );
        }
    }

    // One spend per turn key, one per accountable writeback.
    let runs = env.loopx(&repo, &["--json", "history"]).success().json();
    let runs = runs["runs"].as_array().unwrap();
    let of = |kind: &str| -> Vec<&Value> { runs.iter().filter(|r| r["kind"] == kind).collect() };
    let (spends, writebacks, receipts) = (of("spend"), of("writeback"), of("turn"));
    assert_eq!(writebacks.len(), 5);
    assert_eq!(spends.len(), 5);
    let mut spent_turns: Vec<&str> = spends.iter().map(|s| s["turn"].as_str().unwrap()).collect();
    spent_turns.sort();
    spent_turns.dedup();
    assert_eq!(spent_turns.len(), 5, "a turn key spent twice: {spends:?}");
    let mut paid: Vec<&str> = spends
        .iter()
        .map(|s| s["writeback"].as_str().unwrap())
        .collect();
    paid.sort();
    paid.dedup();
    assert_eq!(paid.len(), 5, "a writeback paid twice: {spends:?}");
    // Each turn had one receipt, under the key its writeback and spend used.
    let mut keys: Vec<&str> = receipts
        .iter()
        .map(|r| r["turn"].as_str().unwrap())
        .collect();
    keys.sort();
    let mut wb_keys: Vec<&str> = writebacks
        .iter()
        .map(|r| r["turn"].as_str().unwrap())
        .collect();
    wb_keys.sort();
    assert_eq!(keys, wb_keys);
    assert_eq!(keys, spent_turns);
    assert!(
        keys.iter().all(|k| k.starts_with("5f0c2a9e-session_1-")),
        "{keys:?}"
    );

    // The last Stop let the session end because only the gate is left.
    let last = session.stops.last().unwrap();
    assert_eq!((last.code, last.stdout.as_str()), (0, ""));
    assert!(last.stderr.contains("operator_gate"), "{}", last.stderr);
    let d = env
        .loopx(&repo, &["--json", "--agent", agent, "should-run"])
        .success()
        .json();
    assert_eq!(d["effective_action"], "operator_gate_notify");

    // `status` shows the gate under "Needs you".
    let status = env.loopx(&repo, &["status"]).success().stdout;
    let needs = status
        .split("Needs you:")
        .nth(1)
        .and_then(|s| s.split("\n\n").next())
        .unwrap_or_else(|| panic!("no Needs you section:\n{status}"));
    assert!(needs.contains("Ship it to production?"), "{status}");

    if runtime == Runtime::Codex {
        let common = env.git(&repo, &["rev-parse", "--git-common-dir"]);
        let beat = repo
            .join(common)
            .join("loopx/hooks/heartbeats/codex/agent-a.json");
        let beat: Value = serde_json::from_str(&std::fs::read_to_string(beat).unwrap()).unwrap();
        assert_eq!(beat["turn_id"], "turn-5");
        assert_eq!(beat["thread_id"], "5f0c2a9e-session/1");
    }
}

#[test]
fn claude_code_session_completes_the_goal_and_stops_at_the_gate() {
    drive_to_the_gate(Runtime::ClaudeCode);
}

#[test]
fn codex_session_completes_the_goal_and_stops_at_the_gate() {
    drive_to_the_gate(Runtime::Codex);
}
