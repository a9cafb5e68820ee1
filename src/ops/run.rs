//! `run`: the host loop of docs/agent-loop.md as a command.
//!
//! Each turn: decide (`should-run --turn K`, which records the turn's
//! receipt when it says run, and nothing on a skip) → when the decision is
//! `run`, run the agent command through `sh -c` with the turn's prompt, in
//! a process group of its own (stopped whole at `--turn-timeout`) → check
//! that the turn wrote back (a writeback with turn K by this agent) → wait
//! `scheduler_hint.wake_after_seconds`. The loop never stops in the middle
//! of a write: a signal is looked at only between the steps of a turn
//! ([`Host::interrupted`]), and every write is one compare-and-swap
//! commit, so what a turn wrote is whole or absent.
//!
//! A turn stopped — past `--turn-timeout`, on SIGHUP, or while the loop
//! was told to end — is over for good: `run` records it
//! (`local::end_turn`), and from then on every write naming the turn
//! (`--turn K`, or `LOOPX_TURN=K` in the writer's environment, which all
//! the agent starts inherits) is refused, so a process that escaped the
//! turn's process group (`setsid`, a daemon) cannot write back with the
//! turn's claim. Best effort beside that fence: what is left of the group,
//! and on Linux every process of this user whose environment carries the
//! turn's key, is killed.
//!
//! The clock, the waiting, the signals and the progress output belong to the
//! caller ([`Host`]); this module decides, runs the agent and reports.

use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{Code, Refusal, RunKind, Timestamp};
use crate::ops::prompt::{self, Runtime, Surface};
use crate::ops::{non_empty, should_run};
use crate::session::{local, Context};
use crate::supervise::agent;
use crate::{Error, Result};

/// What the loop needs from its surroundings.
pub trait Host {
    /// The time decisions are made at (`LOOPX_NOW` when set, else the clock).
    fn now(&self) -> Result<Timestamp>;
    /// Waits `seconds` (the real clock); false when a signal cut it short.
    fn sleep(&self, seconds: u64) -> bool;
    /// Whether SIGINT or SIGTERM arrived.
    fn interrupted(&self) -> bool;
    /// Whether SIGINT (Ctrl-C) arrived since last asked: each is passed on
    /// to a running agent.
    fn ctrl_c(&self) -> bool;
    /// Whether SIGHUP arrived (the terminal went away): a running agent is
    /// stopped, and the loop ends ([`Host::interrupted`] says so too).
    fn hangup(&self) -> bool;
    /// One turn is over (called once per turn, in order; not for a last
    /// decision that ends the loop, which the report's `end` tells).
    fn turn(&mut self, turn: &Turn);
}

#[derive(Debug, Clone)]
pub struct RunArgs {
    /// The agent command, given to `sh -c`.
    pub cmd: String,
    /// Stop after this many turns in which the agent ran.
    pub max_turns: Option<u32>,
    /// Stop (successfully) at the first decision that is not `run`.
    pub until_idle: bool,
    /// Stop after this many failed turns in a row (0: never).
    pub max_failures: u32,
    /// Stop an agent turn (its whole process group) that runs this long.
    pub turn_timeout: Option<Duration>,
    pub runtime: Runtime,
    pub capabilities: Vec<String>,
}

/// One turn: the decision and, when it ran, what the agent did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Turn {
    /// The turn key (`LOOPX_TURN`), under which a turn that runs records
    /// its receipt (a skip records none).
    pub key: String,
    pub decision: String,
    pub effective_action: String,
    pub reason: String,
    /// The todo the decision selected.
    pub todo: Option<String>,
    /// The agent's exit status; absent when it did not run (or a signal ended it).
    pub exit_code: Option<i32>,
    /// The signal that ended the agent, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Whether the turn ran past `--turn-timeout` and was stopped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// Whether the agent ran this turn.
    pub agent_ran: bool,
    /// Whether the turn recorded a writeback with its key (when the agent ran).
    pub wrote_back: Option<bool>,
    /// Seconds until the next decision; absent when the loop ends here.
    pub next_wake_seconds: Option<u64>,
}

impl Turn {
    /// A turn that ran and failed: the agent exited non-zero, was killed
    /// or timed out, or did not write back.
    pub fn failed(&self) -> bool {
        self.agent_ran && (self.exit_code != Some(0) || self.wrote_back != Some(true))
    }
}

/// Why the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// `--until-idle`, and the decision was not `run`.
    Idle,
    /// The goal is stopped or finished (`stop_until_explicit_resume`).
    Stopped,
    /// `--max-turns` turns ran.
    MaxTurns,
    /// `--max-failures` failed turns in a row.
    AgentFailed,
    /// SIGINT or SIGTERM.
    Interrupted,
    /// A decision, the prompt, the agent's start or the writeback check
    /// failed (the error says why).
    Error,
}

