//! `log`: the state branch's history, which is the audit log.

use serde::Serialize;

use crate::model::Timestamp;
use crate::ops::Context;
use crate::store::{trailer, Oid, Store};
use crate::Result;

#[derive(Debug, Default)]
pub struct LogArgs {
    pub limit: usize,
    pub todo: Option<String>,
    pub agent: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct LogEntry {
    pub commit: Oid,
    pub parents: Vec<Oid>,
    pub time: Timestamp,
    pub subject: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub todos: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct LogReport {
    pub entries: Vec<LogEntry>,
}

/// How far back `log` looks when filtering by todo or agent.
const SCAN_LIMIT: usize = 100_000;

pub fn log(ctx: &Context, args: &LogArgs) -> Result<LogReport> {
    let Some(tip) = ctx.store.tip()? else {
        return Err(crate::store::Error::Missing.into());
    };
    let filtering = args.todo.is_some() || args.agent.is_some();
    let scan = if filtering { SCAN_LIMIT } else { args.limit };
    let mut entries = Vec::new();
    for info in ctx.store.first_parent_log(&tip, scan)? {
        let todos: Vec<String> = trailer(&info.message, "Loopx-Todo")
            .map(str::to_owned)
            .collect();
        let agent = trailer(&info.message, "Loopx-Agent")
            .next()
            .map(str::to_owned);
        if let Some(want) = &args.todo {
            if !todos.iter().any(|t| t.starts_with(want.as_str())) {
                continue;
            }
        }
        if args.agent.is_some() && agent != args.agent {
            continue;
        }
        entries.push(LogEntry {
            commit: info.id,
            parents: info.parents,
            time: info.time,
            subject: info.message.lines().next().unwrap_or("").to_owned(),
            op: trailer(&info.message, "Loopx-Op").next().map(str::to_owned),
            agent,
            todos,
        });
        if entries.len() >= args.limit {
            break;
        }
    }
    Ok(LogReport { entries })
}
