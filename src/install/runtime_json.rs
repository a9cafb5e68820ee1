//! A runtime's hook configuration (`.claude/settings.json`,
//! `.codex/hooks.json`): merging our entries in and taking them out again,
//! as pure functions over the file's text.
//!
//! The file's shape is `{"hooks": {"<Event>": [{"hooks": [{"type":
//! "command", "command": "…"}], …}], …}, …}`. Our entries are the hook
//! objects whose command starts with `git loopx hook <runtime> `; nothing
//! else is touched: other events, other groups of the same event, other
//! settings. Keys keep their order (serde_json's `preserve_order`) and the
//! file keeps its indentation and final newline; a file that is not JSON, or
//! not of that shape where we would write, is refused with its path and the
//! JSON path of what is wrong, and nothing is written.
//!
//! A runtime that reads comments in its file ([`Syntax::Jsonc`]) may have a
//! file with comments: that one is edited in its own text ([`jsonc`]), its
//! comments and layout kept. A plain JSON file is written as above, whatever
//! the runtime.

use serde_json::{Map, Value};

use super::jsonc;
use crate::model::Refusal;

/// What a runtime reads in a configuration file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// Plain JSON (Claude Code, Codex, Cursor, `.mcp.json`): a file with
    /// comments is refused as the runtime would refuse it.
    Json,
    /// JSON with comments and trailing commas (OpenCode, Gemini CLI).
    Jsonc,
}

/// One group of a shipped template: the event it goes under and the group
/// object (its `hooks` hold our command).
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub event: String,
    pub group: Value,
}

/// The groups of a shipped template, with `--agent ID` and `--goal ID`
/// appended to each command when given.
pub fn template_entries(template: &str, baked: super::Baked) -> Vec<Entry> {
    let value: Value = serde_json::from_str(template).expect("shipped templates are JSON");
    let events = value["hooks"].as_object().expect("templates have hooks");
    let mut entries = Vec::new();
    for (event, groups) in events {
        for group in groups.as_array().expect("events are arrays") {
            let mut group = group.clone();
            for hook in group["hooks"].as_array_mut().into_iter().flatten() {
                if let Some(Value::String(command)) = hook.get_mut("command") {
                    for arg in baked.args() {
                        command.push(' ');
                        command.push_str(arg);
                    }
                }
            }
            entries.push(Entry {
                event: event.clone(),
                group,
            });
        }
    }
    entries
}

/// How the file is laid out, to write it back the same way.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Style {
    /// The indentation unit; `None` for a file on one line.
    indent: Option<String>,
    final_newline: bool,
    /// A file with comments (JSONC): its own text, which a changed value is
    /// written back into.
    commented: Option<String>,
}

impl Style {
    fn of(text: &str) -> Style {
        let body = text.trim_end();
        let indent = if body.is_empty() {
            Some("  ".to_owned())
        } else if !body.contains('\n') {
            None
        } else {
            body.lines()
                .skip(1)
                .map(|l| &l[..l.len() - l.trim_start().len()])
                .find(|ws| !ws.is_empty())
                .map(str::to_owned)
                .or_else(|| Some("  ".to_owned()))
        };
        Style {
            indent,
            final_newline: body.is_empty() || text.ends_with('\n'),
            commented: None,
        }
    }

    /// Whether writing `value` would lay `existing` (a file that holds
    /// `value`) out anew.
    pub(super) fn relays(&self, value: &Value, existing: Option<&str>) -> bool {
        self.commented.is_none()
            && existing.is_some_and(|t| !t.trim().is_empty() && self.json(value) != t)
    }

    /// The file's text holding `value`.
    pub(super) fn render(&self, path: &str, value: &Value) -> Result<String, Refusal> {
        let Some(text) = &self.commented else {
            return Ok(self.json(value));
        };
        jsonc::rewrite(text, value).ok_or_else(|| {
            Refusal::invalid_input(format!(
                "{path}: the change could not be written keeping the file's comments"
            ))
            .with_hint("make the change by hand (or take the comments out), then run the command again; nothing was written")
        })
    }

