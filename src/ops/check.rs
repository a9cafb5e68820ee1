//! `check [--path P…]`: the credential scan (`model::leaks`, the rules every
//! write and `sync` apply) over the state at the tip of `loopx-state` —
//! every file of its tree as stored, and every path in it — and over files
//! and directories named on the command line. Nothing is written.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::model::{leaks, Code, Refusal};
use crate::session::Context;
use crate::store::{self};
use crate::Result;

/// A file larger than this is skipped (and counted), not scanned.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// How many bytes git looks at to call a file binary (a NUL among them).
const BINARY_PROBE: usize = 8000;

/// Where a hit was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A file of the state's tree (its path on the branch).
    State,
    /// A file named by `--path` (or found under a directory named).
    Path,
}

/// One credential-looking string: where, which rule, and a masked excerpt
/// (the secret itself is never part of a report).
#[derive(Clone, Debug, Serialize)]
pub struct Hit {
    pub source: Source,
    pub file: String,
    /// 1-based; `None` when the file's name itself holds it.
    pub line: Option<usize>,
    pub rule: &'static str,
    /// How it was hidden, if it was: `split` or `base64`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<&'static str>,
    pub excerpt: String,
}

/// A file that was not scanned, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    pub file: String,
    pub reason: String,
}

#[derive(Debug, Serialize)]
pub struct CheckReport {
    /// Hits no `--allow-secret-pattern` lets through: any fails the check.
    pub hits: Vec<Hit>,
    /// Hits of a rule `--allow-secret-pattern` named.
    pub allowed: Vec<Hit>,
    pub scanned_files: usize,
    /// How many files were skipped (binary, too large, unreadable, links).
    pub skipped: usize,
    pub skipped_files: Vec<Skipped>,
    /// The state commit scanned; `None` when there is no state.
    pub state: Option<store::Oid>,
    pub state_scanned: bool,
}

/// Scans the state at the tip (when there is one) and `paths`. With no
/// state and no path, refuses as every command does (`state_missing`).
pub fn check(ctx: &Context, paths: &[PathBuf]) -> Result<CheckReport> {
    let tip = match ctx.store.tip()? {
        Some(tip) => Some(tip),
        // A fresh clone: the remote's state, as every reader sees it.
        None => match ctx.load() {
            Ok((tip, _)) => Some(tip),
            Err(e) if e.code() == Code::StateMissing && !paths.is_empty() => None,
            Err(e) => return Err(e),
        },
    };
    for path in paths {
        if std::fs::symlink_metadata(path).is_err() {
            return Err(Refusal::invalid_input(format!(
                "--path {}: no such file or directory",
                path.display()
            ))
            .into());
        }
    }
    let mut scan = Scan {
        allowed_rules: ctx.policy().allowed_leaks(),
        report: CheckReport {
            hits: Vec::new(),
            allowed: Vec::new(),
            scanned_files: 0,
            skipped: 0,
            skipped_files: Vec::new(),
            state_scanned: tip.is_some(),
            state: tip.clone(),
        },
    };
    if let Some(tip) = &tip {
        let snapshot = ctx.store.read(tip)?;
        for (path, bytes) in &snapshot.files {
            scan.name(Source::State, path);
            scan.text(Source::State, path, bytes);
        }
    }
    for path in paths {
        scan.walk(path, true);
    }
    scan.report.skipped = scan.report.skipped_files.len();
    Ok(scan.report)
}

/// The refusal a report with hits exits with (`leak_detected`, exit 1).
pub fn failure(report: &CheckReport) -> Option<crate::Error> {
    if report.hits.is_empty() {
        return None;
    }
    let mut rules: Vec<&str> = report.hits.iter().map(|h| h.rule).collect();
    rules.sort_unstable();
    rules.dedup();
    Some(
        Refusal::new(
            Code::LeakDetected,
            format!(
                "{} credential-looking string(s) found ({})",
                report.hits.len(),
                rules.join(", ")
            ),
        )
        .with_hint(
            "remove each from the file named (state text: `git loopx todo update`, and \
             `git loopx redact … --all-leaks` for unpushed history); rotate any credential \
             that was shared; if a rule matched something that is not a secret, pass \
             --allow-secret-pattern RULE",
        )
        .into(),
    )
}

struct Scan<'a> {
    allowed_rules: &'a [&'static str],
    report: CheckReport,
}

impl Scan<'_> {
    fn record(&mut self, hit: Hit) {
        let list = if self.allowed_rules.contains(&hit.rule) {
            &mut self.report.allowed
        } else {
            &mut self.report.hits
        };
        let same = |h: &Hit| h.file == hit.file && h.line == hit.line && h.rule == hit.rule;
        if !list.iter().any(same) {
            list.push(hit);
        }
    }

    /// A credential in a file's name (a state path is text an agent chose).
    fn name(&mut self, source: Source, file: &str) {
        for leak in leaks::scan(file) {
            self.record(Hit {
                source,
                file: file.to_owned(),
                line: None,
                rule: leak.kind,
                via: leak.via,
                excerpt: leak.excerpt,
            });
        }
    }

    fn text(&mut self, source: Source, file: &str, bytes: &[u8]) {
        self.report.scanned_files += 1;
        let text = String::from_utf8_lossy(bytes);
        for leak in leaks::scan(&text) {
            for line in leaks::lines_of(&text, &leak.secret) {
                self.record(Hit {
                    source,
                    file: file.to_owned(),
                    line: Some(line),
                    rule: leak.kind,
                    via: leak.via,
                    excerpt: leak.excerpt.clone(),
                });
            }
        }
    }

    fn skip(&mut self, path: &Path, reason: impl Into<String>) {
        self.report.skipped_files.push(Skipped {
            file: path.display().to_string(),
            reason: reason.into(),
        });
    }

    /// A named path (followed if a link), or an entry found under one (a
    /// link is not followed: it may point outside, or back up the tree).
    fn walk(&mut self, path: &Path, named: bool) {
        let meta = if named {
            std::fs::metadata(path)
        } else {
            std::fs::symlink_metadata(path)
        };
        let meta = match meta {
            Ok(meta) => meta,
            Err(e) => return self.skip(path, format!("unreadable: {e}")),
        };
        if meta.file_type().is_symlink() {
            return self.skip(path, "symbolic link, not followed");
        }
        if meta.is_dir() {
            let entries = match std::fs::read_dir(path) {
                Ok(entries) => entries,
                Err(e) => return self.skip(path, format!("unreadable directory: {e}")),
            };
            let mut children: Vec<PathBuf> = entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name() != ".git")
                .map(|e| e.path())
                .collect();
            children.sort();
            for child in children {
                self.walk(&child, false);
            }
            return;
        }
        if !meta.is_file() {
            return self.skip(path, "not a regular file");
        }
        if meta.len() > MAX_FILE_BYTES {
            return self.skip(path, format!("larger than {} MiB", MAX_FILE_BYTES >> 20));
        }
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) => return self.skip(path, format!("unreadable: {e}")),
        };
        if bytes[..bytes.len().min(BINARY_PROBE)].contains(&0) {
            return self.skip(path, "binary");
        }
        let file = path.display().to_string();
        self.name(Source::Path, &file);
        self.text(Source::Path, &file, &bytes);
    }
}
