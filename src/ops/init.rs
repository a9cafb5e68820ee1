//! `init`: create the state branch with its first goal, or adopt a remote's.

use serde::Serialize;

use crate::model::{ids, Code, Goal, Refusal, State};
use crate::ops::non_empty;
use crate::session::Context;
use crate::store::{Message, Oid, Write, STATE_REF};
use crate::Result;

/// The goal id used when `--goal-id` is not given.
pub const DEFAULT_GOAL: &str = "main";

/// Create the `loopx-state` branch with its first goal (idempotent).
///
/// When a remote already has `loopx-state` (after a fetch), its state is
/// adopted instead of creating a second root. Running it again with the
/// same objective changes nothing; another objective is refused
/// (`goal_exists`, exit 1) unless --force.
#[derive(Debug, Default, clap::Args)]
pub struct InitArgs {
    /// The objective of the first goal. On existing state whose goal has
    /// another objective, init refuses (exit 1) unless --force.
    // `--goal-text` is LoopX 2.1.1's spelling (`start-goal`,
    // `bootstrap-command-pack`), kept hidden for parity.
    #[arg(long = "objective", alias = "goal-text", value_name = "TEXT")]
    pub goal_text: Option<String>,
    /// Replace the existing goal's objective with --objective.
    #[arg(long, requires = "goal_text")]
    pub force: bool,
    /// The id of the first goal (default: main); on existing state, the
    /// goal whose objective --objective is compared with (default: the
    /// default goal).
    #[arg(long, value_name = "ID")]
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
    /// State already existed; `--force` replaced the goal's objective.
    Updated,
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
    if let Some(id) = &args.goal_id {
        ids::check_name("goal", id)?;
    }
    let goal_text = args
        .goal_text
        .as_deref()
        .map(|t| non_empty("--objective", t))
        .transpose()?;
    let now = ctx.now;
    let done = crate::session::transact(ctx, |state: &mut Option<State>| {
        if let Some(state) = state {
            return match &goal_text {
                Some(objective) => keep_or_replace(state, args, objective, now),
                None => Ok(Write::read_only(Made::Nothing)),
            };
        }
        let goal_id = args
            .goal_id
            .clone()
            .unwrap_or_else(|| DEFAULT_GOAL.to_owned());
        let objective = goal_text.clone().ok_or_else(|| {
            Refusal::invalid_input(
                "there is no loopx state yet: pass --objective \"…\" to create it",
            )
        })?;
        *state = Some(State::with_goal(Goal::new(&goal_id, &objective, now), now));
        let message = Message::new("init", format!("init loopx state with goal {goal_id}"))
            .trailer("Loopx-Goal", goal_id.clone());
        Ok::<_, crate::Error>(Write::commit(Made::Created, message))
    })?;
    let (tip, state) = ctx.load()?;
    // A decoded state always has its default goal (`State::check`).
    let goal = &state.goals[&state.meta.default_goal];
    Ok(InitReport {
        action: match (&adopted_from, done.commit.is_some(), done.value) {
            (_, true, Made::Updated) => InitAction::Updated,
            (Some(_), _, _) => InitAction::Adopted,
            (None, true, _) => InitAction::Created,
            (None, false, _) => InitAction::Existing,
        },
        state_ref: STATE_REF,
        commit: tip,
        default_goal: state.meta.default_goal.clone(),
        objective: goal.goal.objective.clone(),
        adopted_from,
    })
}

/// What init's transaction did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Made {
    Nothing,
    Created,
    Updated,
}

/// `init --objective T` on existing state: the same objective changes
/// nothing; another one is refused (`goal_exists`, exit 1), or with
/// `--force` replaces the goal's objective. A `--goal-id` that names no goal
/// is refused: init does not add goals.
fn keep_or_replace(
    state: &mut State,
    args: &InitArgs,
    objective: &str,
    now: crate::model::Timestamp,
) -> Result<Write<Made>> {
    let id = args
        .goal_id
        .clone()
        .unwrap_or_else(|| state.meta.default_goal.clone());
    let Some(gs) = state.goals.get_mut(&id) else {
        let known: Vec<&str> = state.goals.keys().map(String::as_str).collect();
        return Err(Refusal::new(
            Code::GoalExists,
            format!(
                "loopx state already exists (goals: {}), without a goal `{id}`; init does not add goals",
                known.join(", ")
            ),
        )
        .with_hint(format!("git loopx goal add {id} --objective \"…\""))
        .into());
    };
    let goal = &mut gs.goal;
    if goal.objective == objective {
        return Ok(Write::read_only(Made::Nothing));
    }
    if !args.force {
        return Err(Refusal::new(
            Code::GoalExists,
            format!(
                "goal `{id}` already exists with another objective: `{}`",
                goal.objective
            ),
        )
        .with_hint(format!(
            "keep it (leave out --objective), or replace it: `git loopx init --objective \"…\" --force` or `git loopx goal set --goal {id} --objective \"…\"`"
        ))
        .into());
    }
    goal.objective = objective.to_owned();
    goal.rev = goal.rev.saturating_add(1);
    goal.updated_at = now;
    let message = Message::new(
        "init",
        format!("init --force: replace the objective of goal {id}"),
    )
    .trailer("Loopx-Goal", id.clone());
    Ok(Write::commit(Made::Updated, message))
}
