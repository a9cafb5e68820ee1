//! An agent's turn as a child process (`run`): `sh -c` with the prompt on
//! its standard input, in a process group of its own that is stopped whole
//! at the turn's time limit, with the loop's Ctrl-C and hang-up passed on;
//! and what a stopped turn left behind, found by its environment and
//! killed.

use std::io::Write as _;
use std::os::fd::AsFd as _;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// What the loop hears while a turn runs.
pub struct Signals<'a> {
    /// Whether SIGINT (Ctrl-C) arrived since last asked: passed on to the
    /// agent's group.
    pub ctrl_c: &'a dyn Fn() -> bool,
    /// Whether SIGHUP arrived: the agent's group is stopped.
    pub hangup: &'a dyn Fn() -> bool,
}

/// Runs `cmd` through `sh -c` in `dir` with `env` added, `input` on its
/// standard input. Its output goes to our standard error, so our standard
/// output stays the loop's own. It leads a process group of its own,
/// stopped whole past `limit` (then `None`); a Ctrl-C the loop gets is
/// passed on to that group, as a terminal passes it to a shell's job, and
/// a hang-up stops it (SIGTERM, then SIGKILL after
/// [`crate::git_cmd::STOP_GRACE`]).
pub fn run(
    dir: &Path,
    cmd: &str,
    env: &[(&str, &str)],
    input: &str,
    limit: Duration,
    signals: &Signals<'_>,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    let stdout = std::io::stderr().as_fd().try_clone_to_owned()?;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::from(stdout))
        .process_group(0)
        .spawn()?;
    // Written from a thread: an agent that never reads its input must not
    // block the loop on a full pipe. It may close it early (EPIPE is fine).
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let text = input.to_owned();
    // Not joined: a process the agent left behind may hold the pipe open.
    std::thread::spawn(move || {
        let _ = stdin.write_all(text.as_bytes());
    });
    use rustix::process::{kill_process_group, Signal};
    let group = rustix::process::Pid::from_raw(child.id() as i32).expect("a child has a pid");
    let mut hung_up: Option<std::time::Instant> = None;
    let status = crate::git_cmd::wait_limited(&mut child, limit, true, &mut |_| {
        if (signals.ctrl_c)() {
            let _ = kill_process_group(group, Signal::INT);
        }
        match hung_up {
            None if (signals.hangup)() => {
                let _ = kill_process_group(group, Signal::TERM);
                hung_up = Some(std::time::Instant::now());
            }
            Some(at) if at.elapsed() >= crate::git_cmd::STOP_GRACE => {
                let _ = kill_process_group(group, Signal::KILL);
            }
            _ => {}
        }
    })?;
    if hung_up.is_some() {
        crate::git_cmd::stop_group(child.id());
    }
    Ok(status)
}

/// Kills, on Linux, every process of this user whose environment holds
/// `LOOPX_TURN=<key>`: what a stopped turn left running, in its process
/// group or out of it. A turn's key is unique (`turn_series`), so no
/// other turn's process is touched. Elsewhere, or for a process that
/// cleared the variable, the fence of `session::local::check_turn_open` stands
/// alone.
pub fn stop_strays(key: &str) {
    let wanted = format!("LOOPX_TURN={key}");
    let me = std::process::id();
    for _ in 0..20 {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return;
        };
        let mut found = false;
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == me {
                continue;
            }
            let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
                continue;
            };
            if !environ.split(|b| *b == 0).any(|v| v == wanted.as_bytes()) {
                continue;
            }
            let target = i32::try_from(pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw);
            if let Some(target) = target {
                if rustix::process::kill_process(target, rustix::process::Signal::KILL).is_ok() {
                    found = true;
                }
            }
        }
        if !found {
            return;
        }
        // One that forked while it was looked for is found next time.
        std::thread::sleep(Duration::from_millis(20));
    }
}
