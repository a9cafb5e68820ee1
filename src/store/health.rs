//! What a crash or a hostile disk leaves behind, found and cleared: ref
//! lock files of dead writers, our temporary files, the state ref's reflog
//! (to go back to an intact commit), and directories that refuse writes.
//! `doctor` reports these; `doctor --repair` and the next writer clear them.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::store::{Oid, STATE_REF};

/// A lock file younger than this may belong to a live writer (git's and
/// ours hold a ref lock for milliseconds).
pub const STALE_LOCK_AGE: Duration = Duration::from_secs(5);

/// A temporary file of ours younger than this is left alone, whoever made it.
const LEFTOVER_AGE: Duration = Duration::from_secs(60);

/// git's own temporary pack files (`tmp_pack_*`, `tmp_idx_*`, `tmp_rev_*`
/// in `objects/pack`), which a fetch or `index-pack` stopped mid-way
/// leaves behind (sync kills one on its timeout), younger than this are
/// left alone: a running fetch may be writing one, and their names carry
/// no pid.
const GIT_LEFTOVER_AGE: Duration = Duration::from_secs(3600);

/// A lock file on one of our refs, and its age.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefLock {
    pub path: PathBuf,
    pub age: Duration,
}

/// The lock files that can stand in the way of a write or a sync: the state
/// ref's, every remote-tracking `loopx-state`'s, and `packed-refs.lock`.
pub fn ref_locks(common_dir: &Path) -> Vec<RefLock> {
    let mut paths = vec![
        common_dir.join(format!("{STATE_REF}.lock")),
        common_dir.join("packed-refs.lock"),
    ];
    if let Ok(remotes) = std::fs::read_dir(common_dir.join("refs/remotes")) {
        for remote in remotes.flatten() {
            paths.push(remote.path().join("loopx-state.lock"));
        }
    }
    paths
        .into_iter()
        .filter_map(|path| {
            let modified = std::fs::symlink_metadata(&path).ok()?.modified().ok()?;
            let age = modified.elapsed().unwrap_or_default();
            Some(RefLock { path, age })
        })
        .collect()
}

