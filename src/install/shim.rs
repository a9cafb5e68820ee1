//! Git hook shims: the marker-delimited block (`# >>> git-loopx >>>` …
//! `# <<< git-loopx <<<`) that `hooks install` puts in a hook file, as pure
//! functions over the file's bytes.
//!
//! Invariants: the user's own lines are never changed, only our block is
//! added, replaced or removed; installing the same block twice gives the same
//! bytes; the block goes right after the shebang line, so it runs before any
//! `exit` of the user's script, and it neither exits on success nor reads the
//! hook's standard input (the user's lines still get it).

use crate::model::Refusal;

pub const BEGIN: &str = "# >>> git-loopx >>>";
pub const END: &str = "# <<< git-loopx <<<";

/// What a new hook file starts with.
pub const SHEBANG: &str = "#!/bin/sh\n";

/// The block of the shipped template `template` (its lines from [`BEGIN`]
/// to [`END`], each ending in a newline).
///
/// No agent is ever baked in: one hooks directory serves every worktree,
/// and the person's own commits too, so the git hooks act for whoever
/// `LOOPX_AGENT` or `loopx.agent` (per worktree) names at commit time.
pub fn block(template: &str) -> String {
    let begin = template.find(BEGIN).expect("template has the begin marker");
    let end = template[begin..]
        .find(END)
        .expect("template has the end marker")
        + begin;
    format!("{}{END}\n", &template[begin..end])
}

/// Where our block sits in a hook file: the byte range of its lines.
fn find(path: &str, text: &[u8]) -> Result<Option<std::ops::Range<usize>>, Refusal> {
    let mut begin = None;
    let mut found = None;
    let mut at = 0;
    for (n, line) in text.split_inclusive(|&b| b == b'\n').enumerate() {
        let trimmed = line.trim_ascii_end();
        if trimmed == BEGIN.as_bytes() {
            if begin.is_some() || found.is_some() {
                return Err(malformed(
                    path,
                    n + 1,
                    "a second `# >>> git-loopx >>>` line",
                ));
            }
            begin = Some(at);
        } else if trimmed == END.as_bytes() {
            match begin.take() {
                Some(start) => found = Some(start..at + line.len()),
                None => {
                    return Err(malformed(
                        path,
                        n + 1,
                        "`# <<< git-loopx <<<` with no opening line",
                    ))
                }
            }
        }
        at += line.len();
    }
    if begin.is_some() {
        return Err(Refusal::invalid_input(format!(
            "{path}: `# >>> git-loopx >>>` has no closing `# <<< git-loopx <<<` line"
        ))
        .with_hint("fix or remove the git-loopx block by hand, then run the command again"));
    }
    Ok(found)
}

fn malformed(path: &str, line: usize, what: &str) -> Refusal {
    Refusal::invalid_input(format!("{path}: line {line} has {what}"))
        .with_hint("fix or remove the git-loopx block by hand, then run the command again")
}

/// The interpreter a shebang line names (`#!/usr/bin/env bash` → `bash`).
fn interpreter(first_line: &[u8]) -> Option<String> {
    let rest = std::str::from_utf8(first_line.strip_prefix(b"#!")?).ok()?;
    let mut words = rest.split_whitespace();
    let program = words.next()?;
    let base = program.rsplit('/').next().unwrap_or(program);
    if base == "env" {
        words
            .find(|w| !w.starts_with('-'))
            .map(|w| w.rsplit('/').next().unwrap_or(w).to_owned())
    } else {
        Some(base.to_owned())
    }
}

const SHELLS: [&str; 8] = ["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"];

/// The hook file with our block in it, or `None` when it is already there as
/// is. A new file (`existing` = `None`) is the shebang and the block; in a
/// user's file the block replaces an older block of ours, or goes right
/// after the shebang line. A hook written for another interpreter is refused.
pub fn install(
    path: &str,
    existing: Option<&[u8]>,
    block: &str,
) -> Result<Option<Vec<u8>>, Refusal> {
    let Some(text) = existing else {
        return Ok(Some(format!("{SHEBANG}{block}").into_bytes()));
    };
    if let Some(range) = find(path, text)? {
        if &text[range.clone()] == block.as_bytes() {
            return Ok(None);
        }
        let mut out = text[..range.start].to_vec();
        out.extend_from_slice(block.as_bytes());
        out.extend_from_slice(&text[range.end..]);
        return Ok(Some(out));
    }
    let first = text.split(|&b| b == b'\n').next().unwrap_or_default();
    let mut out = Vec::with_capacity(text.len() + block.len() + 1);
    if first.starts_with(b"#!") {
        match interpreter(first.trim_ascii_end()) {
            Some(shell) if SHELLS.contains(&shell.as_str()) => {}
            other => {
                return Err(Refusal::invalid_input(format!(
                    "{path} is a {} script, not a shell script: a shell block cannot go in it",
                    other.as_deref().unwrap_or("non-shell")
                ))
                .with_hint(format!(
                    "make it call `{}` yourself (see hooks/git/README.md)",
                    block
                        .lines()
                        .find(|l| l.contains("git loopx hook git"))
                        .unwrap_or("git loopx hook git <name> \"$@\"")
                        .trim()
                        .trim_end_matches(" || :")
                        .trim_end_matches(" || exit $?")
                )));
            }
        }
        out.extend_from_slice(first);
        out.push(b'\n');
        out.extend_from_slice(block.as_bytes());
        out.extend_from_slice(text.get(first.len() + 1..).unwrap_or_default());
    } else {
        out.extend_from_slice(block.as_bytes());
        out.extend_from_slice(text);
    }
    Ok(Some(out))
}

