//! The resources: `loopx://status` (the `status --json` object) and
//! `loopx://goal/<id>` for each goal (the `goal show --json` object), read
//! through the same ops as the CLI.
//!
//! Invariants: a URI outside these two forms is refused (`resource not
//! found`) before anything is read; reading never writes.

use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate,
};
use rmcp::ErrorData;
use serde_json::Value;

use crate::mcp::Server;
use crate::ops::{goal, status};

pub const STATUS: &str = "loopx://status";
const GOAL_PREFIX: &str = "loopx://goal/";

/// What a resource URI names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Status,
    Goal(String),
}

pub fn parse_uri(uri: &str) -> Result<Target, ErrorData> {
    if uri == STATUS {
        return Ok(Target::Status);
    }
    match uri.strip_prefix(GOAL_PREFIX) {
        Some(id) if crate::model::ids::check_name("goal", id).is_ok() => {
            Ok(Target::Goal(id.to_owned()))
        }
        _ => Err(ErrorData::resource_not_found(
            format!("no resource `{uri}`: git-loopx serves {STATUS} and {GOAL_PREFIX}<goal-id>"),
            None,
        )),
    }
}

pub fn goal_uri(id: &str) -> String {
    format!("{GOAL_PREFIX}{id}")
}

pub fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(vec![ResourceTemplate::new(
        format!("{GOAL_PREFIX}{{id}}"),
        "goal",
    )
    .with_description("A goal: objective, status, next action, scope, guards, quota policy")
    .with_mime_type("application/json")])
}

impl Server {
    pub(super) async fn resource_list(&self) -> Result<ListResourcesResult, ErrorData> {
        let (value, failed) = self
            .worker
            .json(|ctx| {
                let (_, state) = ctx.load()?;
                Ok((state.goals.keys().cloned().collect::<Vec<_>>(), None))
            })
            .await?;
        if failed {
            return Err(refused(value));
        }
        let goals: Vec<String> = value
            .get("result")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        let mut resources = vec![Resource::new(STATUS, "status")
            .with_description(
                "What needs the person, what runs, who holds what, quota, recent evidence",
            )
            .with_mime_type("application/json")];
        for id in goals {
            resources.push(
                Resource::new(goal_uri(&id), format!("goal {id}"))
                    .with_description(format!("The goal `{id}`"))
                    .with_mime_type("application/json"),
            );
        }
        Ok(ListResourcesResult::with_all_items(resources))
    }

    pub(super) async fn resource_read(
        &self,
        uri: String,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let target = parse_uri(&uri)?;
        let (value, failed) = self
            .worker
            .json(move |ctx| {
                let value = match &target {
                    Target::Status => serde_json::to_value(status::status(ctx)?),
                    Target::Goal(id) => serde_json::to_value(goal::show_id(ctx, id)?),
                };
                Ok((value.expect("reports serialize"), None))
            })
            .await?;
        if failed {
            return Err(refused(value));
        }
        let text =
            ResourceContents::text(value.to_string(), uri).with_mime_type("application/json");
        Ok(ReadResourceResult::new(vec![text]).into())
    }
}

/// A refusal while reading: the `--json` error object as the error's data.
fn refused(value: Value) -> ErrorData {
    let message = value
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or("refused")
        .to_owned();
    match value.pointer("/error/code").and_then(Value::as_str) {
        Some("invalid_input") => ErrorData::resource_not_found(message, Some(value)),
        _ => ErrorData::internal_error(message, Some(value)),
    }
}
