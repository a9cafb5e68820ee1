//! `log`: the state branch's history, which is the audit log.

use serde::Serialize;

use crate::model::Timestamp;
use crate::session::Context;
use crate::store::{trailer, Oid};
use crate::Result;

/// Show the state branch's commits, newest first: the audit log.
#[derive(Debug, Default, clap::Args)]
pub struct LogArgs {
    /// Show at most N commits.
    #[arg(
        short = 'n',
        long = "max-count",
        value_name = "N",
        default_value_t = 20
    )]
    pub limit: usize,
    /// Only commits that touched this todo (an id or a prefix, with or
    /// without `todo_`); also lists the code commits on the repository's
    /// branches that carry its `Loopx-Todo:` trailer, and where each is.
    #[arg(long, value_name = "ID")]
    pub todo: Option<String>,
    /// Only commits made by this agent.
    #[arg(long = "by", value_name = "AGENT")]
    pub agent: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct LogEntry {
    pub commit: Oid,
    pub parents: Vec<Oid>,
    pub time: Timestamp,
    pub subject: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub todos: Vec<String>,
    /// The run records it wrote (`Loopx-Run`: a writeback, a failed validation).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<String>,
    /// The answers to gates it made that do not count under
    /// `gate_signers` (as the tip judges them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored_answers: Vec<crate::ops::signers::IgnoredAnswer>,
}

/// A code commit (on the repository's branches, not on loopx-state) whose
/// message carries `Loopx-Todo: <id>` (added by the prepare-commit-msg hook).
#[derive(Debug, Serialize)]
pub struct CodeCommit {
    pub commit: String,
    /// The branches (local and remote-tracking) that contain it.
    pub found_on: Vec<String>,
    /// Committer date, as git prints it (ISO 8601).
    pub time: String,
    pub subject: String,
    pub todos: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct LogReport {
    pub entries: Vec<LogEntry>,
    /// Whether older matching commits were left out by `--max-count`.
    pub more: bool,
    /// With `--todo`: the code commits that name the todo.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code_commits: Option<Vec<CodeCommit>>,
}

/// How far back `log` looks when filtering by todo or agent.
const SCAN_LIMIT: usize = 100_000;

pub fn log(ctx: &Context, args: &LogArgs) -> Result<LogReport> {
    let Some(tip) = ctx.store.tip()? else {
        return Err(crate::store::Error::Missing.into());
    };
    // The todo, by its id or a unique prefix (with or without `todo_`), in
    // any goal: one that names no todo is refused, as `history` refuses it.
    let want = match args.todo.as_deref() {
        Some(query) => Some(find_todo(ctx, query)?),
        None => None,
    };
    let filtering = args.todo.is_some() || args.agent.is_some();
    // One more than asked: whether there are more to show.
    let scan = if filtering {
        SCAN_LIMIT
    } else {
        args.limit.saturating_add(1)
    };
    let mut more = false;
    let ignored = match ctx.load() {
        Ok((tip, state)) => crate::ops::signers::ignored_answers_all(ctx, &tip, &state)?,
        Err(_) => Vec::new(),
    };
    let mut entries = Vec::new();
    for info in ctx.store.first_parent_log(&tip, scan)? {
        let todos: Vec<String> = trailer(&info.message, "Loopx-Todo")
            .map(str::to_owned)
            .collect();
        let agent = trailer(&info.message, "Loopx-Agent")
            .next()
            .map(str::to_owned);
        if let Some(want) = &want {
            if !todos.iter().any(|t| t == want) {
                continue;
            }
        }
        if args.agent.is_some() && agent != args.agent {
            continue;
        }
        if entries.len() >= args.limit {
            more = true;
            break;
        }
        let ignored_answers = ignored
            .iter()
            .filter(|a| a.commit == info.id)
            .cloned()
            .collect();
        entries.push(LogEntry {
            commit: info.id,
            parents: info.parents,
            time: info.time,
            subject: info.message.lines().next().unwrap_or("").to_owned(),
            op: trailer(&info.message, "Loopx-Op").next().map(str::to_owned),
            agent,
            todos,
            runs: trailer(&info.message, "Loopx-Run")
                .map(str::to_owned)
                .collect(),
            ignored_answers,
        });
    }
    let code_commits = match &want {
        Some(want) => Some(code_commits(ctx, want, args.limit)?),
        None => None,
    };
    Ok(LogReport {
        entries,
        more,
        code_commits,
    })
}

/// The full id of the todo `query` names, in any goal of the current state.
fn find_todo(ctx: &Context, query: &str) -> Result<String> {
    let (_, state) = ctx.load()?;
    let query = query.trim();
    let full = if query.starts_with("todo_") {
        query.to_owned()
    } else {
        format!("todo_{query}")
    };
    if !full[5..]
        .bytes()
        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(crate::model::Refusal::invalid_input(format!(
            "`{query}` is not a todo id or a prefix of one"
        ))
        .into());
    }
    let ids = state
        .goals
        .values()
        .flat_map(|g| g.todos.keys())
        .collect::<std::collections::BTreeSet<&str>>();
    Ok(crate::model::ids::resolve_prefix("todo", &full, ids)?.to_owned())
}

/// The code commits on the repository's branches whose `Loopx-Todo`
/// trailer names the todo `want`, newest first.
fn code_commits(ctx: &Context, want: &str, limit: usize) -> Result<Vec<CodeCommit>> {
    let found = crate::git_cmd::hooks::commits_with_trailer(
        ctx.repo_dir(),
        crate::ops::hook_git::TODO_TRAILER,
    )
    .map_err(crate::store::Error::Git)?;
    found
        .into_iter()
        .filter(|c| c.values.iter().any(|v| v == want))
        .take(limit)
        .map(|c| {
            let found_on = crate::git_cmd::hooks::branches_containing(ctx.repo_dir(), &c.commit)
                .map_err(crate::store::Error::Git)?;
            Ok(CodeCommit {
                commit: c.commit,
                found_on,
                time: c.time,
                subject: c.subject,
                todos: c.values,
            })
        })
        .collect()
}
