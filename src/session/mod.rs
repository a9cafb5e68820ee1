//! A command's session with one repository: who is asking ([`Context`]:
//! the store, the time, the agent, the goal), and how what it decides is
//! written ([`transact`], [`write::Writer`]): the write rules held once —
//! the actor backstop (`governed`, `refused`), a turn that ended
//! (`local`), retention (`retention`) — and the publishing ends a write
//! may take (compare-and-swap, a signed commit: `signed`).
//!
//! Below the use cases (`ops`) and the replication protocol
//! (`replicate`), which both decide through it; above the store.

pub mod governed;
pub mod local;
pub mod refused;
pub mod retention;
pub mod signed;
pub mod write;

use std::path::Path;

use crate::model::{self, ids, GoalState, Refusal, State, Timestamp};
use crate::store::{self, transaction, GixStore};
use crate::{Error, Result};

pub use crate::store::Policy;

/// Who is asking, about which goal, at what time, in which repository.
pub struct Context {
    pub store: GixStore,
    pub now: Timestamp,
    agent: Option<String>,
    goal: Option<String>,
    /// The agent runtime this process runs inside: from its environment,
    /// else (looked at once, when first asked) from its ancestors'
    /// (`governed::detect_ancestry`).
    inside: std::sync::OnceLock<Option<model::runtime::Inside>>,
    /// The state commit the write in progress decides on (its compare-and-
    /// swap's base), set by the write paths before their decision runs: a
    /// rule that must read history (which gate resolutions count) reads it
    /// at that commit, not at whatever the tip is by then.
    deciding_on: std::sync::Mutex<Option<store::Oid>>,
    /// What this command's writes may let through their checks
    /// (`--allow-secret-pattern`).
    policy: Policy,
}

impl Context {
    /// Opens the repository containing `dir`. `agent` and `goal` come from
    /// flags or the environment; `loopx.agent` in git config is the fallback.
    pub fn open(
        dir: &Path,
        now: Timestamp,
        agent: Option<String>,
        goal: Option<String>,
    ) -> Result<Self> {
        let store = GixStore::discover(dir)?;
        let agent = agent
            .filter(|a| !a.is_empty())
            .or_else(|| store.config_string("loopx.agent"))
            // An empty value names no agent, as an empty LOOPX_AGENT.
            .filter(|a| !a.is_empty());
        if let Some(agent) = &agent {
            ids::check_name("agent", agent)?;
        }
        if let Some(goal) = &goal {
            ids::check_name("goal", goal)?;
        }
        Ok(Context {
            store,
            now,
            agent,
            goal: goal.filter(|g| !g.is_empty()),
            inside: std::sync::OnceLock::new(),
            deciding_on: std::sync::Mutex::new(None),
            policy: Policy::default(),
        })
    }

    /// What this command's writes may let through their checks; every
    /// write hands it to the store's checks, and `sync` and `check` judge
    /// by it too.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Sets what this command's writes may let through
    /// (`--allow-secret-pattern`).
    pub fn set_policy(&mut self, policy: Policy) {
        self.policy = policy;
    }

    /// The agent runtime this command runs inside, if any: a marker in its
    /// environment, else in an ancestor's, or an ancestor git-loopx
    /// governs (`governed`). `None` is the person.
    pub fn inside(&self) -> Option<&model::runtime::Inside> {
        self.inside
            .get_or_init(|| {
                model::runtime::detect(|v| std::env::var(v).ok())
                    .map(|i| model::runtime::Inside {
                        marker: format!("{} is set", i.marker),
                        ..i
                    })
                    .or_else(|| governed::detect_ancestry(self.store.common_dir()))
            })
            .as_ref()
    }

    /// The commit the write in progress decides on, if a write path said.
    pub fn deciding_on(&self) -> Option<store::Oid> {
        self.deciding_on.lock().ok().and_then(|g| g.clone())
    }

    /// Says which commit the next decision is made on (see `deciding_on`).
    pub fn decide_on(&self, base: Option<&store::Oid>) {
        if let Ok(mut g) = self.deciding_on.lock() {
            *g = base.cloned();
        }
    }

