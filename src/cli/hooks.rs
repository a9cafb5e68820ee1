//! `git loopx hooks install|uninstall|status`

use clap::Subcommand;

use crate::cli::{GlobalArgs, Output};
use crate::model::runtime::Runtime;
use crate::ops::hooks::{self, Integration};
use crate::render;
use crate::session::Context;
use crate::Result;

/// Install, remove or show git-loopx's integrations: an agent runtime's
/// hooks, the agent's identity in its shell, its permissions and a /loopx
/// command (`--claude-code`, `--codex`, `--opencode`, `--pi`, `--gemini`,
/// `--cursor`: see hooks/<runtime>/README.md), `git loopx mcp` in Claude
/// Code's `.mcp.json` (`--mcp-claude-code`), and the git hooks
/// (`prepare-commit-msg`, `pre-push`).
///
/// Your own settings and hooks are kept: entries are merged into the JSON
/// files, and git hooks get a block between `# >>> git-loopx >>>` and
/// `# <<< git-loopx <<<` lines. Installing twice changes nothing;
/// `uninstall` puts your files back as they were.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: HooksCommand,
}

#[derive(Debug, Subcommand)]
enum HooksCommand {
    /// Install hooks (with no integration named: the git hooks only).
    ///
    /// With `--agent ID` given on the command line, the runtime's hooks run
    /// as that agent and its shell gets `LOOPX_AGENT=ID`, so every command
    /// the agent runs acts as it; without it they find the agent when they
    /// run ($LOOPX_AGENT, else git config loopx.agent), and `hooks status`
    /// says when the agent's shell would have none. `--goal ID` on the
    /// command line is baked in the same way (`LOOPX_GOAL=ID`); without it
    /// they act on $LOOPX_GOAL, else the default goal. The git hooks always
    /// find it when they run: they serve every worktree and your own commits. The pre-push hook syncs only after `git config
    /// loopx.prePushSync true`.
    Install(Which),
    /// Remove what `install` put in (with no integration named: all of it).
    Uninstall(Which),
    /// Show, per integration, whether it is installed, where, and whether
    /// its file was changed by hand since (with none named: all of them).
    Status(Which),
}

#[derive(Debug, clap::Args)]
struct Which {
    /// Claude Code: `SessionStart` and `Stop` hooks and `permissions.allow`
    /// in .claude/settings.json, the agent's identity (`env`) in
    /// .claude/settings.local.json, the /loopx command.
    #[arg(long)]
    claude_code: bool,
    /// Codex: `SessionStart` and `Stop` hooks in .codex/hooks.json; the
    /// agent's identity and a writable git directory for its sandbox in
    /// .codex/config.toml; the loopx skill.
    #[arg(long)]
    codex: bool,
    /// OpenCode: the plugin .opencode/plugin/loopx.js (turns, identity),
    /// `git loopx` allowed in opencode.json, the /loopx command.
    #[arg(long)]
    opencode: bool,
    /// Pi: the extension .pi/extensions/loopx.ts (turns, identity, /loopx).
    #[arg(long)]
    pi: bool,
    /// Gemini CLI: `SessionStart` and `AfterAgent` hooks and
    /// `tools.allowed` in .gemini/settings.json, the agent's identity in
    /// .gemini/.env, the /loopx command.
    #[arg(long)]
    gemini: bool,
    /// Cursor: `sessionStart` and `stop` hooks in .cursor/hooks.json.
    #[arg(long)]
    cursor: bool,
    /// git: `prepare-commit-msg` (the Loopx-Todo trailer) and `pre-push`
    /// (sync) in the hooks directory (core.hooksPath honoured).
    #[arg(long)]
    git: bool,
    /// Claude Code's MCP servers: `git loopx mcp` as the server `loopx` in
    /// .mcp.json at the worktree's root (Codex: see docs/mcp.md).
    #[arg(long)]
    mcp_claude_code: bool,
}

impl Which {
    fn chosen(&self, default: &[Integration]) -> Vec<Integration> {
        let named: Vec<Integration> = [
            (self.claude_code, Integration::Runtime(Runtime::ClaudeCode)),
            (self.codex, Integration::Runtime(Runtime::Codex)),
            (self.opencode, Integration::Runtime(Runtime::OpenCode)),
            (self.pi, Integration::Runtime(Runtime::Pi)),
            (self.gemini, Integration::Runtime(Runtime::Gemini)),
            (self.cursor, Integration::Runtime(Runtime::Cursor)),
            (self.git, Integration::Git),
            (self.mcp_claude_code, Integration::McpClaudeCode),
        ]
        .into_iter()
        .filter_map(|(on, i)| on.then_some(i))
        .collect();
        if named.is_empty() {
            default.to_vec()
        } else {
            named
        }
    }
}

const ALL: [Integration; 8] = [
    Integration::Runtime(Runtime::ClaudeCode),
    Integration::Runtime(Runtime::Codex),
    Integration::Runtime(Runtime::OpenCode),
    Integration::Runtime(Runtime::Pi),
    Integration::Runtime(Runtime::Gemini),
    Integration::Runtime(Runtime::Cursor),
    Integration::Git,
    Integration::McpClaudeCode,
];

pub fn run(ctx: &Context, global: &GlobalArgs, args: &Args) -> Result<Output> {
    // A bare repository has no worktree for the runtimes' files: with no
    // integration named, only the git hooks.
    let all: &[Integration] = if ctx.worktree().is_some() {
        &ALL
    } else {
        &[Integration::Git]
    };
    match &args.command {
        HooksCommand::Install(which) => {
            let (agent, goal) = global.on_command_line;
            let baked = hooks::Baked {
                agent: ctx.agent().filter(|_| agent),
                goal: global.goal.as_deref().filter(|_| goal),
            };
            let report = hooks::install(ctx, &which.chosen(&[Integration::Git]), baked)?;
            crate::ops::repos::register(ctx);
            let text = render::hooks::changes(&report);
            Ok(Output::new(report, text))
        }
        HooksCommand::Uninstall(which) => {
            let report = hooks::uninstall(ctx, &which.chosen(all))?;
            let text = render::hooks::changes(&report);
            Ok(Output::new(report, text))
        }
        HooksCommand::Status(which) => {
            let report = hooks::status(ctx, &which.chosen(all))?;
            let text = render::hooks::status(&report);
            Ok(Output::new(report, text))
        }
    }
}
