//! Reading a state tree for `doctor --rev`: every file, every problem.
//!
//! [`super::decode_state`] stops at the first bad file, as a command must;
//! [`inspect`] goes on, so a reviewer sees every problem of a commit at once:
//! files that do not parse (with the line and column the parser gives),
//! files whose place in the layout does not match their content (ids,
//! shards, goals, days), and files outside the layout. What decodes is
//! handed on as [`Decoded`] for the rules of `model::validate`; [`locate`]
//! finds the line of a field those rules name.

use serde::de::DeserializeOwned;

use super::{check_format, classify, Slot, MAX_FILE_BYTES, META_PATH};
use crate::model::validate::{Decoded, Problem};
use crate::model::{ids, Agent, Goal, Meta, Run, Todo};

/// Decodes every file of a state tree, and the problems of those that do
/// not decode or sit in the wrong place.
pub fn inspect<'a, I>(files: I) -> (Decoded, Vec<Problem>)
where
    I: IntoIterator<Item = (&'a str, &'a [u8])>,
{
    let mut d = Decoded::default();
    let mut problems = Vec::new();
    let mut has_meta = false;
    for (path, bytes) in files {
        let slot = match classify(path) {
            Ok(slot) => slot,
            Err(e) => {
                problems.push(Problem::error(path, None, e.message));
                continue;
            }
        };
        let mut out = Placed {
            path,
            problems: &mut problems,
        };
        match slot {
            Slot::Foreign => out.problems.push(Problem::warning(
                path,
                None,
                "not a file of the state layout (git-loopx ignores it)",
            )),
            Slot::Meta => {
                has_meta = true;
                if let Err(e) = check_format(bytes) {
                    let message = e.message.strip_prefix("format: ").unwrap_or(&e.message);
                    let mut p = Problem::error(path, Some("format"), message);
                    (p.line, p.column) = located(locate(bytes, "format"));
                    out.problems.push(p);
                } else if let Some(meta) = out.decode::<Meta>(bytes) {
                    d.meta = Some((path.to_owned(), meta));
                }
            }
            Slot::Agent(id) => {
                if let Some(agent) = out.decode::<Agent>(bytes) {
                    out.expect("id", &agent.id, id);
                    out.name("agent", id);
                    d.agents.push((path.to_owned(), agent));
                }
            }
            Slot::Goal(id) => {
                if let Some(goal) = out.decode::<Goal>(bytes) {
                    out.expect("id", &goal.id, id);
                    out.name("goal", id);
                    d.goals.push((path.to_owned(), goal));
                }
            }
            Slot::Todo { goal, shard, id } => {
                if let Some(todo) = out.decode::<Todo>(bytes) {
                    out.expect("id", &todo.id, id);
                    if !ids::is_valid_todo_id(id) {
                        out.problem(
                            "id",
                            format!("`{id}` is not a todo id (todo_ and 12 hex digits)"),
                        );
                    } else if ids::shard(id) != shard {
                        out.problem(
                            "id",
                            format!(
                                "`{id}` belongs in shard `{}`, not `{shard}` (goals/{goal}/todos/{}/{id}.yaml)",
                                ids::shard(id),
                                ids::shard(id)
                            ),
                        );
                    }
                    out.expect("goal", &todo.goal, goal);
                    d.todos.push((path.to_owned(), todo));
                }
            }
            Slot::Run {
                goal,
                day,
                shard,
                id,
            } => {
                if let Some(run) = out.decode::<Run>(bytes) {
                    out.expect("id", &run.id, id);
                    if !ids::is_valid_run_id(id) {
                        out.problem(
                            "id",
                            format!("`{id}` is not a run id (run_ and 12 hex digits)"),
                        );
                    } else if ids::shard(id) != shard {
                        out.problem(
                            "id",
                            format!(
                                "`{id}` belongs in shard `{}`, not `{shard}` (goals/{goal}/runs/{day}/{}/{id}.yaml)",
                                ids::shard(id),
                                ids::shard(id)
                            ),
                        );
                    }
                    out.expect("goal", &run.goal, goal);
                    out.expect("at", &run.at.day(), day);
                    d.runs.push((path.to_owned(), run));
                }
            }
        }
    }
    if !has_meta {
        problems.push(Problem::error(
            META_PATH,
            None,
            "missing: a state commit has loopx.yaml at its root",
        ));
    }
    (d, problems)
}