    /// Who acts on a gate without being the person: the agent's id, or the
    /// runtime the command runs inside; `None` for the person.
    pub fn gate_actor(&self) -> Option<String> {
        match (&self.agent, self.inside()) {
            (Some(agent), _) => Some(agent.clone()),
            (None, Some(inside)) => Some(format!("a command inside {}", inside.runtime.display())),
            (None, None) => None,
        }
    }

    /// The person, established positively: their git identity (`name
    /// <email>`), or a `person_only` refusal for `what` when an agent is
    /// named or the command runs inside an agent runtime. The refusal
    /// sends the agent to the person and names no way around it.
    pub fn require_person(&self, what: &str) -> Result<String> {
        self.told(match self.gate_actor() {
            None => Ok(self.store.committer()),
            Some(actor) => {
                let who = if self.agent.is_some() {
                    format!("agent {actor}")
                } else {
                    actor
                };
                Err(Refusal::new(
                    model::Code::PersonOnly,
                    format!("only a person may {what}; this is {who}"),
                )
                .with_hint(
                    "ask the person to do it: say in your reply what you need and why, \
                     then go on with work that does not wait on it",
                )
                .into())
            }
        })
    }

    /// The one check of who writes before a ref the person owns moves
    /// ([`PersonRef`]): the person's git identity, or a `person_only`
    /// refusal, recorded for them.
    pub fn person_moves(&self, what: PersonRef) -> Result<String> {
        self.require_person(what.describe())
    }

    /// Passes `result` on; a refusal that guards the person's authority is
    /// recorded for them first (`refused`).
    pub fn told<T>(&self, mut result: Result<T>) -> Result<T> {
        if let Err(e) = &mut result {
            let by = self.gate_actor().unwrap_or_else(|| "someone".to_owned());
            refused::record(self.store.common_dir(), self.now, &by, e);
            if let (crate::Error::Refused(r), Some(advice)) = (e, self.person_advice()) {
                if refused::guards_the_person(r.code) {
                    r.hint = Some(match r.hint.take() {
                        Some(h) => format!("{h}\n{advice}"),
                        None => advice,
                    });
                }
            }
        }
        result
    }

    /// For a person taken for an agent by a setting of their own (outside
    /// any runtime): which setting named the agent, and how to act as
    /// themselves. `None` inside a runtime, or for `--agent` on the line.
    fn person_advice(&self) -> Option<String> {
        let agent = self.agent.as_deref()?;
        if self.inside().is_some() {
            return None;
        }
        if std::env::var("LOOPX_AGENT").ok().as_deref() == Some(agent) {
            return Some(format!(
                "if you are the person, not agent {agent}: LOOPX_AGENT={agent} is set in this \
                 shell; `unset LOOPX_AGENT` (or `env -u LOOPX_AGENT git loopx …`) acts as you"
            ));
        }
        if self.store.config_string("loopx.agent").as_deref() == Some(agent) {
            return Some(format!(
                "if you are the person, not agent {agent}: git config has loopx.agent={agent} \
                 here; `git config --unset loopx.agent` (in a linked worktree also \
                 `git config --worktree --unset loopx.agent`) acts as you"
            ));
        }
        None
    }

    /// Who acts on a write that is not the person's alone: the agent, else
    /// the person. Inside an agent runtime with no agent named, refuses
    /// rather than act in the person's name.
    pub fn actor(&self) -> Result<String> {
        if let Some(agent) = &self.agent {
            return Ok(agent.clone());
        }
        if let Some(inside) = self.inside() {
            return self.told(Err(no_identity(inside).into()));
        }
        Ok(self.store.committer())
    }

    /// Where `git` runs for this repository: the worktree, else (bare) the
    /// git directory.
    pub fn repo_dir(&self) -> &Path {
        self.store.workdir().unwrap_or(self.store.common_dir())
    }

    /// The working tree of the repository, if it has one (a bare
    /// repository has none).
    pub fn worktree(&self) -> Option<&Path> {
        self.store.workdir()
    }

