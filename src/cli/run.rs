//! `git loopx run`: the host loop as a command, with its signals and clock.

use std::io::Read as _;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cli::{emit_text, GlobalArgs, Output};
use crate::model::Timestamp;
use crate::ops::args::enum_arg;
use crate::ops::prompt::Runtime;
use crate::ops::run::{self, Host, RunArgs, Turn};
use crate::render;
use crate::session::Context;
use crate::{Error, Result};

/// Run this agent's turns: the generic host loop, as a command.
///
/// Each turn: decide (`should-run`; a `run` is recorded as by `should-run
/// --turn K`, K being `<agent>-run-<time>-<nonce>-<n>`, while a skip writes
/// nothing) → when the decision is `run`, run
/// COMMAND through `sh -c` (pipes, quoting and `&&` work as in a shell) in
/// the top directory of the worktree, with the turn's prompt (`git loopx
/// prompt --turn K`) on its standard input and in $LOOPX_PROMPT, and
/// $LOOPX_AGENT, $LOOPX_TURN and $LOOPX_GOAL set → check that the turn wrote
/// back (a writeback with turn K by this agent) → wait the decision's
/// `scheduler_hint.wake_after_seconds`, then decide again.
///
/// Standard output has one line per turn (turn key, todo, decision, the
/// agent's exit status, whether it wrote back, when the next decision comes)
/// and a last line saying why the loop ended; with --json, only one JSON
/// object when it ends, with every turn. The agent's own output goes to
/// standard error.
///
/// The agent command leads a process group of its own: a turn that runs
/// past --turn-timeout is stopped whole (SIGTERM, then SIGKILL 5s later),
/// and it cannot read the terminal (its input is the prompt). A stopped
/// turn is over for good: every later write naming it (--turn K, or
/// $LOOPX_TURN, which whatever the agent starts inherits) is refused, so a
/// process that left the group (setsid, a daemon) cannot write back for
/// it, and on Linux every process still carrying its $LOOPX_TURN is killed.
///
/// The loop ends (exit 0) when the goal is stopped or finished, after
/// --max-turns turns, or with --until-idle at the first decision that is
/// not `run`. It stops with exit 1 (`agent_failed`) after --max-failures
/// failed turns in a row: the agent exited non-zero, was killed or timed
/// out, or recorded no writeback for its turn. Ctrl-C (SIGINT) or SIGTERM
/// ends it with exit 130 (`interrupted`), nothing left half-written: a
/// SIGINT is passed on to a running agent, as a terminal passes Ctrl-C to
/// a shell's job, while on SIGTERM a running turn is let finish; SIGHUP (the
/// terminal went away) stops the running turn as --turn-timeout does, then
/// ends the loop the same way; a wait is cut short. Decisions use $LOOPX_NOW when it is set; waits always use the
/// real clock.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent command, run by `sh -c` each turn.
    #[arg(long, value_name = "COMMAND")]
    cmd: String,
    /// Stop after N turns in which the agent ran.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_turns: Option<u32>,
    /// Exit 0 at the first decision that is not `run`, instead of waiting;
    /// between turns that run, decide again at once.
    #[arg(long)]
    until_idle: bool,
    /// Stop (exit 1) after N failed turns in a row; 0 never stops.
    #[arg(long, value_name = "N", default_value_t = 3)]
    max_failures: u32,
    /// Stop an agent turn that runs this long (e.g. 30m, 90s), and count it
    /// failed; 0, the default, never stops one.
    #[arg(long, value_name = "DURATION", value_parser = super::sync::timeout_arg)]
    turn_timeout: Option<Duration>,
    /// The runtime the prompt is written for: claude-code, codex or generic.
    #[arg(long, value_parser = enum_arg::<Runtime>, default_value = "generic")]
    runtime: Runtime,
    /// A capability this agent has now (repeatable).
    #[arg(long = "capability", value_name = "CAP")]
    capability: Vec<String>,
}

pub fn run(ctx: &mut Context, global: &GlobalArgs, args: &Args) -> Result<Output> {
    let run_args = RunArgs {
        cmd: args.cmd.clone(),
        max_turns: args.max_turns,
        until_idle: args.until_idle,
        max_failures: args.max_failures,
        turn_timeout: args.turn_timeout.filter(|t| !t.is_zero()),
        runtime: args.runtime,
        capabilities: args.capability.clone(),
    };
    let mut host = Terminal::new(global.json)?;
    let (report, failure) = run::run(ctx, &run_args, &mut host)?;
    let text = render::run::end_line(&report);
    let mut out = Output::new(report, text);
    out.failure = failure;
    Ok(out)
}

/// The loop's surroundings in a process: the clock, SIGINT and SIGTERM, and
/// a line on standard output per turn (none under --json).
struct Terminal {
    json: bool,
    /// Whether SIGINT, SIGTERM, and SIGHUP arrived; and SIGINT since last
    /// asked.
    signalled: [Arc<AtomicBool>; 4],
    /// Read end of the pipe the signal handlers write to, to wake a wait.
    wake: UnixStream,
    handlers: Vec<signal_hook::SigId>,
}

impl Terminal {
    fn new(json: bool) -> Result<Self> {
        let fail = |e: std::io::Error| {
            Error::invalid_input(format!(
                "cannot install the SIGINT/SIGTERM/SIGHUP handlers: {e}"
            ))
        };
        let signalled = [(); 4].map(|()| Arc::new(AtomicBool::new(false)));
        let (wake, wake_writer) = UnixStream::pair().map_err(fail)?;
        let mut handlers = Vec::new();
        let [int, term, hup] = [
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGHUP,
        ];
        for (signal, flag) in [int, term, hup, int].into_iter().zip(&signalled) {
            handlers.push(signal_hook::flag::register(signal, flag.clone()).map_err(fail)?);
        }
        // After the flags: handlers run in order, so a woken wait sees them.
        for signal in [int, term, hup] {
            let writer = wake_writer.try_clone().map_err(fail)?;
            handlers.push(signal_hook::low_level::pipe::register(signal, writer).map_err(fail)?);
        }
        Ok(Terminal {
            json,
            signalled,
            wake,
            handlers,
        })
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        for id in self.handlers.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

impl Host for Terminal {
    fn now(&self) -> Result<Timestamp> {
        super::now()
    }

    fn sleep(&self, seconds: u64) -> bool {
        let deadline = Instant::now() + Duration::from_secs(seconds);
        let mut buf = [0u8; 64];
        loop {
            if self.interrupted() {
                return false;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            let woken = self
                .wake
                .set_read_timeout(Some(left))
                .and_then(|()| (&self.wake).read(&mut buf));
            if !matches!(woken, Ok(n) if n > 0) {
                // A timeout, or a pipe that cannot be read: never spin.
                std::thread::sleep(left.min(Duration::from_millis(100)));
            }
        }
    }

    fn interrupted(&self) -> bool {
        self.signalled[..3].iter().any(|s| s.load(Ordering::SeqCst))
    }

    fn ctrl_c(&self) -> bool {
        self.signalled[3].swap(false, Ordering::SeqCst)
    }

    fn hangup(&self) -> bool {
        self.signalled[2].load(Ordering::SeqCst)
    }

    fn turn(&mut self, turn: &Turn) {
        if !self.json {
            emit_text(&render::run::turn_line(turn), "");
        }
    }
}
