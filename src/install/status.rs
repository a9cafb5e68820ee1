//! `hooks status`: per integration, whether our entries are in its files,
//! where, and whether a file changed by hand since we wrote it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::record;
use super::Repo;
use super::{
    is_unexecutable, json_edit, mcp_json, owned, read, runtime_json, shim, targets, toml_conf,
    utf8, Integration, Kind,
};
use crate::Result;

/// Whether an integration's file holds our entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Installed {
    Yes,
    /// Some of our entries, not all.
    Partly,
    No,
}

#[derive(Debug, Serialize)]
pub struct StatusLine {
    pub integration: Integration,
    pub path: PathBuf,
    pub installed: Installed,
    /// What our entries run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    /// Whether the file changed since `hooks install` wrote it from this
    /// clone; `None` when it was not installed from here.
    pub changed_by_hand: Option<bool>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Installed from this clone, but the runtime would no longer be
    /// governed by it: what happened to the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub governance_lost: Option<String>,
    /// Codex's hooks file: each hook's trust in Codex, and the
    /// `trusted_hash` that would trust it as it is.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub codex_hooks: Vec<super::codex_trust::CodexHook>,
}

#[derive(Debug, Serialize)]
pub struct StatusReport {
    pub files: Vec<StatusLine>,
    /// `git config loopx.prePushSync`: the pre-push hook syncs.
    pub pre_push_sync: bool,
}

/// Says, on an installed runtime's first file, when the agent's shell would
/// have no identity: nothing installed names an agent, and git config has
/// no `loopx.agent`. Its commands would then name no agent, and be refused
/// rather than act in the person's name.
fn identity_notes(repo: &Repo<'_>, files: &mut [StatusLine]) {
    let configured = repo.agent_configured;
    let mut seen: Vec<Integration> = Vec::new();
    for i in 0..files.len() {
        let Integration::Runtime(runtime) = files[i].integration else {
            continue;
        };
        if seen.contains(&files[i].integration) {
            continue;
        }
        seen.push(files[i].integration);
        let mine: Vec<&StatusLine> = files
            .iter()
            .filter(|f| f.integration == files[i].integration)
            .collect();
        if mine.iter().all(|f| f.installed == Installed::No) {
            continue;
        }
        let texts: Vec<String> = mine
            .iter()
            .filter_map(|f| std::fs::read_to_string(&f.path).ok())
            .collect();
        let named = super::runtimes::names_agent(runtime, &texts);
        let note = match (named, configured) {
            (true, _) | (false, true) => continue,
            (false, false) if !super::runtimes::shell_identity(runtime) => format!(
                "{} gets no identity for its shell from git-loopx: only the prompt's `--agent` names the agent",
                runtime.display()
            ),
            (false, false) => "the agent's shell has no identity: its commands name no agent and are refused; \
                 install with --agent <id> (or `git config loopx.agent <id>`)"
                .to_owned(),
        };
        files[i].notes.push(note);
    }
}