    /// The commit `loopx-state` points at, if any: one file read, for a
    /// watcher that polls it.
    pub fn tip(&self) -> Result<Option<store::Oid>> {
        Ok(self.store.tip()?)
    }

    /// The acting agent, if one was named.
    pub fn agent(&self) -> Option<&str> {
        self.agent.as_deref()
    }

    /// The acting agent; refuses when none was named.
    pub fn require_agent(&self) -> Result<&str> {
        self.agent().ok_or_else(|| {
            Refusal::invalid_input("this command needs an agent")
                .with_hint("pass --agent <id>, set LOOPX_AGENT, or `git config loopx.agent <id>`")
                .into()
        })
    }
}

/// A ref move only the person makes (docs/gates.md, "Refs the person
/// owns"). Each goes through [`Context::person_moves`] and nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PersonRef {
    /// `review --ack` moves `refs/loopx/reviewed`: what the person saw.
    Reviewed,
    /// `redact` rewrites loopx-state's history (beyond a flagged credential).
    History,
    /// `doctor --repair` moves loopx-state back to an older tree.
    Rollback,
    /// `gate signers add|remove|setup` changes who answers gates.
    Signers,
}

impl PersonRef {
    fn describe(self) -> &'static str {
        match self {
            PersonRef::Reviewed => {
                "mark the state reviewed (`review --ack` moves refs/loopx/reviewed)"
            }
            PersonRef::History => {
                "rewrite loopx-state's history to redact text that is not a credential"
            }
            PersonRef::Rollback => "move loopx-state back to an older commit (`doctor --repair`)",
            PersonRef::Signers => "change gate_signers (who answers gates)",
        }
    }
}

/// The refusal for a write inside an agent runtime that names no agent.
fn no_identity(inside: &model::runtime::Inside) -> Refusal {
    Refusal::new(
        model::Code::PersonOnly,
        format!(
            "this command runs inside {} ({}) but names no agent, and an agent does not act in the person's name",
            inside.runtime.display(),
            inside.marker
        ),
    )
    .with_hint(match inside.runtime {
        model::runtime::Runtime::Generic => {
            "pass the agent's id with --agent <id>, as the turn's prompt does".to_owned()
        }
        runtime => format!(
            "pass the agent's id with --agent <id>, as the turn's prompt does; \
             `git loopx hooks install --{} --agent <id>` gives the runtime's shell its identity",
            runtime.name()
        ),
    })
}

impl Context {
    /// The goal named by `--goal`/`LOOPX_GOAL`, else the state's default goal.
    pub fn goal_id<'a>(&'a self, state: &'a State) -> &'a str {
        self.goal.as_deref().unwrap_or(&state.meta.default_goal)
    }

    /// The goal named by `--goal`/`LOOPX_GOAL`, if one was.
    pub fn goal_flag(&self) -> Option<&str> {
        self.goal.as_deref()
    }

    /// Acts on `goal` from now on (`None`: the state's default goal), as if
    /// it had been given by `--goal`: a long-lived reader (`serve`) reads
    /// every goal through one context.
    pub fn set_goal(&mut self, goal: Option<String>) {
        self.goal = goal.filter(|g| !g.is_empty());
    }

    /// The selected goal of `state`; refuses an unknown `--goal`.
    pub fn goal<'a>(&self, state: &'a State) -> Result<&'a GoalState> {
        let id = self.goal_id(state);
        state.goals.get(id).ok_or_else(|| unknown_goal(id, state))
    }

    /// Reads the current state; refuses when there is none.
    /// With no local branch yet (a fresh clone), reads the remote's state
    /// (`refs/remotes/<remote>/loopx-state`, `origin` first) without writing.
    pub fn load(&self) -> Result<(store::Oid, State)> {
        match transaction::load(&self.store)? {
            (Some(tip), Some(state)) => Ok((tip, state)),
            _ => match remote_state(self)? {
                Some((_, tip)) => {
                    let state = transaction::state_at(&self.store, &tip)?;
                    Ok((tip, state))
                }
                None => Err(store::Error::Missing.into()),
            },
        }
    }

    /// Before a write on a fresh clone: point the local branch at the
    /// remote's state, so the write builds on it instead of a second root.
    pub fn adopt_remote_state(&self) -> Result<Option<String>> {
        if self.store.tip()?.is_some() {
            return Ok(None);
        }
        let Some((remote, tip)) = remote_state(self)? else {
            return Ok(None);
        };
        // Refuse to adopt state we cannot read.
        transaction::state_at(&self.store, &tip)?;
        let reflog = format!("loopx: adopt loopx-state from {remote}");
        self.store
            .create_ref(store::STATE_REF, &tip, &reflog, self.now)?;
        Ok(Some(remote))
    }
}

