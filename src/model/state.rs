//! The whole control state of one branch tip, typed, and its invariants.

use std::collections::BTreeMap;

use crate::model::{ids, Agent, Goal, Meta, Run, Todo, Tracked, FORMAT};

/// Everything under one goal.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GoalState {
    pub goal: Goal,
    pub todos: Tracked<Todo>,
    pub runs: Tracked<Run>,
}

impl GoalState {
    pub fn new(goal: Goal) -> Self {
        GoalState {
            goal,
            todos: Tracked::new(),
            runs: Tracked::new(),
        }
    }

    /// Adds a new todo, numbered one past the highest `seq` in the goal, so
    /// todos keep the order they were added in (two clones adding at once
    /// may pick the same number; `created_at` and `id` order those).
    /// Reads the todos' facts only. Returns the todo as stored.
    pub fn add_todo(&mut self, mut todo: Todo) -> Todo {
        let last = self.todos.all_facts().filter_map(|t| t.seq).max();
        todo.seq = Some(last.map_or(1, |n| n.saturating_add(1)));
        self.todos.insert(todo.id.clone(), todo.clone());
        todo
    }

    /// Adds a new run record, numbered one past the highest `seq` of the
    /// goal's runs (see [`GoalState::add_todo`]). Returns it as stored.
    pub fn add_run(&mut self, mut run: Run) -> Run {
        run.seq = Some(self.next_run_seq());
        self.runs.insert(run.id.clone(), run.clone());
        run
    }

    /// The `seq` the next run record of this goal gets.
    /// Numbering goes on after archived runs too ([`crate::model::Archived`]).
    pub fn next_run_seq(&self) -> u64 {
        let archived = self.goal.archive.iter().map(|a| a.last_seq);
        let last = self
            .runs
            .all_facts()
            .filter_map(|r| r.seq)
            .chain(archived)
            .max();
        last.map_or(1, |n| n.saturating_add(1))
    }
}

/// The state at one tip of `loopx-state`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct State {
    pub meta: Meta,
    pub agents: BTreeMap<String, Agent>,
    pub goals: BTreeMap<String, GoalState>,
}

/// Counts of a goal's todos for `status`: each todo is in exactly one, so
/// they add up to the number of todos.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TodoCounts {
    /// Agent todos an agent could take now.
    pub ready: usize,
    /// Todos under a live claim.
    pub running: usize,
    /// Agent todos that would be ready but wait for an open gate.
    pub held_by_gate: usize,
    /// Other agent todos not yet done: blocked, waiting for another todo,
    /// a monitor not due.
    pub waiting: usize,
    /// The person's: open gates and user actions.
    pub for_user: usize,
    pub deferred: usize,
    pub done: usize,
}

impl State {
    /// Whether `agent` may act here: any id while no agent is registered
    /// (one person, one agent), else only a registered one — as LoopX
    /// 2.1.1 refuses an unregistered agent (`quota_agent_not_registered`),
    /// so a typo cannot claim, write back, spend, or walk past a gate
    /// meant for the agent it meant to be.
    pub fn check_registered(&self, agent: &str) -> Result<(), crate::model::Refusal> {
        if self.agents.is_empty() || self.agents.contains_key(agent) {
            return Ok(());
        }
        let known: Vec<&str> = self.agents.keys().map(String::as_str).collect();
        Err(crate::model::Refusal::invalid_input(format!(
            "agent `{agent}` is not registered in this state (registered: {})",
            known.join(", ")
        ))
        .with_hint(format!(
            "a typo? Else register it: git loopx agent register {agent}"
        )))
    }

    /// A fresh state whose one (default) goal is `goal`.
    pub fn with_goal(goal: Goal, now: crate::model::Timestamp) -> Self {
        let mut state = State::new(Meta {
            format: FORMAT,
            default_goal: goal.id.clone(),
            created_at: now,
            gate_signers: Vec::new(),
            extra: crate::model::Extra::new(),
        });
        state.goals.insert(goal.id.clone(), GoalState::new(goal));
        state
    }

    /// Forgets which todos and runs were written (a freshly loaded state).
    pub fn clean(&mut self) {
        for gs in self.goals.values_mut() {
            gs.todos.clean();
            gs.runs.clean();
        }
    }

    pub fn new(meta: Meta) -> Self {
        State {
            meta,
            agents: BTreeMap::new(),
            goals: BTreeMap::new(),
        }
    }