    fn json(&self, value: &Value) -> String {
        let mut text = match &self.indent {
            None => serde_json::to_string(value).expect("JSON values serialize"),
            Some(indent) => {
                let mut out = Vec::new();
                let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
                let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
                serde::Serialize::serialize(value, &mut ser).expect("JSON values serialize");
                String::from_utf8(out).expect("serde_json writes UTF-8")
            }
        };
        if self.final_newline {
            text.push('\n');
        }
        text
    }
}

/// A parsed configuration file.
pub(super) struct Parsed {
    pub(super) value: Value,
    pub(super) style: Style,
}

pub(super) fn parse(path: &str, text: &str, syntax: Syntax) -> Result<Parsed, Refusal> {
    let mut style = Style::of(text);
    let fix = "fix the file (or move it away), then run the command again; nothing was written";
    let value = if text.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        match (serde_json::from_str(text), syntax) {
            (Ok(value), _) => value,
            (Err(e), Syntax::Json) => {
                return Err(
                    Refusal::invalid_input(format!("{path} is not valid JSON: {e}")).with_hint(fix),
                )
            }
            (Err(_), Syntax::Jsonc) => {
                let value = jsonc::parse(text).map_err(|e| {
                    Refusal::invalid_input(format!(
                        "{path} is not valid JSON, with comments or without: {e}"
                    ))
                    .with_hint(fix)
                })?;
                style.commented = Some(text.to_owned());
                value.unwrap_or_else(|| Value::Object(Map::new()))
            }
        }
    };
    if !value.is_object() {
        return Err(shape(path, "the top level", &value, "an object"));
    }
    Ok(Parsed { value, style })
}

pub(super) fn shape(path: &str, at: &str, found: &Value, expected: &str) -> Refusal {
    Refusal::invalid_input(format!(
        "{path}: {at} is {}, expected {expected}",
        crate::codec::json_kind(found)
    ))
    .with_hint("fix the file by hand, then run the command again; nothing was written")
}

/// Checks the part of the file we would read or write: `hooks`, and under
/// it each event's groups and their hooks.
fn check_shape(path: &str, root: &Value) -> Result<(), Refusal> {
    let Some(hooks) = root.get("hooks") else {
        return Ok(());
    };
    let Some(events) = hooks.as_object() else {
        return Err(shape(path, "`hooks`", hooks, "an object of events"));
    };
    for (event, groups) in events {
        let Some(groups) = groups.as_array() else {
            return Err(shape(
                path,
                &format!("`hooks.{event}`"),
                groups,
                "an array of hook groups",
            ));
        };
        for (g, group) in groups.iter().enumerate() {
            let at = format!("`hooks.{event}[{g}]`");
            let Some(group) = group.as_object() else {
                return Err(shape(path, &at, group, "an object with a `hooks` array"));
            };
            let Some(list) = group.get("hooks") else {
                continue;
            };
            let Some(list) = list.as_array() else {
                return Err(shape(
                    path,
                    &format!("`hooks.{event}[{g}].hooks`"),
                    list,
                    "an array",
                ));
            };
            for (h, hook) in list.iter().enumerate() {
                if !hook.is_object() {
                    return Err(shape(
                        path,
                        &format!("`hooks.{event}[{g}].hooks[{h}]`"),
                        hook,
                        "an object",
                    ));
                }
            }
        }
    }
    Ok(())
}

fn is_ours(hook: &Value, prefix: &str) -> bool {
    hook.get("command")
        .and_then(Value::as_str)
        .is_some_and(|c| c.starts_with(prefix))
}

/// Removes our hook objects from `groups`; a group left with no hooks goes
/// too (a user's group that had none to begin with stays).
fn remove_ours(groups: &mut Vec<Value>, prefix: &str) -> bool {
    let before = groups.clone();
    groups.retain_mut(|group| {
        let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
            return true;
        };
        let had = list.len();
        list.retain(|h| !is_ours(h, prefix));
        !(list.is_empty() && had > 0)
    });
    *groups != before
}

/// What installing changes.
#[derive(Debug, PartialEq)]
pub struct Installed {
    /// The new text of the file.
    pub text: String,
    /// The file's own formatting could not be kept exactly (it is not laid
    /// out as a JSON pretty-printer would lay it out).
    pub reformatted: bool,
}

