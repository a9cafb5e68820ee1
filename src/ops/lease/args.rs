//! The arguments of the lease commands (`todo claim | next | renew |
//! release | handoff`) and of their MCP tools (see `ops::args`).

use serde::Deserialize;

use crate::ops::args::Seconds;

/// `todo claim`, and the `claim` tool.
#[derive(Debug, Clone, clap::Args, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ClaimArgs {
    /// The todo: its id or a unique prefix of one.
    #[arg(value_name = "ID")]
    pub todo: String,
    /// Lease length: 45m by default, at most 24h (e.g. 30m, 2h, 90s).
    #[arg(long, default_value = "45m")]
    pub ttl: Option<Seconds>,
    /// Confirm the claim on the remote (a remote compare-and-swap): the
    /// local branch takes the claim only once the remote has it, so a
    /// claim that fails leaves none behind. Network limit: git config
    /// loopx.syncTimeout (default 2m).
    #[arg(long)]
    #[serde(default)]
    pub sync: bool,
    /// The remote for --sync (default: loopx.remote, else origin).
    #[arg(long, value_name = "REMOTE", requires = "sync")]
    pub remote: Option<String>,
}

/// `todo next`, and the `next_todo` tool.
#[derive(Debug, Clone, clap::Args, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct NextArgs {
    /// Claim it in the same compare-and-swap.
    #[arg(long)]
    #[serde(default)]
    pub claim: bool,
    /// A capability this agent has now (repeatable; added to its registered ones).
    #[arg(long = "capability", value_name = "CAP")]
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// With --claim: the lease length, at most 24h (e.g. 30m, 2h).
    #[arg(long, default_value = "45m")]
    pub ttl: Option<Seconds>,
    /// With --claim: confirm the claim on the remote (see `todo claim --sync`).
    #[arg(long, requires = "claim")]
    #[serde(default)]
    pub sync: bool,
    /// The remote for --sync (default: loopx.remote, else origin).
    #[arg(long, value_name = "REMOTE", requires = "sync")]
    pub remote: Option<String>,
}

/// `todo renew`, and the `renew` tool.
#[derive(Debug, Clone, clap::Args, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RenewArgs {
    /// The todo: its id or a unique prefix of one.
    #[arg(value_name = "ID")]
    pub todo: String,
    /// The lease's new length from now: 45m by default, at most 24h.
    #[arg(long, default_value = "45m")]
    pub ttl: Option<Seconds>,
    /// The epoch your claim was granted (default: recorded on this host).
    #[arg(long)]
    pub epoch: Option<u64>,
}

/// `todo release`, and the `release` tool (which does not take `force`:
/// the agent is the server's, and only a person forces).
#[derive(Debug, Clone, clap::Args, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ReleaseArgs {
    /// The todo: its id or a unique prefix of one.
    #[arg(value_name = "ID")]
    pub todo: String,
    /// The epoch your claim was granted (default: recorded on this host).
    #[arg(long)]
    pub epoch: Option<u64>,
    /// A person (run without an agent identity) takes back whoever's
    /// lease this is: the epoch moves up, so the old holder's later
    /// writes are refused (`stale_epoch`); who did it is recorded in
    /// the commit and a note. Refused to an agent on another's lease.
    #[arg(long)]
    #[serde(skip)]
    pub force: bool,
}

/// `todo handoff`, and the `handoff` tool. `packet` is the one field whose
/// value differs: the CLI names a file (or `-`, stdin) and reads it; the
/// tool takes the Markdown itself.
#[derive(Debug, Clone, clap::Args, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct HandoffArgs {
    /// The todo: its id or a unique prefix of one.
    #[arg(value_name = "ID")]
    pub todo: String,
    /// The agent that takes the lease over.
    #[arg(long, value_name = "AGENT")]
    pub to: String,
    /// What the next agent needs to know (kept as a note on the todo;
    /// default: the first line of the packet's summary).
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// The work done so far (the packet's summary).
    #[arg(long, value_name = "TEXT")]
    pub summary: Option<String>,
    /// An approach tried and why it failed, as "APPROACH: WHY" (repeatable).
    #[arg(long, value_name = "APPROACH: WHY")]
    #[serde(default)]
    pub tried: Vec<String>,
    /// What the next agent should do next (repeatable, in order).
    #[arg(long = "next-step", value_name = "TEXT")]
    #[serde(default)]
    pub next_steps: Vec<String>,
    /// A question still open (repeatable).
    #[arg(long = "question", value_name = "TEXT")]
    #[serde(default)]
    pub questions: Vec<String>,
    /// A file the next agent should read, from the top of the repository
    /// (repeatable; kept repository-relative, paths outside it are refused).
    #[arg(long = "file", value_name = "PATH")]
    #[serde(default)]
    pub files: Vec<String>,
    /// A Markdown packet to read first (`-` reads stdin); flags add to it.
    #[arg(long, value_name = "FILE.md")]
    #[cfg_attr(
        feature = "mcp",
        schemars(
            description = "A whole packet as Markdown (## Summary, ## Tried, ## Next steps, \
                           ## Open questions, ## Files); the other fields add to it."
        )
    )]
    pub packet: Option<String>,
    /// The new holder's lease length, at most 24h (e.g. 30m, 2h).
    #[arg(long, default_value = "45m")]
    pub ttl: Option<Seconds>,
    /// The epoch your claim was granted (default: recorded on this host).
    #[arg(long)]
    pub epoch: Option<u64>,
}
