//! Monitors: the schedule `todo add --class continuous_monitor` gives one,
//! and `todo poll`, which records what a monitor turn saw and when the
//! monitor is next due (docs/agent-loop.md, "Monitors").

use serde::{Deserialize, Serialize};

use crate::model::{
    ids, parse_duration, Code, Extra, Monitor, Poll, Refusal, Timestamp, Todo, TodoClass,
    TodoStatus,
};
use crate::ops::non_empty;
use crate::session::Context;
use crate::store::{Message, Oid};
use crate::Result;

/// The shortest cadence a monitor may have.
pub const MIN_EVERY: i64 = 60;
/// The longest cadence a monitor may have.
pub const MAX_EVERY: i64 = 366 * 86_400;

/// Parses `--every`: a duration of at least a minute.
pub fn parse_every(text: &str) -> Result<i64> {
    let seconds = parse_duration(text).ok_or_else(|| {
        Refusal::invalid_input(format!(
            "--every `{text}` is not a duration like 15m, 2h or 1d"
        ))
    })?;
    if seconds < MIN_EVERY {
        return Err(Refusal::invalid_input(format!(
            "--every `{text}` is shorter than a minute: a monitor is polled at most once a minute"
        ))
        .into());
    }
    if seconds > MAX_EVERY {
        return Err(Refusal::invalid_input(format!("--every `{text}` is longer than 366d")).into());
    }
    Ok(seconds)
}

/// Parses `--until`: an RFC 3339 time, or a duration from `now`; it must
/// be later than `now`.
pub fn parse_until(text: &str, now: Timestamp) -> Result<Timestamp> {
    let at = match Timestamp::parse(text) {
        Some(t) => t,
        None => {
            let seconds = parse_duration(text).ok_or_else(|| {
                Refusal::invalid_input(format!(
                    "--until `{text}` is neither an RFC 3339 time (2026-12-31T18:00:00Z) nor a duration from now (8h, 7d)"
                ))
            })?;
            now.plus_seconds(seconds)
        }
    };
    if at <= now {
        return Err(Refusal::invalid_input(format!(
            "--until `{text}` is not in the future (now is {now})"
        ))
        .into());
    }
    if at > Timestamp::MAX {
        return Err(Refusal::invalid_input(format!(
            "--until `{text}` is after {}",
            Timestamp::MAX
        ))
        .into());
    }
    Ok(at)
}

/// The monitor a new todo of `class` gets from the flags of `todo add`
/// (`--every`, `--until`, `--watch-only`): `Some` for a
/// `continuous_monitor` (which needs `--every`), refused flags on any other
/// class. A new monitor is first due one cadence from now, as in LoopX.
pub fn for_new_todo(
    class: TodoClass,
    every: Option<&str>,
    until: Option<&str>,
    watch_only: bool,
    now: Timestamp,
) -> Result<Option<Monitor>> {
    if class != TodoClass::ContinuousMonitor {
        if every.is_some() || until.is_some() || watch_only {
            let flag = if every.is_some() {
                "--every"
            } else if until.is_some() {
                "--until"
            } else {
                "--watch-only"
            };
            return Err(Refusal::invalid_input(format!(
                "{flag} is for monitors only, not a {} todo",
                super::snake(&class)
            ))
            .with_hint("add it with --class continuous_monitor --every <duration>")
            .into());
        }
        return Ok(None);
    }
    let Some(every) = every else {
        return Err(Refusal::invalid_input(
            "a continuous_monitor needs --every: how often it is due",
        )
        .with_hint("e.g. git loopx todo add 'watch CI' --class continuous_monitor --every 15m")
        .into());
    };
    let seconds = parse_every(every)?;
    let mut monitor = Monitor::new(every.trim(), now.plus_seconds(seconds));
    monitor.expires_at = until.map(|u| parse_until(u, now)).transpose()?;
    monitor.watch_only = watch_only;
    Ok(Some(monitor))
}

