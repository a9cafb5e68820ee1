//! `diff`: what changed in the state between two state commits, as facts
//! (`model::diff::semantic`), and with `--patch` the YAML hunks of every
//! changed file, read from the two commits' trees through the store.
//!
//! No argument: the tip of loopx-state against its first parent. `REV`:
//! that commit against its first parent. `A..B`: the state at A against the
//! state at B (`A..` ends at the tip). A root commit is compared with
//! nothing: everything in it was added.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::model::diff::semantic::{self, Fact};
use crate::model::{Refusal, State};
use crate::ops::revision;
use crate::session::Context;
use crate::store::{transaction, Oid};
use crate::Result;

/// `diff`, and the `diff` tool (see `ops::args`), which does not take
/// `markdown`: its answer is the report.
#[derive(Debug, Clone, clap::Args, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DiffArgs {
    /// A state commit (compared with its first parent), or a range `A..B`
    /// comparing the state at A with the state at B (`A..` ends at
    /// loopx-state). Any revision git takes: loopx-state~3, loopx-state@{2},
    /// origin/loopx-state, a commit id.
    #[arg(value_name = "REV | A..B")]
    pub range: Option<String>,
    /// Also show each changed file as a unified YAML diff.
    #[arg(long)]
    #[serde(default)]
    pub patch: bool,
    /// Markdown, for a pull-request comment: state text escaped so it
    /// renders inert, patches in fenced blocks, cut to 65,536 characters.
    #[arg(long)]
    #[serde(skip)]
    pub markdown: bool,
}

#[derive(Debug, Serialize)]
pub struct DiffReport {
    /// The older state commit; `None` when `to` is a root commit.
    pub from: Option<Oid>,
    pub to: Oid,
    /// The goal the facts are limited to (`--goal`); `None`: every goal.
    pub goal: Option<String>,
    pub facts: Vec<Fact>,
    /// With `--patch`: every changed file as a unified diff.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patches: Option<Vec<FilePatch>>,
    /// Answers to gates this range makes that do not count under
    /// `gate_signers` (judged at `to`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored_answers: Vec<crate::ops::signers::IgnoredAnswer>,
}

/// One changed file of the state tree.
#[derive(Debug, Serialize)]
pub struct FilePatch {
    pub path: String,
    pub change: FileStatus,
    /// git-style: `--- a/<path>`, `+++ b/<path>`, then the hunks.
    pub patch: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    Added,
    Removed,
    Modified,
}

/// The two ends `spec` names: `(older, newer)`.
fn ends(ctx: &Context, spec: Option<&str>) -> Result<(Option<Oid>, Oid)> {
    let single = |to: Oid| -> Result<(Option<Oid>, Oid)> {
        let log = ctx.store.first_parent_log(&to, 2)?;
        Ok((log.get(1).map(|c| c.id.clone()), to))
    };
    let Some(spec) = spec else {
        let (tip, _) = ctx.load()?;
        return single(tip);
    };
    if spec.contains("...") {
        return Err(Refusal::invalid_input(format!(
            "`{spec}`: a state diff compares two commits (A..B), not a symmetric difference"
        ))
        .into());
    }
    if !spec.contains("..") {
        return single(revision::state_commit(ctx, spec)?);
    }
    match revision::split_range(spec) {
        (Some(a), b) => {
            let from = revision::state_commit(ctx, a)?;
            let to = match b {
                Some(b) => revision::state_commit(ctx, b)?,
                None => ctx.load()?.0,
            };
            Ok((Some(from), to))
        }
        (None, _) => Err(Refusal::invalid_input(format!("`{spec}` has no start"))
            .with_hint("A..B compares the state at A with the state at B; A.. ends at loopx-state")
            .into()),
    }
}

