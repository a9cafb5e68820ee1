//! `git loopx hook claude-code|codex <event>`: the programs agent runtimes
//! run at a session's start, at each stop, and (Codex `notify`) when a turn
//! completes. They answer in the runtime's own format on stdout and always
//! exit 0: when git-loopx cannot decide (not a repository, no or corrupt
//! state, bad input, no agent) they answer nothing and say why on stderr,
//! so a broken setup never keeps a session running (for Claude Code, exit
//! status 2 from a Stop hook would mean "block").

use std::io::{IsTerminal as _, Read as _, Write as _};
use std::path::PathBuf;

use clap::Subcommand;
use serde_json::json;

use crate::cli::GlobalArgs;
use crate::ops::hook::{self, HookInput, NotifyInput, StopOutcome};
use crate::ops::prompt::Runtime;
use crate::render;
use crate::session::Context;

/// Hook programs for agent runtimes (install them with `git loopx hooks
/// install`). They read the runtime's JSON on stdin and always exit 0.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    runtime: RuntimeHooks,
}

#[derive(Debug, Subcommand)]
enum RuntimeHooks {
    /// Claude Code hooks, run from `.claude/settings.json`.
    ClaudeCode {
        #[command(subcommand)]
        event: Event,
    },
    /// Codex hooks, run from `.codex/hooks.json`, and Codex's `notify` program.
    Codex {
        #[command(subcommand)]
        event: CodexEvent,
    },
    /// OpenCode hooks, run by the plugin in `.opencode/plugin/loopx.js`.
    #[command(name = "opencode")]
    OpenCode {
        #[command(subcommand)]
        event: Event,
    },
    /// Pi hooks, run by the extension in `.pi/extensions/loopx.ts`.
    Pi {
        #[command(subcommand)]
        event: Event,
    },
    /// Gemini CLI hooks, run from `.gemini/settings.json` (`stop` on
    /// `AfterAgent`).
    Gemini {
        #[command(subcommand)]
        event: Event,
    },
    /// Cursor hooks, run from `.cursor/hooks.json`.
    Cursor {
        #[command(subcommand)]
        event: Event,
    },
    /// git hooks (prepare-commit-msg, pre-push), run from the shims
    /// `hooks install --git` puts in the hooks directory. They read no stdin;
    /// pre-push may exit non-zero, under `loopx.prePushStrict` only.
    Git(crate::cli::hook_git::Args),
}

#[derive(Debug, Subcommand)]
enum Event {
    /// Keep the session working while `should-run` says run: answer
    /// {"decision":"block","reason":<the next turn's prompt>}; otherwise
    /// answer nothing, and the session stops.
    Stop(StopArgs),
    /// Add the status and this turn's prompt to the session's context.
    SessionStart,
}

#[derive(Debug, Subcommand)]
enum CodexEvent {
    /// Keep the session working while `should-run` says run (as for Claude Code).
    Stop(StopArgs),
    /// Add the status and this turn's prompt to the session's context.
    SessionStart,
    /// Codex `notify`: record that the agent's turn completed (a host-local
    /// heartbeat under .git/loopx/hooks/heartbeats/). Other notifications
    /// are ignored.
    Notify(NotifyArgs),
}

#[derive(Debug, clap::Args)]
struct StopArgs {
    /// Let the session stop after N blocks in a row with no new writeback
    /// by the agent (else git config loopx.hookMaxBlocks, else 3; 0 never blocks).
    #[arg(long, value_name = "N")]
    max_blocks: Option<u32>,
}

#[derive(Debug, clap::Args)]
struct NotifyArgs {
    /// The JSON notification Codex appends to the notify command.
    #[arg(value_name = "JSON")]
    payload: Option<String>,
}

/// What a hook prints. Everything goes to stdout/stderr as is: stdout is
/// JSON the runtime parses (made by the JSON encoder, so terminal-safe).
struct Answer {
    stdout: Option<serde_json::Value>,
    stderr: Vec<String>,
}

