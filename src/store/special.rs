//! A repository where git expects a file and finds a named pipe, a socket
//! or a device: opening it would read that file, and a read of a named
//! pipe no one writes to waits forever (so does git's). A listed
//! repository (`ops::repos`) is looked at with [`check_listed`] before it
//! is opened, so one such repository is refused at once, by name, and
//! cannot hold up the others.
//!
//! Only `stat` is used, which never waits on what it looks at: the files
//! git reads to open the repository (the `.git` file of a worktree that
//! has one, `HEAD`, `commondir`, `config`, `config.worktree`), the files
//! the state branch is read through (`packed-refs`, the loose
//! `loopx-state` ref) and `objects/info/alternates`. What is read after —
//! objects, the parsed-state cache — is bounded by the caller's time limit
//! instead (`ops::repos::read_listed`).

use std::io::Read as _;
use std::os::unix::fs::FileTypeExt as _;
use std::path::{Path, PathBuf};

use crate::store::{Error, STATE_REF};

/// The most of a `.git` file or a `commondir` file read: both hold one
/// path.
const POINTER_BYTES: u64 = 64 * 1024;

/// Refuses the repository at `path` (a main worktree's top level, or the
/// git directory of a bare repository, as the list holds them) when a file
/// git reads to open it is not a regular file (nor a directory, nor
/// missing: those git reports itself, without waiting).
pub fn check_listed(path: &Path) -> Result<(), Error> {
    let dot_git = path.join(".git");
    let git_dir = match kind(path, &dot_git)? {
        Kind::Missing => path.to_owned(),
        Kind::Dir => dot_git,
        Kind::File => match pointer(&dot_git, "gitdir:") {
            Some(target) => path.join(target),
            None => return Ok(()), // not a `.git` file: gix says what it is
        },
    };
    for name in ["HEAD", "commondir", "config", "config.worktree"] {
        kind(path, &git_dir.join(name))?;
    }
    let common = match pointer(&git_dir.join("commondir"), "") {
        Some(common) => git_dir.join(common),
        None => git_dir,
    };
    for name in [
        "HEAD",
        "config",
        "packed-refs",
        STATE_REF,
        "objects/info/alternates",
    ] {
        kind(path, &common.join(name))?;
    }
    Ok(())
}

enum Kind {
    Missing,
    Dir,
    File,
}

/// What `path` is (symbolic links followed, as git follows them), or the
/// refusal of what git cannot read as a file, in the repository `repo`.
fn kind(repo: &Path, path: &Path) -> Result<Kind, Error> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        // Gone, a dangling link, or out of reach: git says so when it
        // opens the repository, without waiting.
        Err(_) => return Ok(Kind::Missing),
    };
    let file_type = meta.file_type();
    let what = if file_type.is_file() {
        return Ok(Kind::File);
    } else if file_type.is_dir() {
        return Ok(Kind::Dir);
    } else if file_type.is_fifo() {
        "a named pipe (FIFO)"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_block_device() || file_type.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    };
    Err(Error::SpecialFile {
        repo: repo.to_owned(),
        path: path.to_owned(),
        what,
    })
}

/// The path a regular file at `file` holds after `prefix` (`gitdir: …` in
/// a `.git` file, the whole of `commondir`), trimmed; `None` when there is
/// no such file or it holds no path.
fn pointer(file: &Path, prefix: &str) -> Option<PathBuf> {
    if !std::fs::metadata(file).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let mut text = String::new();
    std::fs::File::open(file)
        .ok()?
        .take(POINTER_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    let target = text.strip_prefix(prefix)?.trim();
    (!target.is_empty()).then(|| PathBuf::from(target))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("mkfifo runs");
        assert!(status.success());
    }

    #[test]
    fn a_named_pipe_where_git_reads_a_file_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git/refs/heads")).unwrap();
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(check_listed(&repo).is_ok());
        fifo(&repo.join(".git/refs/heads/loopx-state"));
        let err = check_listed(&repo).unwrap_err();
        let text = err.to_string();
        assert!(text.contains(".git/refs/heads/loopx-state"), "{text}");
        assert!(text.contains("named pipe"), "{text}");

        // A linked worktree's `.git` file leads to its git directory, and
        // `commondir` to the common one.
        let wt = dir.path().join("wt");
        let wt_git = repo.join(".git/worktrees/wt");
        std::fs::create_dir_all(&wt_git).unwrap();
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", wt_git.display())).unwrap();
        std::fs::write(wt_git.join("commondir"), "../..\n").unwrap();
        std::fs::write(wt_git.join("HEAD"), "ref: refs/heads/wt\n").unwrap();
        let err = check_listed(&wt).unwrap_err();
        assert!(err.to_string().contains("loopx-state"), "{err}");

        // So is a `.git` that is itself a pipe.
        let odd = dir.path().join("odd");
        std::fs::create_dir_all(&odd).unwrap();
        fifo(&odd.join(".git"));
        assert!(check_listed(&odd)
            .unwrap_err()
            .to_string()
            .contains("odd/.git"));
    }
}