/// Removes the lock files of [`ref_locks`] older than [`STALE_LOCK_AGE`].
/// The caller holds the writer lock, so no git-loopx writer on this host is
/// between taking a ref lock and releasing it. Returns what it removed.
pub fn remove_stale_locks(common_dir: &Path) -> io::Result<Vec<RefLock>> {
    let mut removed = Vec::new();
    for lock in ref_locks(common_dir) {
        if lock.age >= STALE_LOCK_AGE {
            match std::fs::remove_file(&lock.path) {
                Ok(()) => removed.push(lock),
                // Another writer or `doctor --repair` was first.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(removed)
}

/// Removes temporary files a killed git-loopx left in `dirs`: probe files
/// (`tmp_loopx_<pid>_<what>`, see [`unwritable`]) and half-written cache files (`<key>.<pid>.tmp`), once they are older
/// than a minute and their process is gone (where the OS says; elsewhere
/// after an hour); and git's temporary pack files a stopped fetch left,
/// once they are older than an hour. Returns how many it removed.
pub fn remove_leftovers(dirs: &[PathBuf]) -> usize {
    let mut removed = 0;
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_str().unwrap_or_default();
            let pid = leftover_pid(name);
            if pid.is_none() && !is_git_leftover(name) {
                continue;
            }
            let age = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|m| m.elapsed().ok())
                .unwrap_or_default();
            let gone = match pid.map(process_alive) {
                Some(Some(alive)) => !alive && age >= LEFTOVER_AGE,
                Some(None) => age >= LEFTOVER_AGE * 60,
                None => age >= GIT_LEFTOVER_AGE,
            };
            if gone && std::fs::remove_file(entry.path()).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

/// The pid in the name of one of our temporary files.
fn leftover_pid(name: &str) -> Option<u32> {
    if let Some(rest) = name.strip_prefix("tmp_loopx_") {
        let pid = rest.split('_').next()?;
        return pid.parse().ok();
    }
    let stem = name.strip_suffix(".tmp")?;
    let (_, pid) = stem.rsplit_once('.')?;
    name.starts_with("state-")
        .then(|| pid.parse().ok())
        .flatten()
}

/// Whether `name` is one of the temporary files git's `fetch`,
/// `index-pack` and `pack-objects` write into `objects/pack` before they
/// name a pack.
fn is_git_leftover(name: &str) -> bool {
    ["tmp_pack_", "tmp_idx_", "tmp_rev_"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

/// Whether process `pid` is alive, where the OS can tell.
fn process_alive(pid: u32) -> Option<bool> {
    let proc = Path::new("/proc");
    proc.join("self")
        .exists()
        .then(|| pid == std::process::id() || proc.join(pid.to_string()).exists())
}

/// A directory a write needs that refuses a new file, and why.
#[derive(Clone, Debug)]
pub struct Unwritable {
    pub dir: PathBuf,
    pub error: String,
}

/// Tries to create (and removes) a file in each directory a write creates
/// files in; permissions alone do not tell (root ignores them, a read-only
/// mount or an immutable directory does not).
pub fn unwritable(dirs: &[PathBuf]) -> Vec<Unwritable> {
    let name = format!("tmp_loopx_{}_probe", std::process::id());
    dirs.iter()
        .filter(|dir| dir.is_dir())
        .filter_map(|dir| {
            let probe = dir.join(&name);
            let created = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&probe);
            match created {
                Ok(_) => {
                    let _ = std::fs::remove_file(&probe);
                    None
                }
                Err(e) => Some(Unwritable {
                    dir: dir.clone(),
                    error: e.to_string(),
                }),
            }
        })
        .collect()
}

/// One move of the state ref, as its reflog records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Moved {
    pub old: Oid,
    pub new: Oid,
    pub message: String,
}

/// The state ref's reflog, oldest first (empty when there is none).
pub fn state_reflog(common_dir: &Path) -> Vec<Moved> {
    let text = std::fs::read(common_dir.join("logs").join(STATE_REF)).unwrap_or_default();
    String::from_utf8_lossy(&text)
        .lines()
        .filter_map(|line| {
            let (head, message) = line.split_once('\t').unwrap_or((line, ""));
            let mut ids = head.splitn(3, ' ');
            let old = ids.next()?;
            let new = ids.next()?;
            let hex = |s: &str| s.len() >= 40 && s.bytes().all(|b| b.is_ascii_hexdigit());
            (hex(old) && hex(new)).then(|| Moved {
                old: Oid(old.to_owned()),
                new: Oid(new.to_owned()),
                message: message.to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftover_names_carry_their_pid() {
        assert_eq!(leftover_pid("tmp_loopx_123_4"), Some(123));
        assert_eq!(leftover_pid("state-0.1.0-abc.bin.99.tmp"), Some(99));
        assert_eq!(leftover_pid("pack-abc.pack"), None);
        assert_eq!(leftover_pid("tmp_pack_123"), None);
        assert_eq!(leftover_pid("loopx-state.lock"), None);
    }

    #[test]
    fn only_old_leftovers_of_dead_processes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let old = std::time::SystemTime::now() - Duration::from_secs(3600 * 2);
        let dead = dir.path().join("tmp_loopx_999999999_0");
        let young = dir.path().join("tmp_loopx_999999998_0");
        let mine = dir
            .path()
            .join(format!("tmp_loopx_{}_0", std::process::id()));
        let other = dir.path().join("pack-1.pack");
        for path in [&dead, &young, &mine, &other] {
            std::fs::write(path, "x").unwrap();
        }
        for path in [&dead, &mine, &other] {
            std::fs::File::options()
                .write(true)
                .open(path)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        assert!(remove_leftovers(&[dir.path().to_owned()]) >= 1);
        assert!(!dead.exists());
        assert!(young.exists() && other.exists());
        assert_eq!(
            mine.exists(),
            process_alive(1).is_some(),
            "a live one stays"
        );
    }

    /// A fetch killed on sync's timeout leaves git's `tmp_pack_*` (and
    /// `tmp_idx_*`) in `objects/pack`; an old one goes, a young one (a fetch
    /// may be writing it) and a named pack stay.
    #[test]
    fn git_temporary_packs_go_once_an_hour_old() {
        let dir = tempfile::tempdir().unwrap();
        let now = std::time::SystemTime::now();
        let dated = |name: &str, age: Duration| {
            let path = dir.path().join(name);
            let file = std::fs::File::create(&path).unwrap();
            file.set_modified(now - age).unwrap();
            path
        };
        let hours = |n: u64| Duration::from_secs(3600 * n);
        let stale = [
            dated("tmp_pack_Ab12Cd", hours(2)),
            dated("tmp_idx_Ab12Cd", hours(2)),
            dated("tmp_rev_Ab12Cd", hours(30)),
        ];
        let kept = [
            dated("tmp_pack_young", Duration::from_secs(20 * 60)),
            dated("tmp_idx_young", Duration::from_secs(20 * 60)),
            dated("pack-0123.pack", hours(2)),
            dated("pack-0123.idx", hours(2)),
            dated("pack-0123.keep", hours(2)),
        ];
        assert_eq!(remove_leftovers(&[dir.path().to_owned()]), stale.len());
        assert!(stale.iter().all(|p| !p.exists()));
        assert!(kept.iter().all(|p| p.exists()));
    }

    #[test]
    fn reflog_lines_are_read_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("logs").join(STATE_REF);
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        let (a, b) = ("a".repeat(40), "b".repeat(40));
        let zero = "0".repeat(40);
        std::fs::write(
            &log,
            format!("{zero} {a} N <e> 1 +0000\tloopx: init\n{a} {b} N <e> 2 +0000\tloopx: add x\n"),
        )
        .unwrap();
        let moves = state_reflog(dir.path());
        assert_eq!(moves.len(), 2);
        assert_eq!(moves[1].old, Oid(a));
        assert_eq!(moves[1].message, "loopx: add x");
    }
}
