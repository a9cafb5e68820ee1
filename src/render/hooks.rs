//! Human text of `hooks install|uninstall|status`.

use std::fmt::Write as _;

use crate::ops::hooks::{Action, HooksReport, Installed, StatusReport};

pub fn changes(r: &HooksReport) -> String {
    let mut out = String::new();
    for f in &r.files {
        let action = match f.action {
            Action::Created => "created",
            Action::Updated => "updated",
            Action::Unchanged => "unchanged",
            Action::Restored => "restored",
            Action::Removed => "removed our entries from",
            Action::Deleted => "deleted",
            Action::NotInstalled => "not installed in",
        };
        let _ = writeln!(
            out,
            "{}: {action} {}",
            f.integration.name(),
            f.path.display()
        );
        for note in &f.notes {
            let _ = writeln!(out, "  note: {note}");
        }
    }
    out
}

pub fn status(r: &StatusReport) -> String {
    let mut out = String::new();
    for f in &r.files {
        let installed = match f.installed {
            Installed::Yes => "installed",
            Installed::Partly => "partly installed",
            Installed::No => "not installed",
        };
        let by_hand = match f.changed_by_hand {
            Some(true) => ", changed by hand since",
            Some(false) => "",
            None if f.installed == Installed::No => "",
            None => ", not installed from this clone",
        };
        let _ = writeln!(
            out,
            "{}: {installed} in {}{by_hand}",
            f.integration.name(),
            f.path.display()
        );
        for c in &f.commands {
            let _ = writeln!(out, "  runs: {c}");
        }
        for note in &f.notes {
            let _ = writeln!(out, "  note: {note}");
        }
        if let Some(lost) = &f.governance_lost {
            let _ = writeln!(out, "  not governed: {lost}");
        }
        for h in f.codex_hooks.iter().filter(|h| h.trust != "trusted") {
            let _ = writeln!(
                out,
                "  codex {} {}: trust it in codex's /hooks view (it records trusted_hash = \"{}\")",
                h.event,
                h.trust.replace('_', " "),
                h.hash
            );
        }
    }
    let _ = writeln!(
        out,
        "pre-push sync: {}",
        if r.pre_push_sync {
            "on (loopx.prePushSync)"
        } else {
            "off (git config loopx.prePushSync true to turn it on)"
        }
    );
    out
}
