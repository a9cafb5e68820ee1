//! How much text the state keeps, so that no ordinary command can make a
//! file larger than a reader accepts (`codec::MAX_FILE_BYTES`, 256 KiB).
//!
//! One text (a todo's text, a note, a summary, evidence) is at most
//! [`MAX_TEXT_BYTES`]; a todo's notes together at most [`MAX_NOTES_BYTES`].
//! The notes budget is less than half the file limit on purpose: a sync merge
//! unions the notes both sides added, and the union of two full todos must
//! still be readable.

use crate::model::{Refusal, Todo};

/// The longest single text: a todo's text, a note, a summary, evidence.
pub const MAX_TEXT_BYTES: usize = 16 * 1024;

/// The most note text one todo keeps.
pub const MAX_NOTES_BYTES: usize = 96 * 1024;

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

/// Refuses a note that would take `todo`'s notes past [`MAX_NOTES_BYTES`].
pub fn check_note(todo: &Todo, text: &str) -> Result<(), Refusal> {
    check_text("the note", text)?;
    let held: usize = todo.notes.iter().map(|n| n.text.len()).sum();
    if held + text.len() > MAX_NOTES_BYTES {
        return Err(Refusal::invalid_input(format!(
            "{} already holds {held} bytes of notes; {} more would pass the {MAX_NOTES_BYTES} a todo keeps",
            todo.id,
            text.len()
        ))
        .with_hint(
            "finish this todo with a follow-up (`git loopx todo done <id> --evidence … --next …`) and note there",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Priority, Role, Timestamp, TodoClass};

    #[test]
    fn texts_and_notes_are_bounded() {
        assert!(check_text("--note", &"x".repeat(MAX_TEXT_BYTES)).is_ok());
        assert!(check_text("--note", &"x".repeat(MAX_TEXT_BYTES + 1)).is_err());
        let now = Timestamp::from_unix(0);
        let mut todo = Todo::new(
            "todo_000000000000".into(),
            "g",
            "t",
            Role::Agent,
            TodoClass::AdvancementTask,
            Priority::P2,
            None,
            now,
        );
        let note = "n".repeat(MAX_TEXT_BYTES);
        for _ in 0..MAX_NOTES_BYTES / MAX_TEXT_BYTES {
            check_note(&todo, &note).unwrap();
            todo.notes.push(crate::model::Note {
                at: now,
                agent: None,
                text: note.clone(),
                extra: Default::default(),
            });
        }
        let refused = check_note(&todo, "one more").unwrap_err();
        assert!(
            refused.message.contains("bytes of notes"),
            "{}",
            refused.message
        );
    }
}
