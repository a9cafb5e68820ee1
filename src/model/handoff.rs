//! A handoff packet: what an agent passing a todo on tells the next one
//! (the work done, approaches tried and why they failed, next steps, open
//! questions, files to read), the Markdown form it can be written in, and
//! its sections as the receiver reads them.
//!
//! Field names follow LoopX 2.1.1's continuation note where the meaning is
//! the same (`work_summary`, `approaches_tried[{approach, reason}]`,
//! `next_steps`, `open_questions`); `files` are files the receiver should
//! read, not LoopX's `files_touched` (docs/loopx-compat.md).

use std::fmt::Write as _;
use std::path::{Component, Path};

use serde::{Deserialize, Serialize};

use crate::model::limits::check_text;
use crate::model::{Extra, Refusal, Timestamp};

/// At most this many entries in each list of a packet (LoopX 2.1.1 keeps 20).
pub const MAX_ITEMS: usize = 20;
/// At most this many files in a packet (LoopX 2.1.1 keeps 50).
pub const MAX_FILES: usize = 50;
/// The largest a packet's texts may be together.
pub const MAX_PACKET_BYTES: usize = 32 * 1024;

/// The latest handoff of a todo (`handoff:` in its file); a new handoff
/// replaces it. Who gave the lease to whom, when, at which epoch, and the
/// packet (every packet field may be empty).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Handoff {
    pub from: String,
    pub to: String,
    pub at: Timestamp,
    /// The epoch the receiver was granted.
    pub epoch: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_summary: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approaches_tried: Vec<Tried>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next_steps: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_questions: Vec<String>,
    /// Repository-relative paths the receiver should read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// An approach that was tried, and why it did not work.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tried {
    pub approach: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Tried {
    /// `APPROACH: REASON` (split at the first `": "`); no `": "`, no reason.
    pub fn parse(text: &str) -> Tried {
        let (approach, reason) = match text.split_once(": ") {
            Some((a, r)) if !a.trim().is_empty() && !r.trim().is_empty() => {
                (a.trim(), Some(r.trim().to_owned()))
            }
            _ => (text.trim(), None),
        };
        Tried {
            approach: approach.to_owned(),
            reason,
            extra: Extra::new(),
        }
    }
}

/// The content of a packet, before it is stamped with who, whom and when.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Packet {
    pub work_summary: Option<String>,
    pub approaches_tried: Vec<Tried>,
    pub next_steps: Vec<String>,
    pub open_questions: Vec<String>,
    /// As written; [`Packet::check`] makes them repository-relative.
    pub files: Vec<String>,
}

impl Packet {
    pub fn is_empty(&self) -> bool {
        self.work_summary.is_none()
            && self.approaches_tried.is_empty()
            && self.next_steps.is_empty()
            && self.open_questions.is_empty()
            && self.files.is_empty()
    }

    /// Appends `other` (flags after a file): the summaries join with a
    /// blank line, the lists concatenate.
    pub fn append(&mut self, other: Packet) {
        self.work_summary = match (self.work_summary.take(), other.work_summary) {
            (Some(a), Some(b)) => Some(format!("{a}\n\n{b}")),
            (a, b) => a.or(b),
        };
        self.approaches_tried.extend(other.approaches_tried);
        self.next_steps.extend(other.next_steps);
        self.open_questions.extend(other.open_questions);
        self.files.extend(other.files);
    }

