//! `pr`: the agent work behind a pull request.
//!
//! For the code commits of a range (`BASE..HEAD`; by default the merge base
//! of HEAD with the default branch, up to HEAD), the todos they belong to —
//! named by a commit's `Loopx-Todo:` trailer, or by a writeback whose
//! `artifacts` name the commit (a full or abbreviated id) — and for each
//! todo what the state says about it: claims, writebacks with their
//! validation, done evidence, handoffs, the gates that held it and who
//! resolved them, and the quota its writebacks spent. Commits that belong to
//! no todo are listed as such.
//!
//! State is read at the tip `Context::load` reads (the local `loopx-state`,
//! else the remote-tracking one); a repository without state still lists its
//! commits, none of them with a todo.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::model::{GoalState, Refusal, Run, RunKind, Timestamp, Todo};
use crate::session::Context;
use crate::store::{self, Oid};
use crate::Result;

/// One end of the range, as given and as resolved.
#[derive(Debug, Serialize)]
pub struct RangeEnd {
    /// The revision as typed (or chosen by default).
    pub rev: String,
    pub commit: String,
}

#[derive(Debug, Serialize)]
pub struct PrReport {
    pub base: RangeEnd,
    pub head: RangeEnd,
    /// With no range given: the default branch whose merge base with HEAD
    /// is the base (`origin/HEAD`'s branch, else `main`, else `master`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_branch: Option<String>,
    /// The state commit read; `None` when the repository has no state.
    pub state: Option<Oid>,
    /// The code commits of the range, oldest first.
    pub commits: Vec<PrCommit>,
    /// The todos those commits belong to, in the order they first appear.
    pub todos: Vec<PrTodo>,
}

impl PrReport {
    /// The command line that prints this view in full.
    pub fn command(&self) -> String {
        format!(
            "git loopx pr {}..{}",
            short(&self.base.commit),
            short(&self.head.commit)
        )
    }

    /// The commits that belong to no todo.
    pub fn orphans(&self) -> impl Iterator<Item = &PrCommit> {
        self.commits.iter().filter(|c| c.todos.is_empty())
    }
}

/// A commit id shortened the way this view prints them (12 digits).
pub fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// How a commit is tied to a todo.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// Its `Loopx-Todo:` trailer names the todo.
    Trailer,
    /// A writeback on the todo names the commit among its artifacts.
    Writeback,
}

#[derive(Debug, Serialize)]
pub struct PrCommit {
    pub commit: String,
    /// Committer date, as git prints it (ISO 8601).
    pub time: String,
    pub subject: String,
    /// The todos it belongs to (`todo` id, `via` trailer or writeback).
    pub todos: Vec<Link>,
    /// `Loopx-Todo:` values that name no todo of the state.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unknown_todos: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Link {
    pub todo: String,
    pub via: Via,
}

/// A state commit that took, handed over or released a todo's lease.
#[derive(Debug, Serialize)]
pub struct ClaimEvent {
    pub commit: String,
    /// Committer date of the state commit (ISO 8601).
    pub time: String,
    /// Its `Loopx-Op` (`todo claim`, `todo next --claim`, `todo handoff`, …).
    pub op: String,
    /// Who made the change (the commit's `Loopx-Agent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// A handoff's receiving agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The lease's epoch, as the commit's subject states it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epoch: Option<u64>,
    /// The state commit's subject (`todo claim todo_… by agent-a (epoch 2)`).
    pub subject: String,
}

impl ClaimEvent {
    /// Reads the epoch and a handoff's receiver from a subject as the lease
    /// operations write it (`… by A (epoch N)`, `… from A to B (epoch N)`).
    fn read_subject(mut self) -> Self {
        let s = self.subject.as_str();
        self.epoch = s.rsplit_once("(epoch ").and_then(|(_, rest)| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        });
        if self.op == "todo handoff" {
            self.to = s
                .split_once(" to ")
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .filter(|to| crate::model::ids::is_valid_name(to))
                .map(str::to_owned);
        }
        self
    }
}

/// A writeback on the todo, with the quota spent on it.
#[derive(Debug, Serialize)]
pub struct PrWriteback {
    #[serde(flatten)]
    pub run: Run,
    /// Which of its artifacts are commits of the range (full ids).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub in_range: Vec<String>,
    /// Slots spent on it (voided spends left out).
    pub spent_slots: u32,
}

