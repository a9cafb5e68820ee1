//! `todo release [--force] | handoff`: a lease given up, taken back by a
//! person, or passed to another registered agent.

use crate::model::gate::{self, GateAction};
use crate::model::handoff::{parse_markdown, Packet, Tried};
use crate::model::lease::{self, ClaimAction};
use crate::model::{Code, Refusal, State};
use crate::ops::lease::{claimed, ClaimReport, HandoffArgs, LeaseReport, ReleaseArgs};
use crate::ops::{add_note, non_empty, resolve_todo, touch};
use crate::session::{local, mutate, Context};
use crate::store::Message;
use crate::Result;

/// `todo release ID [--epoch] [--force]`.
///
/// An agent releases its own lease. A person (no agent identity) takes any
/// lease back with `--force` ([`take_back`]); an agent's `--force` changes
/// nothing: it still releases only its own lease.
pub fn release(ctx: &Context, args: &ReleaseArgs) -> Result<LeaseReport> {
    let (query, epoch, force) = (args.todo.as_str(), args.epoch, args.force);
    let Some(agent) = ctx.agent().map(str::to_owned) else {
        if force {
            return take_back(ctx, query);
        }
        return Err(Refusal::invalid_input("releasing a lease needs an agent")
            .with_hint(
                "an agent passes --agent <id> (or LOOPX_AGENT, loopx.agent); \
                 a person takes a lease back with `git loopx todo release <id> --force`",
            )
            .into());
    };
    let done = mutate(ctx, |state, goal| {
        let gs = state.goals.get_mut(goal).expect("goal exists");
        let id = resolve_todo(gs, query)?;
        let expected = local::expected_epoch(ctx, &agent, &id, epoch);
        let todo = gs.todos.get_mut(&id).expect("resolved");
        gate::check_reserved(todo, Some(&agent), GateAction::Release)?;
        let refused = |why: String| {
            let r = Refusal::new(Code::NotClaimHolder, why);
            if force {
                r.with_hint("--force is the person's override: ask the person if the lease must be taken back")
            } else {
                r
            }
        };
        let standing = lease::check_writer(todo, &agent, expected, ctx.now).map_err(|r| {
            if force && r.code == Code::NotClaimHolder {
                refused(format!(
                    "{}; an agent cannot take another agent's lease, even with --force",
                    r.message
                ))
            } else {
                r
            }
        })?;
        match standing {
            lease::Standing::Holder(e) => {
                lease::release(todo);
                touch(todo, ctx.now);
                let message = Message::new(
                    "todo release",
                    format!("todo release {id} by {agent} (epoch {e})"),
                )
                .trailer("Loopx-Todo", id.clone());
                Ok((todo.clone(), message))
            }
            lease::Standing::Unclaimed => {
                Err(refused(format!("{id} is not claimed by {agent}")).into())
            }
        }
    })?;
    local::forget_grant(ctx, &agent, &done.value.id);
    Ok(LeaseReport {
        todo: done.value,
        commit: done.commit,
    })
}

/// A person's `todo release ID --force`: the lease is taken from whoever
/// holds it, live or expired, and the epoch moves past it so the old
/// holder's later writes are refused with `stale_epoch`. Who took it (git's
/// identity) is in the commit message and in a note on the todo. The old
/// holder's host-local grant is kept: it is what fences that agent off.
fn take_back(ctx: &Context, query: &str) -> Result<LeaseReport> {
    let person = ctx.require_person("take a lease back with --force")?;
    let done = mutate(ctx, |state, goal| {
        let gs = state.goals.get_mut(goal).expect("goal exists");
        let id = resolve_todo(gs, query)?;
        let todo = gs.todos.get_mut(&id).expect("resolved");
        let Some(taken) = lease::take_back(todo)? else {
            return Err(Refusal::new(
                Code::NotClaimHolder,
                format!("{id} is not claimed: there is no lease to take back"),
            )
            .into());
        };
        let what = format!(
            "lease taken back from {} (epoch {}) by {person}",
            taken.agent, taken.epoch
        );
        add_note(todo, ctx.now, None, &what)?;
        touch(todo, ctx.now);
        let message = Message::new(
            "todo release --force",
            format!(
                "todo release --force {id}: {what}; now at epoch {}",
                todo.last_epoch
            ),
        )
        .trailer("Loopx-Todo", id.clone());
        Ok((todo.clone(), message))
    })?;
    Ok(LeaseReport {
        todo: done.value,
        commit: done.commit,
    })
}

/// The note a handoff leaves on its todo (the giver is the note's agent).
pub fn handoff_note(to: &str, note: &str) -> String {
    format!("handoff to {to}: {note}")
}

