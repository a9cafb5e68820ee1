//! Files wholly ours (a runtime plugin, an extension, a slash command), and
//! our block of `KEY=value` lines in a dotenv file, as pure functions over
//! the file's text.
//!
//! A file of ours says so ([`MARK`] in its text): install replaces only
//! such a file, and refuses to overwrite anyone else's; uninstall removes
//! only such a file. In a dotenv file our lines sit between marker
//! comments, and everything else is the user's.

use super::runtime_json::Removed;
use crate::model::Refusal;

/// Every file of ours carries this text (in a comment).
pub const MARK: &str = "git loopx hooks install";

const BEGIN: &str = "# >>> git-loopx >>>";
const END: &str = "# <<< git-loopx <<<";

/// The new bytes for a file of ours, or `None` when it holds them already.
pub fn install(path: &str, existing: Option<&str>, ours: &str) -> Result<Option<Vec<u8>>, Refusal> {
    match existing {
        Some(text) if text == ours => Ok(None),
        Some(text) if !text.contains(MARK) => Err(Refusal::invalid_input(format!(
            "{path} exists and was not written by git-loopx"
        ))
        .with_hint(
            "move it away (or merge it by hand), then run the command again; nothing was written",
        )),
        _ => Ok(Some(ours.as_bytes().to_vec())),
    }
}

/// Removes a file of ours; leaves anyone else's.
pub fn uninstall(text: &str) -> Option<Removed> {
    text.contains(MARK).then_some(Removed::Empty)
}

/// Splits `text` around our block: (before, block, after).
fn split(text: &str) -> Option<(&str, &str, &str)> {
    let start = text.find(BEGIN)?;
    let end = start + text[start..].find(END)?;
    let after = &text[end + END.len()..];
    let after = after.strip_prefix('\n').unwrap_or(after);
    Some((&text[..start], &text[start..end], after))
}

fn block(lines: &str) -> String {
    format!("{BEGIN}\n{lines}{END}\n")
}

/// The dotenv file with our block (replacing an older one), or `None` when
/// it is there already.
pub fn env_install(
    _path: &str,
    existing: Option<&str>,
    lines: &str,
) -> Result<Option<Vec<u8>>, Refusal> {
    let text = existing.unwrap_or("");
    let wanted = block(lines);
    let next = match split(text) {
        Some((before, _, after)) => format!("{before}{wanted}{after}"),
        None if text.is_empty() || text.ends_with('\n') => format!("{text}{wanted}"),
        None => format!("{text}\n{wanted}"),
    };
    Ok((next != text).then(|| next.into_bytes()))
}

/// The dotenv file without our block.
pub fn env_uninstall(text: &str) -> Option<Removed> {
    let (before, _, after) = split(text)?;
    let left = format!("{before}{after}");
    Some(if left.trim().is_empty() {
        Removed::Empty
    } else {
        Removed::Text(left)
    })
}

/// Whether the dotenv file holds our block.
pub fn env_installed(text: &str) -> bool {
    split(text).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_own_files_are_replaced_or_removed() {
        let ours = format!("// {MARK}\nplugin");
        assert_eq!(
            install("p", None, &ours).unwrap(),
            Some(ours.clone().into_bytes())
        );
        assert_eq!(install("p", Some(&ours), &ours).unwrap(), None);
        assert!(
            install("p", Some("// old, from git loopx hooks install"), &ours)
                .unwrap()
                .is_some()
        );
        let err = install("p.js", Some("mine"), &ours).unwrap_err();
        assert!(err.message.contains("p.js exists"), "{}", err.message);
        assert_eq!(uninstall(&ours), Some(Removed::Empty));
        assert_eq!(uninstall("mine"), None);
    }

    #[test]
    fn the_env_block_comes_and_goes_leaving_the_users_lines() {
        let user = "GEMINI_MODEL=x";
        let done =
            String::from_utf8(env_install("e", Some(user), "A=1\n").unwrap().unwrap()).unwrap();
        assert_eq!(done, format!("GEMINI_MODEL=x\n{BEGIN}\nA=1\n{END}\n"));
        assert_eq!(env_install("e", Some(&done), "A=1\n").unwrap(), None);
        let again =
            String::from_utf8(env_install("e", Some(&done), "A=2\n").unwrap().unwrap()).unwrap();
        assert!(again.contains("A=2") && !again.contains("A=1"));
        assert_eq!(
            env_uninstall(&done),
            Some(Removed::Text("GEMINI_MODEL=x\n".to_owned()))
        );
        let alone = String::from_utf8(env_install("e", None, "A=1\n").unwrap().unwrap()).unwrap();
        assert_eq!(env_uninstall(&alone), Some(Removed::Empty));
    }
}
