//! Whether a command runs under an agent runtime even when its own
//! environment says nothing: its ancestors' (issue 45).
//!
//! An agent's shell can scrub what it passes on (`env -i git loopx …`,
//! `LOOPX_AGENT= …`), but it cannot change the environment its own
//! ancestors were started with, nor who started them. So a command that
//! finds no marker of a runtime in its environment walks up its process
//! ancestry (Linux's `/proc`) and is taken to run inside a runtime when
//!
//! - an ancestor's environment, as it was when that process started, holds
//!   a runtime's marker (`model::runtime::detect`): the shell tool of every
//!   runtime git-loopx names, and the command `git loopx run` starts, which
//!   it marks; or
//! - an ancestor is a process git-loopx governs: one that `git loopx run`
//!   is, or that `git loopx mcp` or a runtime's hook program serves. Those
//!   record it here, host-locally, under the git common dir's
//!   `loopx/governed/`, one file per process named by its pid and its start
//!   time (so a recycled pid never matches), holding the runtime's name.
//!
//! What this does not see: a process that left its ancestry (a daemon, a
//! `setsid` child reparented to init), or something the agent wrote for the
//! person to run later (their shell's files). The signatures of
//! `gate_signers` are what stop those (docs/gates.md).

use std::path::{Path, PathBuf};

use crate::model::runtime::{detect, Inside, Runtime};

/// How many ancestors are looked at, at most.
const MAX_DEPTH: usize = 64;

/// A process on this host: its pid and the start time the kernel gives it
/// (clock ticks since boot), which together name it for its whole life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
    start: u64,
}

/// What `/proc/<pid>/stat` says of a process: its name, parent and start.
struct Stat {
    comm: String,
    ppid: u32,
    start: u64,
}

fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid … starttime(22nd)`: comm may hold spaces and
    // parentheses, so the fields are read after the last `)`.
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_owned();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    Some(Stat {
        comm,
        ppid: rest.get(1)?.parse().ok()?,
        start: rest.get(19)?.parse().ok()?,
    })
}

/// The environment process `pid` was started with (empty when it cannot
/// be read).
fn environ(pid: u32) -> Vec<(String, String)> {
    let Ok(bytes) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return Vec::new();
    };
    bytes
        .split(|&b| b == 0)
        .filter_map(|kv| {
            let kv = String::from_utf8_lossy(kv);
            let (k, v) = kv.split_once('=')?;
            Some((k.to_owned(), v.to_owned()))
        })
        .collect()
}

/// This process's ancestors, parent first, up to pid 1.
fn ancestors() -> Vec<(Process, String)> {
    let mut out = Vec::new();
    let Some(me) = stat(std::process::id()) else {
        return out;
    };
    let mut pid = me.ppid;
    // Pid 1 too: in a sandbox's own pid namespace (Codex's on Linux) it is
    // the sandbox's first process, started with the agent's environment.
    while pid >= 1 && out.len() < MAX_DEPTH {
        let Some(s) = stat(pid) else { break };
        out.push((
            Process {
                pid,
                start: s.start,
            },
            s.comm,
        ));
        pid = s.ppid;
    }
    out
}

fn dir(common_dir: &Path) -> PathBuf {
    common_dir.join("loopx").join("governed")
}

fn record_path(common_dir: &Path, p: Process) -> PathBuf {
    dir(common_dir).join(format!("{}-{}", p.pid, p.start))
}

/// The runtime a governed process's record names, if it has one.
fn recorded(common_dir: &Path, p: Process) -> Option<Runtime> {
    let name = std::fs::read_to_string(record_path(common_dir, p)).ok()?;
    Some(Runtime::from_name(name.trim()).unwrap_or(Runtime::Generic))
}

/// The runtime this command runs under, from its ancestors (see the module
/// doc), or `None`. `common_dir` is the repository's git common dir.
pub fn detect_ancestry(common_dir: &Path) -> Option<Inside> {
    for (p, comm) in ancestors() {
        let env = environ(p.pid);
        let var = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        if let Some(inside) = detect(var) {
            return Some(Inside {
                runtime: inside.runtime,
                marker: format!(
                    "{} in the environment of process {} ({comm})",
                    inside.marker, p.pid
                ),
            });
        }
        if let Some(runtime) = recorded(common_dir, p) {
            return Some(Inside {
                runtime,
                marker: format!("process {} ({comm}) is governed by git-loopx", p.pid),
            });
        }
    }
    None
}

/// The programs between a runtime and the git-loopx it starts, which are
/// not the runtime itself: shells, `env`, `git` (which runs `git loopx`).
fn is_go_between(comm: &str) -> bool {
    matches!(
        comm,
        "sh" | "bash"
            | "dash"
            | "zsh"
            | "fish"
            | "ksh"
            | "env"
            | "git"
            | "git-loopx"
            | "timeout"
            | "nohup"
            | "npx"
            | "npm"
    )
}

/// A process git-loopx governs, recorded until [`Governed::end`] or drop.
pub struct Governed {
    path: PathBuf,
}

impl Governed {
    /// Records this very process (`git loopx run`: everything it starts is
    /// the agent's).
    pub fn this_process(common_dir: &Path, runtime: Runtime) -> Option<Governed> {
        let s = stat(std::process::id())?;
        let me = Process {
            pid: std::process::id(),
            start: s.start,
        };
        write(common_dir, me, runtime)
    }

    /// Records the runtime this process serves (`git loopx mcp`, a hook
    /// program): its nearest ancestor that is not a shell or `git`.
    pub fn runtime_served(common_dir: &Path, runtime: Runtime) -> Option<Governed> {
        let (p, _) = ancestors()
            .into_iter()
            .find(|(_, comm)| !is_go_between(comm))?;
        write(common_dir, p, runtime)
    }

    /// [`Governed::runtime_served`] in the repository of `ctx` (a hook
    /// program's).
    pub fn served_in(ctx: &super::Context, runtime: Runtime) -> Option<Governed> {
        Governed::runtime_served(ctx.store.common_dir(), runtime)
    }

    /// Keeps the record after this value is dropped: a hook program ends
    /// long before the runtime it serves (whose record goes once it ends).
    pub fn keep(self) {
        std::mem::forget(self);
    }

    /// For `git loopx mcp` in the repository containing `dir`: records the
    /// runtime that started it, unless the server was started by hand from
    /// a terminal (a person trying it out: their own shell would be
    /// recorded).
    pub fn mcp_client(dir: &Path) -> Option<Governed> {
        use std::io::IsTerminal as _;
        if std::io::stdin().is_terminal() {
            return None;
        }
        let store = crate::store::GixStore::discover(dir).ok()?;
        Governed::runtime_served(store.common_dir(), Runtime::Generic)
    }
}

impl Drop for Governed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn write(common_dir: &Path, p: Process, runtime: Runtime) -> Option<Governed> {
    let path = record_path(common_dir, p);
    std::fs::create_dir_all(dir(common_dir)).ok()?;
    std::fs::write(&path, runtime.name()).ok()?;
    prune(common_dir);
    Some(Governed { path })
}

/// Drops the records of processes that have ended.
fn prune(common_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir(common_dir)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, start)) = name.to_str().and_then(|n| n.split_once('-')) else {
            continue;
        };
        let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else {
            continue;
        };
        if stat(pid).is_none_or(|s| s.start != start) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_parent_and_a_start() {
        let me = stat(std::process::id()).expect("/proc/self/stat reads");
        assert!(me.ppid > 0);
        assert!(me.start > 0);
        assert!(!ancestors().is_empty());
    }

    #[test]
    fn a_record_names_a_live_process_and_goes_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let g = Governed::this_process(dir.path(), Runtime::Generic).unwrap();
        let s = stat(std::process::id()).unwrap();
        let me = Process {
            pid: std::process::id(),
            start: s.start,
        };
        assert_eq!(recorded(dir.path(), me), Some(Runtime::Generic));
        // A recycled pid (another start time) does not match.
        let other = Process {
            pid: me.pid,
            start: me.start + 1,
        };
        assert_eq!(recorded(dir.path(), other), None);
        drop(g);
        assert_eq!(recorded(dir.path(), me), None);
    }
}
