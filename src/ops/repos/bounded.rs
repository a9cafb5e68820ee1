//! A listed repository is read within a time limit, so one that cannot be
//! read holds up none of the others (`status --all-repos`, `watch
//! --all-repos`, the page of every repository).
//!
//! First, without waiting, a repository with a named pipe (or a socket, or
//! a device) where git reads a file to open it is refused by name
//! (`store::special`). Then the read runs on a thread of its own, waited
//! for at most [`READ_LIMIT`]: a read that waits on something else (a pipe
//! among the objects or the cache, a network mount that does not answer)
//! is given up on, and the repository is reported unreadable in its place.
//!
//! Invariant: threads left waiting do not pile up. A thread given up on
//! cannot be stopped; while it waits, its repository is not read again but
//! reported at once (the repositories still waited on are this process's,
//! in [`WAITING`]), so a page polled every two seconds leaves one thread
//! per such repository (one per `serve` worker at most, for reads started
//! at once). When the thread returns, it takes its repository off, and the
//! next read is a fresh one. A read given up on that does return has done
//! its work (a `watch` look delivers what it found); only its answer is
//! dropped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use crate::model::{Code, Refusal};
use crate::Result;

/// How long one listed repository may take to be read. Reading one takes
/// milliseconds; the limit is for a read that would never return.
pub const READ_LIMIT: Duration = Duration::from_secs(10);

/// The listed repositories whose read was given up on and has not
/// returned, with when it started.
static WAITING: Mutex<BTreeMap<PathBuf, Instant>> = Mutex::new(BTreeMap::new());

fn waiting() -> std::sync::MutexGuard<'static, BTreeMap<PathBuf, Instant>> {
    WAITING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `read` on the listed repository at `path`, within [`READ_LIMIT`];
/// an error in its place when it cannot be opened without waiting, did not
/// answer in time, or an earlier read of it still has not returned.
pub fn read_listed<T: Send + 'static>(
    path: &Path,
    read: impl FnOnce(&Path) -> Result<T> + Send + 'static,
) -> Result<T> {
    if !path.is_absolute() {
        return Err(Refusal::invalid_input(format!(
            "{path:?} is not an absolute path: the list holds absolute paths"
        ))
        .with_hint("`git loopx repos list` shows the list's file: edit the line by hand")
        .into());
    }
    crate::store::special::check_listed(path)?;
    if let Some(since) = waiting().get(path) {
        return Err(unanswered(path, since.elapsed(), true));
    }
    let started = Instant::now();
    let (tx, rx) = mpsc::sync_channel(1);
    let owned = path.to_owned();
    let thread = std::thread::Builder::new()
        .name("loopx-listed-repo".into())
        .spawn(move || {
            let result = read(&owned);
            // Under the lock: the reader either takes the answer or has
            // listed the repository as waited on, never neither.
            let mut waiting = waiting();
            if tx.send(result).is_err() {
                waiting.remove(&owned);
            }
        });
    if let Err(e) = thread {
        return Err(Refusal::new(
            Code::GitFailed,
            format!("no thread to read the repository: {e}"),
        )
        .into());
    }
    match rx.recv_timeout(READ_LIMIT) {
        Ok(result) => result,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            let mut waiting = waiting();
            if let Ok(result) = rx.try_recv() {
                return result;
            }
            waiting.insert(path.to_owned(), started);
            drop(rx);
            Err(unanswered(path, started.elapsed(), false))
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(Refusal::new(
            Code::GitFailed,
            "reading the repository failed (see the standard error)",
        )
        .into()),
    }
}

/// The error of a read given up on now (`again`: of a repository still
/// waited on, `waited` since its read started).
fn unanswered(path: &Path, waited: Duration, again: bool) -> crate::Error {
    let what = match again {
        false => format!(
            "the repository was not read within {} s",
            READ_LIMIT.as_secs()
        ),
        true => format!(
            "the repository is not read again: the read started {} s ago has not returned",
            waited.as_secs()
        ),
    };
    let p = path.display();
    Refusal::new(
        Code::GitFailed,
        format!("{what} (a named pipe or a device among its files, or a disk that does not answer?)"),
    )
    .with_hint(format!(
        "look for one (`find {p} -type p -o -type c -o -type b -o -type s`), or take the repository off your list (`git loopx repos remove {p}`)"
    ))
    .into()
}
