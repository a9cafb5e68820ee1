//! `git loopx mcp`: starts the MCP server (`crate::mcp`) on a
//! current-thread tokio runtime; tokio lives in that module and here only
//! (both built with the `mcp` feature).

#[cfg(feature = "mcp")]
use {
    crate::cli::GlobalArgs,
    crate::{Error, Result},
};

/// Serve this repository's git-loopx as a Model Context Protocol server on
/// stdin and stdout, for any MCP client (Claude Code, Codex, others).
///
/// The tools are every step of every kind of turn (should_run, next_todo,
/// claim, renew, release, writeback, complete_todo, handoff, spend,
/// add_todo, update_todo, poll_monitor, complete_goal, add_gate, status,
/// diff), each answering with the object the command prints under --json;
/// a refusal is a tool error with the same code. The acting agent
/// is fixed for the server's life: --agent, else $LOOPX_AGENT, else git
/// config loopx.agent (one is required). Resources: loopx://status and
/// loopx://goal/<id>, with change notifications; the prompt `turn`, which
/// names tools where `prompt` names commands.
/// Gates are not answered here: a person does, with `gate resolve`.
/// Register it with `hooks install --mcp-claude-code` (see docs/mcp.md).
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs the server until the client closes stdin; an error before the
/// session starts (no repository, no agent) goes to stderr, never stdout.
#[cfg(feature = "mcp")]
pub fn run(global: &GlobalArgs, _args: &Args) -> Result<()> {
    let dir = match &global.dir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .map_err(|e| Error::invalid_input(format!("cannot read the current directory: {e}")))?,
    };
    let options = crate::mcp::Options {
        dir,
        agent: global.agent.clone(),
        goal: global.goal.clone(),
        clock: super::now,
        policy: crate::session::Policy::allowing(&global.allow_secret_pattern),
    };
    // Read once here, so a bad LOOPX_NOW is refused before the session.
    super::now()?;
    // The runtime this server serves is governed while it runs: its shell
    // tool does not act as the person, whatever its environment says.
    let _governed = crate::session::governed::Governed::mcp_client(&options.dir);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::invalid_input(format!("cannot start the MCP runtime: {e}")))?;
    let served = runtime.block_on(crate::mcp::serve(options));
    // Do not wait for the stdin reader's thread: the session is over.
    runtime.shutdown_background();
    served
}
