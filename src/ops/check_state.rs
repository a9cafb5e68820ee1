//! `doctor --rev <commit>`: every problem of one state commit.
//!
//! The commit is any revision git takes (`ops::revision::state_commit`),
//! on `loopx-state` or not: a pull request into it, say. Its tree is read
//! as it is, not through the loader or the parsed-state cache, and every
//! file is checked: it decodes (`codec::inspect`, with the parser's line
//! and column), it sits where its ids say, and the state it makes keeps
//! the rules of `model::validate` (ids unique, references resolve, claims
//! and gates sane). Each problem names its file, line and field.

use serde::Serialize;

use crate::codec;
use crate::model::validate::{self, Problem, Severity};
use crate::session::Context;
use crate::store::Oid;
use crate::Result;

#[derive(Debug, Serialize)]
pub struct StateCheck {
    /// The revision as given.
    pub rev: String,
    pub commit: Oid,
    /// No error (warnings allowed).
    pub valid: bool,
    pub files: usize,
    pub errors: usize,
    pub warnings: usize,
    /// Errors and warnings, by file.
    pub problems: Vec<Problem>,
}

/// Checks the state commit `rev` names.
pub fn check_rev(ctx: &Context, rev: &str) -> Result<StateCheck> {
    let commit = crate::ops::revision::state_commit(ctx, rev)?;
    let snapshot = ctx.store.read(&commit)?;
    let files = || {
        snapshot
            .files
            .iter()
            .map(|(p, b)| (p.as_str(), b.as_slice()))
    };
    let (decoded, mut problems) = codec::inspect::inspect(files());
    problems.append(&mut validate::check(&decoded));
    for p in &mut problems {
        if let (None, Some(field), Some(bytes)) =
            (p.line, p.field.as_deref(), snapshot.files.get(&p.path))
        {
            if let Some((line, column)) = codec::inspect::locate(bytes, field) {
                (p.line, p.column) = (Some(line), Some(column));
            }
        }
    }
    // An answer to a gate that does not count under `gate_signers`.
    if let Ok(state) = crate::store::transaction::state_at(&ctx.store, &commit) {
        for a in crate::ops::signers::ignored_answers_all(ctx, &commit, &state)? {
            let path = state
                .goals
                .values()
                .find_map(|g| g.todos.get(&a.gate))
                .map(crate::codec::todo_path)
                .unwrap_or_default();
            let mut p = Problem::warning(
                &path,
                Some("decision"),
                format!("{} {:?}: {}", a.gate, a.question, a.sentence()),
            );
            if let Some((line, column)) = snapshot
                .files
                .get(&path)
                .and_then(|b| codec::inspect::locate(b, "decision"))
            {
                (p.line, p.column) = (Some(line), Some(column));
            }
            problems.push(p);
        }
    }
    problems.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    let errors = problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .count();
    Ok(StateCheck {
        rev: rev.to_owned(),
        commit,
        valid: errors == 0,
        files: snapshot.files.len(),
        errors,
        warnings: problems.len() - errors,
        problems,
    })
}