/// A handoff note read back: the receiving agent and the giver's note.
pub fn parse_handoff_note(text: &str) -> Option<(&str, &str)> {
    let (to, note) = text.strip_prefix("handoff to ")?.split_once(": ")?;
    crate::model::ids::is_valid_name(to).then_some((to, note))
}

/// Refuses a handoff to `to` when agents are registered and `to` is not
/// one of them. With none registered at all, any valid name is taken:
/// registering is optional, and refusing would break every setup that
/// never registers.
fn check_receiver(state: &State, to: &str) -> Result<()> {
    if state.agents.is_empty() || state.agents.contains_key(to) {
        return Ok(());
    }
    let roster: Vec<&str> = state.agents.keys().map(String::as_str).collect();
    Err(Refusal::invalid_input(format!(
        "cannot hand off to {to}: it is not a registered agent"
    ))
    .with_hint(format!(
        "registered agents: {}; register it first with `git loopx agent register {to}`",
        roster.join(", ")
    ))
    .into())
}

/// The packet a handoff passes on: `markdown` (the `packet` argument's
/// Markdown, and where it came from) with the other arguments added to it.
fn packet_of(args: &HandoffArgs, markdown: Option<(&str, &str)>) -> Result<Packet> {
    let mut packet = match markdown {
        Some((source, text)) => parse_markdown(source, text)?,
        None => Packet::default(),
    };
    packet.append(Packet {
        work_summary: args.summary.clone(),
        approaches_tried: args.tried.iter().map(|t| Tried::parse(t)).collect(),
        next_steps: args.next_steps.clone(),
        open_questions: args.questions.clone(),
        files: args.files.clone(),
    });
    Ok(packet)
}

/// The note a handoff leaves: `--note`, else the summary's first line.
fn note_of(note: Option<&str>, packet: &Packet) -> Result<String> {
    match (note, &packet.work_summary) {
        (Some(note), _) => non_empty("--note", note),
        (None, Some(summary)) => {
            let first = summary.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            non_empty("--note", first)
        }
        (None, None) => Err(Refusal::invalid_input(
            "a handoff needs --note, or a packet with a summary",
        )
        .with_hint(
            "tell the next agent what it needs: --note TEXT, --summary TEXT or --packet FILE.md",
        )
        .into()),
    }
}

/// `todo handoff ID --to B [--note T] [packet]`: the lease moves to B with
/// a new epoch; the packet (`markdown`, read by the caller from where the
/// `packet` argument says, with the other arguments added) replaces the
/// todo's previous `handoff`.
pub fn handoff(
    ctx: &Context,
    args: &HandoffArgs,
    markdown: Option<(&str, &str)>,
) -> Result<ClaimReport> {
    let packet = packet_of(args, markdown)?;
    let agent = ctx.require_agent()?.to_owned();
    let to = args.to.as_str();
    crate::model::ids::check_name("agent", to)?;
    let note = note_of(args.note.as_deref(), &packet)?;
    let ttl = super::ttl(args.ttl)?;
    if to == agent {
        return Err(Refusal::invalid_input("a handoff goes to another agent").into());
    }
    let packet = packet.check(ctx.store.workdir())?;
    let done = mutate(ctx, |state, goal| {
        check_receiver(state, to)?;
        let gs = state.goals.get_mut(goal).expect("goal exists");
        let id = resolve_todo(gs, &args.todo)?;
        let expected = local::expected_epoch(ctx, &agent, &id, args.epoch);
        crate::ops::gate::check_held(ctx, state, goal, &id, &agent, GateAction::Handoff)?;
        let gs = state.goals.get_mut(goal).expect("goal exists");
        let todo = gs.todos.get_mut(&id).expect("resolved");
        gate::check_reserved(todo, Some(&agent), GateAction::Handoff)?;
        lease::check_writer(todo, &agent, expected, ctx.now)?;
        let e = lease::transfer(todo, to, ctx.now, ttl)?;
        // Before the note: the note's size check then covers the packet too.
        todo.handoff = Some(Box::new(packet.clone().stamp(&agent, to, ctx.now, e)));
        add_note(todo, ctx.now, Some(&agent), &handoff_note(to, &note))?;
        touch(todo, ctx.now);
        let message = Message::new(
            "todo handoff",
            format!("todo handoff {id} from {agent} to {to} (epoch {e})"),
        )
        .line(note.clone())
        .trailer("Loopx-Todo", id.clone());
        Ok((todo.clone(), message))
    })?;
    let todo = done.value;
    local::forget_grant(ctx, &agent, &todo.id);
    let claim = claimed(&todo);
    local::record_grant(ctx, to, &todo.id, claim.epoch);
    Ok(ClaimReport {
        action: ClaimAction::Acquired,
        todo,
        claim,
        commit: done.commit,
    })
}