/// `hooks status`: for each selected integration, whether it is installed,
/// where, and whether its file was changed by hand.
pub fn status(repo: &Repo<'_>, which: &[Integration]) -> Result<StatusReport> {
    let mut files = Vec::new();
    for target in targets(repo, which, super::Baked::default())? {
        let current = read(&target.path)?;
        let shown = target.path.display().to_string();
        let changed_by_hand = match (&current, record::load(repo, &target.path)) {
            (Some(now), Some((record, _))) => Some(!record::holds_ours(&record, now)),
            (None, Some(_)) => Some(true),
            _ => None,
        };
        let mut file = Reading {
            path: &target.path,
            shown: &shown,
            notes: Vec::new(),
        };
        let (installed, commands) = match &current {
            None => (Installed::No, Vec::new()),
            Some(now) => file.installed(&target.kind, now),
        };
        let notes = file.notes;
        let trust = match installed {
            Installed::Yes => codex_trust(repo, &target),
            _ => None,
        };
        // A file `hooks install` wrote from this clone that no longer
        // holds its entries (or, for a file wholly ours, changed at all).
        let whole = matches!(
            target.kind,
            Kind::Owned { .. } | Kind::Shim { .. } | Kind::EnvFile { .. }
        );
        let governance_lost = match (changed_by_hand, &current, installed) {
            (None, _, _) => None,
            (Some(_), None, _) => Some("the file is gone".to_owned()),
            (Some(_), Some(_), Installed::No) => {
                Some("git-loopx's entries are gone from it".to_owned())
            }
            (Some(_), Some(_), Installed::Partly) => {
                Some("some of git-loopx's entries are gone from it".to_owned())
            }
            (Some(true), Some(_), Installed::Yes) if whole => {
                Some("changed since git-loopx wrote it".to_owned())
            }
            (Some(_), Some(_), Installed::Yes) => {
                trust.as_ref().and_then(|(project, hooks, home)| {
                    super::codex_trust::skipped(*project, hooks, home)
                })
            }
        };
        files.push(StatusLine {
            integration: target.integration,
            path: target.path,
            installed,
            commands,
            changed_by_hand,
            notes,
            governance_lost,
            codex_hooks: trust.map(|(_, hooks, _)| hooks).unwrap_or_default(),
        });
    }
    identity_notes(repo, &mut files);
    let pre_push_sync = repo.pre_push_sync;
    Ok(StatusReport {
        files,
        pre_push_sync,
    })
}

/// An integration's file being read for `hooks status`: where it is, how
/// it is shown, and what was noted about it.
struct Reading<'a> {
    path: &'a Path,
    shown: &'a str,
    notes: Vec<String>,
}

impl Reading<'_> {
    /// Whether `now`, the file's bytes, holds our entries of `kind`, and
    /// the commands they run; what keeps it from being read is noted.
    fn installed(&mut self, kind: &Kind, now: &[u8]) -> (Installed, Vec<String>) {
        match kind {
            Kind::Json {
                syntax,
                template,
                prefix,
                edits,
            } => self.json(now, *syntax, *template, prefix, edits),
            Kind::Toml { edits } => {
                let present = utf8(self.path, now)
                    .map_err(|e| e.to_string())
                    .and_then(|t| {
                        toml_conf::present_keys(self.shown, t, edits).map_err(|e| e.to_string())
                    });
                match present {
                    Ok(0) => (Installed::No, Vec::new()),
                    Ok(n) if n == edits.len() => (Installed::Yes, Vec::new()),
                    Ok(_) => (Installed::Partly, Vec::new()),
                    Err(e) => {
                        self.notes.push(e);
                        (Installed::No, Vec::new())
                    }
                }
            }
            Kind::Owned { .. } => {
                // Ours whatever agent it was written for.
                if String::from_utf8_lossy(now).contains(owned::MARK) {
                    (Installed::Yes, Vec::new())
                } else {
                    self.notes
                        .push("a file of the same name that git-loopx did not write".to_owned());
                    (Installed::No, Vec::new())
                }
            }
            Kind::EnvFile { .. } => {
                if owned::env_installed(&String::from_utf8_lossy(now)) {
                    (Installed::Yes, Vec::new())
                } else {
                    (Installed::No, Vec::new())
                }
            }
            Kind::McpJson => {
                let found = utf8(self.path, now)
                    .and_then(|t| mcp_json::installed(self.shown, t).map_err(Into::into));
                match found {
                    Ok(Some(command)) => (Installed::Yes, vec![command]),
                    Ok(None) => (Installed::No, Vec::new()),
                    Err(e) => {
                        self.notes.push(e.to_string());
                        (Installed::No, Vec::new())
                    }
                }
            }
            Kind::Shim { name, .. } => self.shim(now, name),
        }
    }

    /// A runtime's JSON configuration: its hook entries and settings, all,
    /// some or none of them.
    fn json(
        &mut self,
        now: &[u8],
        syntax: runtime_json::Syntax,
        template: Option<&'static str>,
        prefix: &str,
        edits: &[json_edit::Edit],
    ) -> (Installed, Vec<String>) {
        let text = utf8(self.path, now);
        let found = match text.as_ref().map_err(|e| e.to_string()).and_then(|t| {
            runtime_json::installed(self.shown, syntax, t, prefix).map_err(|e| e.to_string())
        }) {
            Ok(found) => found,
            Err(e) => {
                self.notes.push(e);
                Vec::new()
            }
        };
        let wanted = template
            .map(|t| runtime_json::template_entries(t, super::Baked::default()))
            .unwrap_or_default();
        let has = |event: &str| found.iter().any(|(e, _)| e == event);
        // Settings are compared by key: another agent's identity
        // still counts as installed.
        let settings = text
            .ok()
            .and_then(|t| json_edit::present_keys(self.shown, syntax, t, edits).ok())
            .unwrap_or(0);
        let present = wanted.iter().filter(|w| has(&w.event)).count() + settings;
        let installed = match present {
            0 => Installed::No,
            n if n == wanted.len() + edits.len() => Installed::Yes,
            _ => Installed::Partly,
        };
        let commands = found
            .into_iter()
            .map(|(e, c)| format!("{e}: {c}"))
            .collect();
        (installed, commands)
    }

    /// A git hook: our block in it, and whether git may run it.
    fn shim(&mut self, now: &[u8], name: &str) -> (Installed, Vec<String>) {
        if is_unexecutable(self.path) {
            self.notes
                .push("not executable: git does not run it".to_owned());
        }
        let text = String::from_utf8_lossy(now);
        let call = format!("git loopx hook git {name}");
        match shim::uninstall(self.shown, now) {
            Ok(Some(_)) => (
                Installed::Yes,
                text.lines()
                    .filter(|l| l.contains(&call))
                    .map(|l| l.trim().to_owned())
                    .collect(),
            ),
            Ok(None) => (Installed::No, Vec::new()),
            Err(e) => {
                self.notes.push(e.to_string());
                (Installed::Partly, Vec::new())
            }
        }
    }
}

