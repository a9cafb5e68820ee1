//! `init`: create the state branch with its first goal, or adopt a remote's.

use serde::Serialize;

use crate::model::{ids, Goal, Refusal, State};
use crate::ops::{non_empty, Context};
use crate::store::{Message, Oid, Write, STATE_REF};
use crate::Result;

/// The goal id used when `--goal-id` is not given.
pub const DEFAULT_GOAL: &str = "main";

#[derive(Debug, Default)]
pub struct InitArgs {
    pub goal_text: Option<String>,
    pub goal_id: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InitAction {
    /// A new root commit was written.
    Created,
    /// The local branch was pointed at a remote's existing state.
    Adopted,
    /// State already existed: nothing changed.
    Existing,
}

#[derive(Debug, Serialize)]
pub struct InitReport {
    pub action: InitAction,
    pub state_ref: &'static str,
    pub commit: Oid,
    pub default_goal: String,
    pub objective: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adopted_from: Option<String>,
}

pub fn init(ctx: &Context, args: &InitArgs) -> Result<InitReport> {
    ctx.store.check_not_checked_out()?;
    let adopted_from = ctx.adopt_remote_state()?;
    let goal_id = args
        .goal_id
        .clone()
        .unwrap_or_else(|| DEFAULT_GOAL.to_owned());
    ids::check_name("goal", &goal_id)?;
    let goal_text = args
        .goal_text
        .as_deref()
        .map(|t| non_empty("--goal-text", t))
        .transpose()?;
    let now = ctx.now;
    let done = crate::ops::transact(ctx, |state: &mut Option<State>| {
        if state.is_some() {
            return Ok(Write::read_only(false));
        }
        let objective = goal_text.clone().ok_or_else(|| {
            Refusal::invalid_input(
                "there is no loopx state yet: pass --goal-text \"…\" to create it",
            )
        })?;
        *state = Some(State::with_goal(Goal::new(&goal_id, &objective, now), now));
        let message = Message::new("init", format!("init loopx state with goal {goal_id}"))
            .trailer("Loopx-Goal", goal_id.clone());
        Ok::<_, crate::Error>(Write::commit(true, message))
    })?;
    let (tip, state) = ctx.load()?;
    // A decoded state always has its default goal (`State::check`).
    let goal = &state.goals[&state.meta.default_goal];
    Ok(InitReport {
        action: match (&adopted_from, done.commit.is_some()) {
            (Some(_), _) => InitAction::Adopted,
            (None, true) => InitAction::Created,
            (None, false) => InitAction::Existing,
        },
        state_ref: STATE_REF,
        commit: tip,
        default_goal: state.meta.default_goal.clone(),
        objective: goal.goal.objective.clone(),
        adopted_from,
    })
}