/// The hook file without our block: `None` when there is no block; an empty
/// result or a lone shebang line means nothing of the user's is left.
pub fn uninstall(path: &str, text: &[u8]) -> Result<Option<Vec<u8>>, Refusal> {
    let Some(range) = find(path, text)? else {
        return Ok(None);
    };
    let mut out = text[..range.start].to_vec();
    out.extend_from_slice(&text[range.end..]);
    Ok(Some(out))
}

/// Whether what is left of a hook file after [`uninstall`] is nothing of the
/// user's: empty, or only a shebang line.
pub fn is_empty_hook(text: &[u8]) -> bool {
    let text = text.trim_ascii();
    text.is_empty() || (text.starts_with(b"#!") && !text.contains(&b'\n'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATE: &str = "#!/bin/sh\n# >>> git-loopx >>>\n# note\ngit loopx hook git pre-push \"$@\" || exit $?\n# <<< git-loopx <<<\n";

    #[test]
    fn block_is_taken_from_the_template() {
        assert_eq!(
            block(TEMPLATE),
            "# >>> git-loopx >>>\n# note\ngit loopx hook git pre-push \"$@\" || exit $?\n# <<< git-loopx <<<\n"
        );
    }

    #[test]
    fn a_new_hook_is_the_shebang_and_the_block() {
        let b = block(TEMPLATE);
        let out = install("h", None, &b).unwrap().unwrap();
        assert_eq!(out, format!("#!/bin/sh\n{b}").into_bytes());
        assert_eq!(install("h", Some(&out), &b).unwrap(), None);
        let left = uninstall("h", &out).unwrap().unwrap();
        assert!(is_empty_hook(&left));
    }

    #[test]
    fn the_users_lines_are_kept_and_the_block_goes_after_the_shebang() {
        let b = block(TEMPLATE);
        let user = b"#!/bin/bash\nset -e\necho mine\nexit 0\n";
        let out = install("h", Some(user), &b).unwrap().unwrap();
        assert_eq!(
            out,
            format!("#!/bin/bash\n{b}set -e\necho mine\nexit 0\n").into_bytes()
        );
        assert_eq!(install("h", Some(&out), &b).unwrap(), None);
        assert_eq!(uninstall("h", &out).unwrap().unwrap(), user);
        // A block from another version is replaced in place.
        let other = b.replace("# note", "# a newer note");
        let replaced = install("h", Some(&out), &other).unwrap().unwrap();
        assert_eq!(uninstall("h", &replaced).unwrap().unwrap(), user);
    }

    #[test]
    fn a_hook_without_a_shebang_gets_the_block_on_top() {
        let b = block(TEMPLATE);
        let out = install("h", Some(b"echo x"), &b).unwrap().unwrap();
        assert_eq!(out, format!("{b}echo x").into_bytes());
        assert_eq!(uninstall("h", &out).unwrap().unwrap(), b"echo x");
    }

    #[test]
    fn scripts_for_other_interpreters_and_broken_blocks_are_refused() {
        let b = block(TEMPLATE);
        let err = install("h", Some(b"#!/usr/bin/env python3\nprint(1)\n"), &b).unwrap_err();
        assert!(err.message.contains("python3 script"), "{err:?}");
        assert!(install("h", Some(b"#!/usr/bin/env -S bash -e\n"), &b).is_ok());
        let open = format!("#!/bin/sh\n{BEGIN}\necho\n");
        assert!(uninstall("h", open.as_bytes())
            .unwrap_err()
            .message
            .contains("no closing"));
        let twice = format!("{b}{b}");
        assert!(install("h", Some(twice.as_bytes()), &b)
            .unwrap_err()
            .message
            .contains("line 5"));
    }
}
