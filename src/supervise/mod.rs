//! The child processes git-loopx starts and watches, with their time
//! limits and their process groups: a todo's validation command
//! (`validate`, at `todo done`) and an agent's turn under `run` (`agent`).
//! Neither opens the repository: the use cases (`ops::done`, `ops::run`)
//! decide what runs and record what came of it.

pub mod agent;
pub mod validate;

use crate::model::Refusal;
use crate::Result;

/// Splits a command line into words without a shell: whitespace separates,
/// single and double quotes group, backslash escapes outside single quotes.
pub fn argv(command: &str) -> Result<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('\''), c) => word.push(c),
            (_, '\\') => match chars.next() {
                Some(n) => {
                    word.push(n);
                    in_word = true;
                }
                None => return Err(Refusal::invalid_input("command ends with a backslash").into()),
            },
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err(Refusal::invalid_input(format!("unclosed quote in `{command}`")).into());
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    #[test]
    fn argv_splits_without_a_shell() {
        let words = super::argv(r#"cargo test -- --name "a b" 'c $d' e\ f"#).unwrap();
        assert_eq!(
            words,
            ["cargo", "test", "--", "--name", "a b", "c $d", "e f"]
        );
        assert!(super::argv("echo 'open").is_err());
        assert!(super::argv("   ").unwrap().is_empty());
    }
}