    /// Bounds every text and list, drops blank entries, and makes every
    /// file repository-relative (see [`repo_path`]; `root` is the work
    /// tree, `None` in a bare repository).
    pub fn check(mut self, root: Option<&Path>) -> Result<Packet, Refusal> {
        let blank = |s: &String| s.trim().is_empty();
        self.work_summary = self
            .work_summary
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty());
        self.approaches_tried.retain(|t| !t.approach.is_empty());
        self.next_steps.retain(|s| !blank(s));
        self.open_questions.retain(|s| !blank(s));
        self.files.retain(|s| !blank(s));
        if let Some(s) = &self.work_summary {
            check_text("the handoff summary", s)?;
        }
        let lists: [(&str, usize, usize); 4] = [
            ("approaches tried", self.approaches_tried.len(), MAX_ITEMS),
            ("next steps", self.next_steps.len(), MAX_ITEMS),
            ("open questions", self.open_questions.len(), MAX_ITEMS),
            ("files", self.files.len(), MAX_FILES),
        ];
        for (what, n, max) in lists {
            if n > max {
                return Err(Refusal::invalid_input(format!(
                    "the handoff packet lists {n} {what}, more than the {max} it keeps"
                ))
                .with_hint("keep the packet to what the next agent needs first"));
            }
        }
        let mut total = self.work_summary.as_ref().map_or(0, String::len);
        for t in &self.approaches_tried {
            check_text("an approach tried", &t.approach)?;
            total += t.approach.len();
            if let Some(r) = &t.reason {
                check_text("the reason an approach failed", r)?;
                total += r.len();
            }
        }
        for s in self.next_steps.iter().chain(&self.open_questions) {
            check_text("a handoff list item", s)?;
            total += s.len();
        }
        self.files = self
            .files
            .iter()
            .map(|f| repo_path(root, f.trim()))
            .collect::<Result<_, _>>()?;
        total += self.files.iter().map(String::len).sum::<usize>();
        if total > MAX_PACKET_BYTES {
            return Err(Refusal::invalid_input(format!(
                "the handoff packet is {total} bytes of text, more than the {MAX_PACKET_BYTES} a todo keeps"
            ))
            .with_hint("summarise: put long material in a file of the repository and list it under Files"));
        }
        Ok(self)
    }

    /// The packet as the todo's `handoff`.
    pub fn stamp(self, from: &str, to: &str, at: Timestamp, epoch: u64) -> Handoff {
        Handoff {
            from: from.to_owned(),
            to: to.to_owned(),
            at,
            epoch,
            work_summary: self.work_summary,
            approaches_tried: self.approaches_tried,
            next_steps: self.next_steps,
            open_questions: self.open_questions,
            files: self.files,
            extra: Extra::new(),
        }
    }
}

impl Handoff {
    /// Whether the packet says anything beyond who, whom and when.
    pub fn has_packet(&self) -> bool {
        self.work_summary.is_some()
            || !self.approaches_tried.is_empty()
            || !self.next_steps.is_empty()
            || !self.open_questions.is_empty()
            || !self.files.is_empty()
    }

    /// One line telling what the packet holds (for `diff`).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(s) = &self.work_summary {
            let first = s.lines().next().unwrap_or_default();
            parts.push(format!("summary \"{first}\""));
        }
        let count = |n: usize, one: &str, many: &str| match n {
            0 => None,
            1 => Some(format!("1 {one}")),
            n => Some(format!("{n} {many}")),
        };
        parts.extend(count(
            self.approaches_tried.len(),
            "approach tried",
            "approaches tried",
        ));
        parts.extend(count(self.next_steps.len(), "next step", "next steps"));
        parts.extend(count(
            self.open_questions.len(),
            "open question",
            "open questions",
        ));
        parts.extend(count(self.files.len(), "file", "files"));
        if parts.is_empty() {
            "no packet".to_owned()
        } else {
            parts.join(", ")
        }
    }

    /// The packet's sections as lines of text, each line starting with
    /// `indent`; `t` writes a piece of agent-written text (escaped for
    /// Markdown, or as it is). The receiver's prompt and `review` show it so.
    pub fn sections(&self, indent: &str, t: &dyn Fn(&str) -> String) -> String {
        let mut out = String::new();
        if let Some(s) = &self.work_summary {
            let _ = writeln!(out, "{indent}Work done so far:");
            for line in s.lines() {
                let _ = writeln!(out, "{indent}  {}", t(line));
            }
        }
        if !self.approaches_tried.is_empty() {
            let _ = writeln!(out, "{indent}Tried, and why it did not work:");
            for a in &self.approaches_tried {
                match &a.reason {
                    Some(r) => {
                        let _ = writeln!(out, "{indent}- {}: {}", t(&a.approach), t(r));
                    }
                    None => {
                        let _ = writeln!(out, "{indent}- {}", t(&a.approach));
                    }
                }
            }
        }
        if !self.next_steps.is_empty() {
            let _ = writeln!(out, "{indent}Next steps:");
            for (i, s) in self.next_steps.iter().enumerate() {
                let _ = writeln!(out, "{indent}{}. {}", i + 1, t(s));
            }
        }
        if !self.open_questions.is_empty() {
            let _ = writeln!(out, "{indent}Open questions:");
            for q in &self.open_questions {
                let _ = writeln!(out, "{indent}- {}", t(q));
            }
        }
        if !self.files.is_empty() {
            let _ = writeln!(out, "{indent}Files to read:");
            for f in &self.files {
                let _ = writeln!(out, "{indent}- {}", t(f));
            }
        }
        out
    }
}

