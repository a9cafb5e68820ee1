//! `agent register | list`: the registry of agents and their capabilities.

use serde::Serialize;

use crate::model::{ids, Agent, Extra, State};
use crate::session::Context;
use crate::store::{Message, Oid, Write};
use crate::Result;

#[derive(Debug, Serialize)]
pub struct AgentReport {
    pub agent: Agent,
    pub created: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
}

/// Registers `id` (or updates its runtime and capabilities). Idempotent.
pub fn register(
    ctx: &Context,
    id: &str,
    runtime: Option<&str>,
    capabilities: &[String],
) -> Result<AgentReport> {
    ids::check_name("agent", id)?;
    for c in capabilities {
        ids::check_name("capability", c)?;
    }
    let mut caps = capabilities.to_vec();
    caps.sort();
    caps.dedup();
    ctx.adopt_remote_state()?;
    let done = crate::session::transact(ctx, |state: &mut Option<State>| {
        let state = crate::session::existing(state)?;
        let created = !state.agents.contains_key(id);
        let agent = state.agents.entry(id.to_owned()).or_insert_with(|| Agent {
            id: id.to_owned(),
            runtime: None,
            capabilities: Vec::new(),
            registered_at: ctx.now,
            updated_at: ctx.now,
            rev: 0,
            extra: Extra::new(),
        });
        let before = (agent.runtime.clone(), agent.capabilities.clone());
        if let Some(r) = runtime {
            agent.runtime = Some(r.to_owned());
        }
        if !caps.is_empty() {
            agent.capabilities = caps.clone();
        }
        if created || before != (agent.runtime.clone(), agent.capabilities.clone()) {
            agent.rev = agent.rev.saturating_add(1);
            agent.updated_at = ctx.now;
        }
        let report = AgentReport {
            agent: agent.clone(),
            created,
            commit: None,
        };
        let verb = if created { "register" } else { "update" };
        let message = Message::new("agent register", format!("agent {verb} {id}"))
            .trailer("Loopx-Agent", id.to_owned());
        Ok::<_, crate::Error>(Write::commit(report, message))
    })?;
    let mut report = done.value;
    report.commit = done.commit;
    Ok(report)
}

#[derive(Debug, Serialize)]
pub struct AgentList {
    pub agents: Vec<Agent>,
}

pub fn list(ctx: &Context) -> Result<AgentList> {
    let (_, state) = ctx.load()?;
    Ok(AgentList {
        agents: state.agents.values().cloned().collect(),
    })
}
