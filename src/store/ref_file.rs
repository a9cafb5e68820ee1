//! Moving the state ref, compare-and-swap, with its lock file made ahead.
//!
//! git's protocol for a loose ref `R` is: create `R.lock` exclusively (the
//! lock), check `R` still holds the old value, write the new value into the
//! lock, append to the reflog, rename the lock over `R`. Creating the lock
//! means finding a free inode, and on a busy disk that is the slow step —
//! ext4 without a journal skips, one by one, every inode freed in the last
//! minute, and each move of the ref frees one — while every other writer on
//! the host waits for the writer lock. So the lock's file is created before
//! the writer lock is taken, as a blank (`store::blank`: an unnamed file in
//! `R`'s directory, or a named one under `.git/loopx/`), and the protocol
//! goes on unchanged from there:
//!
//! 1. the blank is named `R.lock` with `linkat` (or `renameat2` with
//!    `RENAME_NOREPLACE`), which fails if the lock exists exactly as git's
//!    `O_CREAT|O_EXCL` does: git and git-loopx exclude each other;
//! 2. `R` is read and compared with the expected value; the new value is
//!    written into the lock and the reflog line appended;
//! 3. `R`'s file is linked aside if the caller asked (so that freeing it
//!    waits until the writer lock is released), and the lock is renamed
//!    over `R`.
//!
//! When the move loses (another value, a held lock) a named blank goes back
//! to being the blank for the next attempt (an unnamed one cannot be named
//! twice). A file is never reused once it has been the ref: a reader that
//! opened `R` just before the move may still be reading it.
//!
//! Anything this does not cover — no such loose file (the ref is packed),
//! no reflog to append to, a symbolic ref, no `renameat2` — is reported as
//! [`Moved::Unsupported`] before anything is written, and the caller moves
//! the ref the ordinary way.

use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use crate::store::blank::{is_unsupported, Blank, Named};
use crate::store::durable::Durability;

/// What [`RefFile::compare_and_swap`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Moved {
    /// The ref now points at the new value.
    Yes,
    /// The ref holds another value, or someone holds its lock: nothing written.
    Lost,
    /// Not a case this handles; nothing written, use the ordinary path.
    Unsupported,
}

/// A loose ref in a repository's common directory.
pub struct RefFile {
    path: PathBuf,
    lock: PathBuf,
    log: PathBuf,
    /// Where the ref's old file is linked before the lock replaces it.
    keep_old: Option<PathBuf>,
    /// Whether to sync the lock, the reflog and the directory.
    durability: Durability,
}

impl RefFile {
    /// The ref `name` (`refs/heads/…`) under `common_dir`.
    pub fn new(common_dir: &Path, name: &str) -> Self {
        let path = common_dir.join(name);
        let mut lock = path.clone().into_os_string();
        lock.push(".lock");
        RefFile {
            lock: lock.into(),
            log: common_dir.join("logs").join(name),
            path,
            keep_old: None,
            durability: Durability::NONE,
        }
    }