/// A path the receiver should read, as a path relative to the top of the
/// repository: a relative path is taken from the top; an absolute one must
/// lie inside the work tree `root`. `.` parts are dropped and `..` parts
/// resolved without touching the disk; a path that leaves the repository is
/// refused.
pub fn repo_path(root: Option<&Path>, path: &str) -> Result<String, Refusal> {
    let refuse = |why: &str| {
        Refusal::invalid_input(format!("--file {path}: {why}")).with_hint(
            "name files by their path from the top of the repository, as `git ls-files` prints them",
        )
    };
    let p = Path::new(path);
    let rel = if p.is_absolute() {
        let inside = root.and_then(|r| p.strip_prefix(r).ok());
        match inside {
            Some(rel) => rel,
            None => {
                return Err(refuse(
                    "an absolute path outside the repository's work tree",
                ))
            }
        }
    } else {
        p
    };
    let mut parts: Vec<&str> = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(s) => match s.to_str() {
                Some(s) => parts.push(s),
                None => return Err(refuse("not valid UTF-8")),
            },
            Component::CurDir => {}
            Component::ParentDir => {
                if parts.pop().is_none() {
                    return Err(refuse("`..` leads out of the repository"));
                }
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(refuse(
                    "an absolute path outside the repository's work tree",
                ))
            }
        }
    }
    if parts.is_empty() {
        return Err(refuse("names the repository itself, not a file in it"));
    }
    if parts.first() == Some(&".git") {
        return Err(refuse("is inside .git, not a file of the repository"));
    }
    Ok(parts.join("/"))
}

/// The sections of a Markdown packet.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Section {
    Summary,
    /// Part of the summary under its own heading (kept in the text):
    /// `## Key decisions`, `## Rationale`, as LoopX 2.1.1's digest has.
    SummaryPart,
    Tried,
    NextSteps,
    Questions,
    Files,
}

/// Which section a heading names: case, punctuation, a trailing colon and
/// common wording variants do not matter.
fn section(heading: &str) -> Option<Section> {
    let words: String = heading
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                ' '
            }
        })
        .collect();
    let key = words.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(match key.as_str() {
        "summary"
        | "work summary"
        | "summary of work"
        | "summary of the work"
        | "work done"
        | "what was done"
        | "done"
        | "done so far"
        | "progress"
        | "status"
        | "context" => Section::Summary,
        "key decisions" | "decisions" | "rationale" => Section::SummaryPart,
        "tried" | "approaches tried" | "approaches" | "what was tried" | "tried and failed"
        | "attempts" | "failed approaches" | "what did not work" | "what didn t work"
        | "dead ends" => Section::Tried,
        "next steps" | "next step" | "next" | "todo" | "to do" | "what next" => Section::NextSteps,
        "open questions" | "open question" | "questions" | "question" | "unknowns"
        | "open issues" => Section::Questions,
        "files" | "file" | "files to read" | "relevant files" | "key files" | "files touched"
        | "read first" | "read these" | "paths" => Section::Files,
        _ => return None,
    })
}