/// Runs a hook program and returns its exit status: always 0 (but for a
/// strict pre-push, see [`crate::cli::hook_git`]).
pub fn main(global: &GlobalArgs, args: &Args) -> i32 {
    let generic = |runtime: Runtime, event: &Event| match event {
        Event::Stop(a) => (runtime, "stop", stop(global, runtime, a)),
        Event::SessionStart => (runtime, "session-start", session_start(global, runtime)),
    };
    let (runtime, name, result) = match &args.runtime {
        RuntimeHooks::Git(args) => return crate::cli::hook_git::main(global, args),
        RuntimeHooks::ClaudeCode { event } => generic(Runtime::ClaudeCode, event),
        RuntimeHooks::OpenCode { event } => generic(Runtime::OpenCode, event),
        RuntimeHooks::Pi { event } => generic(Runtime::Pi, event),
        RuntimeHooks::Gemini { event } => generic(Runtime::Gemini, event),
        RuntimeHooks::Cursor { event } => generic(Runtime::Cursor, event),
        RuntimeHooks::Codex { event } => match event {
            CodexEvent::Stop(a) => (Runtime::Codex, "stop", stop(global, Runtime::Codex, a)),
            CodexEvent::SessionStart => (
                Runtime::Codex,
                "session-start",
                session_start(global, Runtime::Codex),
            ),
            CodexEvent::Notify(a) => (Runtime::Codex, "notify", notify(global, a)),
        },
    };
    let label = format!("git-loopx hook {} {name}", runtime.name());
    let answer = result.unwrap_or_else(|why| {
        let effect = match name {
            "stop" => "not blocking",
            "session-start" => "adding nothing",
            _ => "recording nothing",
        };
        Answer {
            stdout: None,
            stderr: vec![format!("{effect}: {why}")],
        }
    });
    if let Some(value) = answer.stdout {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{value}");
        let _ = out.flush();
    }
    let mut err = std::io::stderr().lock();
    for line in answer.stderr {
        let _ = writeln!(err, "{label}: {}", render::terminal_safe(&line));
    }
    0
}

/// The error's text as the CLI would print it, on one line.
fn why(err: &crate::Error) -> String {
    let text = render::error_text(err);
    let text = text.trim();
    let text = text.strip_prefix("error: ").unwrap_or(text);
    text.lines().collect::<Vec<_>>().join("; ")
}

/// Reads the event on stdin (none when stdin is a terminal: run by hand).
fn read_input() -> Result<HookInput, String> {
    let mut stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(HookInput::default());
    }
    let mut text = String::new();
    stdin
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read the hook's stdin: {e}"))?;
    HookInput::parse(&text)
}

/// Opens the repository: `-C`, else the event's `cwd`, else (Claude Code)
/// `$CLAUDE_PROJECT_DIR`, else the current directory.
fn open(global: &GlobalArgs, runtime: Runtime, cwd: Option<&str>) -> Result<Context, String> {
    let env_dir = match runtime {
        Runtime::ClaudeCode => std::env::var_os("CLAUDE_PROJECT_DIR"),
        Runtime::Gemini => std::env::var_os("GEMINI_PROJECT_DIR"),
        _ => None,
    };
    let dir = global
        .dir
        .clone()
        .or_else(|| cwd.map(PathBuf::from).filter(|d| d.is_dir()))
        .or_else(|| env_dir.map(PathBuf::from).filter(|d| d.is_dir()))
        .map_or_else(std::env::current_dir, Ok)
        .map_err(|e| format!("cannot read the current directory: {e}"))?;
    let now = crate::cli::now().map_err(|e| why(&e))?;
    let ctx =
        Context::open(&dir, now, global.agent.clone(), global.goal.clone()).map_err(|e| why(&e))?;
    // The runtime that runs this hook is governed from now on: what its
    // agent runs is not the person's, even scrubbed of its environment.
    // Not Cursor's: its hooks run under the editor, whose terminal is the
    // person's too.
    if runtime != Runtime::Cursor {
        if let Some(g) = crate::session::governed::Governed::served_in(&ctx, runtime) {
            g.keep();
        }
    }
    Ok(ctx)
}