    /// Syncs the new value, the reflog line and the ref's directory when
    /// git config asks for references to be (`core.fsync`).
    pub fn syncing(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Links the ref's old file at `path` before the move, so the move does
    /// not free it: on a disk where freeing an inode is slow, the caller
    /// removes it later, outside the writer lock. Best effort: when the link
    /// cannot be made, the move frees the file itself, as git's does.
    pub fn keeping_old_file_at(mut self, path: PathBuf) -> Self {
        self.keep_old = Some(path);
        self
    }

    /// Moves the ref from `old` to `new` (hex ids), appending `log_line`
    /// (without its newline) to the reflog; the lock is made from `blank`
    /// when there is one, which is taken when the move happens.
    pub fn compare_and_swap(
        &self,
        old: &str,
        new: &str,
        log_line: &str,
        blank: &mut Option<Blank>,
    ) -> io::Result<Moved> {
        let mut held = match self.lock(blank)? {
            Ok(held) => held,
            Err(moved) => return Ok(moved),
        };
        let outcome = self.swap_locked(&mut held.file, old, new, log_line);
        if !matches!(outcome, Ok(Moved::Yes)) {
            // Given up; the file, never the ref, may serve as the next blank.
            *blank = held.give_up(&self.lock);
        }
        outcome
    }

    fn swap_locked(
        &self,
        lock: &mut std::fs::File,
        old: &str,
        new: &str,
        log_line: &str,
    ) -> io::Result<Moved> {
        let current = match std::fs::read(&self.path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Moved::Unsupported),
            Err(e) => return Err(e),
        };
        if current.starts_with(b"ref:") {
            return Ok(Moved::Unsupported);
        }
        if current.trim_ascii() != old.as_bytes() {
            return Ok(Moved::Lost);
        }
        let mut log = match std::fs::OpenOptions::new().append(true).open(&self.log) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Moved::Unsupported),
            Err(e) => return Err(e),
        };
        let d = &self.durability;
        lock.write_all(format!("{new}\n").as_bytes())?;
        d.sync(d.refs, lock, &self.lock)?;
        log.write_all(format!("{log_line}\n").as_bytes())?;
        d.sync(d.refs, &log, &self.log)?;
        if let Some(keep) = &self.keep_old {
            let _ = std::fs::hard_link(&self.path, keep);
        }
        std::fs::rename(&self.lock, &self.path)?;
        // Moved: a failure to sync the directory is not a failure to move.
        let _ = d.sync_parent(d.refs, &self.path);
        Ok(Moved::Yes)
    }

    /// Takes the lock, from the blank if there is one; `Err` is the outcome
    /// when it cannot be taken.
    fn lock(&self, blank: &mut Option<Blank>) -> io::Result<Result<Named, Moved>> {
        if let Some(mut b) = blank.take() {
            // Dated now: a lock's age is how others tell a dead writer's.
            let _ = b.file().set_modified(std::time::SystemTime::now());
            match b.take_name(&self.lock) {
                Ok(named) => return Ok(Ok(named)),
                Err((b, e)) => {
                    *blank = Some(b);
                    if e.kind() == io::ErrorKind::AlreadyExists {
                        return Ok(Err(Moved::Lost));
                    }
                    if is_unsupported(&e) {
                        return Ok(Err(Moved::Unsupported));
                    }
                    // The blank's file is gone (cleaned up), the lock's
                    // directory is, or the blank cannot be named here:
                    // make the lock afresh, as git does.
                    tracing::debug!("ref lock from a blank: {e}");
                    if let Some(b) = blank.take() {
                        b.discard();
                    }
                }
            }
        }
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&self.lock)
        {
            Ok(file) => Ok(Ok(Named::made(file))),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(Err(Moved::Lost)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Err(Moved::Unsupported)),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "1111111111111111111111111111111111111111";
    const B: &str = "2222222222222222222222222222222222222222";
    const C: &str = "3333333333333333333333333333333333333333";

    fn setup() -> (tempfile::TempDir, RefFile) {
        let dir = tempfile::tempdir().unwrap();
        let common = dir.path();
        std::fs::create_dir_all(common.join("refs/heads")).unwrap();
        std::fs::create_dir_all(common.join("logs/refs/heads")).unwrap();
        std::fs::create_dir_all(common.join("loopx")).unwrap();
        std::fs::write(common.join("refs/heads/s"), format!("{A}\n")).unwrap();
        std::fs::write(common.join("logs/refs/heads/s"), "").unwrap();
        let r = RefFile::new(common, "refs/heads/s");
        (dir, r)
    }

    fn blank(dir: &tempfile::TempDir) -> Option<Blank> {
        let refs = dir.path().join("refs/heads");
        Some(Blank::create_in(&refs, &dir.path().join("loopx"), 0o666).unwrap())
    }

    /// Files under `refs/heads` and `loopx/` other than the ref.
    fn strays(dir: &tempfile::TempDir) -> Vec<String> {
        let mut out = Vec::new();
        for sub in ["refs/heads", "loopx"] {
            for e in std::fs::read_dir(dir.path().join(sub)).unwrap() {
                let name = e.unwrap().file_name().to_string_lossy().into_owned();
                if name != "s" {
                    out.push(format!("{sub}/{name}"));
                }
            }
        }
        out
    }

    #[test]
    fn moves_compare_and_swap_from_a_blank_or_without() {
        let (dir, r) = setup();
        let mut b = blank(&dir);
        assert_eq!(
            r.compare_and_swap(A, B, "a to b", &mut b).unwrap(),
            Moved::Yes
        );
        assert!(b.is_none(), "the blank became the ref");
        assert_eq!(std::fs::read_to_string(&r.path).unwrap(), format!("{B}\n"));
        assert_eq!(
            r.compare_and_swap(B, C, "b to c", &mut None).unwrap(),
            Moved::Yes
        );
        assert_eq!(std::fs::read_to_string(&r.path).unwrap(), format!("{C}\n"));
        assert!(strays(&dir).is_empty(), "{:?}", strays(&dir));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("logs/refs/heads/s")).unwrap(),
            "a to b\nb to c\n"
        );
    }

    #[test]
    fn the_old_file_can_be_kept_for_later_removal() {
        let (dir, r) = setup();
        let keep = dir.path().join("loopx/old-ref");
        let r = r.keeping_old_file_at(keep.clone());
        assert_eq!(
            r.compare_and_swap(A, B, "a to b", &mut None).unwrap(),
            Moved::Yes
        );
        assert_eq!(std::fs::read_to_string(&keep).unwrap(), format!("{A}\n"));
        assert_eq!(std::fs::read_to_string(&r.path).unwrap(), format!("{B}\n"));
        // Still there from the last move: this one frees the file itself.
        assert_eq!(
            r.compare_and_swap(B, C, "b to c", &mut None).unwrap(),
            Moved::Yes
        );
        assert_eq!(std::fs::read_to_string(&keep).unwrap(), format!("{A}\n"));
        assert_eq!(std::fs::read_to_string(&r.path).unwrap(), format!("{C}\n"));
    }

    #[test]
    fn a_lost_move_writes_nothing_and_leaves_nothing() {
        let (dir, r) = setup();
        let mut b = blank(&dir);
        assert_eq!(
            r.compare_and_swap(B, C, "stale", &mut b).unwrap(),
            Moved::Lost
        );
        assert_eq!(std::fs::read_to_string(&r.path).unwrap(), format!("{A}\n"));
        assert!(!r.lock.exists(), "the lock was given back");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("logs/refs/heads/s")).unwrap(),
            ""
        );
        // A held lock (git's, say) loses too, and is left alone.
        std::fs::write(&r.lock, "someone else's\n").unwrap();
        if let Some(b) = b {
            b.discard();
        }
        let mut b = blank(&dir);
        assert_eq!(r.compare_and_swap(A, B, "x", &mut b).unwrap(), Moved::Lost);
        assert_eq!(
            std::fs::read_to_string(&r.lock).unwrap(),
            "someone else's\n"
        );
        assert!(b.is_some(), "the blank was not used");
        std::fs::remove_file(&r.lock).unwrap();
        assert_eq!(
            r.compare_and_swap(A, B, "a to b", &mut b).unwrap(),
            Moved::Yes
        );
        assert_eq!(std::fs::read_to_string(&r.path).unwrap(), format!("{B}\n"));
        assert!(strays(&dir).is_empty(), "{:?}", strays(&dir));
    }

    #[test]
    fn a_packed_ref_or_missing_reflog_is_left_to_the_ordinary_path() {
        let (dir, r) = setup();
        std::fs::remove_file(dir.path().join("logs/refs/heads/s")).unwrap();
        let mut b = blank(&dir);
        assert_eq!(
            r.compare_and_swap(A, B, "x", &mut b).unwrap(),
            Moved::Unsupported
        );
        assert_eq!(std::fs::read_to_string(&r.path).unwrap(), format!("{A}\n"));
        std::fs::remove_file(&r.path).unwrap();
        assert_eq!(
            r.compare_and_swap(A, B, "x", &mut b).unwrap(),
            Moved::Unsupported
        );
        assert!(!r.path.exists() && !r.lock.exists());
        if let Some(b) = b {
            b.discard();
        }
        assert!(strays(&dir).is_empty(), "{:?}", strays(&dir));
    }
}
