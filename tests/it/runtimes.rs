//! A driver of the hook programs, for the tests of their protocol edge
//! cases (`hook_programs`, `quiet`): retries, loop guards, odd inputs.
//! It is not a runtime: the end-to-end proofs run the real CLIs
//! (`agent_*.rs`).
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
}