/// The remote-tracking state ref to adopt: `origin`'s, else the first.
fn remote_state(ctx: &Context) -> Result<Option<(String, store::Oid)>> {
    let remotes = ctx.store.remote_state_refs()?;
    Ok(remotes
        .iter()
        .find(|(r, _)| r == "origin")
        .or_else(|| remotes.first())
        .cloned())
}

pub(crate) fn unknown_goal(id: &str, state: &State) -> Error {
    let known: Vec<&str> = state.goals.keys().map(String::as_str).collect();
    Refusal::invalid_input(format!("no goal `{id}`"))
        .with_hint(format!("known goals: {}", known.join(", ")))
        .into()
}

/// Runs `f` on the current state inside the CAS loop, with the selected goal
/// id; the commit gets `Loopx-Goal` and (when known) `Loopx-Agent` trailers.
/// Inside an agent runtime with no agent named, nothing is written
/// ([`Context::actor`]).
pub fn mutate<R>(
    ctx: &Context,
    mut f: impl FnMut(&mut State, &str) -> Result<(R, store::Message)>,
) -> Result<store::Committed<R>> {
    mutate_maybe(ctx, |state, goal| f(state, goal).map(|(v, m)| (v, Some(m))))
}

/// Like [`mutate`], for an operation that may find nothing to write
/// (a replay): it returns `None` instead of a message, and no commit is made.
pub fn mutate_maybe<R>(
    ctx: &Context,
    mut f: impl FnMut(&mut State, &str) -> Result<(R, Option<store::Message>)>,
) -> Result<store::Committed<R>> {
    ctx.adopt_remote_state()?;
    transact(ctx, |state: &mut Option<State>| {
        let state = existing(state)?;
        let goal = ctx.goal(state)?.goal.id.clone();
        let (value, message) = f(state, &goal)?;
        let Some(mut message) = message else {
            return Ok(store::Write::read_only(value));
        };
        message = message.trailer("Loopx-Goal", goal);
        if let Some(agent) = ctx.agent() {
            message = message.trailer("Loopx-Agent", agent);
        }
        Ok(store::Write::commit(value, message))
    })
}

/// Every write a use case makes: the store's compare-and-swap transaction
/// (see [`store::transact`]), with the write rules of [`write::Writer`]
/// (who writes, retention), then upkeep.
///
/// Inside an agent runtime with no agent named, a write is refused once the
/// use case has decided it (its own refusal, such as `gate_reserved`, comes
/// first): an agent never writes in the person's name ([`Context::actor`]).
pub fn transact<R>(
    ctx: &Context,
    mut mutate: impl FnMut(&mut Option<State>) -> Result<store::Write<R>>,
) -> Result<store::Committed<R>> {
    let writer = write::Writer::new(ctx);
    let done = ctx.told(store::transact(
        &ctx.store,
        &ctx.policy,
        ctx.now,
        |state: &mut Option<State>, base| {
            ctx.decide_on(base);
            let mut write = mutate(state)?;
            writer.admit(state, base, &mut write)?;
            Ok::<_, crate::Error>(write)
        },
    ))?;
    if let Some(commit) = &done.commit {
        writer.landed(commit);
    }
    Ok(done)
}

/// The state of a transaction, refusing when there is none yet.
pub fn existing(state: &mut Option<State>) -> Result<&mut State> {
    state.as_mut().ok_or_else(|| store::Error::Missing.into())
}
