//! `import loopx` as human text.

use std::fmt::Write as _;

use crate::ops::import::{Counts, ImportReport};

fn counts(c: &Counts) -> String {
    format!(
        "{} goals, {} todos ({} gates, {} claims), {} spends, {} agents",
        c.goals, c.todos, c.gates, c.claims, c.spends, c.agents
    )
}

pub fn import(r: &ImportReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "LoopX state: {} (runtime root {})",
        r.project, r.runtime_root
    );
    if r.nothing_to_import() && r.kept.total() > 0 {
        let _ = writeln!(out, "Nothing new to import.");
    } else if r.nothing_to_import() {
        let _ = writeln!(out, "Nothing to import: everything is already here.");
    } else if r.dry_run {
        let _ = writeln!(
            out,
            "Would import (--dry-run, nothing written): {}",
            counts(&r.imported)
        );
    } else {
        let at = r.commit.as_ref().map(|c| c.short()).unwrap_or_default();
        let _ = writeln!(out, "Imported in commit {at}: {}", counts(&r.imported));
    }
    if r.unchanged.total() > 0 {
        let _ = writeln!(
            out,
            "Already here from an earlier import: {}",
            counts(&r.unchanged)
        );
    }
    if r.kept.total() > 0 {
        let _ = writeln!(
            out,
            "Changed here and in LoopX since the last import, kept as they are here: {}\n  (take LoopX's with --replace)",
            counts(&r.kept)
        );
    }
    if !r.skipped.is_empty() {
        let _ = writeln!(out, "No equivalent in git-loopx ({}):", r.skipped.len());
        for s in &r.skipped {
            let field = s
                .field
                .as_deref()
                .map(|f| format!(" `{f}`"))
                .unwrap_or_default();
            let _ = writeln!(out, "  {} {}{field}: {}", s.kind, s.loopx_id, s.why);
        }
    }
    out
}
