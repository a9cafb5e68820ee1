//! How the prompt writes a git-loopx call: as a command line for a shell
//! ([`Surface::Cli`]: `` `git loopx todo claim ID` ``), or as a tool call
//! for an MCP client ([`Surface::Mcp`]: the `claim` tool with
//! `{"todo": "ID"}`).
//!
//! Invariants: a call's flags and fields come from the command's own
//! argument struct (`ops::args`), so the prompt names only what the
//! command and its tool take; over MCP it names no command line of ours.

use serde_json::json;

use super::Surface;

/// A git-loopx call: `` `git loopx COMMAND …` `` on the command line, the
/// TOOL tool with its JSON arguments over MCP. `args` are fields of `T`,
/// the command's arguments, each with its value as a shell writes it
/// (quoted when it is text); `optional` are groups of alternatives.
pub fn call<T: clap::Args>(
    s: Surface,
    (command, tool): (&str, &str),
    args: &[(&str, &str)],
    optional: &[&[(&str, &str)]],
) -> String {
    let definition = T::augment_args(clap::Command::new("prompt"));
    let one = |&(id, value): &(&str, &str)| {
        let arg = definition
            .get_arguments()
            .find(|a| a.get_id() == id)
            .unwrap_or_else(|| panic!("`{command}` has no argument `{id}`"));
        let switch = matches!(arg.get_action(), clap::ArgAction::SetTrue);
        match (s, arg.get_long()) {
            (Surface::Cli, None) => value.to_owned(),
            (Surface::Cli, Some(long)) if switch => format!("--{long}"),
            (Surface::Cli, Some(long)) => format!("--{long} {value}"),
            (Surface::Mcp, _) => {
                let text = value.trim_matches('"');
                let value = match arg.get_action() {
                    clap::ArgAction::SetTrue => json!(true),
                    clap::ArgAction::Append => json!([text]),
                    _ => json!(text),
                };
                format!("\"{id}\": {value}")
            }
        }
    };
    let join = |group: &[(&str, &str)], between: &str| {
        group.iter().map(one).collect::<Vec<_>>().join(between)
    };
    match s {
        Surface::Cli => {
            let mut line = format!("`git loopx {command}");
            for arg in args {
                line = format!("{line} {}", one(arg));
            }
            for group in optional {
                line = format!("{line} [{}]", join(group, " | "));
            }
            line + "`"
        }
        Surface::Mcp if args.is_empty() => format!("the `{tool}` tool"),
        Surface::Mcp => {
            let text = format!("the `{tool}` tool with `{{{}}}`", join(args, ", "));
            let optional: Vec<_> = optional.iter().map(|g| join(g, "` or `")).collect();
            match optional.is_empty() {
                true => text,
                false => format!("{text} (optional: `{}`)", optional.join("`, `")),
            }
        }
    }
}

/// The commands the prompt names, each with its tool (`mcp/tools.rs`).
pub const SHOULD_RUN: (&str, &str) = ("should-run", "should_run");
pub const CLAIM: (&str, &str) = ("todo claim", "claim");
pub const WRITEBACK: (&str, &str) = ("writeback", "writeback");
pub const DONE: (&str, &str) = ("todo done", "complete_todo");
pub const SPEND: (&str, &str) = ("quota spend", "spend");
pub const ADD: (&str, &str) = ("todo add", "add_todo");
pub const UPDATE: (&str, &str) = ("todo update", "update_todo");
pub const GATE: (&str, &str) = ("gate add", "add_gate");
pub const POLL: (&str, &str) = ("todo poll", "poll_monitor");
pub const GOAL_DONE: (&str, &str) = ("goal done", "complete_goal");
