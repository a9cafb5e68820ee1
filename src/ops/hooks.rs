//! `hooks install|uninstall|status`: the installer (`crate::install`) run
//! on this session's repository — its worktree, git directories, identity
//! and the settings that decide what `status` says.

use crate::git_cmd;
use crate::session::Context;
use crate::Result;

use crate::install::{self, Repo};
pub use crate::install::{
    Action, Baked, FileChange, HooksReport, Installed, Integration, StatusLine, StatusReport,
    Ungoverned,
};

/// The repository as the installer needs it.
fn repo(ctx: &Context) -> Repo<'_> {
    let config = |key: &str| ctx.store.config_string(key);
    Repo {
        workdir: ctx.store.workdir(),
        common_dir: ctx.store.common_dir(),
        repo_dir: ctx.repo_dir(),
        local_dir: ctx.store.local_dir(),
        identity: ctx.store.config_identity(),
        agent_configured: config("loopx.agent").is_some_and(|a| !a.is_empty()),
        pre_push_sync: config("loopx.prePushSync").is_some_and(|v| git_cmd::hooks::is_true(&v)),
    }
}

/// `hooks install`: writes the integrations' files (see `crate::install`).
pub fn install(ctx: &Context, which: &[Integration], baked: Baked) -> Result<HooksReport> {
    install::install(&repo(ctx), which, baked)
}

/// `hooks uninstall`: takes our entries out again.
pub fn uninstall(ctx: &Context, which: &[Integration]) -> Result<HooksReport> {
    install::uninstall(&repo(ctx), which)
}

/// `hooks status`: whether each integration is in place, and where.
pub fn status(ctx: &Context, which: &[Integration]) -> Result<StatusReport> {
    install::status(&repo(ctx), which)
}

/// The runtimes installed from this worktree that their files would no
/// longer govern.
pub fn governance_lost(ctx: &Context) -> Vec<Ungoverned> {
    install::governance_lost(&repo(ctx))
}
