//! How much text the state keeps, so that no ordinary command can make a
//! file larger than a reader accepts (`codec::MAX_FILE_BYTES`, 256 KiB).
//!
//! One text (a todo's text, a note, a summary, evidence) is at most
//! [`MAX_TEXT_BYTES`]; a note is not added to a todo whose file would then
//! pass [`MAX_NOTED_TODO_BYTES`]. That is less than half the file limit on
//! purpose: a sync merge unions the notes both sides added, and the union of
//! two full todos must still be readable. A merge of more peers can pass
//! even that, so after every merge [`shed_notes`] moves a todo's oldest
//! notes out of its file into run records of kind `note` once the file
//! passes [`MAX_NOTED_TODO_BYTES`]; [`GoalState::notes`] puts them back in
//! front, so `todo show` and `review` show every note.

use std::collections::BTreeMap;

use crate::model::{ids, GoalState, Note, Refusal, Run, RunKind, Todo};

/// The reader's limit on one file (`codec::MAX_FILE_BYTES`, which is
/// defined from this).
pub const READER_LIMIT: usize = 256 * 1024;

/// The longest single text: a todo's text, a note, a summary, evidence.
pub const MAX_TEXT_BYTES: usize = 16 * 1024;

/// The largest a todo's file may grow by adding notes (encoded size).
pub const MAX_NOTED_TODO_BYTES: usize = 120 * 1024;

/// Refuses a text longer than [`MAX_TEXT_BYTES`]; `what` names the flag.
pub fn check_text(what: &str, text: &str) -> Result<(), Refusal> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(Refusal::invalid_input(format!(
            "{what} is {} bytes, more than the {MAX_TEXT_BYTES} a state file keeps",
            text.len()
        ))
        .with_hint(
            "keep it short: put long output in a commit or a file and name it (`--artifact <commit>`)",
        ));
    }
    Ok(())
}

/// Refuses a note that would make `todo`'s file `encoded_len` bytes, past
/// [`MAX_NOTED_TODO_BYTES`].
pub fn check_noted_size(todo: &Todo, encoded_len: usize) -> Result<(), Refusal> {
    if encoded_len > MAX_NOTED_TODO_BYTES {
        return Err(Refusal::invalid_input(format!(
            "{} is full of notes: with this one its file would be {encoded_len} bytes, more than the {MAX_NOTED_TODO_BYTES} a todo keeps",
            todo.id,
        ))
        .with_hint(
            "finish this todo with a follow-up (`git loopx todo done <id> --evidence … --next …`) and note there",
        ));
    }
    Ok(())
}

/// The id of the run record that holds `note` of `todo` once moved: derived
/// from both, so every peer that moves the same note writes the same record.
fn moved_note_id(todo: &str, note: &Note) -> String {
    let agent = note.agent.as_deref().unwrap_or_default();
    ids::derive_id("run_", &[todo, &note.at.to_string(), agent, &note.text])
}

impl GoalState {
    /// The notes moved out of each todo's file, by todo id, oldest first:
    /// one pass over the goal's runs.
    pub fn moved_notes(&self) -> BTreeMap<String, Vec<Note>> {
        let mut moved: BTreeMap<String, Vec<&Run>> = BTreeMap::new();
        for r in self.runs.all_facts().filter(|r| r.kind == RunKind::Note) {
            if let (Some(todo), Some(run)) = (r.todo, self.runs.get(r.id)) {
                moved.entry(todo.to_owned()).or_default().push(run);
            }
        }
        moved
            .into_iter()
            .map(|(todo, mut runs)| {
                runs.sort_by(|a, b| a.added_key().cmp(&b.added_key()));
                let notes = runs
                    .into_iter()
                    .map(|r| Note {
                        at: r.at,
                        agent: r.agent.clone(),
                        text: r.summary.clone().unwrap_or_default(),
                        extra: r.extra.clone(),
                    })
                    .collect();
                (todo, notes)
            })
            .collect()
    }

