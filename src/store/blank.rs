//! Files created ahead of the write that fills them and gives them a name.
//!
//! On a busy disk, creating a file — finding a free inode — is the slow
//! step of a writeback: ext4 without a journal skips, one by one, every
//! inode freed in the last minute. So a writer creates the files its next
//! writeback needs (the pack, its index, the ref's lock) before it takes the
//! writer lock, and other writers need not wait for it.
//!
//! Where the kernel allows, a blank is an unnamed file (`O_TMPFILE`) in the
//! directory it will be named in: creating it does not lock that directory
//! (a named creation holds the directory's lock while it looks for an inode,
//! and the writer in its critical section renames into the same
//! directories), and a writer that dies leaves nothing behind. It is named
//! with `linkat`. Elsewhere it is a named file, `tmp_loopx_<pid>_<n>` (as
//! git names its own temporary files), renamed into place.

use std::io;
use std::path::{Path, PathBuf};

/// An empty file, open for writing, waiting for its name.
pub struct Blank {
    file: std::fs::File,
    /// `None` for an unnamed file.
    path: Option<PathBuf>,
}

/// A blank that took a name it must not overwrite (a lock).
pub struct Named {
    pub file: std::fs::File,
    /// The blank's own name, when it had one (to give the file back).
    was: Option<PathBuf>,
}

impl Blank {
    /// A blank in `dir` with the permission bits `mode` (before the umask).
    pub fn create(dir: &Path, mode: u32) -> io::Result<Self> {
        Self::create_in(dir, dir, mode)
    }

    /// A blank unnamed in `dir`, or, where files cannot be unnamed, named
    /// in `named_dir` (for a directory where any name means something, as
    /// under `refs/`).
    pub fn create_in(dir: &Path, named_dir: &Path, mode: u32) -> io::Result<Self> {
        if let Some(file) = unnamed(dir, mode) {
            return Ok(Blank { file, path: None });
        }
        Self::create_named(named_dir, mode)
    }