/// A handoff, read from the note it left on the todo.
#[derive(Debug, Serialize)]
pub struct Handoff {
    pub at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    pub to: String,
    pub note: String,
}

#[derive(Debug, Serialize)]
pub struct PrTodo {
    pub todo: Todo,
    /// The commits of the range that belong to it.
    pub commits: Vec<String>,
    /// Lease history, oldest first (from the state commits of its file).
    pub claims: Vec<ClaimEvent>,
    /// Every writeback on it, oldest first.
    pub writebacks: Vec<PrWriteback>,
    pub handoffs: Vec<Handoff>,
    /// Gates whose `unblocks` is this todo (open or resolved).
    pub gates: Vec<Todo>,
    /// Slots spent on its writebacks (voided spends left out).
    pub spent_slots: u32,
    /// Spends on its writebacks that were voided.
    pub voided_spends: usize,
}

/// The state commits whose `Loopx-Op` is a lease change.
const LEASE_OPS: &[&str] = &[
    "todo claim",
    "todo next --claim",
    "todo handoff",
    "todo release",
];

/// `git loopx pr [RANGE]`.
pub fn pr(ctx: &Context, range: Option<&str>) -> Result<PrReport> {
    let dir = ctx.repo_dir();
    let (base, head, default_branch) = resolve_range(ctx, range)?;
    let found = crate::git_cmd::range::range_commits(
        dir,
        &base.commit,
        &head.commit,
        crate::ops::hook_git::TODO_TRAILER,
    )
    .map_err(store::Error::Git)?;
    let loaded = match ctx.load() {
        Ok(loaded) => Some(loaded),
        Err(crate::Error::Store(store::Error::Missing)) => None,
        Err(e) => return Err(e),
    };
    let (tip, state) = match loaded {
        Some((tip, state)) => (Some(tip), Some(state)),
        None => (None, None),
    };
    let goals: Vec<&GoalState> = state.iter().flat_map(|s| s.goals.values()).collect();
    // Which todo each artifact prefix belongs to, through writebacks.
    let ids: BTreeSet<&str> = found.iter().map(|c| c.commit.as_str()).collect();
    let mut by_artifact: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    // Writebacks past the retention horizon count too, back to the day of
    // the range's oldest commit: a pull request may stay open for days.
    // (Runs are filed by their UTC day; a commit's date has its own offset.)
    let oldest_day = found
        .iter()
        .map(|c| crate::model::Timestamp::parse(&c.time).map_or_else(String::new, |t| t.day()))
        .min();
    let mut archived = Vec::new();
    for gs in &goals {
        if let Some(day) = oldest_day
            .as_deref()
            .filter(|_| !gs.goal.archive.is_empty())
        {
            archived.extend(crate::session::retention::archived_runs(
                ctx, &gs.goal, day, None,
            )?);
        }
    }
    let live = goals.iter().flat_map(|gs| gs.runs.values());
    for run in live.chain(&archived) {
        let Some(todo) = run.todo.as_deref() else {
            continue;
        };
        if run.kind != RunKind::Writeback {
            continue;
        }
        for a in &run.artifacts {
            for commit in matching(&ids, a) {
                by_artifact
                    .entry(commit)
                    .or_default()
                    .insert(todo.to_owned());
            }
        }
    }
    let mut commits = Vec::new();
    let mut order: Vec<String> = Vec::new();
    for c in &found {
        let mut links = BTreeSet::new();
        let mut unknown = Vec::new();
        for value in &c.values {
            match find_todo(&goals, value) {
                Some(id) => {
                    links.insert(Link {
                        todo: id.to_owned(),
                        via: Via::Trailer,
                    });
                }
                None => unknown.push(value.clone()),
            }
        }
        for todo in by_artifact.get(c.commit.as_str()).into_iter().flatten() {
            if !links.iter().any(|l| &l.todo == todo) {
                links.insert(Link {
                    todo: todo.clone(),
                    via: Via::Writeback,
                });
            }
        }
        for l in &links {
            if !order.contains(&l.todo) {
                order.push(l.todo.clone());
            }
        }
        commits.push(PrCommit {
            commit: c.commit.clone(),
            time: c.time.clone(),
            subject: c.subject.clone(),
            todos: links.into_iter().collect(),
            unknown_todos: unknown,
        });
    }
    let mut todos: Vec<PrTodo> = order
        .iter()
        .filter_map(|id| todo_view(&goals, &archived, id, &commits, &ids))
        .collect();
    if let Some(tip) = &tip {
        add_claims(ctx, tip, &mut todos)?;
    }
    Ok(PrReport {
        base,
        head,
        default_branch,
        state: tip,
        commits,
        todos,
    })
}

