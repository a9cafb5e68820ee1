//! `import loopx`: bring a LoopX 2.x state over as one commit.
//!
//! The importer (`crate::import`) reads the LoopX files and turns them into
//! entities; here they are written through the normal write path. A goal that already exists is
//! refused unless it came from an earlier import of the same LoopX goal (then
//! what is new is added, and a todo that changed in LoopX is updated when
//! nothing here changed it since it was imported, or kept and reported when
//! something did; a second import of the same state writes nothing) or
//! `--replace` is given (then the imported entities overwrite theirs).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::model::{Code, GoalState, Refusal, State};
use crate::session::Context;
use crate::store::{Message, Oid, Write};
use crate::Result;

pub use crate::import::Skipped;
use crate::import::{self as loopx, Plan};

#[derive(Debug, Default)]
pub struct ImportArgs {
    /// The LoopX project directory (holding `.loopx/registry.json`).
    pub project: PathBuf,
    /// The LoopX runtime root (`~/.loopx` by default).
    pub runtime_root: PathBuf,
    /// Only these LoopX goals (all when empty).
    pub goals: Vec<String>,
    pub dry_run: bool,
    pub replace: bool,
}

/// How many of each kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub goals: usize,
    pub todos: usize,
    pub gates: usize,
    pub claims: usize,
    pub spends: usize,
    pub agents: usize,
}

impl Counts {
    pub fn total(&self) -> usize {
        self.goals + self.todos + self.spends + self.agents
    }
}

#[derive(Debug, Serialize)]
pub struct ImportReport {
    pub project: String,
    pub runtime_root: String,
    pub dry_run: bool,
    /// Written now (with --dry-run: would be written).
    pub imported: Counts,
    /// Already here from an earlier import, the same as in LoopX.
    pub unchanged: Counts,
    /// Changed both here and in LoopX since the last import: kept as they
    /// are here (`--replace` takes LoopX's).
    pub kept: Counts,
    /// What has no equivalent here, with its LoopX id and why.
    pub skipped: Vec<Skipped>,
    /// LoopX todo id → git-loopx todo id.
    pub todo_ids: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
}

impl ImportReport {
    pub fn nothing_to_import(&self) -> bool {
        self.imported.total() == 0
    }
}

pub fn import(ctx: &Context, args: &ImportArgs) -> Result<ImportReport> {
    let mut source = loopx::read(&args.project, &args.runtime_root)?;
    if !args.goals.is_empty() {
        for want in &args.goals {
            if !source.goals.iter().any(|g| &g.id == want) {
                let known: Vec<&str> = source.goals.iter().map(|g| g.id.as_str()).collect();
                return Err(Refusal::invalid_input(format!(
                    "LoopX state at {} has no goal `{want}` (goals: {})",
                    args.project.display(),
                    known.join(", ")
                ))
                .into());
            }
        }
        source.goals.retain(|g| args.goals.contains(&g.id));
    }
    let plan = loopx::plan(&source.goals, ctx.now);
    ctx.store.check_not_checked_out()?;
    ctx.adopt_remote_state()?;
    let done = crate::session::transact(ctx, |state: &mut Option<State>| {
        let counted = apply(state, &plan, args.replace)?;
        let first = plan.goals.first().map(|g| g.goal.id.clone());
        let imported = &counted[0];
        if args.dry_run || imported.total() == 0 {
            return Ok(Write::read_only(counted));
        }
        let mut message = Message::new(
            "import",
            format!(
                "import loopx: {} goals, {} todos, {} spends, {} agents",
                imported.goals, imported.todos, imported.spends, imported.agents
            ),
        );
        if let Some(goal) = first {
            message = message.trailer("Loopx-Goal", goal);
        }
        Ok::<_, crate::Error>(Write::commit(counted, message))
    })?;
    let [imported, unchanged, kept] = done.value;
    Ok(ImportReport {
        project: source.project.display().to_string(),
        runtime_root: source.runtime_root.display().to_string(),
        dry_run: args.dry_run,
        imported,
        unchanged,
        kept,
        skipped: plan.skipped,
        todo_ids: plan.todo_ids,
        commit: done.commit,
    })
}