fn stop(global: &GlobalArgs, runtime: Runtime, args: &StopArgs) -> Result<Answer, String> {
    let input = read_input()?;
    // A runtime always says which session stops, and may say which event
    // this is: with neither, or with an event that is not a stop, there is
    // nothing to continue.
    if input.session_id.is_none() && input.hook_event_name.is_none() {
        return Err("no hook event on stdin".into());
    }
    if let Some(event) = input.hook_event_name.as_deref() {
        if !STOP_EVENTS.contains(&event) {
            return Err(format!("`{event}` is not a stop event"));
        }
    }
    let ctx = open(global, runtime, input.cwd.as_deref())?;
    let report = hook::stop(&ctx, runtime, &input, args.max_blocks).map_err(|e| why(&e))?;
    let mut stderr = report.warnings.clone();
    let stdout = match &report.outcome {
        StopOutcome::Block { prompt, .. } => Some(match runtime {
            // AfterAgent: `deny` retries with the reason as the next turn.
            Runtime::Gemini => json!({ "decision": "deny", "reason": prompt }),
            // stop: a follow-up message continues the agent.
            Runtime::Cursor => json!({ "followup_message": prompt }),
            _ => json!({ "decision": "block", "reason": prompt }),
        }),
        StopOutcome::Skip {
            effective_action,
            reason,
            waiting,
        } => {
            stderr.push(format!(
                "letting the session stop: should-run says skip ({effective_action}: {reason})"
            ));
            // The session ends at a person's decision: say so to the person.
            match runtime {
                Runtime::ClaudeCode | Runtime::Codex | Runtime::Gemini if !waiting.is_empty() => {
                    Some(json!({ "systemMessage": waiting_message(&ctx, waiting) }))
                }
                _ => None,
            }
        }
        StopOutcome::Guard { blocks } => {
            stderr.push(format!(
                "letting the session stop: {blocks} block(s) in a row with no new writeback by {} \
                 (the loop guard's limit is {}: --max-blocks, or git config {}); \
                 record the turn with `git loopx writeback` to keep going",
                report.agent,
                report.max_blocks,
                hook::MAX_BLOCKS_CONFIG
            ));
            None
        }
    };
    Ok(Answer { stdout, stderr })
}

/// The events a Stop hook program answers (Claude Code and Codex `Stop`,
/// `SubagentStop`; Gemini CLI `AfterAgent`; Cursor `stop`).
const STOP_EVENTS: &[&str] = &["Stop", "SubagentStop", "AfterAgent", "stop"];

/// What the person reads as the session ends at their decisions: each
/// gate's question and the command that answers it.
fn waiting_message(
    ctx: &crate::session::Context,
    gates: &[crate::model::gate::GateView],
) -> String {
    let goal = match (ctx.goal_flag(), ctx.load()) {
        (Some(goal), Ok((_, state))) if goal != state.meta.default_goal => {
            format!(" --goal {goal}")
        }
        _ => String::new(),
    };
    let mut text = format!(
        "git-loopx: the agents stopped: {} decision(s) wait for you.",
        gates.len()
    );
    for g in gates {
        text.push_str(&format!(
            "\n- {}: {} (answer: git loopx{goal} gate resolve {} --approve|--reject)",
            g.id,
            render::oneline(&g.question),
            g.id
        ));
    }
    text
}

fn session_start(global: &GlobalArgs, runtime: Runtime) -> Result<Answer, String> {
    let input = read_input()?;
    let ctx = open(global, runtime, input.cwd.as_deref())?;
    let report = hook::session_start(&ctx, runtime, &input).map_err(|e| why(&e))?;
    let context = format!(
        "git-loopx status:\n\n{}\n{}",
        render::text::status(&report.status),
        report.prompt.prompt
    );
    let stdout = match runtime {
        Runtime::Cursor => json!({ "additional_context": context }),
        _ => json!({
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": context,
            }
        }),
    };
    Ok(Answer {
        stdout: Some(stdout),
        stderr: Vec::new(),
    })
}

fn notify(global: &GlobalArgs, args: &NotifyArgs) -> Result<Answer, String> {
    let payload = args
        .payload
        .as_deref()
        .ok_or("no notification: Codex passes it as the last argument")?;
    let Some(input) = NotifyInput::parse(payload)? else {
        return Ok(Answer {
            stdout: None,
            stderr: Vec::new(),
        });
    };
    let ctx = open(global, Runtime::Codex, input.cwd.as_deref())?;
    hook::heartbeat(&ctx, Runtime::Codex, &input).map_err(|e| why(&e))?;
    Ok(Answer {
        stdout: None,
        stderr: Vec::new(),
    })
}