/// For Codex's hooks file: Codex's trust of each hook (`codex_trust`), by
/// the real paths Codex keys it by.
fn codex_trust(
    repo: &Repo<'_>,
    target: &super::Target,
) -> Option<(bool, Vec<super::codex_trust::CodexHook>, PathBuf)> {
    use crate::model::runtime::Runtime;
    if target.integration != Integration::Runtime(Runtime::Codex)
        || !target.path.ends_with(".codex/hooks.json")
    {
        return None;
    }
    let real = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    let root = real(repo.workdir?);
    let home = super::codex_trust::codex_home()?;
    let (project, hooks) = super::codex_trust::trust(&root, &real(&target.path), &home)?;
    Some((project, hooks, home))
}

/// A runtime installed from this clone that its files would no longer
/// govern (docs/gates.md): the person is told in `status`, `doctor` and on
/// the dashboard.
#[derive(Clone, Debug, Serialize)]
pub struct Ungoverned {
    pub runtime: &'static str,
    pub path: PathBuf,
    pub problem: String,
    /// The command that governs it again.
    pub fix: String,
}

/// [`Ungoverned`] runtimes of this worktree: none in a bare repository or
/// when nothing was installed from here.
pub fn governance_lost(repo: &Repo<'_>) -> Vec<Ungoverned> {
    if repo.workdir.is_none() {
        return Vec::new();
    }
    let all: Vec<Integration> = crate::model::runtime::Runtime::HOSTS
        .into_iter()
        .map(Integration::Runtime)
        .collect();
    let Ok(report) = status(repo, &all) else {
        return Vec::new();
    };
    report
        .files
        .into_iter()
        .filter_map(|line| {
            let problem = line.governance_lost?;
            let name = line.integration.name();
            Some(Ungoverned {
                runtime: name,
                path: line.path,
                problem,
                fix: format!("git loopx hooks install --{name} --agent <id>"),
            })
        })
        .collect()
}