/// `todo poll`, and the `poll_monitor` tool (see `ops::args`).
#[derive(Debug, Clone, clap::Args, Deserialize)]
#[cfg_attr(feature = "mcp", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PollArgs {
    /// The monitor: its id or a unique prefix of one.
    #[arg(value_name = "ID")]
    pub todo: String,
    /// Nothing needs work (the default).
    #[arg(long, conflicts_with = "material")]
    #[serde(default)]
    pub quiet: bool,
    /// The poll found something that needs work (add --next to queue it).
    #[arg(long)]
    #[serde(default)]
    pub material: bool,
    /// What the poll saw (kept with the poll).
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// With --material: add an agent todo for the work found, in the same commit.
    #[arg(long, value_name = "TEXT", requires = "material")]
    pub next: Option<String>,
    /// The epoch your claim was granted (default: recorded on this host).
    #[arg(long)]
    pub epoch: Option<u64>,
}

#[derive(Debug, Serialize)]
pub struct PollReport {
    /// The monitor after the poll.
    pub todo: Todo,
    pub poll: Poll,
    /// The todo a material poll added (`--next`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub follow_up: Option<Todo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
}

/// `todo poll ID [--material] [--note T] [--next T]`: records a poll on a
/// monitor and sets when it is next due (now + its cadence). By the holder
/// of its claim if it is claimed, else by anyone; the claim is kept.
pub fn poll(ctx: &Context, args: &PollArgs) -> Result<PollReport> {
    let note = args
        .note
        .as_deref()
        .map(|n| non_empty("--note", n))
        .transpose()?;
    let next = args
        .next
        .as_deref()
        .map(|n| non_empty("--next", n))
        .transpose()?;
    if next.is_some() && !args.material {
        return Err(Refusal::invalid_input(
            "--next adds a todo for work a poll found: it needs --material",
        )
        .into());
    }
    let agent = ctx.agent().map(str::to_owned);
    let now = ctx.now;
    let nonce = ids::nonce();
    let done = crate::session::mutate(ctx, |state, goal| {
        let gs = state.goals.get_mut(goal).expect("goal exists");
        let id = super::resolve_todo(gs, &args.todo)?;
        let monitor_todo = gs.todos.get_mut(&id).expect("resolved");
        check_pollable(ctx, &id, monitor_todo, agent.as_deref(), args.epoch)?;
        let priority = monitor_todo.priority;
        let monitor = monitor_todo.monitor.as_mut().ok_or_else(|| {
            Refusal::new(
                Code::StateInvalid,
                format!("{id} is a continuous_monitor without a schedule (no `monitor` field)"),
            )
        })?;
        let seconds = cadence_seconds(&id, monitor)?;
        let follow_up_id = next
            .as_deref()
            .map(|text| ids::new_todo_id(goal, text, agent.as_deref(), now, &nonce));
        let record = Poll {
            at: now,
            agent: agent.clone(),
            material: args.material,
            note: note.clone(),
            follow_up: follow_up_id.clone(),
            extra: Extra::new(),
        };
        record_poll(monitor, record.clone(), seconds);
        let due = monitor.next_due_at.expect("set above");
        super::touch(monitor_todo, now);
        let monitor_todo = monitor_todo.clone();
        let follow_up = match (follow_up_id, &next) {
            (Some(fid), Some(text)) => {
                let mut t = Todo::new(
                    fid,
                    goal,
                    text,
                    crate::model::Role::Agent,
                    TodoClass::AdvancementTask,
                    priority,
                    agent.as_deref(),
                    now,
                );
                t.notes.push(crate::model::Note {
                    at: now,
                    agent: agent.clone(),
                    text: format!("found by a poll of monitor {id}"),
                    extra: Extra::new(),
                });
                Some(gs.add_todo(t))
            }
            _ => None,
        };
        let what = if args.material { "material" } else { "quiet" };
        let mut subject = format!("todo poll {id}: {what}, next due {due}");
        if let Some(f) = &follow_up {
            subject.push_str(&format!(", follow-up {}", f.id));
        }
        let mut message = Message::new("todo poll", subject).trailer("Loopx-Todo", id.clone());
        if let Some(a) = &agent {
            message = message.trailer("Loopx-Agent", a.clone());
        }
        Ok(((monitor_todo, record.clone(), follow_up), message))
    })?;
    let (todo, poll, follow_up) = done.value;
    Ok(PollReport {
        todo,
        poll,
        follow_up,
        commit: done.commit,
    })
}