    /// Checks the invariants a decoded state must hold beyond its schema.
    /// Returns the entity (by kind and id) and what is wrong with it.
    pub fn check(&self) -> Result<(), (String, String)> {
        if self.meta.format != FORMAT {
            return Err(("loopx".into(), format!("format {}", self.meta.format)));
        }
        if !self.goals.contains_key(&self.meta.default_goal) {
            return Err((
                "loopx".into(),
                format!("default_goal `{}` has no goal", self.meta.default_goal),
            ));
        }
        for (id, agent) in &self.agents {
            if !ids::is_valid_name(id) || agent.id != *id {
                return Err((format!("agent {id}"), "invalid agent id".into()));
            }
        }
        for (gid, gs) in &self.goals {
            if !ids::is_valid_name(gid) || gs.goal.id != *gid {
                return Err((format!("goal {gid}"), "invalid goal id".into()));
            }
            // What was loaded from the cache was checked before it was
            // cached: only what changed since is looked at.
            for (tid, todo) in gs.todos.written() {
                check_todo(gid, tid, todo).map_err(|e| (format!("todo {tid}"), e))?;
            }
            for (rid, run) in gs.runs.written() {
                if !ids::is_valid_run_id(rid) || run.id != *rid || run.goal != *gid {
                    return Err((format!("run {rid}"), "invalid run id or goal".into()));
                }
            }
        }
        Ok(())
    }

    pub fn counts(&self, goal: &str, now: crate::model::Timestamp) -> TodoCounts {
        let mut counts = TodoCounts::default();
        for (_, bucket) in self.buckets(goal, now) {
            *match bucket {
                Bucket::Ready => &mut counts.ready,
                Bucket::Running => &mut counts.running,
                Bucket::HeldByGate => &mut counts.held_by_gate,
                Bucket::Waiting => &mut counts.waiting,
                Bucket::ForUser => &mut counts.for_user,
                Bucket::Deferred => &mut counts.deferred,
                Bucket::Done => &mut counts.done,
            } += 1;
        }
        counts
    }

    /// Every todo of `goal` with the one bucket it is counted in, in no
    /// particular order: `status` counts them, the dashboard's board lays
    /// them out.
    pub fn buckets(&self, goal: &str, now: crate::model::Timestamp) -> Vec<(&str, Bucket)> {
        use crate::model::{Role, TodoStatus};
        let Some(gs) = self.goals.get(goal) else {
            return Vec::new();
        };
        // As an agent with every capability would see it.
        let all_caps: Vec<String> = gs
            .todos
            .all_facts()
            .flat_map(|t| t.requires_capabilities)
            .map(str::to_owned)
            .collect();
        let sel = crate::model::select::select(gs, None, &all_caps, now);
        let ready: std::collections::BTreeSet<&str> = sel.candidates.iter().map(|c| c.id).collect();
        let gated: std::collections::BTreeSet<&str> = sel.gated.iter().copied().collect();
        gs.todos
            .all_facts()
            .map(|todo| {
                let bucket = match todo.status {
                    TodoStatus::Done => Bucket::Done,
                    TodoStatus::Deferred => Bucket::Deferred,
                    _ if todo.live_holder(now).is_some() => Bucket::Running,
                    _ if todo.role == Role::User => Bucket::ForUser,
                    _ if gated.contains(todo.id) => Bucket::HeldByGate,
                    _ if ready.contains(todo.id) => Bucket::Ready,
                    _ => Bucket::Waiting,
                };
                (todo.id, bucket)
            })
            .collect()
    }
}

/// Where a todo stands, as `status` counts it: each todo is in exactly one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bucket {
    Ready,
    Running,
    HeldByGate,
    Waiting,
    ForUser,
    Deferred,
    Done,
}

fn check_todo(goal: &str, id: &str, todo: &Todo) -> Result<(), String> {
    if !ids::is_valid_todo_id(id) || todo.id != id {
        return Err(format!("`{}` is not a valid todo id", todo.id));
    }
    if todo.goal != goal {
        return Err(format!(
            "goal is `{}` but the file is under goal `{goal}`",
            todo.goal
        ));
    }
    // The shape rules are shared with `doctor --rev`, which reports them all.
    match crate::model::validate::todo_shape(todo).into_iter().next() {
        Some((_, message)) => Err(message),
        None => Ok(()),
    }
}