/// The file with our `entries` merged in (`existing` = `None`: a new file),
/// or `None` when they are all there already.
pub fn install(
    path: &str,
    syntax: Syntax,
    existing: Option<&str>,
    entries: &[Entry],
    prefix: &str,
) -> Result<Option<Installed>, Refusal> {
    let Parsed { mut value, style } = parse(path, existing.unwrap_or(""), syntax)?;
    check_shape(path, &value)?;
    let reformatted = style.relays(&value, existing);
    let root = value.as_object_mut().expect("checked to be an object");
    let events = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .expect("checked to be an object");
    let mut changed = false;
    let mut by_event: Vec<(&str, Vec<&Value>)> = Vec::new();
    for e in entries {
        match by_event.iter_mut().find(|(ev, _)| *ev == e.event) {
            Some((_, groups)) => groups.push(&e.group),
            None => by_event.push((&e.event, vec![&e.group])),
        }
    }
    for (event, wanted) in by_event {
        let groups = events
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .expect("checked to be an array");
        let ours: Vec<&Value> = groups
            .iter()
            .filter(|g| {
                g.get("hooks")
                    .and_then(Value::as_array)
                    .is_some_and(|l| l.iter().any(|h| is_ours(h, prefix)))
            })
            .collect();
        if ours == wanted {
            continue;
        }
        // Older entries of ours (another agent baked in, say) are replaced
        // in place: the first of them gives the new groups their position.
        let at = groups
            .iter()
            .position(|g| {
                g.get("hooks")
                    .and_then(Value::as_array)
                    .is_some_and(|l| l.iter().any(|h| is_ours(h, prefix)))
            })
            .unwrap_or(groups.len());
        remove_ours(groups, prefix);
        let at = at.min(groups.len());
        for (i, group) in wanted.into_iter().enumerate() {
            groups.insert(at + i, group.clone());
        }
        changed = true;
    }
    if !changed {
        return Ok(None);
    }
    Ok(Some(Installed {
        text: style.render(path, &value)?,
        reformatted,
    }))
}

/// What uninstalling leaves.
#[derive(Debug, PartialEq)]
pub enum Removed {
    /// The file without our entries.
    Text(String),
    /// Nothing but an empty object is left.
    Empty,
}

/// The file without our entries, or `None` when it holds none. An event
/// left with no groups, and `hooks` left with no events, go too.
pub fn uninstall(
    path: &str,
    syntax: Syntax,
    text: &str,
    prefix: &str,
) -> Result<Option<Removed>, Refusal> {
    let Parsed { mut value, style } = parse(path, text, syntax)?;
    check_shape(path, &value)?;
    let root = value.as_object_mut().expect("checked to be an object");
    let Some(events) = root.get_mut("hooks").and_then(Value::as_object_mut) else {
        return Ok(None);
    };
    let mut changed = false;
    events.retain(|_, groups| {
        let groups = groups.as_array_mut().expect("checked to be an array");
        let had = !groups.is_empty();
        if remove_ours(groups, prefix) {
            changed = true;
        }
        !(groups.is_empty() && had)
    });
    if !changed {
        return Ok(None);
    }
    if events.is_empty() {
        root.remove("hooks");
    }
    if root.is_empty() {
        return Ok(Some(Removed::Empty));
    }
    Ok(Some(Removed::Text(style.render(path, &value)?)))
}

/// The commands of ours in the file, by event (`Stop: git loopx hook …`).
pub fn installed(
    path: &str,
    syntax: Syntax,
    text: &str,
    prefix: &str,
) -> Result<Vec<(String, String)>, Refusal> {
    let Parsed { value, .. } = parse(path, text, syntax)?;
    check_shape(path, &value)?;
    let mut found = Vec::new();
    if let Some(events) = value.get("hooks").and_then(Value::as_object) {
        for (event, groups) in events {
            for group in groups.as_array().into_iter().flatten() {
                for hook in group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if is_ours(hook, prefix) {
                        let command = hook["command"].as_str().unwrap_or_default();
                        found.push((event.clone(), command.to_owned()));
                    }
                }
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
#[path = "runtime_json_tests.rs"]
mod tests;