#[derive(Debug, Serialize)]
pub struct RunReport {
    pub agent: String,
    pub goal: Option<String>,
    pub command: String,
    pub turns: Vec<Turn>,
    /// Turns in which the agent ran.
    pub turns_run: u32,
    pub end: End,
    /// The last decision's reason, for an idle or stopped end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_reason: Option<String>,
}

/// Runs the loop until it ends; the error, if the end is one, comes second.
pub fn run(
    ctx: &mut Context,
    args: &RunArgs,
    host: &mut dyn Host,
) -> Result<(RunReport, Option<Error>)> {
    let cmd = non_empty("--cmd", &args.cmd)?;
    let agent = ctx
        .agent()
        .ok_or_else(|| {
            Error::from(
                Refusal::invalid_input("git loopx run needs an agent to run as").with_hint(
                    "pass --agent <id>, set LOOPX_AGENT, or `git config loopx.agent <id>`",
                ),
            )
        })?
        .to_owned();
    // Refuse a missing or unreadable state before the first turn.
    ctx.load()?;
    // Everything this loop starts is the agent's, whatever its environment
    // says by the time it runs a command (`governed`).
    let _governed = crate::session::governed::Governed::this_process(
        ctx.store.common_dir(),
        crate::model::runtime::Runtime::Generic,
    );
    let series = turn_series(&agent, host.now()?);
    let mut report = RunReport {
        agent: agent.clone(),
        goal: None,
        command: cmd.clone(),
        turns: Vec::new(),
        turns_run: 0,
        end: End::Error,
        end_reason: None,
    };
    let mut failures = 0u32;
    for n in 1.. {
        if host.interrupted() {
            return Ok(interrupted(report));
        }
        ctx.now = host.now()?;
        let key = format!("{series}-{n}");
        // Recorded under K only when the decision is to run (a skip writes
        // nothing, SPEC §2.3); the recorded decision is the one the turn follows.
        let decided = match decide(ctx, &args.capabilities, &key) {
            Ok(decided) => decided,
            Err(e) => return Ok((report, Some(e))),
        };
        report.goal = decided.goal.clone();
        let d = &decided.decision;
        let mut turn = Turn::decided(&key, d);
        let wake = d["scheduler_hint"]["wake_after_seconds"]
            .as_i64()
            .unwrap_or(0)
            .max(0) as u64;
        if d["should_run"] != Value::Bool(true) {
            let stops = d["scheduler_hint"]["action"] == "stop_until_explicit_resume";
            match skipped(args, host, &mut report, turn, stops, wake) {
                Flow::Next => continue,
                Flow::End => return Ok((report, None)),
                Flow::Interrupted => return Ok(interrupted(report)),
            }
        }

        let status = match launch(ctx, args, host, &cmd, &agent, &key) {
            Ok(status) => status,
            Err(e) => {
                report.turns.push(turn);
                return Ok((report, Some(e)));
            }
        };
        turn.agent_ran = true;
        turn.timed_out = status.is_none();
        if turn.timed_out || host.interrupted() {
            cut_short(ctx, host, &key, turn.timed_out)?;
        }
        turn.exit_code = status.and_then(|s| s.code());
        turn.signal = status.and_then(|s| s.signal());
        report.turns_run += 1;
        turn.wrote_back = match wrote_back(ctx, &agent, &key) {
            Ok(found) => Some(found),
            Err(e) => {
                report.turns.push(turn);
                return Ok((report, Some(e)));
            }
        };
        failures = if turn.failed() { failures + 1 } else { 0 };
        if let Some(goal) = &report.goal {
            record(ctx, goal, &agent, &turn);
        }

        let end = end_after_turn(args, host, failures, report.turns_run);
        // --until-idle works through what is ready now: the next decision
        // follows at once, and the first that is not `run` ends the loop.
        let wake = if args.until_idle { 0 } else { wake };
        turn.next_wake_seconds = end.is_none().then_some(wake);
        host.turn(&turn);
        report.turns.push(turn);
        match end {
            Some(End::Interrupted) => return Ok(interrupted(report)),
            Some(End::AgentFailed) => {
                report.end = End::AgentFailed;
                return Ok((report, Some(agent_failed(failures))));
            }
            Some(end) => {
                report.end = end;
                return Ok((report, None));
            }
            None => {}
        }
        if wake > 0 && !host.sleep(wake) {
            return Ok(interrupted(report));
        }
    }
    unreachable!("the turn counter does not run out")
}