/// Writes `plan` into `state` (creating it when there is none); returns what
/// was written, what was already there and what was kept as it is here.
fn apply(state: &mut Option<State>, plan: &Plan, replace: bool) -> Result<[Counts; 3]> {
    let mut imported = Counts::default();
    let mut unchanged = Counts::default();
    let mut kept = Counts::default();
    let Some(first) = plan.goals.first() else {
        return Ok([imported, unchanged, kept]);
    };
    let state = state.get_or_insert_with(|| {
        let mut fresh = State::with_goal(first.goal.clone(), first.goal.created_at);
        // Counted below as a new goal, with its todos.
        fresh.goals.clear();
        fresh
    });
    for planned in &plan.goals {
        let id = &planned.goal.id;
        let origin = loopx::origin(id);
        match state.goals.get_mut(id) {
            None => {
                state
                    .goals
                    .insert(id.clone(), GoalState::new(planned.goal.clone()));
                imported.goals += 1;
            }
            Some(gs) if replace => {
                let mut goal = planned.goal.clone();
                goal.created_at = gs.goal.created_at;
                goal.rev = gs.goal.rev.saturating_add(1);
                if gs.goal != goal {
                    gs.goal = goal;
                    imported.goals += 1;
                } else {
                    unchanged.goals += 1;
                }
            }
            Some(gs) if gs.goal.extra.get("origin") == Some(&origin) => unchanged.goals += 1,
            Some(_) => {
                return Err(Refusal::new(
                    Code::GoalExists,
                    format!("goal `{id}` already exists here and was not imported from LoopX"),
                )
                .with_hint(
                    "leave it out (--loopx-goal <other>), or overwrite it with the LoopX one: --replace",
                )
                .into());
            }
        }
        let gs = state.goals.get_mut(id).expect("inserted above");
        for todo in &planned.todos {
            let counts = |c: &mut Counts| {
                c.todos += 1;
                c.gates += usize::from(todo.is_gate());
                c.claims += usize::from(todo.claim.is_some());
            };
            let existing = gs.todos.get(&todo.id).cloned();
            match existing {
                None => {
                    gs.add_todo(todo.clone());
                    counts(&mut imported);
                }
                Some(old) => {
                    let mut new = todo.clone();
                    new.seq = old.seq;
                    new.rev = old.rev;
                    new.extra = old.extra.clone();
                    if old == new {
                        counts(&mut unchanged);
                    } else if replace || old.rev == imported_rev(&old) {
                        new.rev = old.rev.saturating_add(1);
                        new.extra.insert(IMPORTED_REV.into(), new.rev.into());
                        gs.todos.insert(new.id.clone(), new);
                        counts(&mut imported);
                    } else {
                        counts(&mut kept);
                    }
                }
            }
        }
        for run in &planned.runs {
            if gs.runs.get(&run.id).is_some() {
                unchanged.spends += 1;
            } else {
                gs.add_run(run.clone());
                imported.spends += 1;
            }
        }
    }
    if !state.goals.contains_key(&state.meta.default_goal) {
        state.meta.default_goal = first.goal.id.clone();
    }
    for agent in &plan.agents {
        if state.agents.contains_key(&agent.id) {
            unchanged.agents += 1;
        } else {
            state.agents.insert(agent.id.clone(), agent.clone());
            imported.agents += 1;
        }
    }
    Ok([imported, unchanged, kept])
}

/// The todo field that records the `rev` an import last wrote the todo at:
/// a todo still at that `rev` has not been changed here since.
const IMPORTED_REV: &str = "imported_rev";

/// The `rev` an import last wrote `todo` at (a first import writes rev 1
/// and no field).
fn imported_rev(todo: &crate::model::Todo) -> u64 {
    todo.extra
        .get(IMPORTED_REV)
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(1)
}