pub fn diff(ctx: &Context, spec: Option<&str>, patch: bool) -> Result<DiffReport> {
    let (from, to) = ends(ctx, spec)?;
    let new = transaction::state_at(&ctx.store, &to)?;
    let old = match &from {
        Some(c) => Some(transaction::state_at(&ctx.store, c)?),
        None => None,
    };
    let goal = ctx.goal_flag().map(str::to_owned);
    if let Some(g) = &goal {
        let known = |s: &State| s.goals.contains_key(g);
        if !known(&new) && !old.as_ref().is_some_and(known) {
            return Err(Refusal::invalid_input(format!(
                "no goal `{g}` at {} or at its other end",
                to.short()
            ))
            .with_hint(format!(
                "goals at {}: {}",
                to.short(),
                new.goals.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
            .into());
        }
    }
    let facts = semantic::facts(old.as_ref(), &new, goal.as_deref());
    let patches = if patch {
        Some(patches(ctx, from.as_ref(), &to, goal.as_deref())?)
    } else {
        None
    };
    // An answer the range makes that does not count: its gate changed.
    let ignored_answers = crate::ops::signers::ignored_answers_all(ctx, &to, &new)?
        .into_iter()
        .filter(|a| match goal.as_deref() {
            Some(g) => new
                .goals
                .get(g)
                .is_some_and(|gs| gs.todos.contains_key(&a.gate)),
            None => true,
        })
        .filter(|a| {
            let find = |s: &State| s.goals.values().find_map(|g| g.todos.get(&a.gate)).cloned();
            old.as_ref().and_then(find) != find(&new)
        })
        .collect();
    Ok(DiffReport {
        from,
        to,
        goal,
        facts,
        patches,
        ignored_answers,
    })
}

/// The unified diff of every file that differs between the two trees
/// (under `goals/<goal>/` only, with a goal), in path order.
fn patches(
    ctx: &Context,
    from: Option<&Oid>,
    to: &Oid,
    goal: Option<&str>,
) -> Result<Vec<FilePatch>> {
    let new = ctx.store.read(to)?.files;
    let old = match from {
        Some(c) => ctx.store.read(c)?.files,
        None => Default::default(),
    };
    let prefix = goal.map(|g| format!("goals/{g}/"));
    let paths: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    let mut out = Vec::new();
    for path in paths {
        if prefix
            .as_ref()
            .is_some_and(|p| !path.starts_with(p.as_str()))
        {
            continue;
        }
        let (a, b) = (old.get(path), new.get(path));
        if a == b {
            continue;
        }
        let change = match (a, b) {
            (None, _) => FileStatus::Added,
            (_, None) => FileStatus::Removed,
            _ => FileStatus::Modified,
        };
        out.push(FilePatch {
            path: path.clone(),
            change,
            patch: unified(path, a.map(Vec::as_slice), b.map(Vec::as_slice)),
        });
    }
    Ok(out)
}

/// A unified diff with git's file headers (`/dev/null` for a side that
/// does not exist).
fn unified(path: &str, old: Option<&[u8]>, new: Option<&[u8]>) -> String {
    let text = |b: Option<&[u8]>| String::from_utf8_lossy(b.unwrap_or_default()).into_owned();
    let (a, b) = (text(old), text(new));
    let diff = similar::TextDiff::from_lines(&a, &b);
    let head = |side: &str, bytes: Option<&[u8]>| match bytes {
        Some(_) => format!("{side}/{path}"),
        None => "/dev/null".to_owned(),
    };
    let mut out = format!("--- {}\n+++ {}\n", head("a", old), head("b", new));
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        let hunk = hunk.to_string();
        out.push_str(&hunk);
        if !hunk.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_patch_has_git_headers_and_hunks() {
        let p = super::unified("a.yaml", Some(b"x: 1\ny: 2\n"), Some(b"x: 1\ny: 3\n"));
        assert_eq!(
            p,
            "--- a/a.yaml\n+++ b/a.yaml\n@@ -1,2 +1,2 @@\n x: 1\n-y: 2\n+y: 3\n"
        );
        let p = super::unified("n.yaml", None, Some(b"x: 1\n"));
        assert_eq!(p, "--- /dev/null\n+++ b/n.yaml\n@@ -0,0 +1 @@\n+x: 1\n");
        let p = super::unified("m.yaml", Some(b"x: 1"), Some(b"x: 2\n"));
        assert_eq!(
            p,
            "--- a/m.yaml\n+++ b/m.yaml\n@@ -1 +1 @@\n-x: 1\n\\ No newline at end of file\n+x: 2\n"
        );
    }
}