impl Turn {
    /// The turn `key` as decided by `d` (a `should-run` decision), before
    /// anything ran.
    fn decided(key: &str, d: &Value) -> Turn {
        Turn {
            key: key.to_owned(),
            decision: text(d, &["decision"]),
            effective_action: text(d, &["effective_action"]),
            reason: text(d, &["reason"]),
            todo: d["selected_todo"]["id"].as_str().map(str::to_owned),
            exit_code: None,
            signal: None,
            timed_out: false,
            agent_ran: false,
            wrote_back: None,
            next_wake_seconds: None,
        }
    }
}

/// How the loop goes on after a skipped turn.
enum Flow {
    Next,
    /// The loop's end is set in the report.
    End,
    Interrupted,
}

/// A turn the decision skipped: the loop ends when the goal `stops` (or,
/// with `--until-idle`, at the first skip), else it sleeps `wake` seconds.
fn skipped(
    args: &RunArgs,
    host: &mut dyn Host,
    report: &mut RunReport,
    mut turn: Turn,
    stops: bool,
    wake: u64,
) -> Flow {
    let end = if stops {
        Some(End::Stopped)
    } else if args.until_idle {
        Some(End::Idle)
    } else {
        None
    };
    if let Some(end) = end {
        // Its line is the loop's last line (the caller's end line).
        report.end = end;
        report.end_reason = Some(format!("{}: {}", turn.effective_action, turn.reason));
        report.turns.push(turn);
        return Flow::End;
    }
    turn.next_wake_seconds = Some(wake);
    host.turn(&turn);
    report.turns.push(turn);
    if host.sleep(wake) {
        Flow::Next
    } else {
        Flow::Interrupted
    }
}

/// Whether the loop ends after a turn the agent ran: a signal, too many
/// failures in a row (`--max-failures`), or `--max-turns` reached.
fn end_after_turn(args: &RunArgs, host: &dyn Host, failures: u32, turns_run: u32) -> Option<End> {
    if host.interrupted() {
        Some(End::Interrupted)
    } else if args.max_failures > 0 && failures >= args.max_failures {
        Some(End::AgentFailed)
    } else if args.max_turns.is_some_and(|max| turns_run >= max) {
        Some(End::MaxTurns)
    } else {
        None
    }
}

/// The end of a loop whose agent failed `failures` turns in a row.
fn agent_failed(failures: u32) -> Error {
    Refusal::new(
        Code::AgentFailed,
        format!(
            "the agent command failed {failures} turn(s) in a row (a non-zero exit, a timeout, or no writeback for the turn)"
        ),
    )
    .with_hint("run the command by hand with the prompt of `git loopx prompt`; `--max-failures 0` never stops")
    .into()
}

/// Runs the agent command on the turn's prompt; its exit status, `None`
/// when it ran past `--turn-timeout`.
fn launch(
    ctx: &Context,
    args: &RunArgs,
    host: &dyn Host,
    cmd: &str,
    agent: &str,
    key: &str,
) -> Result<Option<std::process::ExitStatus>> {
    let prompt = prompt::prompt(
        ctx,
        (args.runtime, Surface::Cli),
        &args.capabilities,
        Some(key),
    )?;
    run_agent(ctx.repo_dir(), cmd, agent, key, &prompt, args, host)
}

/// A turn stopped before its agent finished (its time limit, a signal to
/// `run`): it is over, every later write naming it refused, and the
/// processes it left behind are stopped.
fn cut_short(ctx: &Context, host: &dyn Host, key: &str, timed_out: bool) -> Result<()> {
    let why = match (timed_out, host.hangup()) {
        (true, _) => "stopped at --turn-timeout",
        (false, true) => "stopped: `git loopx run` got SIGHUP",
        (false, false) => "`git loopx run` was interrupted during it",
    };
    local::end_turn(ctx, key, &format!("{why} at {}", host.now()?));
    agent::stop_strays(key);
    Ok(())
}

/// `should-run --turn key`; an unreadable state is an error.
fn decide(
    ctx: &Context,
    capabilities: &[String],
    key: &str,
) -> Result<should_run::ShouldRunReport> {
    match should_run::should_run(ctx, capabilities, Some(key))? {
        (_, Some(e)) => Err(e),
        (decided, None) => Ok(decided),
    }
}

fn interrupted(mut report: RunReport) -> (RunReport, Option<Error>) {
    report.end = End::Interrupted;
    let e = Refusal::new(
        Code::Interrupted,
        format!(
            "interrupted after {} turn(s); nothing was left half-written",
            report.turns.len()
        ),
    );
    (report, Some(e.into()))
}

fn text(d: &Value, path: &[&str]) -> String {
    let mut v = d;
    for key in path {
        v = &v[*key];
    }
    v.as_str().unwrap_or_default().to_owned()
}

