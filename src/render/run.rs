//! `git loopx run`: one line a turn, and the line that ends the loop.

use crate::ops::run::{End, RunReport, Turn};

/// How the agent's turn ended: `exit 7`, `killed by signal 2`, `not run`.
pub fn agent_ended(t: &Turn) -> String {
    match (t.agent_ran, t.exit_code, t.signal) {
        (false, _, _) => "not run".to_owned(),
        _ if t.timed_out => "stopped at --turn-timeout".to_owned(),
        (true, Some(code), _) => format!("exit {code}"),
        (true, None, Some(signal)) => format!("killed by signal {signal}"),
        (true, None, None) => "ended".to_owned(),
    }
}

/// `turn <key>  <todo>  <action>  agent: …  writeback: …  next: …`
pub fn turn_line(t: &Turn) -> String {
    let todo = t.todo.as_deref().unwrap_or("-");
    let agent = format!("agent: {}", agent_ended(t));
    let writeback = match t.wrote_back {
        None => String::new(),
        Some(true) => "  writeback: yes".to_owned(),
        Some(false) => "  writeback: NONE for this turn".to_owned(),
    };
    let next = match t.next_wake_seconds {
        None => "end".to_owned(),
        Some(0) => "now".to_owned(),
        Some(s) => format!("in {s}s"),
    };
    format!(
        "turn {}  {todo}  {}  {agent}{writeback}  next: {next}",
        t.key, t.effective_action
    )
}

/// The last line: why the loop ended, after how many turns.
pub fn end_line(r: &RunReport) -> String {
    let ran = format!("{} turn(s) run", r.turns_run);
    let why = r.end_reason.as_deref().unwrap_or_default();
    match r.end {
        End::Idle => format!("idle after {ran}: {why}"),
        End::Stopped => format!("stopped after {ran}: {why}"),
        End::MaxTurns => format!("stopped after {ran}: --max-turns reached"),
        End::AgentFailed => format!("stopped after {ran}: the agent command kept failing"),
        End::Interrupted => format!("interrupted after {ran}"),
        End::Error => format!("stopped after {ran}: an error (below)"),
    }
}