/// The problems of one file, found while reading it.
struct Placed<'p> {
    path: &'p str,
    problems: &'p mut Vec<Problem>,
}

impl Placed<'_> {
    fn problem(&mut self, field: &str, message: String) {
        self.problems
            .push(Problem::error(self.path, Some(field), message));
    }

    /// The file's `field` holds `found`, where its place says `from_path`.
    fn expect(&mut self, field: &str, found: &str, from_path: &str) {
        if found != from_path {
            self.problem(
                field,
                format!("`{found}` does not match the file's place (`{from_path}`)"),
            );
        }
    }

    fn name(&mut self, what: &str, id: &str) {
        if let Err(e) = ids::check_name(what, id) {
            self.problem("id", e.message);
        }
    }

    /// The entity, or the parse problem with its line, column and field.
    fn decode<T: DeserializeOwned>(&mut self, bytes: &[u8]) -> Option<T> {
        let path = self.path;
        if bytes.len() > MAX_FILE_BYTES || super::check_nesting(bytes).is_err() {
            // Refused before parsing: the codec's own message says why.
            let e = super::decode::<T>(path, bytes).err()?;
            self.problems.push(Problem::error(path, None, e.message));
            return None;
        }
        match serde_norway::from_slice::<T>(bytes) {
            Ok(entity) => Some(entity),
            Err(e) => {
                let mut p = parse_problem(path, &e.to_string());
                if let Some(at) = e.location() {
                    (p.line, p.column) = (Some(at.line()), Some(at.column()));
                } else if let Some(field) = &p.field {
                    (p.line, p.column) = located(locate(bytes, field));
                }
                self.problems.push(p);
                None
            }
        }
    }
}

fn located(at: Option<(usize, usize)>) -> (Option<usize>, Option<usize>) {
    (at.map(|a| a.0), at.map(|a| a.1))
}

/// A parser message (`claim.epoch: invalid type: … at line 9 column 10`)
/// as a problem: the field before the first `: `, the location dropped
/// (it is carried apart).
fn parse_problem(path: &str, message: &str) -> Problem {
    let message = match message.rfind(" at line ") {
        Some(at) => &message[..at],
        None => message,
    };
    let is_field = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']'))
    };
    match message.split_once(": ") {
        Some((field, rest)) if is_field(field) => Problem::error(path, Some(field), rest),
        _ => Problem::error(path, None, message),
    }
}

/// The 1-based line and column of `field` (`claim.epoch`, `successors[1]`)
/// in a block-style YAML mapping, as the canonical writer lays it out and
/// people usually write it; `None` when it is not found that way.
pub fn locate(bytes: &[u8], field: &str) -> Option<(usize, usize)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start_matches(' ').len();
    let blank = |l: &str| {
        let t = l.trim();
        t.is_empty() || t.starts_with('#')
    };
    let mut from = 0;
    let mut parent: Option<usize> = None;
    let mut found = None;
    for part in field.split('.') {
        let (key, index) = match part.split_once('[') {
            Some((key, rest)) => (key, rest.strip_suffix(']')?.parse::<usize>().ok()),
            None => (part, None),
        };
        let mut hit = None;
        for (i, line) in lines.iter().enumerate().skip(from) {
            if blank(line) {
                continue;
            }
            let at = indent(line);
            match parent {
                Some(p) if at <= p => break,
                None if at > 0 => continue,
                _ => {}
            }
            let rest = &line[at..];
            if rest.strip_prefix(key).is_some_and(|r| r.starts_with(':')) {
                hit = Some((i, at));
                break;
            }
        }
        let (i, at) = hit?;
        found = Some((i + 1, at + 1));
        (from, parent) = (i + 1, Some(at));
        if let Some(n) = index {
            let items = lines
                .iter()
                .enumerate()
                .skip(i + 1)
                .take_while(|(_, l)| blank(l) || indent(l) > at || l[indent(l)..].starts_with("- "))
                .filter(|(_, l)| l.trim_start().starts_with("- "))
                .map(|(j, l)| (j, indent(l)));
            let item_indent = items.clone().next().map(|(_, a)| a);
            if let Some((j, a)) = items.filter(|(_, a)| Some(*a) == item_indent).nth(n) {
                found = Some((j + 1, a + 1));
            }
        }
    }
    found
}
