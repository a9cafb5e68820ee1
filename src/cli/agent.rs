//! `git loopx agent …`

use clap::Subcommand;

use crate::cli::Output;
use crate::ops::agent;
use crate::session::Context;
use crate::Result;

/// The agent registry.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: AgentCommand,
}

#[derive(Debug, Subcommand)]
enum AgentCommand {
    /// Register an agent, or update its runtime and capabilities.
    Register {
        /// The agent's id: 1-64 of a-z, 0-9, `_`, `.`, `-`, starting with a letter.
        id: String,
        /// claude-code, codex, a shell loop…
        #[arg(long)]
        runtime: Option<String>,
        /// A capability it has (repeatable; replaces the list).
        #[arg(long = "capability", value_name = "CAP")]
        capability: Vec<String>,
    },
    /// List registered agents.
    List,
}

pub fn run(ctx: &Context, args: &Args) -> Result<Output> {
    match &args.command {
        AgentCommand::Register {
            id,
            runtime,
            capability,
        } => {
            let r = agent::register(ctx, id, runtime.as_deref(), capability)?;
            let verb = if r.created { "registered" } else { "updated" };
            let text = format!("{verb} agent {}\n", r.agent.id);
            Ok(Output::new(r, text))
        }
        AgentCommand::List => {
            let r = agent::list(ctx)?;
            let mut text = String::new();
            for a in &r.agents {
                text.push_str(&format!(
                    "{}  {}  {}\n",
                    a.id,
                    a.runtime.as_deref().unwrap_or("-"),
                    a.capabilities.join(",")
                ));
            }
            if r.agents.is_empty() {
                text.push_str("no agents registered\n");
            }
            Ok(Output::new(r, text))
        }
    }
}
