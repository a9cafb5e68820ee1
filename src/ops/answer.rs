//! The person's answer to a gate or a reminder from the dashboard (`serve`,
//! `POST /answer`): the same operations as `gate resolve` and `todo done`,
//! on the server's `Context`, which is the person's (the server checked
//! that at launch).

use serde::Serialize;

use crate::model::{Code, Decision, Refusal, TodoClass};
use crate::ops::{self};
use crate::session::Context;
use crate::{Error, Result};

/// What the page asks for: `approve`, `reject`, `cancel` (a gate) or
/// `done` (a reminder, `note` its evidence).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ask {
    pub goal: Option<String>,
    pub id: String,
    pub action: String,
    pub note: Option<String>,
}

/// The command's own report.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Answered {
    Gate(ops::gate::GateReport),
    Done(ops::done::DoneReport),
}

/// Whether a `gate_signers` policy is in effect at the tip: an answer then
/// counts only in a signed commit, which the page cannot make.
pub fn signed_only(ctx: &Context) -> Result<bool> {
    let (tip, _) = ctx.load()?;
    Ok(!ops::signers::effective(ctx, &tip)?.is_empty())
}

pub fn answer(ctx: &mut Context, ask: &Ask) -> Result<Answered> {
    ctx.set_goal(ask.goal.clone());
    if signed_only(ctx)? {
        return Err(Refusal::new(
            Code::PersonOnly,
            "gate_signers is set: an answer counts only in a signed commit, which the page cannot make",
        )
        .with_hint(format!(
            "answer from a terminal: git loopx gate resolve {} --approve|--reject",
            ask.id
        ))
        .into());
    }
    let decision = match ask.action.as_str() {
        "approve" => Decision::Approve,
        "reject" => Decision::Reject,
        "cancel" => Decision::Cancel,
        "done" => return done(ctx, ask),
        other => {
            return Err(Error::invalid_input(format!(
                "`{other}` is not an answer: approve, reject or cancel a gate; done for a reminder"
            )))
        }
    };
    ops::gate::resolve(ctx, &ask.id, decision, ask.note.as_deref()).map(Answered::Gate)
}

/// `todo done` of a reminder; never of an agent's todo.
fn done(ctx: &Context, ask: &Ask) -> Result<Answered> {
    let (_, state) = ctx.load()?;
    let gs = ctx.goal(&state)?;
    let id = ops::resolve_todo(gs, &ask.id)?;
    if gs.todos[&id].class != TodoClass::UserAction {
        return Err(Error::invalid_input(format!(
            "{id} is not a reminder: the page marks done only what waits on the person"
        )));
    }
    let args = ops::done::DoneArgs {
        todo: id,
        evidence: ask.note.clone().unwrap_or_default(),
        next: None,
        next_agent: None,
        no_follow_up: false,
        validate_timeout: None,
        epoch: None,
    };
    match ops::done::done(ctx, &args, &mut |_| {})? {
        (_, Some(failed)) => Err(failed),
        (report, None) => Ok(Answered::Done(report)),
    }
}