    /// A named blank in `dir`, whatever the platform allows.
    pub fn create_named(dir: &Path, mode: u32) -> io::Result<Self> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!("tmp_loopx_{}_{n}", std::process::id()));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
        #[cfg(not(unix))]
        let _ = mode;
        Ok(Blank {
            file: options.open(&path)?,
            path: Some(path),
        })
    }

    /// The open file.
    pub fn file(&mut self) -> &mut std::fs::File {
        &mut self.file
    }

    /// Names the file `target`. A file already there is left as it is: the
    /// callers name files by their content, so it holds the same bytes.
    pub fn put_at(self, target: &Path) -> io::Result<()> {
        match &self.path {
            Some(path) => {
                let renamed = std::fs::rename(path, target);
                if renamed.is_err() {
                    let _ = std::fs::remove_file(path);
                }
                renamed
            }
            None => match link(&self.file, target) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
                Err(e) => Err(e),
            },
        }
    }

    /// Names the file `target` only if nothing has that name (as git takes
    /// a lock: `O_CREAT|O_EXCL`). On failure the blank comes back with the
    /// error (`AlreadyExists` when the name is taken).
    pub fn take_name(self, target: &Path) -> Result<Named, (Blank, io::Error)> {
        let named = match &self.path {
            Some(path) => rename_noreplace(path, target),
            None => link(&self.file, target),
        };
        match named {
            Ok(()) => Ok(Named {
                file: self.file,
                was: self.path,
            }),
            Err(e) => Err((self, e)),
        }
    }

    /// Removes an unused blank.
    pub fn discard(self) {
        if let Some(path) = &self.path {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Named {
    /// A file created under its name directly (no blank to give back).
    pub fn made(file: std::fs::File) -> Self {
        Named { file, was: None }
    }

    /// Gives the name `target` up (emptying the file first); the file is a
    /// blank again when it can be (a named one goes back to its name, an
    /// unnamed one cannot be named twice and is let go).
    pub fn give_up(self, target: &Path) -> Option<Blank> {
        if let Some(was) = &self.was {
            if self.file.set_len(0).is_ok() && rename_noreplace(target, was).is_ok() {
                return Some(Blank {
                    file: self.file,
                    path: self.was,
                });
            }
        }
        let _ = std::fs::remove_file(target);
        None
    }
}

/// Whether an error says the file system or kernel lacks a feature.
pub fn is_unsupported(e: &io::Error) -> bool {
    // EXDEV: another file system; EINVAL, ENOSYS, EOPNOTSUPP: not here.
    matches!(e.raw_os_error(), Some(18 | 22 | 38 | 95))
}

#[cfg(target_os = "linux")]
fn unnamed(dir: &Path, mode: u32) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    // Naming an unnamed file goes through /proc (see `link`).
    static LINKABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let linkable = *LINKABLE.get_or_init(|| Path::new("/proc/self/fd").is_dir());
    if !linkable || std::env::var_os("LOOPX_NAMED_BLANKS").is_some_and(|v| v == "1") {
        return None;
    }
    let tmpfile = rustix::fs::OFlags::TMPFILE.bits() as i32;
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(tmpfile)
        .mode(mode)
        .open(dir)
        .ok()
}

#[cfg(not(target_os = "linux"))]
fn unnamed(_: &Path, _: u32) -> Option<std::fs::File> {
    None
}

/// Gives an unnamed file the name `target` (failing if it exists).
#[cfg(target_os = "linux")]
fn link(file: &std::fs::File, target: &Path) -> io::Result<()> {
    use rustix::fs::{linkat, AtFlags, CWD};
    use std::os::fd::AsRawFd;
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    linkat(
        CWD,
        proc_path.as_str(),
        CWD,
        target,
        AtFlags::SYMLINK_FOLLOW,
    )
    .map_err(io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn link(_: &std::fs::File, _: &Path) -> io::Result<()> {
    Err(io::Error::from_raw_os_error(38))
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
    use std::io::Write as _;

    fn both(f: impl Fn(&Path, bool)) {
        for named in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            f(dir.path(), named);
        }
    }

    fn blank(dir: &Path, named: bool) -> Blank {
        let mut b = Blank::create(dir, 0o644).unwrap();
        if named && b.path.is_none() {
            b.discard();
            b = Blank {
                file: std::fs::File::create(dir.join("tmp_named")).unwrap(),
                path: Some(dir.join("tmp_named")),
            };
        }
        b
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_blank_is_filled_then_named() {
        both(|dir, named| {
            let mut b = blank(dir, named);
            b.file().write_all(b"pack").unwrap();
            b.put_at(&dir.join("p.pack")).unwrap();
            assert_eq!(std::fs::read(dir.join("p.pack")).unwrap(), b"pack");
            assert_eq!(names(dir), ["p.pack"], "named: {named}");
            // The same name again: the file there stays.
            let mut b = blank(dir, named);
            b.file().write_all(b"same").unwrap();
            b.put_at(&dir.join("p.pack")).unwrap();
            assert_eq!(names(dir), ["p.pack"]);
        });
    }

    #[test]
    fn taking_a_name_is_exclusive_and_can_be_given_up() {
        both(|dir, named| {
            let lock = dir.join("ref.lock");
            std::fs::write(&lock, "held").unwrap();
            let b = blank(dir, named);
            let has_name = b.path.is_some();
            let (b, e) = b.take_name(&lock).err().expect("the name is taken");
            assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
            assert_eq!(std::fs::read_to_string(&lock).unwrap(), "held");
            std::fs::remove_file(&lock).unwrap();
            let mut held = b.take_name(&lock).ok().expect("free now");
            held.file.write_all(b"mine").unwrap();
            assert_eq!(std::fs::read_to_string(&lock).unwrap(), "mine");
            let back = held.give_up(&lock);
            assert!(!lock.exists());
            assert_eq!(back.is_some(), has_name, "a named blank is kept");
            if let Some(b) = back {
                b.discard();
            }
            assert!(names(dir).is_empty(), "{:?}", names(dir));
        });
    }
}