/// The turn keys of one `run`: `<agent>-run-<time>-<nonce>`, then `-<n>`
/// per turn — unique per turn, and telling which run made a receipt.
fn turn_series(agent: &str, now: Timestamp) -> String {
    let stamp: String = now
        .to_string()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let nonce = crate::model::ids::nonce();
    format!("{agent}-run-{stamp}-{}", &nonce[..6])
}

/// Runs the agent command through `sh -c` in `dir` (`supervise::agent`),
/// the prompt on its standard input and in `LOOPX_PROMPT`, with the turn's
/// identity in its environment, stopped past `--turn-timeout` (then
/// `None`); Ctrl-C and a hang-up of the loop are passed on.
fn run_agent(
    dir: &Path,
    cmd: &str,
    agent: &str,
    key: &str,
    prompt: &prompt::PromptReport,
    args: &RunArgs,
    host: &dyn Host,
) -> Result<Option<std::process::ExitStatus>> {
    let marker = std::env::var(crate::model::runtime::INSTALLED_MARKER)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "generic".to_owned());
    let env = [
        ("LOOPX_AGENT", agent),
        (crate::model::runtime::INSTALLED_MARKER, marker.as_str()),
        ("LOOPX_TURN", key),
        ("LOOPX_GOAL", prompt.goal.id.as_str()),
        ("LOOPX_PROMPT", prompt.prompt.as_str()),
    ];
    let signals = agent::Signals {
        ctrl_c: &|| host.ctrl_c(),
        hangup: &|| host.hangup(),
    };
    let limit = args.turn_timeout.unwrap_or(Duration::MAX);
    agent::run(dir, cmd, &env, &prompt.prompt, limit, &signals).map_err(|e| {
        Error::from(Refusal::new(
            Code::AgentFailed,
            format!("cannot run the agent command `{cmd}` with sh: {e}"),
        ))
    })
}

/// This host's record of an agent's `run` turns that failed in a row in a
/// goal (a host record: `status` shows it).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Failures {
    pub count: u32,
    /// The last of them.
    pub last: Option<Turn>,
}

fn failures_key(goal: &str, agent: &str) -> String {
    format!("run-failures\0{goal}\0{agent}")
}

/// [`Failures`] of `agent` in `goal` on this host (none when unreadable).
pub fn failures(ctx: &Context, goal: &str, agent: &str) -> Failures {
    let record = ctx.store.records().get(&failures_key(goal, agent));
    record
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// A failed `run` turn as this host remembers it after the agent recovered
/// (`report` lists the ones of its range).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FailedTurn {
    pub at: Timestamp,
    pub agent: String,
    #[serde(flatten)]
    pub turn: Turn,
}

/// How many failed turns a goal's log on this host keeps, newest last.
const FAILED_KEPT: usize = 200;

fn failed_key(goal: &str) -> String {
    format!("run-failed\0{goal}")
}

/// The failed `run` turns of `goal` on this host, oldest first (at most
/// the latest 200; none when unreadable).
pub fn failed_turns(ctx: &Context, goal: &str) -> Vec<FailedTurn> {
    ctx.store
        .records()
        .get(&failed_key(goal))
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Counts a failed turn into [`Failures`] and the goal's log of failed
/// turns; a turn that did not fail clears the count (the log stays).
fn record(ctx: &Context, goal: &str, agent: &str, turn: &Turn) {
    if turn.failed() {
        let mut log = failed_turns(ctx, goal);
        log.push(FailedTurn {
            at: ctx.now,
            agent: agent.to_owned(),
            turn: turn.clone(),
        });
        let extra = log.len().saturating_sub(FAILED_KEPT);
        log.drain(..extra);
        let bytes = serde_json::to_vec(&log).expect("turns serialize");
        ctx.store.records().set(&failed_key(goal), &bytes);
    }
    let count = failures(ctx, goal, agent).count;
    let value = match turn.failed() {
        true => serde_json::to_vec(&Failures {
            count: count + 1,
            last: Some(turn.clone()),
        })
        .expect("a turn serializes"),
        false if count == 0 => return,
        false => Vec::new(),
    };
    ctx.store.records().set(&failures_key(goal, agent), &value);
}

/// Whether this agent recorded a writeback under turn `key`.
fn wrote_back(ctx: &Context, agent: &str, key: &str) -> Result<bool> {
    let (_, state) = ctx.load()?;
    let gs = ctx.goal(&state)?;
    let found = gs
        .runs
        .all_facts()
        .any(|r| r.kind == RunKind::Writeback && r.agent == Some(agent) && r.turn == Some(key));
    Ok(found)
}