    /// Every note of `todo`: those moved out of its file (oldest first),
    /// then those in it.
    pub fn notes(&self, todo: &Todo) -> Vec<Note> {
        let moved = self.moved_notes().remove(&todo.id).unwrap_or_default();
        with_moved(todo, moved)
    }
}

/// `moved` (the notes moved out of `todo`'s file, see
/// [`GoalState::moved_notes`]), then the notes in the file that are not
/// among them.
pub fn with_moved(todo: &Todo, mut moved: Vec<Note>) -> Vec<Note> {
    let kept: Vec<Note> = todo
        .notes
        .iter()
        .filter(|n| !moved.contains(n))
        .cloned()
        .collect();
    moved.extend(kept);
    moved
}

/// Moves the oldest notes of each todo whose file (`size` gives its
/// encoded length) passes [`MAX_NOTED_TODO_BYTES`] into run records, until
/// it is at most half that, so the todo takes notes again. A note already
/// moved (a peer's merge brought it back) leaves the file first. The same
/// todo gives the same records on every peer. Returns how many moved.
pub fn shed_notes(gs: &mut GoalState, size: impl Fn(&Todo) -> usize) -> usize {
    // Only a todo written since it was loaded can have grown (a merge
    // writes the todos it merged), and of those only one whose notes could
    // pass the bound is measured: a text encodes to at most six bytes a
    // byte (escapes), a note's fields to less than 200.
    let large: Vec<String> = gs
        .todos
        .written()
        .filter(|(_, t)| {
            let bytes: usize = t.notes.iter().map(|n| 6 * n.text.len() + 200).sum();
            bytes > MAX_NOTED_TODO_BYTES && size(t) > MAX_NOTED_TODO_BYTES
        })
        .map(|(id, _)| id.to_owned())
        .collect();
    let mut moved = 0;
    for id in large {
        let mut todo = gs.todos.get(&id).expect("listed above").clone();
        let mut out = Vec::new();
        todo.notes
            .retain(|n| gs.runs.get(&moved_note_id(&id, n)).is_none());
        while size(&todo) > MAX_NOTED_TODO_BYTES / 2 && !todo.notes.is_empty() {
            // Drop a quarter of what is left at a time, oldest first.
            let n = todo.notes.len().div_ceil(4);
            out.extend(todo.notes.drain(..n));
        }
        for note in out {
            let mut run = Run::new(
                moved_note_id(&id, &note),
                RunKind::Note,
                &todo.goal,
                note.agent.as_deref(),
                note.at,
            );
            run.todo = Some(id.clone());
            run.summary = Some(note.text);
            run.extra = note.extra;
            gs.runs.insert(run.id.clone(), run);
            moved += 1;
        }
        gs.todos.insert(id, todo);
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Priority, Role, Timestamp, TodoClass};

    #[test]
    fn texts_and_noted_todos_are_bounded() {
        assert!(check_text("--note", &"x".repeat(MAX_TEXT_BYTES)).is_ok());
        assert!(check_text("--note", &"x".repeat(MAX_TEXT_BYTES + 1)).is_err());
        let todo = Todo::new(
            "todo_000000000000".into(),
            "g",
            "t",
            Role::Agent,
            TodoClass::AdvancementTask,
            Priority::P2,
            None,
            Timestamp::from_unix(0),
        );
        assert!(check_noted_size(&todo, MAX_NOTED_TODO_BYTES).is_ok());
        let refused = check_noted_size(&todo, MAX_NOTED_TODO_BYTES + 1).unwrap_err();
        assert!(
            refused.message.contains("full of notes"),
            "{}",
            refused.message
        );
        // Two full todos merged still fit the reader's limit.
        const { assert!(2 * MAX_NOTED_TODO_BYTES < crate::model::limits::READER_LIMIT) };
    }
}
