//! `git loopx mcp`: a Model Context Protocol server over stdio (built on
//! `rmcp`, the protocol's official Rust SDK), so that any MCP client can run
//! the turn protocol as typed tools.
//!
//! It owns no rule of its own. Every tool is one call into the same `ops`
//! function the CLI calls, and answers with the object `--json` prints
//! (`render::ok_json`, `render::error_json`); a refusal is a tool error
//! (`isError: true`) carrying the same `code`, `message` and `hint`.
//! Invariants: the acting agent is fixed when the server starts (`--agent`,
//! `LOOPX_AGENT`, `loopx.agent`) and no tool argument can change it (the
//! arguments take no agent, and unknown fields are refused before anything
//! runs); nothing but the JSON-RPC stream goes to stdout, and every line
//! the client sends is passed to rmcp or answered ([`stdio`]). The ops run on one
//! thread of their own ([`worker`]), so a long `validate` holds up the next
//! tool call, not the protocol; a second thread watches the state ref and
//! turns its moves into resource notifications ([`watch`]).
//! Gate resolution is not offered: gates are the person's.

mod params;
mod prompt;
mod resources;
mod stdio;
mod tools;
mod watch;
mod worker;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{CallToolResult, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{prompt_handler, tool_handler, ServerHandler, ServiceExt as _};

use crate::model::Timestamp;
use crate::{Error, Result};

/// What the server is started with.
pub struct Options {
    /// Where the repository is (`-C`, else the current directory).
    pub dir: PathBuf,
    /// The acting agent as given (`--agent`, `LOOPX_AGENT`); else `loopx.agent`.
    pub agent: Option<String>,
    /// The goal (`--goal`, `LOOPX_GOAL`); else the default goal.
    pub goal: Option<String>,
    /// The clock (`LOOPX_NOW`, else the system's), read before each call.
    pub clock: fn() -> Result<Timestamp>,
    /// What the tools' writes may let through their checks
    /// (`--allow-secret-pattern`).
    pub policy: crate::session::Policy,
}

/// The server: the ops worker, and which resources the client subscribed to.
#[derive(Clone)]
pub struct Server {
    worker: Arc<worker::Worker>,
    subscribed: Arc<Mutex<std::collections::BTreeSet<String>>>,
    watched: tokio::sync::watch::Receiver<watch::Seen>,
    tools: ToolRouter<Server>,
    prompts: PromptRouter<Server>,
}

/// Opens the repository and the state (refusing as the CLI would: no
/// repository, no agent), then serves MCP on stdin and stdout until the
/// client closes stdin.
pub async fn serve(options: Options) -> Result<()> {
    let worker = worker::Worker::start(&options)?;
    let watched = watch::start(&options)?;
    let server = Server {
        worker: Arc::new(worker),
        subscribed: Arc::default(),
        watched: watched.clone(),
        tools: Server::lease_tools() + Server::record_tools(),
        prompts: Server::prompt_router(),
    };
    let subscribed = server.subscribed.clone();
    let (transport, writer) = stdio::stdio();
    let ended = match server.serve(transport).await {
        Ok(running) => {
            let peer = running.peer().clone();
            let notifier = tokio::spawn(watch::notify(peer, watched, subscribed));
            let ended = running.waiting().await;
            notifier.abort();
            ended
                .map(drop)
                .map_err(|e| format!("the MCP session failed: {e}"))
        }
        Err(e) => Err(format!("the MCP client did not initialize: {e}")),
    };
    // rmcp has let go of the transport: the writer ends once it has written
    // what is left (bounded, should a client stop reading).
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), writer).await;
    ended.map_err(Error::invalid_input)
}

impl Server {
    /// Runs `op` on the ops thread and answers with its `--json` object:
    /// a tool error when it refused or reported a failure.
    async fn answer<R, F>(&self, op: F) -> std::result::Result<CallToolResult, rmcp::ErrorData>
    where
        R: serde::Serialize,
        F: FnOnce(&crate::session::Context) -> Result<(R, Option<Error>)> + Send + 'static,
    {
        let (value, failed) = self.worker.json(op).await?;
        Ok(if failed {
            CallToolResult::structured_error(value)
        } else {
            CallToolResult::structured(value)
        })
    }
}

const INSTRUCTIONS: &str = "git-loopx governs this repository's long-running agent work. \
A turn: should_run (with a turn key) → next_todo with claim → the work → writeback → \
complete_todo → spend (the same turn key); a planning turn adds todos (add_todo) or ends \
the goal (complete_goal), a replanning turn reshapes blocked todos (update_todo), a \
monitor's turn records its poll (poll_monitor). The prompt `turn` says which turn this is \
and which tools to call. Refusals are tool errors with the CLI's error code. Gates are \
answered by a person, not by a tool. Resources: loopx://status and loopx://goal/<id>, \
with notifications when the state moves.";

#[tool_handler(router = self.tools)]
#[prompt_handler(router = self.prompts)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_resources_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("git-loopx", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    /// `subscriptions/listen` (2026-07-28) takes what the capabilities
    /// offer: updates of the named resources, and the resource list.
    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(
        &self,
        context: rmcp::service::SubscriptionContext,
    ) -> std::result::Result<(), rmcp::ErrorData> {
        watch::listen(context, self.watched.clone()).await
    }

    /// The router's call, with one change: arguments the schema refuses
    /// (rmcp answers those with a bare text tool error, as the protocol
    /// asks, so the model can correct them) come back in the `--json` error
    /// envelope, `invalid_input`, like every other refusal.
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> std::result::Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let tool = request.name.to_string();
        let call = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        match self.tools.call(call).await? {
            rmcp::model::CallToolResponse::Complete(result)
                if result.is_error == Some(true) && result.structured_content.is_none() =>
            {
                Ok(CallToolResult::structured_error(bad_arguments(&tool, &result)).into())
            }
            other => Ok(other),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> std::result::Result<rmcp::model::ListResourcesResult, rmcp::ErrorData> {
        self.resource_list().await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> std::result::Result<rmcp::model::ListResourceTemplatesResult, rmcp::ErrorData> {
        Ok(resources::templates())
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> std::result::Result<rmcp::model::ReadResourceResponse, rmcp::ErrorData> {
        self.resource_read(request.uri).await
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> std::result::Result<(), rmcp::ErrorData> {
        resources::parse_uri(&request.uri)?;
        self.subscribed
            .lock()
            .expect("the subscription set is not poisoned")
            .insert(request.uri);
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> std::result::Result<(), rmcp::ErrorData> {
        self.subscribed
            .lock()
            .expect("the subscription set is not poisoned")
            .remove(&request.uri);
        Ok(())
    }
}

/// The `--json` error object for arguments a tool's schema refuses.
fn bad_arguments(tool: &str, result: &CallToolResult) -> serde_json::Value {
    let said = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.as_str())
        .unwrap_or("refused");
    let said = said
        .strip_prefix("failed to deserialize parameters:")
        .unwrap_or(said)
        .trim();
    let err = crate::model::Refusal::invalid_input(format!("{tool}: bad arguments: {said}"))
        .with_hint("the tool's input schema (tools/list) says what it takes");
    crate::render::error_json(&err.into(), None)
}
