//! `doctor`: environment and state health, each finding with its fix.

use serde::Serialize;

use crate::git_cmd;
use crate::ops::Context;
use crate::store::{transaction, Store, STATE_REF};
use crate::Result;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Ok,
    Warn,
    Error,
}

#[derive(Debug, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub level: Level,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct DoctorReport {
    pub healthy: bool,
    pub checks: Vec<Check>,
}

fn check(
    name: &'static str,
    level: Level,
    detail: impl Into<String>,
    fix: Option<String>,
) -> Check {
    Check {
        name,
        level,
        detail: detail.into(),
        fix,
    }
}

pub fn doctor(ctx: &Context, fsck: bool) -> Result<DoctorReport> {
    let mut checks = Vec::new();
    let repo_dir = ctx
        .store
        .workdir()
        .unwrap_or(ctx.store.common_dir())
        .to_owned();
    checks.push(check(
        "repository",
        Level::Ok,
        "git repository found, files ref storage",
        None,
    ));

    checks.push(match git_cmd::version() {
        Some(v) if v >= git_cmd::MIN_VERSION => check(
            "git",
            Level::Ok,
            format!("git {}.{}.{}", v.0, v.1, v.2),
            None,
        ),
        Some(v) => check(
            "git",
            Level::Warn,
            format!(
                "git {}.{}.{} is older than 2.41: `sync` needs `fetch --porcelain`",
                v.0, v.1, v.2
            ),
            Some("install git 2.41 or newer".into()),
        ),
        None => check(
            "git",
            Level::Warn,
            "the git program was not found: local commands work, `sync` will not",
            Some("install git and put it on PATH".into()),
        ),
    });

    checks.push(match ctx.store.check_not_checked_out() {
        Ok(()) => check(
            "worktrees",
            Level::Ok,
            "loopx-state is not checked out anywhere",
            None,
        ),
        Err(e) => check("worktrees", Level::Error, e.to_string(), e.hint()),
    });

    checks.push(match ctx.store.lock_age() {
        None => check("lock", Level::Ok, format!("no lock on {STATE_REF}"), None),
        Some((lock, age)) => check(
            "lock",
            if age > 60 { Level::Error } else { Level::Warn },
            format!("{} exists, {age}s old", lock.display()),
            Some(format!(
                "if no git or git-loopx process is running, remove {} by hand",
                lock.display()
            )),
        ),
    });

    checks.push(match transaction::load(&ctx.store) {
        Ok((tip, Some(state))) => {
            let todos: usize = state.goals.values().map(|g| g.todos.len()).sum();
            let runs: usize = state.goals.values().map(|g| g.runs.len()).sum();
            check(
                "state",
                Level::Ok,
                format!(
                    "{STATE_REF} at {} is valid: {} goal(s), {todos} todo(s), {runs} run record(s)",
                    tip.as_ref().map_or("?", |c| c.short()),
                    state.goals.len()
                ),
                None,
            )
        }
        Ok((_, None)) => check(
            "state",
            Level::Warn,
            format!("{STATE_REF} does not exist yet"),
            Some("run `git loopx init --goal-text \"…\"`".into()),
        ),
        Err(e) => check("state", Level::Error, e.to_string(), e.hint()),
    });

    checks.push(match ctx.store.config_string("user.name") {
        Some(_) => check(
            "identity",
            Level::Ok,
            "state commits use your git identity",
            None,
        ),
        None => check(
            "identity",
            Level::Warn,
            "user.name is not set: state commits are signed `git-loopx <git-loopx@localhost>`",
            Some("git config user.name \"…\" && git config user.email \"…\"".into()),
        ),
    });

    if fsck {
        checks.push(match git_cmd::fsck(&repo_dir) {
            Ok(Ok(())) => check("fsck", Level::Ok, "git fsck found no problems", None),
            Ok(Err(report)) => check("fsck", Level::Error, report, Some("see `git fsck`".into())),
            Err(e) => check(
                "fsck",
                Level::Warn,
                format!("could not run git fsck: {e}"),
                None,
            ),
        });
    }

    let healthy = checks.iter().all(|c| c.level != Level::Error);
    Ok(DoctorReport { healthy, checks })
}
