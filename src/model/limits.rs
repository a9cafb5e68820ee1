//! How much text the state keeps, so that no ordinary command can make a
//! file larger than a reader accepts (`codec::MAX_FILE_BYTES`, 256 KiB).
//!
//! One text (a todo's text, a note, a summary, evidence) is at most
//! [`MAX_TEXT_BYTES`]; a note is not added to a todo whose file would then
//! pass [`MAX_NOTED_TODO_BYTES`]. That is less than half the file limit on
//! purpose: a sync merge unions the notes both sides added, and the union of
//! two full todos must still be readable.

use crate::model::{Refusal, Todo};

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