/// The commits of `ids` that `artifact` (a full or abbreviated id) names.
fn matching<'a>(ids: &BTreeSet<&'a str>, artifact: &str) -> Vec<&'a str> {
    let a = artifact.trim().to_ascii_lowercase();
    if a.len() < 4 || !a.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Vec::new();
    }
    ids.iter()
        .skip_while(|id| id.as_bytes() < a.as_bytes())
        .take_while(|id| id.starts_with(&a))
        .copied()
        .collect()
}

/// The todo a trailer value names: its id, or a unique prefix of one, in
/// any goal.
fn find_todo<'a>(goals: &[&'a GoalState], value: &str) -> Option<&'a str> {
    for gs in goals {
        if let Some((id, _)) = gs.todos.iter().find(|(id, _)| *id == value) {
            return Some(id);
        }
    }
    if value.len() < "todo_".len() + 4 {
        return None;
    }
    let mut found = goals
        .iter()
        .flat_map(|gs| gs.todos.keys().filter(|id| id.starts_with(value)));
    match (found.next(), found.next()) {
        (Some(id), None) => Some(id),
        _ => None,
    }
}

/// `archived`: runs past the retention horizon, of any goal, read back for
/// the range.
fn todo_view(
    goals: &[&GoalState],
    archived: &[Run],
    id: &str,
    commits: &[PrCommit],
    ids: &BTreeSet<&str>,
) -> Option<PrTodo> {
    let gs = goals.iter().find(|gs| gs.todos.contains_key(id))?;
    let todo = gs.todos.get(id)?.clone();
    let runs = || {
        let archived = archived.iter().filter(|r| r.goal == gs.goal.id);
        gs.runs.values().chain(archived)
    };
    let mut writebacks: Vec<&Run> = runs()
        .filter(|r| r.kind == RunKind::Writeback && r.todo.as_deref() == Some(id))
        .collect();
    writebacks.sort_by(|a, b| a.added_key().cmp(&b.added_key()));
    let voided: BTreeSet<&str> = runs()
        .filter(|r| r.kind == RunKind::Void)
        .filter_map(|r| r.spend.as_deref())
        .collect();
    let mut spent: BTreeMap<&str, u32> = BTreeMap::new();
    let mut voided_spends = 0;
    for r in runs().filter(|r| r.kind == RunKind::Spend) {
        let Some(w) = r.writeback.as_deref() else {
            continue;
        };
        if !writebacks.iter().any(|wb| wb.id == w) {
            continue;
        }
        if voided.contains(r.id.as_str()) {
            voided_spends += 1;
        } else {
            *spent.entry(w).or_default() += r.slots.unwrap_or(1);
        }
    }
    let writebacks: Vec<PrWriteback> = writebacks
        .into_iter()
        .map(|r| PrWriteback {
            in_range: r
                .artifacts
                .iter()
                .flat_map(|a| matching(ids, a))
                .map(str::to_owned)
                .collect(),
            spent_slots: spent.get(r.id.as_str()).copied().unwrap_or(0),
            run: r.clone(),
        })
        .collect();
    let handoffs = handoffs(todo.notes.iter());
    let mut gates: Vec<Todo> = gs
        .todos
        .all_facts()
        .filter(|f| f.unblocks == Some(id))
        .filter_map(|f| gs.todos.get(f.id).cloned())
        .filter(Todo::is_gate)
        .collect();
    gates.sort_by(|a, b| a.added_key().cmp(&b.added_key()));
    Some(PrTodo {
        commits: commits
            .iter()
            .filter(|c| c.todos.iter().any(|l| l.todo == id))
            .map(|c| c.commit.clone())
            .collect(),
        spent_slots: writebacks.iter().map(|w| w.spent_slots).sum(),
        voided_spends,
        claims: Vec::new(),
        writebacks,
        handoffs,
        gates,
        todo,
    })
}

