//! Moving the state ref, compare-and-swap, with its lock file made ahead.
//!
//! git's protocol for a loose ref `R` is: create `R.lock` exclusively (the
//! lock), check `R` still holds the old value, write the new value into the
//! lock, append to the reflog, rename the lock over `R`. Creating the lock
//! means finding a free inode, and on a busy disk that is the slow step —
//! ext4 without a journal skips, one by one, every inode freed in the last
//! minute, and each move of the ref frees one — while every other writer on
//! the host waits for the writer lock. So the lock's file is created before
//! the writer lock is taken, as a blank (`store::pack::Blank`, under
//! `.git/loopx/`), and the protocol goes on unchanged from there:
//!
//! 1. the blank is renamed to `R.lock` with `RENAME_NOREPLACE`, which fails
//!    if the lock exists exactly as git's `O_CREAT|O_EXCL` does: git and
//!    git-loopx exclude each other;
//! 2. `R` is read and compared with the expected value; the new value is
//!    written into the lock and the reflog line appended;
//! 3. the lock is renamed over `R`.
//!
//! When the move loses (another value, a held lock) the lock's file goes
//! back to being the blank for the next attempt. A file is never reused once
//! it has been the ref: a reader that opened `R` just before the move may
//! still be reading it.
//!
//! Anything this does not cover — no such loose file (the ref is packed),
//! no reflog to append to, a symbolic ref, no `renameat2` — is reported as
//! [`Moved::Unsupported`] before anything is written, and the caller moves
//! the ref the ordinary way.

use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use crate::store::pack::Blank;

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
}

/// The lock, held, and the blank it was made from (to give it back).
struct Held {
    file: std::fs::File,
    blank: Option<PathBuf>,
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
        }
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
            self.release(held, blank);
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
        lock.write_all(format!("{new}\n").as_bytes())?;
        log.write_all(format!("{log_line}\n").as_bytes())?;
        std::fs::rename(&self.lock, &self.path)?;
        Ok(Moved::Yes)
    }

    /// Takes the lock, from the blank if there is one; `Err` is the outcome
    /// when it cannot be taken.
    fn lock(&self, blank: &mut Option<Blank>) -> io::Result<Result<Held, Moved>> {
        if let Some(mut b) = blank.take() {
            // Dated now: a lock's age is how others tell a dead writer's.
            let _ = b.file().set_modified(std::time::SystemTime::now());
            match rename_noreplace(b.path(), &self.lock) {
                Ok(()) => {
                    let path = b.path().to_owned();
                    return Ok(Ok(Held {
                        file: b.into_file(),
                        blank: Some(path),
                    }));
                }
                Err(e) => {
                    let kind = e.kind();
                    let unsupported = is_unsupported(&e);
                    *blank = Some(b);
                    if kind == io::ErrorKind::AlreadyExists {
                        return Ok(Err(Moved::Lost));
                    }
                    if unsupported {
                        return Ok(Err(Moved::Unsupported));
                    }
                    if kind != io::ErrorKind::NotFound {
                        return Err(e);
                    }
                    // The blank is gone (someone cleaned up): create the lock.
                    *blank = None;
                }
            }
        }
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&self.lock)
        {
            Ok(file) => Ok(Ok(Held { file, blank: None })),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(Err(Moved::Lost)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Err(Moved::Unsupported)),
            Err(e) => Err(e),
        }
    }

    /// Gives the lock up; its file, never a ref, becomes the blank again.
    fn release(&self, held: Held, blank: &mut Option<Blank>) {
        if let Some(path) = held.blank {
            if held.file.set_len(0).is_ok() && rename_noreplace(&self.lock, &path).is_ok() {
                *blank = Some(Blank::from_parts(held.file, path));
                return;
            }
        }
        let _ = std::fs::remove_file(&self.lock);
    }
}

fn is_unsupported(e: &io::Error) -> bool {
    // EXDEV: the blank is on another file system; EINVAL, ENOSYS,
    // EOPNOTSUPP: no `renameat2` flags here.
    matches!(e.raw_os_error(), Some(18 | 22 | 38 | 95))
}

#[cfg(target_os = "linux")]
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE).map_err(io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn rename_noreplace(_: &Path, _: &Path) -> io::Result<()> {
    Err(io::Error::from_raw_os_error(38))
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
        Some(Blank::create_mode(&dir.path().join("loopx"), 0o666).unwrap())
    }

    #[test]
    fn moves_compare_and_swap_from_a_blank_or_without() {
        let (dir, r) = setup();
        let mut b = blank(&dir);
        let made = b.as_ref().unwrap().path().to_owned();
        assert_eq!(
            r.compare_and_swap(A, B, "a to b", &mut b).unwrap(),
            Moved::Yes
        );
        assert!(b.is_none() && !made.exists(), "the blank became the ref");
        assert_eq!(std::fs::read_to_string(&r.path).unwrap(), format!("{B}\n"));
        assert_eq!(
            r.compare_and_swap(B, C, "b to c", &mut None).unwrap(),
            Moved::Yes
        );
        assert_eq!(std::fs::read_to_string(&r.path).unwrap(), format!("{C}\n"));
        assert!(!r.lock.exists());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("logs/refs/heads/s")).unwrap(),
            "a to b\nb to c\n"
        );
    }

    #[test]
    fn a_lost_move_writes_nothing_and_keeps_its_blank() {
        let (dir, r) = setup();
        let mut b = blank(&dir);
        let made = b.as_ref().unwrap().path().to_owned();
        assert_eq!(
            r.compare_and_swap(B, C, "stale", &mut b).unwrap(),
            Moved::Lost
        );
        assert_eq!(std::fs::read_to_string(&r.path).unwrap(), format!("{A}\n"));
        assert!(!r.lock.exists(), "the lock was given back");
        assert!(made.exists() && b.is_some(), "as the blank");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("logs/refs/heads/s")).unwrap(),
            ""
        );
        // A held lock (git's, say) loses too, and is left alone.
        std::fs::write(&r.lock, "someone else's\n").unwrap();
        assert_eq!(r.compare_and_swap(A, B, "x", &mut b).unwrap(), Moved::Lost);
        assert_eq!(
            std::fs::read_to_string(&r.lock).unwrap(),
            "someone else's\n"
        );
        assert!(made.exists() && b.is_some());
        std::fs::remove_file(&r.lock).unwrap();
        assert_eq!(
            r.compare_and_swap(A, B, "a to b", &mut b).unwrap(),
            Moved::Yes
        );
        assert_eq!(std::fs::read_to_string(&r.path).unwrap(), format!("{B}\n"));
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
        assert!(!r.path.exists() && !r.lock.exists() && b.is_some());
    }
}
