//! `install-man`: writes the manual pages (made by the CLI from its own
//! definitions) into a `man1` directory, never over a file git-loopx did
//! not write, and tells whether `man` will look there.
//!
//! Every file is checked before any is written, so a refusal writes
//! nothing; each page is written to a temporary name and renamed, so a
//! reader never sees half a page.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::model::{Code, Refusal};
use crate::Result;

/// One page: its file name (`git-loopx-todo.1`) and its roff.
pub struct Page {
    pub name: String,
    pub roff: Vec<u8>,
}

#[derive(Debug, Serialize)]
pub struct InstallManReport {
    /// The directory the pages are in.
    pub dir: PathBuf,
    /// Every page, by file name.
    pub pages: Vec<String>,
    /// How many of them changed (new or different bytes).
    pub written: usize,
    /// The directory to put on `MANPATH` (the parent of `man1`), when `man`
    /// would not look there as things are; null when it would.
    pub manpath_needed: Option<PathBuf>,
    /// The directory is not named `man1`, where `man` looks for section 1.
    pub not_man1: bool,
}

/// Whether `bytes` are a page git-loopx wrote (its `.TH` names a
/// `git-loopx` page), so replacing it loses nothing of the user's.
fn ours(bytes: &[u8]) -> bool {
    String::from_utf8_lossy(bytes)
        .lines()
        .take(8)
        .any(|l| l.starts_with(".TH git-loopx"))
}

fn io_error(what: &str, path: &Path, e: &std::io::Error) -> Refusal {
    Refusal::new(
        Code::InvalidInput,
        format!("cannot {what} {}: {e}", path.display()),
    )
}

/// Writes `pages` into `dir` (made if missing). `force` replaces files
/// that are not git-loopx's pages. `manpath` and `path` are the values of
/// `MANPATH` and `PATH`, to tell whether `man` will find the pages.
pub fn install(
    dir: &Path,
    pages: &[Page],
    force: bool,
    manpath: Option<&str>,
    path: Option<&str>,
) -> Result<InstallManReport> {
    let mut changed = Vec::new();
    for page in pages {
        let file = dir.join(&page.name);
        match std::fs::read(&file) {
            Ok(old) if old == page.roff => {}
            Ok(old) if !force && !ours(&old) => {
                return Err(Refusal::invalid_input(format!(
                    "{} exists and is not a page git-loopx wrote; nothing was written",
                    file.display()
                ))
                .with_hint("move it away, or pass --force to replace it")
                .into());
            }
            Ok(_) => changed.push(page),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => changed.push(page),
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
                return Err(io_error("write into", dir, &e).into())
            }
            Err(e) => return Err(io_error("read", &file, &e).into()),
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| io_error("create", dir, &e))?;
    for page in &changed {
        let file = dir.join(&page.name);
        let tmp = dir.join(format!(".{}.tmp-{}", page.name, std::process::id()));
        std::fs::write(&tmp, &page.roff).map_err(|e| io_error("write", &tmp, &e))?;
        if let Err(e) = std::fs::rename(&tmp, &file) {
            let _ = std::fs::remove_file(&tmp);
            return Err(io_error("write", &file, &e).into());
        }
    }
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_owned());
    let not_man1 = dir.file_name().is_none_or(|n| n != "man1");
    let root = dir.parent().unwrap_or(&dir).to_owned();
    let found = !not_man1 && on_manpath(&root, manpath, path);
    Ok(InstallManReport {
        pages: pages.iter().map(|p| p.name.clone()).collect(),
        written: changed.len(),
        manpath_needed: (!found).then_some(root),
        not_man1,
        dir,
    })
}

/// Whether `man` (man-db, mandoc) searches `root` (a directory holding
/// `man1/`): it is on `MANPATH`, or `MANPATH` is unset or has an empty
/// entry (meaning "and the default") and `root` is `<d>/../share/man` or
/// `<d>/../man` for a `<d>` on `PATH`, as `man` derives its path from it.
pub fn on_manpath(root: &Path, manpath: Option<&str>, path: Option<&str>) -> bool {
    let same = |a: &Path, b: &Path| {
        a == b
            || matches!(
                (std::fs::canonicalize(a), std::fs::canonicalize(b)),
                (Ok(x), Ok(y)) if x == y
            )
    };
    let mut derived = true;
    if let Some(manpath) = manpath.filter(|m| !m.is_empty()) {
        let entries: Vec<&str> = manpath.split(':').collect();
        if entries
            .iter()
            .any(|e| !e.is_empty() && same(Path::new(e), root))
        {
            return true;
        }
        derived = entries.iter().any(|e| e.is_empty());
    }
    derived
        && path.unwrap_or_default().split(':').any(|bin| {
            let Some(prefix) = Path::new(bin).parent().filter(|_| !bin.is_empty()) else {
                return false;
            };
            same(&prefix.join("share/man"), root) || same(&prefix.join("man"), root)
        })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::on_manpath;

    #[test]
    fn man_looks_beside_a_bin_on_path_unless_manpath_says_otherwise() {
        let root = Path::new("/opt/loopx-test/share/man");
        let path = Some("/usr/bin:/opt/loopx-test/bin");
        assert!(on_manpath(root, None, path));
        assert!(on_manpath(root, Some(""), path));
        assert!(!on_manpath(root, Some("/usr/share/man"), path));
        assert!(on_manpath(root, Some("/usr/share/man:"), path));
        assert!(on_manpath(root, Some("/opt/loopx-test/share/man"), None));
        assert!(!on_manpath(root, None, Some("/usr/bin")));
    }
}