/// The handoffs among a todo's `notes` (each leaves one, see
/// `ops::lease::handoff_note`).
pub fn handoffs<'a>(notes: impl Iterator<Item = &'a crate::model::Note>) -> Vec<Handoff> {
    notes
        .filter_map(|n| {
            let (to, note) = crate::ops::lease::parse_handoff_note(&n.text)?;
            Some(Handoff {
                at: n.at,
                from: n.agent.clone(),
                to: to.to_owned(),
                note: note.to_owned(),
            })
        })
        .collect()
}

/// Fills each todo's lease history from the state commits of its file.
fn add_claims(ctx: &Context, tip: &Oid, todos: &mut [PrTodo]) -> Result<()> {
    let paths: Vec<String> = todos
        .iter()
        .map(|t| crate::codec::todo_path(&t.todo))
        .collect();
    let history = crate::git_cmd::range::file_commits(ctx.repo_dir(), &tip.0, &paths)
        .map_err(store::Error::Git)?;
    for c in history {
        let Some(op) = c.op.as_deref().filter(|op| LEASE_OPS.contains(op)) else {
            continue;
        };
        for (todo, path) in todos.iter_mut().zip(&paths) {
            if c.files.contains(path) {
                let event = ClaimEvent {
                    commit: c.commit.clone(),
                    time: c.time.clone(),
                    op: op.to_owned(),
                    agent: c.agent.clone(),
                    to: None,
                    epoch: None,
                    subject: c.subject.clone(),
                };
                todo.claims.push(event.read_subject());
            }
        }
    }
    Ok(())
}

/// The range's ends, and the default branch when none was given.
fn resolve_range(
    ctx: &Context,
    range: Option<&str>,
) -> Result<(RangeEnd, RangeEnd, Option<String>)> {
    let dir = ctx.repo_dir();
    let (base, head) = match range {
        Some(spec) => crate::ops::revision::split_range(spec),
        None => (None, None),
    };
    let head_rev = head.unwrap_or("HEAD");
    let head = RangeEnd {
        rev: head_rev.to_owned(),
        commit: commit_of(ctx, head_rev)?,
    };
    if let Some(base_rev) = base {
        let base = RangeEnd {
            rev: base_rev.to_owned(),
            commit: commit_of(ctx, base_rev)?,
        };
        return Ok((base, head, None));
    }
    let branch = crate::git_cmd::range::default_branch(dir)
        .map_err(store::Error::Git)?
        .ok_or_else(|| {
            Refusal::invalid_input(
                "no default branch to compare with: neither origin/HEAD, main nor master exists",
            )
            .with_hint("name the range: git loopx pr <base>..<head>")
        })?;
    let branch_commit = commit_of(ctx, &branch)?;
    let merge_base = crate::git_cmd::merge_base(dir, &branch_commit, &head.commit)
        .map_err(store::Error::Git)?
        .ok_or_else(|| {
            Refusal::invalid_input(format!(
                "`{head_rev}` shares no history with the default branch `{branch}`"
            ))
            .with_hint("name the range: git loopx pr <base>..<head>")
        })?;
    let base = RangeEnd {
        rev: format!("merge-base({branch}, {head_rev})"),
        commit: merge_base,
    };
    Ok((base, head, Some(branch)))
}

fn commit_of(ctx: &Context, rev: &str) -> Result<String> {
    let found = crate::git_cmd::resolve_commit(ctx.repo_dir(), rev).map_err(store::Error::Git)?;
    found.ok_or_else(|| {
        Refusal::invalid_input(format!("`{rev}` is not a commit git knows"))
            .with_hint("git loopx pr <base>..<head>, with any revisions git takes (origin/main..HEAD, a commit id)")
            .into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifacts_name_commits_by_full_or_abbreviated_id() {
        let ids: BTreeSet<&str> = ["abcdef0123", "abcdef9999", "1234567890"]
            .into_iter()
            .collect();
        assert_eq!(matching(&ids, "abcdef0"), ["abcdef0123"]);
        assert_eq!(matching(&ids, "ABCDEF"), ["abcdef0123", "abcdef9999"]);
        assert_eq!(matching(&ids, "1234567890"), ["1234567890"]);
        assert!(matching(&ids, "abc").is_empty(), "too short to name one");
        assert!(matching(&ids, "target/out.txt").is_empty());
    }
}