/// A list item's text (`- x`, `* x`, `+ x`, `1. x`, `1) x`), if the line is one.
fn list_item(line: &str) -> Option<&str> {
    let t = line.trim_start();
    for bullet in ["- ", "* ", "+ "] {
        if let Some(rest) = t.strip_prefix(bullet) {
            return Some(rest.trim());
        }
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 {
        let rest = &t[digits..];
        if let Some(r) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return Some(r.trim());
        }
    }
    None
}

/// A heading's level and text (`## Tried` → 2, "Tried").
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|&c| c == '#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &line[level..];
    if rest.is_empty() {
        return Some((level, ""));
    }
    rest.strip_prefix([' ', '\t'])
        .map(|t| (level, t.trim().trim_end_matches('#').trim()))
}

/// A `## Files` item: the path in its first backtick span, else its first
/// word (a comment after the path is not kept).
fn file_item(item: &str) -> String {
    if let Some(rest) = item.strip_prefix('`') {
        if let Some((path, _)) = rest.split_once('`') {
            return path.trim().to_owned();
        }
    }
    item.split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Reads a Markdown packet. Sections are `## Summary`, `## Tried`,
/// `## Next steps`, `## Open questions` and `## Files` (any heading level,
/// case and common variants, see [`section`]). The summary keeps its text
/// as written; the other sections are lists (a line that is not a list item
/// continues the item before it). `## Key decisions` and `## Rationale`
/// (as LoopX 2.1.1's digest writes them) stay in the summary under their
/// heading. A `# title` on the first line is
/// skipped, text before the first section is part of the summary, and any
/// other heading is refused with its line number, so nothing written is
/// silently dropped. `source` names the file in messages.
pub fn parse_markdown(source: &str, text: &str) -> Result<Packet, Refusal> {
    let mut packet = Packet::default();
    let mut summary: Vec<&str> = Vec::new();
    let mut current = Section::Summary;
    let mut items: Vec<String> = Vec::new();
    let mut fenced = false;
    let mut first = true;
    let flush = |packet: &mut Packet, current: Section, items: &mut Vec<String>| {
        for item in items.drain(..) {
            match current {
                Section::Summary | Section::SummaryPart => {}
                Section::Tried => packet.approaches_tried.push(Tried::parse(&item)),
                Section::NextSteps => packet.next_steps.push(item),
                Section::Questions => packet.open_questions.push(item),
                Section::Files => packet.files.push(file_item(&item)),
            }
        }
    };
    for (n, line) in text.lines().enumerate() {
        let was_first = first;
        first = first && line.trim().is_empty();
        if line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~") {
            fenced = !fenced;
        }
        if !fenced {
            if let Some((level, title)) = heading(line) {
                if let Some(s) = section(title) {
                    flush(&mut packet, current, &mut items);
                    current = s;
                    if s == Section::SummaryPart {
                        summary.push("");
                        summary.push(title);
                    }
                    continue;
                }
                if level == 1 && was_first {
                    continue;
                }
                return Err(Refusal::invalid_input(format!(
                    "{source} line {}: unknown heading `{}`",
                    n + 1,
                    line.trim()
                ))
                .with_hint(
                    "a handoff packet has the sections ## Summary, ## Tried, ## Next steps, \
                     ## Open questions and ## Files",
                ));
            }
        }
        if matches!(current, Section::Summary | Section::SummaryPart) {
            summary.push(line);
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        match list_item(line) {
            Some(item) if !fenced => items.push(item.to_owned()),
            _ => match items.last_mut() {
                Some(last) => {
                    last.push(' ');
                    last.push_str(line.trim());
                }
                None => items.push(line.trim().to_owned()),
            },
        }
    }
    flush(&mut packet, current, &mut items);
    let summary = summary.join("\n");
    let summary = summary.trim();
    if !summary.is_empty() {
        packet.work_summary = Some(summary.to_owned());
    }
    if packet.is_empty() {
        return Err(
            Refusal::invalid_input(format!("{source}: the handoff packet is empty"))
                .with_hint("write at least a ## Summary of the work done"),
        );
    }
    Ok(packet)
}