/// Refuses a poll of `todo` that is not a live monitor, or that this
/// caller may not write: an agent must hold its claim (at `epoch` when
/// given) unless it is unclaimed; the person only polls an unclaimed one.
fn check_pollable(
    ctx: &Context,
    id: &str,
    todo: &Todo,
    agent: Option<&str>,
    epoch: Option<u64>,
) -> Result<()> {
    if todo.class != TodoClass::ContinuousMonitor {
        return Err(Refusal::invalid_input(format!(
            "{id} is a {}, not a continuous_monitor: only a monitor is polled",
            super::snake(&todo.class)
        ))
        .into());
    }
    if todo.status == TodoStatus::Done {
        return Err(
            Refusal::invalid_input(format!("{id} is done: a done monitor is not polled")).into(),
        );
    }
    match agent {
        Some(a) => {
            let expected = crate::session::local::expected_epoch(ctx, a, id, epoch);
            crate::model::lease::check_writer(todo, a, expected, ctx.now)?;
        }
        None => {
            if let Some(c) = todo.live_claim(ctx.now) {
                return Err(Refusal::new(
                    Code::NotClaimHolder,
                    format!("{id} is claimed by {} until {}", c.agent, c.expires_at),
                )
                .into());
            }
        }
    }
    Ok(())
}

/// The monitor's cadence in seconds, refused unless it is from 1m to 366d.
fn cadence_seconds(id: &str, monitor: &Monitor) -> Result<i64> {
    parse_duration(&monitor.cadence)
        .filter(|s| (MIN_EVERY..=MAX_EVERY).contains(s))
        .ok_or_else(|| {
            Refusal::new(
                Code::StateInvalid,
                format!(
                    "{id} has cadence `{}`, which is not a duration from 1m to 366d",
                    monitor.cadence
                ),
            )
            .into()
        })
}

/// Records `poll` on `monitor`: checked at its time, due again `seconds`
/// later, the quiet polls in a row counted (a material one resets them and
/// counts a change), and only the latest [`Monitor::KEPT_POLLS`] polls kept.
fn record_poll(monitor: &mut Monitor, poll: Poll, seconds: i64) {
    monitor.last_checked_at = Some(poll.at);
    monitor.next_due_at = Some(poll.at.plus_seconds(seconds).min(Timestamp::MAX));
    if poll.material {
        monitor.consecutive_no_change = 0;
        monitor.material_change_generation = monitor.material_change_generation.saturating_add(1);
    } else {
        monitor.consecutive_no_change = monitor.consecutive_no_change.saturating_add(1);
    }
    monitor.polls.push(poll);
    let excess = monitor.polls.len().saturating_sub(Monitor::KEPT_POLLS);
    monitor.polls.drain(..excess);
}

/// One line about a monitor's schedule at `now`: cadence, next due or
/// expired, last poll. `None` for a todo without a monitor.
pub fn summary(todo: &Todo, now: Timestamp) -> Option<String> {
    let m = todo.monitor.as_ref()?;
    let mut parts = vec![format!("every {}", m.cadence)];
    if m.watch_only {
        parts.push("watch-only".to_owned());
    }
    if m.expired(now) {
        parts.push(format!(
            "expired at {} (not selected again)",
            m.expires_at.expect("expired")
        ));
    } else {
        match m.next_due_at {
            Some(due) if due > now => parts.push(format!("next due {due}")),
            _ => parts.push("due now".to_owned()),
        }
        if let Some(e) = m.expires_at {
            parts.push(format!("until {e}"));
        }
    }
    match m.polls.last() {
        Some(p) => parts.push(format!(
            "last poll {} {}{}",
            p.at,
            if p.material { "material" } else { "quiet" },
            p.agent
                .as_deref()
                .map_or(String::new(), |a| format!(" by {a}"))
        )),
        None => parts.push("never polled".to_owned()),
    }
    Some(format!("monitor: {}", parts.join(", ")))
}
